"""The pretrainer's last-layer subset path (issue 17, item 2) equals the full computation.

``AlbertPretrainer(last_layer_subset=True)`` (the default) runs the last block only at [CLS] and the
masked positions. These tests give a subset model and a full model (``last_layer_subset=False``) the same
weights and compare the MLM, SOP and total losses and the gradient of every trainable variable (float32,
dropout off) for every sharing mode, G > 1, K > 1 and L = 1, with duplicate masked positions and padding
slots (position 0, weight 0); once more under ``tf.function(jit_compile=True)``; and check that both models
hold the same variables, so an official-name checkpoint loads into either and gives the same outputs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints.official import load_official_checkpoint, save_official_checkpoint
from albert_tf.checkpoints.report import assign_official_arrays, model_official_arrays
from albert_tf.config import AlbertConfig
from albert_tf.modeling import AlbertPretrainer
from albert_tf.modeling.losses import pretraining_losses

TOL = 1e-5
# albert_tiny (E 16 != H 32, dropout 0) with 3 layers, so the last layer is neither the first nor shared-only-once
BASE = AlbertConfig.from_name("albert_tiny").replace(
    num_hidden_layers=3, vocab_size=97, max_position_embeddings=32, hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)
CASES = {
    "all_shared": (BASE, "all"),
    "sharing_none": (BASE, "none"),
    "sharing_attention": (BASE, "attention"),
    "sharing_ffn": (BASE, "ffn"),
    "groups2": (BASE.replace(num_hidden_groups=2), "all"),
    "inner2": (BASE.replace(inner_group_num=2), "all"),
    "groups3_inner2": (BASE.replace(num_hidden_groups=3, inner_group_num=2), "all"),
    "one_layer": (BASE.replace(num_hidden_layers=1), "all"),
}


def features(c: AlbertConfig, batch: int = 3, seq: int = 12, preds: int = 5, seed: int = 0) -> dict[str, np.ndarray]:
    """A batch with padded rows, duplicate masked positions and padding prediction slots (position 0, weight 0)."""
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int32)
    mask[0, 8:] = 0
    mask[2, 5:] = 0
    positions = rng.integers(1, 5, (batch, preds)).astype(np.int32)
    positions[1] = [3, 3, 7, 3, 9]  # duplicates
    weights = np.ones((batch, preds), np.float32)
    positions[0, 3:] = 0  # padding slots, as the records store them
    weights[0, 3:] = 0.0
    positions[2, 2:] = 0
    weights[2, 2:] = 0.0
    return {
        "input_ids": (rng.integers(5, c.vocab_size, (batch, seq)) * mask).astype(np.int32),
        "input_mask": mask,
        "segment_ids": np.concatenate([np.zeros((batch, seq // 2)), np.ones((batch, seq - seq // 2))], 1).astype(
            np.int32),
        "masked_lm_positions": positions,
        "masked_lm_ids": rng.integers(5, c.vocab_size, (batch, preds)).astype(np.int32),
        "masked_lm_weights": weights,
        "next_sentence_labels": np.array([[0], [1], [1]], np.int32),
    }


def randomise(model, seed: int) -> None:
    """Random values for every variable (LayerNorm gammas around 1), so equal results mean something."""
    rng = np.random.default_rng(seed)
    for v in model.trainable_variables:
        base = 1.0 if "gamma" in v.path else 0.0
        v.assign((base + 0.2 * rng.standard_normal(v.shape)).astype(np.float32))


def pair(c: AlbertConfig, sharing: str, seed: int = 1):
    """A full and a subset pretrainer holding the same weights (copied by Keras variable path)."""
    full = AlbertPretrainer(c, sharing=sharing, last_layer_subset=False)
    subset = AlbertPretrainer(c, sharing=sharing)
    randomise(full, seed)
    by_path = {v.path: v for v in full.variables}
    assert sorted(by_path) == sorted(v.path for v in subset.variables)  # no new variables
    for v in subset.variables:
        v.assign(by_path[v.path])
    return full, subset


def losses_and_grads(model, feats):
    inputs = {k: feats[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}
    with tf.GradientTape() as tape:
        outputs = model(inputs, training=True)
        losses = pretraining_losses(outputs, feats)
    grads = tape.gradient(losses["total_loss"], model.trainable_variables)
    return losses, {v.path: g for v, g in zip(model.trainable_variables, grads, strict=True)}, outputs


def dense(g) -> np.ndarray:
    """A gradient (dense or ``IndexedSlices``, as embedding gradients are) as an array."""
    return np.asarray(tf.convert_to_tensor(g))


def max_differences(full, subset, feats, step=losses_and_grads) -> dict[str, float]:
    want_losses, want_grads, want_out = step(full, feats)
    got_losses, got_grads, got_out = step(subset, feats)
    diffs = {k: float(abs(want_losses[k] - got_losses[k])) for k in want_losses}
    for k in ("mlm_logits", "sop_logits", "pooled_output"):
        diffs[k] = float(np.max(np.abs(np.asarray(want_out[k]) - np.asarray(got_out[k]))))
    assert set(want_grads) == set(got_grads)
    grad_diffs = {}
    for path, g in want_grads.items():
        assert g is not None and got_grads[path] is not None, path
        grad_diffs[path] = float(np.max(np.abs(dense(g) - dense(got_grads[path]))))
    diffs["gradients"] = max(grad_diffs.values())
    return diffs


@pytest.mark.heavy
@pytest.mark.parametrize("case", sorted(CASES))
def test_losses_and_gradients_equal_the_full_computation(case):
    c, sharing = CASES[case]
    full, subset = pair(c, sharing)
    diffs = max_differences(full, subset, features(c))
    print(case, json.dumps(diffs))
    assert max(diffs.values()) < TOL, diffs


@pytest.mark.heavy
def test_equal_under_jit_compile():
    c, sharing = CASES["groups3_inner2"]
    full, subset = pair(c, sharing, seed=2)

    def compiled(model):
        @tf.function(jit_compile=True)
        def step(inputs, feats):
            with tf.GradientTape() as tape:
                outputs = model(inputs, training=True)
                losses = pretraining_losses(outputs, feats)
            return losses, tape.gradient(losses["total_loss"], model.trainable_variables), outputs

        def run(_, feats):
            inputs = {k: feats[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}
            losses, grads, outputs = step(inputs, feats)
            return losses, {v.path: g for v, g in zip(model.trainable_variables, grads, strict=True)}, outputs

        return run

    feats = features(c, seed=3)
    want = compiled(full)(full, feats)
    got = compiled(subset)(subset, feats)
    assert abs(float(want[0]["total_loss"] - got[0]["total_loss"])) < TOL
    assert max(float(np.max(np.abs(dense(g) - dense(got[1][p])))) for p, g in want[1].items()) < TOL
    # and the compiled subset step equals the eager full one
    eager = losses_and_grads(full, feats)
    assert abs(float(eager[0]["total_loss"] - got[0]["total_loss"])) < TOL


def test_mixed_precision_runs_and_stays_close():
    c, sharing = CASES["all_shared"]
    full = AlbertPretrainer(c, sharing=sharing, last_layer_subset=False, dtype="mixed_bfloat16")
    subset = AlbertPretrainer(c, sharing=sharing, dtype="mixed_bfloat16")
    randomise(full, 4)
    subset.set_weights(full.get_weights())
    feats = features(c, seed=5)
    inputs = {k: feats[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}
    a, b = full(inputs), subset(inputs)
    assert b["mlm_logits"].dtype == tf.float32
    np.testing.assert_allclose(np.asarray(b["mlm_logits"]), np.asarray(a["mlm_logits"]), atol=0.1)


def test_official_checkpoint_loads_into_both_with_the_same_outputs(tmp_path):
    c = BASE.replace(num_hidden_groups=3, inner_group_num=2)
    source = AlbertPretrainer(c, last_layer_subset=False)
    arrays = {name: (1.0 if name.endswith("gamma") else 0.0)
              + 0.2 * np.random.default_rng(6).standard_normal(v.shape).astype(np.float32)
              for name, v in model_official_arrays(source).items()}
    assign_official_arrays(source, arrays)
    prefix = save_official_checkpoint(source, str(tmp_path / "model.ckpt-1"))
    feats = features(c, seed=7)
    inputs = {k: feats[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}
    outputs = {}
    for subset in (False, True):
        model = AlbertPretrainer(c, last_layer_subset=subset)
        report = load_official_checkpoint(model, prefix)
        assert report.complete and not report.unused, report.summary()
        assert sorted(model_official_arrays(model)) == sorted(arrays)
        outputs[subset] = model(inputs, training=False)
    for k in ("mlm_logits", "sop_logits", "pooled_output"):
        np.testing.assert_allclose(np.asarray(outputs[True][k]), np.asarray(outputs[False][k]), atol=TOL)
    assert "sequence_output" in outputs[False] and "sequence_output" not in outputs[True]


def test_config_round_trip_and_default():
    model = AlbertPretrainer(BASE)
    assert model.last_layer_subset and model.get_config()["last_layer_subset"] is True
    off = AlbertPretrainer.from_config(json.loads(json.dumps(AlbertPretrainer(BASE, last_layer_subset=False)
                                                             .get_config())))
    assert off.last_layer_subset is False and off.encoder.last_layer_subset is False
    legacy = model.get_config()
    del legacy["last_layer_subset"]  # a .keras file written before the option existed
    assert AlbertPretrainer.from_config(legacy).last_layer_subset is True
