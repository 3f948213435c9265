"""Learning is real (short version): on the sample corpus tokenised with the official 30k-clean model, a
tiny ALBERT's held-out masked-LM loss falls and its accuracy beats the untrained model."""

from __future__ import annotations

import pytest
from conftest import sample_corpus_records

from albert_tf.config import AlbertConfig

pytestmark = pytest.mark.slow


def test_mlm_loss_falls_on_the_sample_corpus(tmp_path):
    from albert_tf.tasks.pretraining.curve import pretrain_with_curve

    records = sample_corpus_records(tmp_path, {"train": 800, "heldout": 100}, 64, 10, dupe_factor=2)
    config = AlbertConfig.from_name("albert_tiny").replace(vocab_size=30000)
    result = pretrain_with_curve(
        config, records["train"], records["heldout"], str(tmp_path / "model"),
        num_train_steps=120, train_batch_size=16, learning_rate=1e-2, eval_every=60, eval_batch_size=32,
        max_eval_steps=5, steps_per_loop=20,
    )
    curve = result["curve"]
    assert [p["step"] for p in curve] == [0, 60, 120]
    assert curve[-1]["masked_lm_loss"] < curve[0]["masked_lm_loss"] - 2.0, curve
    assert curve[-1]["masked_lm_accuracy"] > curve[0]["masked_lm_accuracy"] + 0.02, curve


def test_demo_stage_runs_on_the_previous_stage_result(tmp_path):
    """The demo stage reads the pretraining_data stage's dict and reports accuracy before and after."""
    import argparse

    from synthetic_records import write_synthetic_records

    from albert_tf.demo import pretrain

    shards = [
        write_synthetic_records(str(tmp_path / f"pretrain.tfrecord-0000{i}-of-00002"), 64, 32, 5, 400, seed=i)
        for i in range(2)
    ]
    args = argparse.Namespace(
        seed=1, pretrain_steps=20, pretraining_data_result={"input_files": shards, "vocab_size": 400}
    )
    result = pretrain.run(str(tmp_path), args)
    assert result["steps"] == 20 and result["before"]["step"] == 0 and result["after"]["step"] == 20
    assert result["after"]["masked_lm_loss"] < result["before"]["masked_lm_loss"]
    assert set(result["baselines"]) == {"masked_lm_accuracy_majority_token", "sentence_order_accuracy_majority_label"}
