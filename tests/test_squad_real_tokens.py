"""SQuAD's real-token path is exact on real windows (``../shared/data/squad/dev-v2.0-subset-a.json``).

Packed training rows (``data.packing``) through ``AlbertSquad.packed_outputs`` give the padded batch's loss and every
gradient up to float32 rounding, for the v1 span head (softmaxes over the window's tokens) and the v2 beam head
(teacher-forced training outputs, ``p_mask``); evaluation one window per row gives the padded call's outputs; the
same inside a ``tf.function`` whose batch size is unknown at tracing; and the task's own ``loss`` / ``eval_outputs``
take that path by default.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import tensorflow as tf
from conftest import shared_path

from albert_tf.config import AlbertConfig
from albert_tf.data.packing import merge_slices, one_example_per_row, pack_batch
from albert_tf.tasks.squad.model import AlbertSquad, squad_loss, window_mask

S = 256
WINDOWS = 16


@functools.cache
def _windows(version_2: bool) -> dict[str, np.ndarray]:
    """The first training windows of subset-a at ``S`` tokens, reordered so that short and long windows mix."""
    from albert_tf.data.squad.features import convert_examples_to_features
    from albert_tf.data.squad.reader import read_squad_examples, read_squad_json
    from albert_tf.evaluation.squad_metrics import answerable_subset
    from albert_tf.tokenization import FullTokenizer

    path = str(shared_path("squad", "dev-v2.0-subset-a.json"))
    tokenizer = FullTokenizer(do_lower_case=True, spm_model_file=str(shared_path("spm", "30k-clean.model")))
    dataset = read_squad_json(path)
    examples = read_squad_examples(path, is_training=True, version_2_with_negative=version_2,
                                   dataset=dataset if version_2 else answerable_subset(dataset))[:40]
    features, _ = convert_examples_to_features(examples, tokenizer, max_seq_length=S, doc_stride=128,
                                               max_query_length=64, is_training=True)
    lengths = [sum(f.input_mask) for f in features]
    # every other window from the short end, so a batch holds both
    order = np.argsort(lengths, kind="stable")
    picked = [int(i) for pair in zip(order[: WINDOWS // 2], order[::-1][: WINDOWS // 2]) for i in pair]
    batch = {name: np.array([getattr(features[i], name) for i in picked], np.int32)
             for name in ("input_ids", "input_mask", "segment_ids", "p_mask")}
    batch["start_positions"] = np.array([features[i].start_position for i in picked], np.int32)
    batch["end_positions"] = np.array([features[i].end_position for i in picked], np.int32)
    batch["is_impossible"] = np.array([int(bool(features[i].is_impossible)) for i in picked], np.int32)
    real = batch["input_mask"].sum(axis=1)
    assert real.min() < S // 2 and real.max() == S  # a mixed batch: packing has work to do
    if version_2:
        assert 0 < batch["is_impossible"].sum() < WINDOWS
    return batch


def _model(version_2: bool) -> AlbertSquad:
    tf.keras.utils.set_random_seed(7)
    config = AlbertConfig(vocab_size=30000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=48, max_position_embeddings=S,
                          hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return AlbertSquad(config, version_2_with_negative=version_2, dropout_prob=0.0)


def _grads(model, compute):
    with tf.GradientTape() as tape:
        loss = compute()
    return loss, _numpy(tape.gradient(loss, model.trainable_variables))


def _numpy(grads):
    """Gradients as arrays; None where a variable does not reach the loss (v1: the pooler)."""
    return [None if g is None else tf.convert_to_tensor(g).numpy() for g in grads]


def _assert_same(model, expected, got):
    (loss, grads), (packed_loss, packed_grads) = expected, got
    np.testing.assert_allclose(float(packed_loss), float(loss), rtol=2e-5)
    for v, g, pg in zip(model.trainable_variables, grads, packed_grads):
        assert (g is None) == (pg is None), v.path
        if g is not None:
            scale = max(float(np.abs(g).max()), 1e-12)
            # summation order; a bias whose gradient is 0 in exact arithmetic (the span head: softmax is
            # shift-free) holds rounding alone, ~1e-8
            np.testing.assert_allclose(pg, g, atol=1e-4 * scale + 1e-7, err_msg=v.path)
    assert sum(g is not None and float(np.abs(g).max()) > 0 for g in packed_grads) > len(packed_grads) // 2


@pytest.mark.parametrize("version_2", [False, True], ids=["v1", "v2"])
@pytest.mark.parametrize("slices", [1, 2])
def test_packed_windows_give_the_padded_loss_and_every_gradient(version_2, slices):
    model, batch = _model(version_2), _windows(version_2)
    padded_mask = batch["input_mask"] != 0
    expected = _grads(model, lambda: squad_loss(model(batch, training=True), batch, version_2, padded_mask))
    packed = merge_slices(pack_batch(batch, S, slices=slices))
    assert packed["input_ids"].shape[0] < WINDOWS  # rows shared by windows
    length = int(tf.reduce_max(packed["example_lengths"]))

    def packed_loss():
        outputs = model.packed_outputs(packed, length, training=True)
        return squad_loss(outputs, packed, version_2, window_mask(packed["example_lengths"], length))

    _assert_same(model, expected, _grads(model, packed_loss))


@pytest.mark.heavy
@pytest.mark.parametrize("version_2", [False, True], ids=["v1", "v2"])
def test_packed_step_with_an_unknown_batch_size_inside_a_tf_function(version_2):
    model, batch = _model(version_2), _windows(version_2)
    expected = _grads(model, lambda: squad_loss(model(batch, training=True), batch, version_2,
                                                batch["input_mask"] != 0))
    packed = merge_slices(pack_batch(batch, S))

    def step(features):
        length = tf.reduce_max(features["example_lengths"])

        def compute():
            outputs = model.packed_outputs(features, length, training=True)
            return squad_loss(outputs, features, version_2, window_mask(features["example_lengths"], length))

        with tf.GradientTape() as tape:
            loss = compute()
        return loss, tape.gradient(loss, model.trainable_variables)

    signature = [{k: tf.TensorSpec([None, *v.shape[1:]], v.dtype) for k, v in packed.items()}]
    loss, grads = tf.function(step, input_signature=signature)(packed)
    _assert_same(model, expected, (loss, _numpy(grads)))


@pytest.mark.parametrize("version_2", [False, True], ids=["v1", "v2"])
def test_evaluation_one_window_per_row_gives_the_padded_outputs(version_2):
    model, batch = _model(version_2), _windows(version_2)
    inputs = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids", "p_mask")}
    expected = model(inputs, training=False)
    got = model.packed_outputs(one_example_per_row(inputs), S, training=False)
    real = batch["input_mask"] != 0
    for name, value in expected.items():
        value, other = np.asarray(value), np.asarray(got[name])
        if name in ("start_logits", "end_logits"):  # v1: the window's tokens (padding is masked downstream)
            value, other = value[real], other[real]
        if value.dtype.kind == "i":
            np.testing.assert_array_equal(other, value, err_msg=name)
        else:
            np.testing.assert_allclose(other, value, atol=2e-5, rtol=1e-5, err_msg=name)
