"""AlbertMultipleChoice (spec 4.3 model, spec 1.4 ``run_race.py`` head) against numpy restatements of ``race_utils``.

The official ``create_model`` is restated in float64 numpy from the encoder's pooled output of the flattened
[B * 4, L] inputs and the head weights read back under their *official* names (``output_weights`` [1, H],
``output_bias`` [1]), so a misplaced or mis-transposed head variable fails as well as a wrong formula.
"""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import restore_pretrained
from albert_tf.checkpoints.names import official_variable_map
from albert_tf.checkpoints.official import (
    list_checkpoint,
    load_official_checkpoint,
    official_variable_shapes,
    save_official_checkpoint,
)
from albert_tf.checkpoints.report import assign_official_arrays, model_official_arrays
from albert_tf.config import AlbertConfig
from albert_tf.modeling import AlbertPretrainer
from albert_tf.tasks.race.model import (
    AlbertMultipleChoice,
    multiple_choice_loss,
    multiple_choice_per_example_loss,
    multiple_choice_predictions,
    unflatten_choice_features,
)

CONFIG = AlbertConfig.from_name("albert_tiny")  # hidden and attention dropout 0: only the head's dropout acts
H = CONFIG.hidden_size
B, C, L = 3, 4, 10
NAMES = ("input_ids", "input_mask", "segment_ids")
# Spec 1.4, restated: run_race.py's head.
RACE_HEAD = {"output_weights": (1, H), "output_bias": (1,)}


