"""RACE's real-token path is exact on real questions (``../shared/data/race``).

Every choice one packed example (``data.packing``, the choices of a question consecutive): the packed rows' logits,
loss and every gradient equal the padded [B, 4, L] batch's up to float32 rounding, also inside a ``tf.function``
whose batch size is unknown at tracing; evaluation one choice per row gives the padded call's logits; the task's own
``loss`` takes the packed path.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import tensorflow as tf
from conftest import shared_path

from albert_tf.config import AlbertConfig
from albert_tf.data.packing import merge_slices, one_example_per_row, pack_batch
from albert_tf.tasks.race.model import AlbertMultipleChoice, multiple_choice_loss

S = 384
QUESTIONS = 6
NAMES = ("input_ids", "input_mask", "segment_ids")


@functools.cache
def _questions() -> dict[str, np.ndarray]:
    """The first dev questions at ``S`` tokens a choice: [B, 4, S] features, their labels."""
    from albert_tf.data.race.features import convert_examples
    from albert_tf.data.race.reader import read_race_examples
    from albert_tf.tokenization import FullTokenizer

    tokenizer = FullTokenizer(do_lower_case=True, spm_model_file=str(shared_path("spm", "30k-clean.model")))
    examples = read_race_examples(str(shared_path("race")), "dev")[:QUESTIONS]
    features = list(convert_examples(examples, tokenizer, S, 64))
    batch = {k: np.array([getattr(f, k) for f in features], np.int32).reshape(len(features), 4, S) for k in NAMES}
    batch["label_ids"] = np.array([f.label for f in features], np.int32)
    return batch


def _flat(batch):
    return {**{k: batch[k].reshape(-1, S) for k in NAMES}, "label_ids": batch["label_ids"]}


def _model() -> AlbertMultipleChoice:
    tf.keras.utils.set_random_seed(9)
    config = AlbertConfig(vocab_size=30000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=48, max_position_embeddings=S,
                          hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return AlbertMultipleChoice(config, dropout_prob=0.0)


def _grads(model, compute):
    with tf.GradientTape() as tape:
        loss = compute()
    return loss, [tf.convert_to_tensor(g).numpy() for g in tape.gradient(loss, model.trainable_variables)]


def _assert_same(model, expected, got):
    (loss, grads), (packed_loss, packed_grads) = expected, got
    np.testing.assert_allclose(float(packed_loss), float(loss), rtol=2e-5)
    for v, g, pg in zip(model.trainable_variables, grads, packed_grads):
        np.testing.assert_allclose(pg, g, atol=1e-4 * max(float(np.abs(g).max()), 1e-12) + 1e-7, err_msg=v.path)


@pytest.mark.heavy
@pytest.mark.parametrize("slices", [1, 2])
def test_packed_choices_give_the_padded_loss_and_every_gradient(slices):
    model, batch = _model(), _questions()
    expected = _grads(model, lambda: multiple_choice_loss(model(batch, training=True), batch["label_ids"]))
    packed = merge_slices(pack_batch(_flat(batch), S, slices=slices))
    assert packed["label_ids"].shape == (QUESTIONS,)
    assert packed["input_ids"].shape[0] < 4 * QUESTIONS  # choices share rows
    got = _grads(model, lambda: multiple_choice_loss(model.packed_logits(packed, training=True), packed["label_ids"]))
    _assert_same(model, expected, got)


@pytest.mark.heavy
def test_packed_step_with_an_unknown_batch_size_inside_a_tf_function():
    model, batch = _model(), _questions()
    expected = _grads(model, lambda: multiple_choice_loss(model(batch, training=True), batch["label_ids"]))
    packed = merge_slices(pack_batch(_flat(batch), S))

    def step(features):
        with tf.GradientTape() as tape:
            loss = multiple_choice_loss(model.packed_logits(features, training=True), features["label_ids"])
        return loss, tape.gradient(loss, model.trainable_variables)

    signature = [{k: tf.TensorSpec([None, *v.shape[1:]], v.dtype) for k, v in packed.items()}]
    loss, grads = tf.function(step, input_signature=signature)(packed)
    _assert_same(model, expected, (loss, [tf.convert_to_tensor(g).numpy() for g in grads]))


def test_evaluation_one_choice_per_row_gives_the_padded_logits():
    model, batch = _model(), _questions()
    expected = model(batch, training=False).numpy()
    flat = _flat(batch)
    got = model.packed_logits(one_example_per_row({k: flat[k] for k in NAMES}), training=False).numpy()
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=1e-5)
