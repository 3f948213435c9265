"""Packed fine-tuning (``albert_tf.data.packing``, ``--packing``) is exact.

Three levels: the packer on hand-built batches (every example's tokens where its row and offset say, positions
restarting, no row over ``max_seq_length``, slices holding the unpacked slices' examples); the classifier's logits,
losses and gradients on packed rows against the same examples one per row (classification and regression, a tiny
model without dropout); and the GLUE task's loss and evaluation outputs through its own code path.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf
from conftest import padded_batch, shared_path, write_small_config

from albert_tf.config import AlbertConfig
from albert_tf.data.packing import merge_slices, pack_batch, packed_rows, padding_fraction
from albert_tf.modeling.recompute import set_recompute
from albert_tf.tasks.glue.model import AlbertClassifier, classification_per_example_loss

S = 64
LENGTHS = [5, 60, 12, 33, 7, 64, 20, 3, 41, 9, 18, 2]


def _batch(lengths: list[int], seq: int = S, seed: int = 0) -> dict[str, np.ndarray]:
    """``conftest.padded_batch`` with a [CLS] id first in every example and three classes."""
    batch = padded_batch(lengths, seq, seed)
    batch["input_ids"][:, 0] = 2
    batch["label_ids"] %= 3
    batch["is_real_example"] = np.ones(len(lengths), np.int32)
    return batch


def _numpy(packed):
    return {k: np.asarray(v) for k, v in packed.items()}


# ------------------------------------------------------------------------------------------------------- the packer
@pytest.mark.parametrize("slices", [1, 2, 3])
def test_every_example_lands_whole_at_its_position_and_rows_stay_within_the_limit(slices):
    batch = _batch(LENGTHS)
    packed = _numpy(pack_batch(batch, S, slices=slices))
    b = len(LENGTHS) // slices
    rows, length = packed["input_ids"].shape[1:]
    assert length == S
    for k in range(slices):
        taken = np.zeros((rows, length), bool)
        for i in range(b):
            source = k * b + i
            n = LENGTHS[source]
            row, offset = divmod(int(packed["example_positions"][k, i]), length)
            where = (k, row, slice(offset, offset + n))
            assert offset + n <= S
            np.testing.assert_array_equal(packed["input_ids"][where], batch["input_ids"][source, :n])
            np.testing.assert_array_equal(packed["segment_ids"][where], batch["segment_ids"][source, :n])
            np.testing.assert_array_equal(packed["position_ids"][where], np.arange(n))
            np.testing.assert_array_equal(packed["input_mask"][where], np.full(n, i + 1))
            assert not taken[row, offset : offset + n].any(), "two examples overlap"
            taken[row, offset : offset + n] = True
            assert packed["label_ids"][k, i] == batch["label_ids"][source]
        # every other position is padding
        assert (packed["input_mask"][k][~taken] == 0).all() and (packed["input_ids"][k][~taken] == 0).all()
        # first-fit decreasing: as many rows as the plain-Python placement, never fewer than the tokens need
        need = packed_rows(LENGTHS[k * b : (k + 1) * b], S)
        assert int((packed["input_mask"][k] != 0).any(axis=1).sum()) == len(need)
        assert len(need) >= math.ceil(sum(LENGTHS[k * b : (k + 1) * b]) / S)


def test_rows_and_length_are_rounded_to_few_shapes():
    packed = _numpy(pack_batch(_batch([5, 6, 7, 3]), S, boundaries=(16, 32, 64), row_multiple=4))
    assert packed["input_ids"].shape == (1, 4, 32)  # 21 tokens fit one row of 32; 1 row rounds up to 4
    assert (packed["input_mask"][0, 1:] == 0).all()


def test_merge_slices_gives_flat_positions_into_the_merged_rows():
    batch = _batch(LENGTHS)
    merged = _numpy(merge_slices(pack_batch(batch, S, slices=3)))
    for i, n in enumerate(LENGTHS):
        flat = merged["input_ids"].reshape(-1)
        start = merged["example_positions"][i]
        np.testing.assert_array_equal(flat[start : start + n], batch["input_ids"][i, :n])
    np.testing.assert_array_equal(merged["label_ids"], batch["label_ids"])


def test_padding_accounting():
    assert packed_rows([60, 10, 50, 4], 64) == [64, 60]
    assert padding_fraction(sum([60, 10, 50, 4]), 2 * 64) == pytest.approx(1 - 124 / 128)


# --------------------------------------------------------------------------------------------------- the model
def _config() -> AlbertConfig:
    return AlbertConfig(vocab_size=250, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=48, max_position_embeddings=S,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.mark.parametrize("num_labels", [3, 1])
def test_packed_logits_losses_and_gradients_equal_one_example_per_row(num_labels):
    tf.keras.utils.set_random_seed(3)
    model = AlbertClassifier(_config(), num_labels, classifier_dropout=0.0)
    batch = _batch(LENGTHS)
    labels = batch["label_ids"].astype(np.float32) if num_labels == 1 else batch["label_ids"]
    inputs = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}
    packed = merge_slices(pack_batch(batch, S, slices=2))

    with tf.GradientTape() as tape:
        logits = model(inputs, training=True)
        loss = tf.reduce_mean(classification_per_example_loss(logits, labels, num_labels))
    grads = tape.gradient(loss, model.trainable_variables)
    with tf.GradientTape() as tape:
        packed_logits = model.packed_logits(packed, training=True)
        packed_loss = tf.reduce_mean(classification_per_example_loss(packed_logits, labels, num_labels))
    packed_grads = tape.gradient(packed_loss, model.trainable_variables)

    np.testing.assert_allclose(packed_logits.numpy(), logits.numpy(), atol=2e-5)
    np.testing.assert_allclose(packed_loss.numpy(), loss.numpy(), rtol=1e-5)
    for v, g, pg in zip(model.trainable_variables, grads, packed_grads):
        g, pg = tf.convert_to_tensor(g).numpy(), tf.convert_to_tensor(pg).numpy()
        scale = max(float(np.abs(g).max()), 1e-12)
        np.testing.assert_allclose(pg, g, atol=1e-4 * scale + 1e-10, err_msg=v.path)  # summation order; key biases: ~0
    assert any(float(np.abs(tf.convert_to_tensor(g)).max()) > 0 for g in packed_grads)


@pytest.mark.heavy
@pytest.mark.parametrize("recompute,jit_compile", [(True, False), (False, True)])
def test_packed_step_with_recomputation_or_xla_equals_one_example_per_row(recompute, jit_compile):
    """Packed steps inside a ``tf.function``: the unpadded token path with activations recomputed in the backward
    pass (the positions reach the recomputed blocks by closure); under XLA the rows path (``unpadded=False``: XLA
    cannot compile the data-dependent real-token count), as the GLUE task runs it with ``--jit_compile``."""
    tf.keras.utils.set_random_seed(5)
    model = AlbertClassifier(_config(), 3, classifier_dropout=0.0)
    set_recompute(model, recompute)
    batch = _batch(LENGTHS)
    inputs = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}
    packed = merge_slices(pack_batch(batch, S))

    def loss_and_grads(compute):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(classification_per_example_loss(compute(), batch["label_ids"], 3))
        return loss, tape.gradient(loss, model.trainable_variables)

    loss, grads = loss_and_grads(lambda: model(inputs, training=True))
    def packed_step(features):
        return loss_and_grads(lambda: model.packed_logits(features, training=True, unpadded=not jit_compile))

    # The row count unknown at tracing, the row length known, as in a ``reduce_retracing`` step.
    signature = [{k: tf.TensorSpec([None, *v.shape[1:]], v.dtype) for k, v in packed.items()}]
    packed_loss, packed_grads = tf.function(packed_step, jit_compile=jit_compile, input_signature=signature)(packed)
    np.testing.assert_allclose(packed_loss.numpy(), loss.numpy(), rtol=1e-5)
    for v, g, pg in zip(model.trainable_variables, grads, packed_grads):
        g, pg = tf.convert_to_tensor(g).numpy(), tf.convert_to_tensor(pg).numpy()
        np.testing.assert_allclose(pg, g, atol=1e-4 * max(float(np.abs(g).max()), 1e-12) + 1e-10, err_msg=v.path)


def test_packed_rows_run_the_dense_layers_on_real_tokens_only(monkeypatch):
    """The projections and the FFN see the T real tokens of the packed rows, not R x L positions: the padding
    left at the rows' ends is not computed there (what makes packing pay on pairs, benchmarks/README.md). At
    inference the classifier's last layer computes only the N examples' [CLS] tokens (``pooled_only``)."""
    import albert_tf.modeling.transformer as transformer

    tf.keras.utils.set_random_seed(6)
    model = AlbertClassifier(_config(), 2)
    batch = _batch(LENGTHS)
    packed = _numpy(merge_slices(pack_batch(batch, S)))
    rows, length = packed["input_ids"].shape
    assert rows * length > sum(LENGTHS)  # the rows hold padding
    seen = []
    ffn = model.encoder.unique_blocks()[0].ffn_sublayer
    real_project = transformer.project

    def project(x, kernel, *args, **kwargs):
        if kernel is ffn.intermediate.kernel:
            seen.append(tuple(x.shape))
        return real_project(x, kernel, *args, **kwargs)

    monkeypatch.setattr(transformer, "project", project)
    model.packed_logits(packed, training=True)
    assert seen == [(sum(LENGTHS), 32)] * 2  # two layers, one shared block
    seen.clear()
    model.packed_logits(packed)
    assert seen == [(sum(LENGTHS), 32), (len(LENGTHS), 32)]


def test_the_sequence_output_of_real_tokens_equals_the_unpacked_one():
    tf.keras.utils.set_random_seed(4)
    model = AlbertClassifier(_config(), 2)
    batch = _batch(LENGTHS[:6])
    inputs = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}
    unpacked = model.encoder(inputs, training=False)["sequence_output"].numpy()
    packed = _numpy(merge_slices(pack_batch(batch, S)))
    out = model.encoder.call_packed(packed)["sequence_output"].numpy()
    for i, n in enumerate(LENGTHS[:6]):
        row, offset = divmod(int(packed["example_positions"][i]), S)
        np.testing.assert_allclose(out[row, offset : offset + n], unpacked[i, :n], atol=2e-5)
    padding = packed["input_mask"] == 0
    assert padding.any() and not out[padding].any()  # zero at padding, as documented


def test_rows_of_padding_alone_run_at_inference():
    """A batch whose rows hold no real token (nothing for the token layout to gather from) takes the rows path."""
    tf.keras.utils.set_random_seed(4)
    model = AlbertClassifier(_config(), 2)
    zeros = np.zeros((2, S), np.int32)
    rows = {"input_ids": zeros, "segment_ids": zeros, "position_ids": zeros, "input_mask": zeros,
            "example_positions": np.array([0, S], np.int32)}
    assert model.packed_logits(rows).shape == (2, 2)


# ------------------------------------------------------------------------------------------------ the GLUE task
def _mrpc_subset(tmp_path, n: int) -> str:
    """The first ``n`` MRPC training pairs and the whole dev set, in a GLUE folder of their own."""
    source, target = shared_path("glue", "MRPC"), tmp_path / "MRPC"
    target.mkdir()
    for split, rows in (("train.tsv", n), ("dev.tsv", None)):
        lines = (source / split).read_text(encoding="utf-8").splitlines(keepends=True)
        (target / split).write_text("".join(lines if rows is None else lines[: rows + 1]), encoding="utf-8")
    return str(target)


@pytest.mark.heavy
def test_packed_mrpc_training_reaches_the_unpacked_weights_and_dev_metrics(tmp_path):
    """run_classifier with --packing=first_fit and =none, without dropout, through gradient accumulation (two
    slices per batch): the same examples per step give the same weights up to float rounding, so the same dev
    metrics."""
    from albert_tf.tasks import glue
    from albert_tf.tasks.glue.task import run as run_glue

    common = dict(task_name="MRPC", data_dir=_mrpc_subset(tmp_path, 256), max_seq_length=128, do_train=True,
                  do_eval=True, spm_model_file=str(shared_path("spm", "30k-clean.model")),
                  albert_config_file=write_small_config(tmp_path / "c.json"), eval_batch_size=32, num_train_steps=12,
                  train_batch_size=8, gradient_accumulation_steps=2, learning_rate=1e-3, steps_per_loop=12,
                  save_checkpoints_steps=12, classifier_dropout=0.0)
    summaries = {mode: run_glue(glue.make_config(output_dir=str(tmp_path / mode), packing=mode, **common))
                 for mode in ("first_fit", "none")}
    packed, unpacked = (tf.train.load_checkpoint(str(tmp_path / mode / "ckpt-12")) for mode in ("first_fit", "none"))
    weights = [n for n, dtype in packed.get_variable_to_dtype_map().items()
               if dtype.is_floating and "/.ATTRIBUTES/" in n and "optimizer" not in n]
    assert len(weights) > 10
    worst = max(float(np.max(np.abs(packed.get_tensor(n) - unpacked.get_tensor(n)))) for n in weights)
    print(f"trained weights: max |difference| {worst:.3g}")
    assert worst <= 1e-4
    first, second = (summaries[m]["best"] for m in ("first_fit", "none"))
    assert first["num_examples"] == second["num_examples"] == 408
    assert first["accuracy"] == second["accuracy"] and first["f1"] == pytest.approx(second["f1"])
    assert first["eval_loss"] == pytest.approx(second["eval_loss"], abs=1e-4)


@pytest.mark.heavy
def test_packed_and_unpacked_sst2_runs_train_alike_and_both_learn(tmp_path):
    """A small model fine-tuned from scratch on real SST-2 (single sentences, where packing removes most of the
    padding), packed and one example per row, same seed. The classifier dropout draws the same masks in both layouts
    (its input is [batch, H] either way) and the config has no encoder dropout, so the runs differ by float rounding
    only: their training losses agree while rounding has not yet grown (the first 80 steps, in which this seed
    starts to learn), and both learn the task. The final dev accuracies are not compared: from random weights,
    rounding decides when a run leaves the loss plateau, so same-seed pairs of this setting differ by several points
    (benchmarks/README.md, packed and unpacked training from scratch)."""
    from albert_tf.tasks import glue
    from albert_tf.tasks.glue.task import run as run_glue
    from albert_tf.training.summaries import read_scalars

    source, target = shared_path("glue", "SST-2"), tmp_path / "SST-2"
    target.mkdir()
    for split, rows in (("train.tsv", 9600), ("dev.tsv", None)):
        lines = (source / split).read_text(encoding="utf-8").splitlines(keepends=True)
        (target / split).write_text("".join(lines if rows is None else lines[: rows + 1]), encoding="utf-8")
    common = dict(task_name="SST-2", data_dir=str(target), max_seq_length=128, do_train=True, do_eval=True,
                  spm_model_file=str(shared_path("spm", "30k-clean.model")), eval_batch_size=64,
                  albert_config_file=write_small_config(tmp_path / "c.json"), num_train_steps=300,
                  train_batch_size=32, learning_rate=1e-3, num_warmup_steps=30, steps_per_loop=10,
                  save_checkpoints_steps=300, seed=7)
    accuracy, losses = {}, {}
    for mode in ("first_fit", "none"):
        summary = run_glue(glue.make_config(output_dir=str(tmp_path / mode), packing=mode, **common))
        accuracy[mode] = summary["best"]["accuracy"]
        losses[mode] = [loss for step, loss in sorted(read_scalars(str(tmp_path / mode / "train"))["loss"])
                        if step <= 80]
    print(f"SST-2 dev accuracy: packed {accuracy['first_fit']:.4f}, unpacked {accuracy['none']:.4f}")
    assert len(losses["first_fit"]) == len(losses["none"]) == 8
    assert min(losses["none"]) < losses["none"][0] - 0.01  # it trains within the compared steps
    assert max(abs(a - b) for a, b in zip(losses["first_fit"], losses["none"])) <= 1e-3
    for mode, value in accuracy.items():  # the dev majority class is 0.509
        assert value > 0.6, f"{mode}: the small model did not learn SST-2 ({value:.3f})"