def features(seed=0):
    """[CLS] article [SEP] qa [SEP] pad for every choice, with per-choice lengths (and so padding) differing."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, CONFIG.vocab_size, (B, C, L)).astype("int32")
    mask = np.ones((B, C, L), "int32")
    seg = np.zeros((B, C, L), "int32")
    for b in range(B):
        for c in range(C):
            length = L - (b + c) % 4
            mask[b, c, length:] = 0
            ids[b, c, length:] = 0
            seg[b, c, 5:length] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": seg}


def randomise_head(model, seed=1):
    rng = np.random.default_rng(seed)
    arrays = {n: (0.5 * rng.standard_normal(s)).astype("float32") for n, s in RACE_HEAD.items()}
    report = assign_official_arrays(model, arrays)
    assert sorted(report.loaded) == sorted(RACE_HEAD)
    return {k: v.astype(np.float64) for k, v in arrays.items()}


def np_logits(model, x, w):
    """race_utils.create_model restated: flatten, pooled output, pooled . W^T + b, reshape [B, 4]."""
    flat = {k: x[k].reshape(-1, x[k].shape[-1]) for k in NAMES}  # tf.reshape order: row b * 4 + c
    pooled = np.asarray(model.encoder(flat, training=False)["pooled_output"], np.float64)  # [B * 4, H]
    logits = pooled @ w["output_weights"].T + w["output_bias"]  # transpose_b=True, bias_add
    return logits.reshape(-1, model.num_choices)


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


# ----------------------------------------------------------------------------- outputs and formulas


def test_shapes_dtypes_and_errors():
    x = features()
    model = AlbertMultipleChoice(CONFIG)
    assert model.built and model.num_choices == 4 and model.dropout_prob == 0.1
    for training in (False, True):
        out = model(x, training=training)
        assert tuple(out.shape) == (B, C) and out.dtype == "float32"
    assert tuple(model.head.kernel.shape) == (H, 1)
    # a whole RACE feature dict can be passed: other keys are ignored; a missing input is named
    full = {**x, "label_ids": np.array([1, 2, 3], "int32"), "is_real_example": np.ones(B, "int32")}
    np.testing.assert_array_equal(np.asarray(model(full)), np.asarray(model(x)))
    with pytest.raises(ValueError, match="input_mask"):
        model({"input_ids": x["input_ids"], "segment_ids": x["segment_ids"]})
    three = AlbertMultipleChoice(CONFIG, num_choices=3)
    assert tuple(three({k: v[:, :3] for k, v in x.items()}).shape) == (B, 3)
    with pytest.raises(ValueError, match="num_choices"):
        AlbertMultipleChoice(CONFIG, num_choices=0)
    with pytest.raises(ValueError, match="dropout_prob"):
        AlbertMultipleChoice(CONFIG, dropout_prob=1.0)


def test_logits_restate_the_official_model():
    x = features()
    model = AlbertMultipleChoice(CONFIG, dropout_prob=0.1)
    w = randomise_head(model)
    want = np_logits(model, x, w)
    np.testing.assert_allclose(np.asarray(model(x, training=False)), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(model(x)), want, rtol=1e-5, atol=1e-5)  # inference by default
    np.testing.assert_array_equal(np.asarray(multiple_choice_predictions(want)), want.argmax(-1))


def test_dropout_only_when_training():
    x = features()
    model = AlbertMultipleChoice(CONFIG, dropout_prob=0.5)
    w = randomise_head(model)
    infer = np.asarray(model(x, training=False))
    np.testing.assert_array_equal(infer, np.asarray(model(x, training=False)))
    train = np.asarray(model(x, training=True))
    assert not np.allclose(train, infer)
    # tf.nn.dropout(keep_prob=0.5) on the pooled output: each score is (pooled * m / 0.5) . w + b, m in {0, 1}^H,
    # so it lies within sum|pooled . w| * 2 of the bias; with dropout_prob=0 training equals inference.
    flat = {k: x[k].reshape(-1, L) for k in NAMES}
    pooled = np.asarray(model.encoder(flat)["pooled_output"], np.float64)
    bound = (2 * np.abs(pooled * w["output_weights"][0]).sum(-1)).reshape(B, C)
    assert np.all(np.abs(train - w["output_bias"][0]) <= bound + 1e-4)
    still = AlbertMultipleChoice(CONFIG, dropout_prob=0.0)
    still.set_weights(model.get_weights())
    np.testing.assert_allclose(np.asarray(still(x, training=True)), infer, rtol=1e-6, atol=1e-6)


def test_head_initialiser_is_truncated_normal_002():
    model = AlbertMultipleChoice(CONFIG.replace(hidden_size=2048, num_attention_heads=4, initializer_range=0.1))
    k = np.asarray(model.head.kernel)
    assert np.abs(k).max() <= 2 * 0.02 + 1e-7  # 0.02 hard-coded by race_utils, not initializer_range
    assert k.std() == pytest.approx(0.02 * 0.8796, rel=0.1)  # std of N(0, s) truncated at +-2s
    assert np.all(np.asarray(model.head.bias) == 0)


def test_loss_restates_softmax_cross_entropy():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(5, C)).astype("float32")
    labels = np.array([0, 3, 1, 2, 3], "int32")
    want = -log_softmax(logits.astype(np.float64))[np.arange(5), labels]
    per_example = multiple_choice_per_example_loss(logits, labels)
    assert per_example.dtype == "float32" and tuple(per_example.shape) == (5,)
    np.testing.assert_allclose(np.asarray(per_example), want, rtol=1e-5)
    official_loss = np.mean(want)  # tf.reduce_mean(per_example_loss)
    assert float(multiple_choice_loss(logits, labels)) == pytest.approx(official_loss, rel=1e-5)
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)
    assert float(keras_loss) == pytest.approx(official_loss, rel=1e-5)
    # bfloat16 logits are lifted to float32
    assert multiple_choice_per_example_loss(tf.cast(logits, tf.bfloat16), labels).dtype == "float32"


def test_choices_are_scored_independently():
    x = features()
    model = AlbertMultipleChoice(CONFIG)
    randomise_head(model)
    base = np.asarray(model(x, training=False))
    perm = np.array([2, 0, 3, 1])
    shuffled = {k: v.copy() for k, v in x.items()}
    for k in NAMES:
        shuffled[k][1] = x[k][1][perm]  # permute the choices of example 1 only
    out = np.asarray(model(shuffled, training=False))
    np.testing.assert_allclose(out[1], base[1][perm], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[[0, 2]], base[[0, 2]], rtol=1e-5, atol=1e-6)
    # one choice's tokens change only that choice's logit
    changed = {k: v.copy() for k, v in x.items()}
    changed["input_ids"][0, 2, 1:4] = 7
    out = np.asarray(model(changed, training=False))
    keep = [0, 1, 3]
    np.testing.assert_allclose(out[0, keep], base[0, keep], rtol=1e-5, atol=1e-6)
    assert out[0, 2] != pytest.approx(base[0, 2], abs=1e-6)


def test_unflatten_official_record_features():
    x = features()
    flat = {k: x[k].reshape(B, C * L) for k in NAMES}  # the official TFRecord layout: choices concatenated
    flat["label_ids"] = np.array([1, 2, 3])
    got = unflatten_choice_features(flat)
    for k in NAMES:
        np.testing.assert_array_equal(np.asarray(got[k]), x[k])
    assert got["label_ids"] is flat["label_ids"]
    assert unflatten_choice_features(x)["input_ids"] is x["input_ids"]


# ----------------------------------------------------------------------------- serialisation


def test_get_config_round_trip_keras_file_and_preset(tmp_path):
    x = features()
    model = AlbertMultipleChoice(CONFIG, dropout_prob=0.2)
    randomise_head(model)
    want = np.asarray(model(x, training=False))
    config = model.get_config()
    assert config["num_choices"] == 4 and config["dropout_prob"] == 0.2 and config["sharing"] == "all"
    rebuilt = AlbertMultipleChoice.from_config(config)
    assert rebuilt.get_config() == config
    rebuilt.set_weights(model.get_weights())
    np.testing.assert_array_equal(np.asarray(rebuilt(x, training=False)), want)
    path = str(tmp_path / "race.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, AlbertMultipleChoice) and loaded.dropout_prob == 0.2
    np.testing.assert_array_equal(np.asarray(loaded(x, training=False)), want)
    preset = AlbertMultipleChoice.from_preset("albert_tiny", vocab_size=77, num_choices=3)
    assert preset.config.vocab_size == 77 and preset.num_choices == 3
    with pytest.raises(TypeError, match="num_choise"):
        AlbertMultipleChoice.from_preset("albert_tiny", num_choise=3)


# ----------------------------------------------------------------------------- official checkpoints


def test_official_names_and_tf1_checkpoint_round_trip(tmp_path):
    x = features()
    model = AlbertMultipleChoice(CONFIG)
    w = randomise_head(model)
    names = {n: ref.official_shape for n, ref in official_variable_map(model).items()}
    encoder_names = official_variable_shapes(CONFIG, pretraining=False)
    assert all(n.startswith("bert/") for n in encoder_names)
    assert names == {**encoder_names, **RACE_HEAD}
    assert names == official_variable_shapes(CONFIG, heads=AlbertMultipleChoice.task_heads, pretraining=False)

    prefix = save_official_checkpoint(model, str(tmp_path / "ckpt" / "model.ckpt-12"), global_step=12)
    listed = list_checkpoint(prefix)
    assert {n: s for n, (s, _) in listed.items() if n != "global_step"} == names
    assert all(listed[n][1] == "float32" for n in RACE_HEAD)
    assert listed["global_step"] == ((), "int64")
    np.testing.assert_array_equal(tf.train.load_checkpoint(prefix).get_tensor("output_weights"), w["output_weights"])

    fresh = AlbertMultipleChoice(CONFIG)
    report = load_official_checkpoint(fresh, prefix)
    assert report.complete and not report.unused, report.summary()
    np.testing.assert_array_equal(np.asarray(fresh(x, training=False)), np.asarray(model(x, training=False)))
    np.testing.assert_array_equal(model_official_arrays(fresh)["output_weights"], np.asarray(model.head.kernel).T)


def test_init_from_pretraining_checkpoint_reports_the_head_missing(tmp_path):
    source = AlbertPretrainer(CONFIG)
    prefix = save_official_checkpoint(source, str(tmp_path / "pre" / "model.ckpt-1"))
    model = AlbertMultipleChoice(CONFIG)
    report = restore_pretrained(model, prefix)
    assert sorted(report.missing) == ["output_bias", "output_weights"]
    assert len(report.unused) == 7  # the MLM and SOP heads
    got = model_official_arrays(model)
    for name, value in model_official_arrays(source).items():
        if name.startswith("bert/"):
            np.testing.assert_array_equal(got[name], value)


# ----------------------------------------------------------------------------- precision, training


def test_mixed_bfloat16_gives_float32_logits():
    x = features()
    model = AlbertMultipleChoice(CONFIG, dtype="mixed_bfloat16")
    assert model.head.compute_dtype == "bfloat16" and model.head.kernel.dtype == "float32"
    for training in (False, True):
        out = model(x, training=training)
        assert out.dtype == "float32" and np.all(np.isfinite(np.asarray(out)))
    assert np.isfinite(float(multiple_choice_loss(model(x, training=True), np.array([0, 1, 2]))))


@pytest.mark.heavy
def test_train_step_under_one_device_strategy_and_keras_fit():
    x = features()
    labels = np.array([0, 3, 1], "int32")
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = AlbertMultipleChoice(CONFIG)
        optimizer = keras.optimizers.SGD(0.1)

    @tf.function
    def train_step(batch, y):
        def step(batch, y):
            with tf.GradientTape() as tape:
                loss = multiple_choice_loss(model(batch, training=True), y)
            grads = tape.gradient(loss, model.trainable_variables)
            assert all(g is not None for g in grads)  # the pooler and the head both train
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        return strategy.run(step, args=(batch, y))

    before = np.asarray(model.head.kernel).copy()
    assert np.isfinite(float(train_step({k: tf.constant(v) for k, v in x.items()}, tf.constant(labels))))
    assert not np.array_equal(before, np.asarray(model.head.kernel))

    eager = np.asarray(model(x, training=False))
    jitted = tf.function(lambda b: model(b, training=False), jit_compile=True)(x)
    np.testing.assert_allclose(np.asarray(jitted), eager, rtol=1e-4, atol=1e-5)

    fitted = AlbertMultipleChoice(CONFIG)
    fitted.compile(optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.SparseCategoricalCrossentropy(True))
    history = fitted.fit(x, labels, batch_size=B, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


# ----------------------------------------------------------------------------- Hugging Face


def test_from_huggingface_multiple_choice_matches_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from test_checkpoints_huggingface import hf_config as shared_hf_config

    from albert_tf.checkpoints.huggingface import (
        albert_config_from_huggingface,
        load_huggingface_state_dict,
        save_huggingface,
    )

    hf_config = shared_hf_config(classifier_dropout_prob=0.1)
    torch.manual_seed(0)
    reference = transformers.AlbertForMultipleChoice(hf_config).eval()
    with torch.no_grad():
        for name, p in reference.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(0.1 * torch.randn_like(p))
    model = AlbertMultipleChoice(albert_config_from_huggingface(hf_config.to_dict()))
    report = load_huggingface_state_dict(model, reference.state_dict(), hf_config.to_dict())
    assert report.complete and not report.unused and not report.shape_mismatches, report.summary()

    rng = np.random.default_rng(4)
    ids = rng.integers(0, 60, (2, C, 11)).astype("int32")
    mask = np.ones((2, C, 11), "int32")
    mask[0, 1, 8:] = 0
    mask[1, 3, 6:] = 0
    seg = np.zeros((2, C, 11), "int32")
    seg[:, :, 5:] = 1
    out = np.asarray(model({"input_ids": ids, "input_mask": mask, "segment_ids": seg}, training=False))
    with torch.no_grad():
        want = reference(
            input_ids=torch.tensor(ids, dtype=torch.long),
            attention_mask=torch.tensor(mask, dtype=torch.long),
            token_type_ids=torch.tensor(seg, dtype=torch.long),
        ).logits.numpy()
    assert want.shape == (2, C)
    np.testing.assert_allclose(out, want, atol=1e-4)

    # and back: written as Hugging Face weights, it loads as AlbertForMultipleChoice (named so in config.json)
    out_dir = tmp_path / "race_hf"
    save_huggingface(model, str(out_dir))
    assert json.loads((out_dir / "config.json").read_text())["architectures"] == ["AlbertForMultipleChoice"]
    loaded, info = transformers.AutoModelForMultipleChoice.from_pretrained(str(out_dir), output_loading_info=True)
    assert isinstance(loaded, transformers.AlbertForMultipleChoice)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    with torch.no_grad():
        again = loaded.eval()(
            input_ids=torch.tensor(ids, dtype=torch.long),
            attention_mask=torch.tensor(mask, dtype=torch.long),
            token_type_ids=torch.tensor(seg, dtype=torch.long),
        ).logits.numpy()
    np.testing.assert_allclose(out, again, atol=1e-4)
