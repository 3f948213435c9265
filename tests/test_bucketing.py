"""Length bucketing (``albert_tf.data.batching``, ``--bucket_lengths``) is exact.

Three levels: the trimming function on hand-built batches (bucket choice, order, SQuAD and RACE layouts); every
fine-tuning model's outputs on a trimmed batch against the fixed-padding batch (the attention mask makes padding
inert, so they agree within 1e-5); and the acceptance: GLUE (MRPC) and SQuAD (v1 and v2, subset-a) evaluation
metrics with bucketing equal those with fixed padding on the same checkpoint.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf
from conftest import padded_batch, shared_path, write_small_config

from albert_tf.config import AlbertConfig
from albert_tf.data.batching import DEFAULT_BUCKET_LENGTHS, bucket_boundaries, trim_batch
from albert_tf.tasks.base import FineTuningOptions, input_buckets
from albert_tf.training.task import EVAL, PREDICT, TRAIN, TaskError

S = 128
BOUNDS = (32, 64, 128)


def _batch(lengths: list[int], seq: int = S, seed: int = 0) -> dict[str, np.ndarray]:
    return padded_batch(lengths, seq, seed)


# ------------------------------------------------------------------------------------------ boundaries and trimming
def test_bucket_boundaries_parse_cap_and_turn_off():
    assert bucket_boundaries("32,64,128,256,384,512", 128) == (32, 64, 128)
    assert bucket_boundaries("512, 32,64", 384) == (32, 64, 384)
    assert bucket_boundaries("32,64", 100) == (32, 64, 100)
    assert bucket_boundaries([16], 16) == (16,)
    for off in ("none", "", "off", "0", None):
        assert bucket_boundaries(off, 128) is None
    with pytest.raises(ValueError, match="bucket_lengths"):
        bucket_boundaries("32,x", 128)
    with pytest.raises(ValueError, match="-4"):
        bucket_boundaries("32,-4", 128)


def test_a_bad_bucket_lengths_option_is_an_option_error():
    from albert_tf.tasks import glue

    with pytest.raises(TaskError, match="bucket_lengths"):
        glue.make_config(task_name="mrpc", data_dir="d", albert_config_file="c", bucket_lengths="64,big")


def test_every_fine_tuning_runner_gets_one_flag_read_by_every_split():
    from absl import flags

    from albert_tf.cli.flags import option_values
    from albert_tf.cli.run_race import define_flags
    from albert_tf.tasks import race, squad

    fv = flags.FlagValues()
    define_flags(fv)
    fv(["prog", "--bucket_lengths=16,48", "--max_seq_length=128"])
    assert fv["bucket_lengths"].default == DEFAULT_BUCKET_LENGTHS
    assert option_values(fv)["bucket_lengths"] == "16,48"
    config = race.make_config(**{k: v for k, v in option_values(fv).items() if v is not None})
    assert config.task.bucket_lengths == "16,48"
    options = FineTuningOptions(max_seq_length=128)
    for split in (TRAIN, EVAL, PREDICT):
        assert input_buckets(options, split) == (32, 48, 64, 80, 96, 128)
    # SQuAD v1's official loss softmaxes over every position, padding included: its training keeps the full length.
    assert input_buckets(options, TRAIN, exact_in_training=False) is None
    assert input_buckets(options, EVAL, exact_in_training=False) == (32, 48, 64, 80, 96, 128)
    assert input_buckets(FineTuningOptions(max_seq_length=128, bucket_lengths="none"), EVAL) is None
    assert squad.SquadOptions().bucket_lengths == DEFAULT_BUCKET_LENGTHS


@pytest.mark.parametrize(("lengths", "cut"), [([5, 31, 32], 32), ([5, 33], 64), ([1, 64], 64), ([2, 65, 9], 128),
                                              ([128], 128), ([0, 0], 32)])
def test_trim_cuts_to_the_smallest_bucket_holding_the_longest_row(lengths, cut):
    batch = _batch(lengths)
    out = {k: np.asarray(v) for k, v in trim_batch(batch, BOUNDS).items()}
    assert out["input_ids"].shape == (len(lengths), cut)
    for name in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(out[name], batch[name][:, :cut])  # rows in order, real tokens kept
        assert not batch[name][:, cut:].any()  # only padding was cut
    np.testing.assert_array_equal(out["label_ids"], batch["label_ids"])


def test_trim_uses_the_last_real_position_not_the_mask_sum():
    batch = _batch([10, 3])
    batch["input_mask"][1, 40] = 1  # a hole-y mask: the row is 41 long
    assert trim_batch(batch, BOUNDS)["input_ids"].shape == (2, 64)


def test_trim_squad_layout_keeps_positions_and_cuts_p_mask():
    batch = _batch([20, 50])
    batch["p_mask"] = 1 - batch["input_mask"]
    batch["unique_ids"] = np.array([1000000001, 1000000002], np.int32)
    batch["start_positions"] = np.array([3, 47], np.int32)
    batch["end_positions"] = np.array([5, 49], np.int32)
    batch["is_impossible"] = np.array([0, 0], np.int32)
    out = {k: np.asarray(v) for k, v in trim_batch(batch, BOUNDS).items()}
    assert out["p_mask"].shape == out["input_ids"].shape == (2, 64)
    np.testing.assert_array_equal(out["p_mask"], batch["p_mask"][:, :64])
    for name in ("unique_ids", "start_positions", "end_positions", "is_impossible"):
        np.testing.assert_array_equal(out[name], batch[name])


def test_trim_race_layout_cuts_the_last_axis_over_all_choices():
    rows = [_batch([10, 12, 40, 8], seed=1), _batch([5, 5, 5, 5], seed=2)]  # choice 2 of example 0 is longest
    batch = {k: np.stack([r[k] for r in rows]) for k in ("input_ids", "input_mask", "segment_ids")}
    batch["label_ids"] = np.array([2, 0], np.int32)
    out = {k: np.asarray(v) for k, v in trim_batch(batch, BOUNDS).items()}
    assert out["input_ids"].shape == (2, 4, 64)
    np.testing.assert_array_equal(out["input_mask"], batch["input_mask"][..., :64])
    np.testing.assert_array_equal(out["label_ids"], batch["label_ids"])


def test_bucketed_dataset_has_a_dynamic_sequence_axis_and_full_batches(tmp_path):
    from albert_tf.data.glue.dataset import load_dataset
    from albert_tf.data.glue.features import feature_spec

    path = str(tmp_path / "r.tfrecord")
    lengths = [3, 40, 7, 100, 12, 9]
    batch = _batch(lengths)
    with tf.io.TFRecordWriter(path) as writer:
        for row in range(len(lengths)):
            feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=batch[k][row].tolist()))
                       for k in ("input_ids", "input_mask", "segment_ids")}
            feature["label_ids"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[row % 2]))
            feature["is_real_example"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    assert set(feature_spec(S, False)) == {"input_ids", "input_mask", "segment_ids", "label_ids", "is_real_example"}
    ds = load_dataset(path, S, False, 2, is_training=False, bucket_lengths=BOUNDS)
    assert ds.element_spec["input_ids"].shape.as_list() == [None, None]
    widths = [b["input_ids"].shape[1] for b in ds]
    assert widths == [64, 128, 32]
    fixed = [b["input_ids"].shape[1] for b in load_dataset(path, S, False, 2, is_training=False)]
    assert fixed == [S, S, S]


# ------------------------------------------------------------------------------------------ models: padding is inert
def _tiny_config() -> AlbertConfig:
    return AlbertConfig(vocab_size=250, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=S)


def _close(a, b, what: str) -> float:
    diff = float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)))) if np.size(a) else 0.0
    assert diff <= 1e-5, f"{what}: max |difference| {diff}"
    print(f"{what}: max |difference| {diff:.3g}")
    return diff


LENGTHS = [7, 30, 19, 3]  # longest 30: the bucket is 32 of 128


def _trimmed(batch: dict) -> dict:
    return {k: np.asarray(v) for k, v in trim_batch(batch, BOUNDS).items()}


def test_classifier_outputs_on_a_trimmed_batch_equal_fixed_padding():
    from albert_tf.tasks.glue.model import AlbertClassifier, classifier_logits

    model = AlbertClassifier(_tiny_config(), 3)
    batch = _batch(LENGTHS)
    inputs = ("input_ids", "input_mask", "segment_ids")
    full = classifier_logits(model({k: batch[k] for k in inputs}, training=False))
    short = _trimmed(batch)
    assert short["input_ids"].shape[1] == 32
    cut = classifier_logits(model({k: short[k] for k in inputs}, training=False))
    _close(full, cut, "classifier logits")


@pytest.mark.parametrize("version_2", [False, True])
def test_squad_outputs_on_a_trimmed_batch_equal_fixed_padding(version_2):
    from albert_tf.tasks.squad.model import AlbertSquad

    model = AlbertSquad(_tiny_config(), version_2_with_negative=version_2, start_n_top=3, end_n_top=3,
                        dropout_prob=0.0)
    batch = _batch(LENGTHS)
    batch["p_mask"] = 1 - batch["input_mask"]
    batch["p_mask"][:, 0] = 0
    short = _trimmed(batch)
    names = ("input_ids", "input_mask", "segment_ids", "p_mask")
    full = model({k: batch[k] for k in names}, training=False)
    cut = model({k: short[k] for k in names}, training=False)
    if not version_2:
        mask = batch["input_mask"][:, :32].astype(bool)
        for key in ("start_logits", "end_logits"):  # real positions; padding positions are masked downstream
            _close(np.asarray(full[key])[:, :32][mask], np.asarray(cut[key])[mask], key)
        return
    for key in ("start_top_index", "end_top_index"):
        np.testing.assert_array_equal(full[key], cut[key])
    for key in ("start_top_log_probs", "end_top_log_probs", "cls_logits"):
        _close(full[key], cut[key], key)
    # Teacher-forced training outputs (what the v2 loss reads): padding positions carry no probability.
    start = np.array([2, 10, 5, 1], np.int32)
    full_t = model({**{k: batch[k] for k in names}, "start_positions": start}, training=True)
    cut_t = model({**{k: short[k] for k in names}, "start_positions": start}, training=True)
    for key in ("start_log_probs", "end_log_probs"):
        _close(np.asarray(full_t[key])[:, :32], cut_t[key], key)
    _close(full_t["cls_logits"], cut_t["cls_logits"], "cls_logits (training)")


def test_multiple_choice_outputs_on_a_trimmed_batch_equal_fixed_padding():
    from albert_tf.tasks.race.model import AlbertMultipleChoice

    model = AlbertMultipleChoice(_tiny_config(), num_choices=4)
    rows = [_batch([10, 12, 40, 8], seed=1), _batch([5, 25, 5, 17], seed=2)]
    batch = {k: np.stack([r[k] for r in rows]) for k in ("input_ids", "input_mask", "segment_ids")}
    short = _trimmed(batch)
    assert short["input_ids"].shape == (2, 4, 64)
    _close(model(batch, training=False), model(short, training=False), "multiple-choice logits")


# ------------------------------------------------------------------------------------------ acceptance: same metrics
def _evaluate(task, options, model_dir: str, checkpoint: str) -> tuple[dict, dict]:
    """Metrics and raw evaluation outputs of ``task`` with the weights of ``checkpoint`` (a fresh trainer)."""
    from albert_tf.training.experiment import make_trainer

    trainer = make_trainer(task, options, model_dir, log=None)
    trainer.restore_or_init(init_checkpoint=checkpoint)
    outputs, _ = trainer.collect_outputs(EVAL, "eval_outputs", options.eval_batch_size)
    return trainer.evaluate(0), outputs


def _both_ways(module, task_cls, tmp_path, checkpoint: str, **options) -> list[tuple[dict, dict]]:
    results = []
    for buckets in ("32,64,128,256,384,512", "none"):
        config = module.make_config(output_dir=str(tmp_path / f"eval-{buckets}"), do_eval=True,
                                    bucket_lengths=buckets, **options)
        task = task_cls.from_options(config.task, config.run, seed=config.trainer.seed)
        results.append(_evaluate(task, config.trainer, str(tmp_path / f"eval-{buckets}"), checkpoint))
        widths = {int(b["input_ids"].shape[1]) for b in task.build_inputs(EVAL, config.trainer.eval_batch_size)}
        full = config.task.max_seq_length
        assert widths == {full} if buckets == "none" else min(widths) < full, widths  # bucketing really cut
        print(buckets, sorted(widths))
    print(json.dumps(results[0][0]))
    return results


def _assert_same(results: list[tuple[dict, dict]], float_keys: tuple[str, ...] = ()) -> dict[str, float]:
    """Every metric equal (floats named in ``float_keys`` within 1e-6); returns the max output difference."""
    (bucketed, out_b), (fixed, out_f) = results
    for key in fixed:
        if key in float_keys:
            assert abs(bucketed[key] - fixed[key]) <= 1e-6, (key, bucketed[key], fixed[key])
        else:
            assert bucketed[key] == fixed[key], (key, bucketed[key], fixed[key])
    diffs = {}
    for key, value in out_f.items():
        assert out_b[key].shape == value.shape, key
        if value.dtype.kind == "f":
            diffs[key] = _close(out_b[key], value, key)
        else:
            np.testing.assert_array_equal(out_b[key], value)
    print(json.dumps(diffs))
    return diffs


def _glue_subset(tmp_path, rows: int) -> str:
    source = shared_path("glue", "MRPC")
    target = tmp_path / "MRPC"
    target.mkdir()
    for split, n in (("train.tsv", rows), ("dev.tsv", 10_000)):
        lines = (source / split).read_text(encoding="utf-8").splitlines(keepends=True)
        (target / split).write_text("".join(lines[: n + 1]), encoding="utf-8")
    return str(target)


@pytest.mark.heavy
def test_glue_mrpc_eval_metrics_with_bucketing_equal_fixed_padding(tmp_path):
    from albert_tf.tasks import glue
    from albert_tf.tasks.glue.task import GlueTask
    from albert_tf.tasks.glue.task import run as run_glue

    spm = str(shared_path("spm", "30k-clean.model"))
    common = dict(task_name="MRPC", data_dir=_glue_subset(tmp_path, 256), spm_model_file=spm, max_seq_length=128,
                  albert_config_file=write_small_config(tmp_path / "c.json"), eval_batch_size=8)
    # Training on bucketed batches (through gradient accumulation: the trainer splits a dynamic length) is the
    # fixed-padding computation: same batches, same order, the same weights up to float rounding.
    for buckets in (DEFAULT_BUCKET_LENGTHS, "none"):
        run_glue(glue.make_config(output_dir=str(tmp_path / f"run-{buckets}"), do_train=True, num_train_steps=12,
                                  train_batch_size=8, gradient_accumulation_steps=2, learning_rate=1e-3,
                                  steps_per_loop=12, save_checkpoints_steps=12, classifier_dropout=0.0,
                                  bucket_lengths=buckets, packing="none", **common))
    checkpoint = str(tmp_path / f"run-{DEFAULT_BUCKET_LENGTHS}" / "ckpt-12")
    bucketed, fixed = (tf.train.load_checkpoint(str(tmp_path / f"run-{b}" / "ckpt-12"))
                       for b in (DEFAULT_BUCKET_LENGTHS, "none"))
    weights = [n for n, dtype in bucketed.get_variable_to_dtype_map().items()
               if dtype.is_floating and "/.ATTRIBUTES/" in n and "optimizer" not in n]
    assert len(weights) > 10
    worst = max(float(np.max(np.abs(bucketed.get_tensor(n) - fixed.get_tensor(n)))) for n in weights)
    print(f"trained weights: max |difference| {worst:.3g}")
    assert worst <= 1e-4
    results = _both_ways(glue, GlueTask, tmp_path, checkpoint, **common)
    assert results[0][0]["num_examples"] == 408
    _assert_same(results, float_keys=("eval_loss",))


def _squad_subset(tmp_path, n: int, answerable_only: bool) -> str:
    """The first ``n`` questions of subset-a (only answerable ones for v1: v1 training refuses the others)."""
    data = json.loads(shared_path("squad", "dev-v2.0-subset-a.json").read_text(encoding="utf-8"))
    kept, out = 0, []
    for article in data["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = [qa for qa in paragraph["qas"] if not (answerable_only and qa.get("is_impossible"))]
            qas = qas[: max(0, n - kept)]
            kept += len(qas)
            if qas:
                paragraphs.append(dict(paragraph, qas=qas))
        if paragraphs:
            out.append(dict(article, paragraphs=paragraphs))
    path = tmp_path / "squad.json"
    path.write_text(json.dumps({"version": "v2.0", "data": out}), encoding="utf-8")
    return str(path)


@pytest.mark.heavy
@pytest.mark.parametrize("version_2", [True, False])
def test_squad_eval_metrics_with_bucketing_equal_fixed_padding(tmp_path, version_2):
    from albert_tf.tasks import squad
    from albert_tf.tasks.squad.task import SquadTask
    from albert_tf.tasks.squad.task import run as run_squad

    spm = str(shared_path("spm", "30k-clean.model"))
    data = _squad_subset(tmp_path, 60, answerable_only=not version_2)
    common = dict(predict_file=data, spm_model_file=spm, max_seq_length=384, doc_stride=128, max_query_length=64,
                  version_2_with_negative=version_2, albert_config_file=write_small_config(tmp_path / "c.json", 384),
                  eval_batch_size=4, dropout_prob=0.0)
    run_squad(squad.make_config(output_dir=str(tmp_path / "run"), train_file=data, do_train=True,
                                num_train_steps=10, num_warmup_steps=1, train_batch_size=8, learning_rate=1e-3,
                                steps_per_loop=10, save_checkpoints_steps=10, **common))
    results = _both_ways(squad, SquadTask, tmp_path, str(tmp_path / "run" / "ckpt-10"), **common)
    assert results[0][0]["num_questions"] == 60
    _assert_same(results, float_keys=("null_score_diff_threshold", "best_exact_thresh", "best_f1_thresh"))
    if not version_2:
        _check_nbest_over_padding(squad, tmp_path, str(tmp_path / "run" / "ckpt-10"), results[1][1], common)


def _check_nbest_over_padding(squad, tmp_path, checkpoint: str, masked: dict, common: dict) -> None:
    """``--nbest_over_padding`` (the official v1 n-best, padding included) keeps the padding logits as the model gave
    them, and everything else equals the default run's outputs. (Whether a padding position then takes an n-best
    slot depends on the model: the v1 loss softmaxes over padding too and pushes those logits down; after these 10
    steps none of the 63 windows has one among its 20 best starts, so the answers are the same here.)"""
    from albert_tf.tasks.squad.model import MASK_VALUE
    from albert_tf.tasks.squad.task import SquadTask

    config = squad.make_config(output_dir=str(tmp_path / "eval-official"), do_eval=True, bucket_lengths="none",
                               nbest_over_padding=True, **common)
    task = SquadTask.from_options(config.task, config.run, seed=config.trainer.seed)
    metrics, raw = _evaluate(task, config.trainer, str(tmp_path / "eval-official"), checkpoint)
    assert metrics["num_questions"] == 60
    np.testing.assert_array_equal(raw["unique_ids"], masked["unique_ids"])  # both fixed padding: the same order
    real = np.concatenate([f["input_mask"] for f in task.build_inputs(EVAL, 4)])
    for key in ("start_logits", "end_logits"):
        ours, default = raw[key], masked[key]
        assert (default[real == 0] == -MASK_VALUE).all() and np.isfinite(ours).all() and (ours > -1e29).all()
        _close(ours[real == 1], default[real == 1], key)
    top = np.argsort(-raw["start_logits"], axis=1, kind="stable")[:, : config.task.n_best_size]
    windows_with_padding = int(sum(bool((real[i, top[i]] == 0).any()) for i in range(len(top))))
    print(f"windows whose official start n-best holds a padding position: {windows_with_padding} of {len(top)}")


def test_nbest_over_padding_is_a_fixed_padding_v1_option():
    from albert_tf.tasks import squad
    from albert_tf.tasks.squad.task import SquadTask

    with pytest.raises(TaskError, match="--bucket_lengths=none"):
        SquadTask.from_options(*_squad_config(squad, nbest_over_padding=True))
    with pytest.raises(TaskError, match="v1 option"):
        SquadTask.from_options(*_squad_config(squad, nbest_over_padding=True, bucket_lengths="none",
                                                    version_2_with_negative=True))


def _squad_config(squad, **options):
    config = squad.make_config(albert_config_file="c.json", predict_file="p.json", output_dir="o", do_eval=True,
                               **options)
    return config.task, config.run

