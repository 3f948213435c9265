"""pretrain_with_curve(stop_at_step=N): weights part-way through a longer schedule, checkpointed at the curve's last
step; a rerun at the same N trains no further, and a rerun without it ends where one uninterrupted run ends."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import sample_corpus_records

from albert_tf.config import AlbertConfig

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return sample_corpus_records(tmp_path_factory.mktemp("records"), {"train": 60, "heldout": 20}, 32, 5, dupe_factor=1)


def pretrain(records, model_dir, **kwargs):
    from albert_tf.tasks.pretraining.curve import pretrain_with_curve

    config = AlbertConfig.from_name("albert_tiny").replace(vocab_size=30000)
    return pretrain_with_curve(
        config, records["train"], records["heldout"], str(model_dir), num_train_steps=6, train_batch_size=4,
        eval_every=2, eval_batch_size=8, max_eval_steps=1, steps_per_loop=2, log=None, progress_log=None, **kwargs,
    )


def weights(model_dir) -> dict[str, np.ndarray]:
    from albert_tf.checkpoints.paths import checkpoint_reader, resolve_checkpoint_path
    from albert_tf.checkpoints.trainer_layout import stored_weights

    prefix = resolve_checkpoint_path(str(model_dir))
    reader = checkpoint_reader(prefix)
    return {name: reader.get_tensor(key) for name, key in stored_weights(prefix).items()}


def test_stop_part_way_then_resume_to_the_uninterrupted_run(records, tmp_path):
    from albert_tf.checkpoints.paths import list_run_checkpoints

    first = pretrain(records, tmp_path / "split", stop_at_step=2)
    assert [p["step"] for p in first["curve"]] == [0, 2] and first["stopped_at_step"] == 2
    stopped = pretrain(records, tmp_path / "split", stop_at_step=4)  # resumed, stopped again: the curve is whole
    assert stopped["stopped_at_step"] == 4 and not stopped["stopped_by_time_budget"]
    assert [p["step"] for p in stopped["curve"]] == [0, 2, 4]
    assert list_run_checkpoints(str(tmp_path / "split"))[-1][0] == 4  # the curve's last step has its checkpoint
    at_four = weights(tmp_path / "split")

    again = pretrain(records, tmp_path / "split", stop_at_step=4)
    assert list_run_checkpoints(str(tmp_path / "split"))[-1][0] == 4 and again["stopped_at_step"] == 4
    assert [p["step"] for p in again["curve"]] == [0, 2, 4]
    for name, value in weights(tmp_path / "split").items():
        np.testing.assert_array_equal(value, at_four[name])

    finished = pretrain(records, tmp_path / "split")
    assert [p["step"] for p in finished["curve"]] == [0, 2, 4, 6] and finished["stopped_at_step"] is None
    straight = pretrain(records, tmp_path / "straight")
    assert [p["step"] for p in straight["curve"]] == [0, 2, 4, 6]
    ours, theirs = weights(tmp_path / "split"), weights(tmp_path / "straight")
    assert ours.keys() == theirs.keys()
    for name in ours:  # the schedule ran to step 6 in both: stopping at 4 did not shorten it
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert not any(np.array_equal(at_four[n], ours[n]) for n in ours if "embeddings" in n)
