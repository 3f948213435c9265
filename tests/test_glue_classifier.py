"""AlbertClassifier (spec 4.1 head): official head names, formula, dropout, losses, serialization."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from albert_tf.config import AlbertConfig
from albert_tf.tasks.glue.model import AlbertClassifier, classification_loss

CONFIG = AlbertConfig.from_name("albert_tiny")


def _inputs(batch=3, seq=7, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, CONFIG.vocab_size, (batch, seq)).astype("int32")
    mask = np.ones((batch, seq), "int32")
    mask[0, 4:] = 0
    seg = np.zeros((batch, seq), "int32")
    seg[:, 3:] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": seg}


def test_official_head_names_and_formula():
    """Official output_weights [C, H] / output_bias [C] load onto the head; logits = pooled . W^T + b."""
    from albert_tf.checkpoints.names import official_variable_map
    from albert_tf.checkpoints.report import assign_official_arrays

    model = AlbertClassifier(CONFIG, num_labels=3, return_pooled_output=True)
    x = _inputs()
    model(x)
    names = official_variable_map(model)
    assert names["output_weights"].official_shape == (3, CONFIG.hidden_size)
    assert names["output_bias"].official_shape == (3,)
    rng = np.random.default_rng(1)
    w = rng.normal(size=(3, CONFIG.hidden_size)).astype("float32")
    b = rng.normal(size=(3,)).astype("float32")
    report = assign_official_arrays(model, {"output_weights": w, "output_bias": b})
    assert sorted(report.loaded) == ["output_bias", "output_weights"]
    out = model(x, training=False)
    pooled = np.asarray(out["pooled_output"], np.float64)
    np.testing.assert_allclose(np.asarray(out["logits"]), pooled @ w.T.astype(np.float64) + b, rtol=1e-5, atol=1e-5)


def test_head_initialiser_is_truncated_normal_002():
    model = AlbertClassifier(CONFIG.replace(hidden_size=64, num_attention_heads=4), num_labels=500)
    model(_inputs())
    k = np.asarray(model.head.kernel)
    assert np.abs(k).max() <= 2 * 0.02 + 1e-7  # truncated at two standard deviations
    assert k.std() == pytest.approx(0.02 * 0.8796, rel=0.05)  # std of N(0, s) truncated at +-2s
    assert np.all(np.asarray(model.head.bias) == 0)


def test_dropout_only_when_training_and_regression_head():
    model = AlbertClassifier(CONFIG, num_labels=2, classifier_dropout=0.5)
    x = _inputs()
    a = np.asarray(model(x, training=False))
    np.testing.assert_array_equal(a, np.asarray(model(x, training=False)))
    assert not np.allclose(a, np.asarray(model(x, training=True)))
    reg = AlbertClassifier(CONFIG, num_labels=1)
    assert tuple(reg(x).shape) == (3, 1) and reg.is_regression
    with pytest.raises(ValueError, match="num_labels"):
        AlbertClassifier(CONFIG, num_labels=0)


def test_losses_restate_the_official_formulas():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(5, 3)).astype("float32")
    labels = np.array([0, 2, 1, 1, 0])
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    want = -np.mean(log_probs[np.arange(5), labels])
    assert float(classification_loss(logits, labels, 3)) == pytest.approx(want, rel=1e-5)
    scores = rng.normal(size=(5, 1)).astype("float32")
    target = rng.uniform(0, 5, 5).astype("float32")
    assert float(classification_loss(scores, target, 1)) == pytest.approx(
        np.mean((scores[:, 0] - target) ** 2), rel=1e-5
    )


def test_config_roundtrip_keras_file_and_mixed_precision(tmp_path):
    model = AlbertClassifier(CONFIG, num_labels=2, classifier_dropout=0.2)
    x = _inputs()
    ref = np.asarray(model(x))
    clone = AlbertClassifier.from_config(model.get_config())
    assert clone.num_labels == 2 and clone.classifier_dropout == 0.2
    path = str(tmp_path / "cls.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(loaded(x)), ref, atol=1e-6)
    mixed = AlbertClassifier(CONFIG, num_labels=2, dtype="mixed_bfloat16")
    assert mixed(x).dtype == "float32"  # softmax / loss in float32
