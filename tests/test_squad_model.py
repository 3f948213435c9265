"""AlbertSquad (spec 4.2 models, spec 1.4 head names) against numpy restatements of ``squad_utils.py``.

The head formulas are restated here in float64 numpy from the encoder's ``sequence_output`` and the head
weights read back under their *official* names (so a misplaced or mis-transposed head variable fails too):
v1 ``seq . W^T + b``; v2 start log-probs with the ``p_mask`` masking, the inference beam by brute force (for
each of the top start_n_top starts, the whole end distribution, then its top end_n_top, in the official
``i * end_n_top + j`` order), the teacher-forced end log-probs, ``cls_logits`` and both official losses.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import restore_pretrained
from albert_tf.checkpoints.heads import heads_of
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
from albert_tf.tasks.squad.model import AlbertSquad, squad_loss, squad_per_example_loss

CONFIG = AlbertConfig.from_name("albert_tiny")
H = CONFIG.hidden_size
B, S = 3, 12
K1, K2 = 3, 4  # unequal, so a transposed beam layout cannot pass

# Spec 1.4, restated: the fine-tuning head names and shapes of run_squad_v1.py / run_squad_v2.py.
V1_HEAD = {"cls/squad/output_weights": (2, H), "cls/squad/output_bias": (2,)}
V2_HEAD = {
    "start_logits/dense/kernel": (H, 1),
    "start_logits/dense/bias": (1,),
    "end_logits/dense_0/kernel": (2 * H, H),
    "end_logits/dense_0/bias": (H,),
    "end_logits/LayerNorm/beta": (H,),
    "end_logits/LayerNorm/gamma": (H,),
    "end_logits/dense_1/kernel": (H, 1),
    "end_logits/dense_1/bias": (1,),
    "answer_class/dense_0/kernel": (2 * H, H),
    "answer_class/dense_0/bias": (H,),
    "answer_class/dense_1/kernel": (H, 1),
}


def features(seed=0):
    """[CLS] query [SEP] doc [SEP] pad: p_mask 0 on [CLS] and the doc, 1 on the query, [SEP]s and padding."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, CONFIG.vocab_size, (B, S)).astype("int32")
    mask = np.ones((B, S), "int32")
    mask[0, 10:] = 0
    seg = np.zeros((B, S), "int32")
    seg[:, 4:] = 1
    p_mask = np.zeros((B, S), "int32")
    p_mask[:, 1:4] = 1  # query + first [SEP]
    p_mask[:, S - 1] = 1  # last [SEP]
    p_mask[0, 9:] = 1  # example 0: [SEP] at 9, padding after
    return {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": seg,
        "p_mask": p_mask,
        "start_positions": np.array([5, 0, 7], "int32"),
        "end_positions": np.array([7, 0, 10], "int32"),
        "is_impossible": np.array([0, 1, 0], "int32"),
    }


def randomise_head(model, seed=1):
    """Random values under the official head names (biases and LayerNorm too, so none can hide)."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, ref in official_variable_map(model).items():
        if name.startswith("bert/"):
            continue
        base = 1.0 if name.endswith("gamma") else 0.0
        arrays[name] = (base + 0.5 * rng.standard_normal(ref.official_shape)).astype("float32")
    report = assign_official_arrays(model, arrays)
    assert sorted(report.loaded) == sorted(arrays)
    return {k: v.astype(np.float64) for k, v in arrays.items()}


def sequence_output(model, x):
    enc = model.encoder({k: x[k] for k in ("input_ids", "input_mask", "segment_ids")}, training=False)
    return np.asarray(enc["sequence_output"], np.float64)


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def masked(logits, p_mask):
    return logits * (1 - p_mask) - 1e30 * p_mask


def layer_norm(x, gamma, beta):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-12) * gamma + beta


def np_end_logits(w, h, h_start):
    """End logits [S] of one example given the start's hidden state: [h_t ; h_s] -> tanh dense -> LN -> dense."""
    x = np.concatenate([h, np.broadcast_to(h_start, h.shape)], axis=-1)
    x = np.tanh(x @ w["end_logits/dense_0/kernel"] + w["end_logits/dense_0/bias"])
    x = layer_norm(x, w["end_logits/LayerNorm/gamma"], w["end_logits/LayerNorm/beta"])
    return (x @ w["end_logits/dense_1/kernel"] + w["end_logits/dense_1/bias"])[:, 0]


def np_v2(w, seq, p_mask):
    """Start logits (masked), start log-probs and cls_logits of the whole batch, in float64."""
    start = masked((seq @ w["start_logits/dense/kernel"] + w["start_logits/dense/bias"])[..., 0], p_mask)
    start_p = np.exp(log_softmax(start))
    start_feature = np.einsum("bsh,bs->bh", seq, start_p)
    ans = np.concatenate([start_feature, seq[:, 0]], axis=-1)  # official order [start_feature ; cls_feature]
    ans = np.tanh(ans @ w["answer_class/dense_0/kernel"] + w["answer_class/dense_0/bias"])
    cls_logits = (ans @ w["answer_class/dense_1/kernel"])[:, 0]
    return start, log_softmax(start), cls_logits


def numpy_out(out):
    return {k: np.asarray(v) for k, v in out.items()}


# ----------------------------------------------------------------------------- outputs


def test_output_names_shapes_dtypes_and_errors():
    x = features()
    v1 = AlbertSquad(CONFIG)
    for training in (False, True):
        out = v1(x, training=training)
        assert sorted(out) == ["end_logits", "start_logits"]
        assert all(tuple(v.shape) == (B, S) and v.dtype == "float32" for v in out.values())
    v2 = AlbertSquad(CONFIG, version_2_with_negative=True, start_n_top=K1, end_n_top=K2)
    train = v2(x, training=True)
    assert {k: (tuple(v.shape), v.dtype.name) for k, v in train.items()} == {
        "start_log_probs": ((B, S), "float32"),
        "end_log_probs": ((B, S), "float32"),
        "cls_logits": ((B,), "float32"),
    }
    want = {
        "start_top_log_probs": ((B, K1), "float32"),
        "start_top_index": ((B, K1), "int32"),
        "end_top_log_probs": ((B, K1 * K2), "float32"),
        "end_top_index": ((B, K1 * K2), "int32"),
        "cls_logits": ((B,), "float32"),
    }
    for call in (
        lambda: v2(x, training=False),
        lambda: v2(x),
        lambda: v2({k: v for k, v in x.items() if k != "start_positions"}, training=True),
    ):
        assert {k: (tuple(v.shape), v.dtype.name) for k, v in call().items()} == want
    with pytest.raises(ValueError, match="start_n_top"):
        AlbertSquad(CONFIG, version_2_with_negative=True, start_n_top=0)
    with pytest.raises(KeyError, match="segment_ids"):
        v1({"input_ids": x["input_ids"], "input_mask": x["input_mask"]})


def test_every_variable_exists_before_any_call():
    """Inference alone must not leave the training-only path unbuilt (and vice versa): all built in __init__."""
    v2 = AlbertSquad(CONFIG, version_2_with_negative=True)
    assert v2.built
    names = official_variable_map(v2)
    assert {n: names[n].official_shape for n in V2_HEAD} == V2_HEAD
    n_before = len(v2.weights)
    v2(features(), training=False)
    assert len(v2.weights) == n_before


# ----------------------------------------------------------------------------- v1


def test_v1_logits_and_loss_restate_the_official_formulas():
    x = features()
    model = AlbertSquad(CONFIG)
    model(x)
    w = randomise_head(model)
    out = numpy_out(model(x, training=False))
    seq = sequence_output(model, x)
    logits = seq @ w["cls/squad/output_weights"].T + w["cls/squad/output_bias"]
    np.testing.assert_allclose(out["start_logits"], logits[..., 0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["end_logits"], logits[..., 1], rtol=1e-5, atol=1e-5)

    def ce(lg, pos):
        return -log_softmax(lg.astype(np.float64))[np.arange(B), pos]

    per_example = np.asarray(squad_per_example_loss(out, x, version_2_with_negative=False))
    want = (ce(out["start_logits"], x["start_positions"]) + ce(out["end_logits"], x["end_positions"])) / 2
    np.testing.assert_allclose(per_example, want, rtol=1e-5)
    official_total = (np.mean(ce(out["start_logits"], x["start_positions"]))
                      + np.mean(ce(out["end_logits"], x["end_positions"]))) / 2.0
    assert float(squad_loss(out, x, False)) == pytest.approx(official_total, rel=1e-5)


def test_v1_head_initialiser_is_truncated_normal_002():
    model = AlbertSquad(CONFIG.replace(hidden_size=256, num_attention_heads=4, initializer_range=0.1))
    k = np.asarray(model.squad_output.kernel)
    assert np.abs(k).max() <= 2 * 0.02 + 1e-7  # 0.02 hard-coded by the official, not initializer_range
    assert k.std() == pytest.approx(0.02 * 0.8796, rel=0.1)
    assert np.all(np.asarray(model.squad_output.bias) == 0)


# ----------------------------------------------------------------------------- v2


@pytest.fixture(scope="module")
def v2_case():
    x = features()
    model = AlbertSquad(CONFIG, version_2_with_negative=True, start_n_top=K1, end_n_top=K2, dropout_prob=0.0)
    w = randomise_head(model)
    return model, w, x, sequence_output(model, x)


def test_v2_start_log_probs_and_cls_logits(v2_case):
    model, w, x, seq = v2_case
    _, start_lp, cls_logits = np_v2(w, seq, x["p_mask"])
    train = numpy_out(model(x, training=True))
    allowed = x["p_mask"] == 0
    np.testing.assert_allclose(train["start_log_probs"][allowed], start_lp[allowed], rtol=1e-5, atol=1e-5)
    assert np.all(train["start_log_probs"][~allowed] < -1e29)  # masked: about -1e30
    np.testing.assert_allclose(train["cls_logits"], cls_logits, rtol=1e-4, atol=1e-5)
    infer = numpy_out(model(x, training=False))
    np.testing.assert_allclose(infer["cls_logits"], cls_logits, rtol=1e-4, atol=1e-5)


def test_v2_teacher_forced_end_log_probs(v2_case):
    model, w, x, seq = v2_case
    got = numpy_out(model(x, training=True))["end_log_probs"]
    for b in range(B):
        s = x["start_positions"][b]
        want = log_softmax(masked(np_end_logits(w, seq[b], seq[b, s]), x["p_mask"][b]))
        allowed = x["p_mask"][b] == 0
        np.testing.assert_allclose(got[b][allowed], want[allowed], rtol=1e-5, atol=1e-5)
        assert np.all(got[b][~allowed] < -1e29)


def test_v2_inference_beam_is_the_brute_force_beam(v2_case):
    model, w, x, seq = v2_case
    out = numpy_out(model(x, training=False))
    _, start_lp, _ = np_v2(w, seq, x["p_mask"])
    for b in range(B):
        top_starts = np.argsort(-start_lp[b], kind="stable")[:K1]
        np.testing.assert_array_equal(out["start_top_index"][b], top_starts)
        np.testing.assert_allclose(out["start_top_log_probs"][b], start_lp[b, top_starts], rtol=1e-5, atol=1e-5)
        for i, s in enumerate(top_starts):
            end_lp = log_softmax(masked(np_end_logits(w, seq[b], seq[b, s]), x["p_mask"][b]))
            top_ends = np.argsort(-end_lp, kind="stable")[:K2]
            sl = slice(i * K2, (i + 1) * K2)  # official layout: end j of start i at i * K2 + j
            np.testing.assert_array_equal(out["end_top_index"][b, sl], top_ends)
            np.testing.assert_allclose(out["end_top_log_probs"][b, sl], end_lp[top_ends], rtol=1e-5, atol=1e-5)
        # p_mask positions never appear in the beam
        assert not x["p_mask"][b][out["start_top_index"][b]].any()
        assert not x["p_mask"][b][out["end_top_index"][b]].any()


def test_v2_loss_is_the_official_total_loss(v2_case):
    model, _, x, _ = v2_case
    out = numpy_out(model(x, training=True))
    start_ce = -out["start_log_probs"].astype(np.float64)[np.arange(B), x["start_positions"]]
    end_ce = -out["end_log_probs"].astype(np.float64)[np.arange(B), x["end_positions"]]
    z, lg = x["is_impossible"].astype(np.float64), out["cls_logits"].astype(np.float64)
    sigmoid_ce = -(z * np.log(1 / (1 + np.exp(-lg))) + (1 - z) * np.log(1 - 1 / (1 + np.exp(-lg))))
    official_total = (np.mean(start_ce) + np.mean(end_ce)) * 0.5 + np.mean(sigmoid_ce) * 0.5
    per_example = np.asarray(squad_per_example_loss(out, x, version_2_with_negative=True))
    np.testing.assert_allclose(per_example, (start_ce + end_ce) * 0.5 + 0.5 * sigmoid_ce, rtol=1e-5)
    assert float(squad_loss(out, x, True)) == pytest.approx(official_total, rel=1e-5)
    with pytest.raises(KeyError, match="training=True"):
        squad_per_example_loss(numpy_out(model(x, training=False)), x, True)


def test_v2_dropout_only_in_training_and_every_variable_gets_a_gradient():
    x = features()
    model = AlbertSquad(CONFIG, version_2_with_negative=True, dropout_prob=0.5)
    a = np.asarray(model(x, training=False)["cls_logits"])
    np.testing.assert_array_equal(a, np.asarray(model(x, training=False)["cls_logits"]))
    assert not np.allclose(a, np.asarray(model(x, training=True)["cls_logits"]))
    with tf.GradientTape() as tape:
        loss = squad_loss(model(x, training=True), x, True)
    grads = tape.gradient(loss, model.trainable_variables)
    names = {id(ref.variable): n for n, ref in official_variable_map(model).items()}
    missing = [names.get(id(v), v.path) for v, g in zip(model.trainable_variables, grads) if g is None]
    # the pooler is unused by SQuAD (as in the official model); every head variable must train
    assert missing == ["bert/pooler/dense/kernel", "bert/pooler/dense/bias"]


@pytest.mark.heavy
def test_distribution_strategy_and_jit():
    x = features()
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = AlbertSquad(CONFIG, version_2_with_negative=True, start_n_top=K1, end_n_top=K2)
        optimizer = keras.optimizers.SGD(0.1)

    @tf.function
    def train_step(batch):
        def step(batch):
            with tf.GradientTape() as tape:
                loss = squad_loss(model(batch, training=True), batch, True)
            variables = model.trainable_variables
            optimizer.apply_gradients(
                [(g, v) for g, v in zip(tape.gradient(loss, variables), variables) if g is not None]
            )
            return loss

        return strategy.run(step, args=(batch,))

    before = np.asarray(model.start_dense.kernel).copy()
    assert np.isfinite(float(train_step({k: tf.constant(v) for k, v in x.items()})))
    assert not np.array_equal(before, np.asarray(model.start_dense.kernel))
    eager = numpy_out(model(x, training=False))
    jitted = numpy_out(tf.function(lambda b: model(b, training=False), jit_compile=True)(x))
    np.testing.assert_array_equal(jitted["start_top_index"], eager["start_top_index"])
    np.testing.assert_allclose(jitted["end_top_log_probs"], eager["end_top_log_probs"], rtol=1e-4, atol=1e-4)


def test_mixed_bfloat16_outputs_float32():
    x = features()
    for v2 in (False, True):
        model = AlbertSquad(CONFIG, version_2_with_negative=v2, dtype="mixed_bfloat16")
        assert (model.start_dense if v2 else model.squad_output).compute_dtype == "bfloat16"
        for training in (False, True):
            out = model(x, training=training)
            for key, value in out.items():
                want = "int32" if key.endswith("index") else "float32"
                assert value.dtype == want, (v2, training, key)
                assert np.all(np.isfinite(np.asarray(value)) | (np.asarray(value) < -1e29))
        if v2:
            out = numpy_out(model(x, training=False))
            for b in range(B):
                assert not x["p_mask"][b][out["start_top_index"][b]].any()
                assert not x["p_mask"][b][out["end_top_index"][b]].any()
            assert np.isfinite(float(squad_loss(model(x, training=True), x, True)))


# ----------------------------------------------------------------------------- serialisation


@pytest.mark.parametrize("v2", [False, True])
def test_get_config_round_trip_and_keras_file(tmp_path, v2):
    x = features()
    model = AlbertSquad(CONFIG, version_2_with_negative=v2, start_n_top=K1, end_n_top=K2, dropout_prob=0.2)
    randomise_head(model)
    want = numpy_out(model(x, training=False))
    config = model.get_config()
    assert config["version_2_with_negative"] is v2 and config["start_n_top"] == K1 and config["dropout_prob"] == 0.2
    rebuilt = AlbertSquad.from_config(config)
    assert rebuilt.get_config() == config
    rebuilt.set_weights(model.get_weights())
    for key, value in numpy_out(rebuilt(x, training=False)).items():
        np.testing.assert_array_equal(value, want[key])
    path = str(tmp_path / "squad.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, AlbertSquad) and loaded.version_2_with_negative is v2
    for key, value in numpy_out(loaded(x, training=False)).items():
        np.testing.assert_array_equal(value, want[key])
    preset = AlbertSquad.from_preset("albert_tiny", version_2_with_negative=v2, vocab_size=77)
    assert preset.config.vocab_size == 77 and preset.version_2_with_negative is v2


# ----------------------------------------------------------------------------- official checkpoints


@pytest.mark.parametrize("v2", [False, True])
def test_official_names_and_tf1_checkpoint_round_trip(tmp_path, v2):
    x = features()
    model = AlbertSquad(CONFIG, version_2_with_negative=v2)
    randomise_head(model)
    head = V2_HEAD if v2 else V1_HEAD
    names = {n: ref.official_shape for n, ref in official_variable_map(model).items()}
    encoder_names = official_variable_shapes(CONFIG, pretraining=False)
    assert names == {**encoder_names, **head}
    assert names == official_variable_shapes(CONFIG, heads=heads_of(model), pretraining=False)
    assert all(n.startswith("bert/") for n in encoder_names)

    prefix = save_official_checkpoint(model, str(tmp_path / "ckpt" / "model.ckpt-7"), global_step=7)
    listed = list_checkpoint(prefix)
    assert {n: s for n, (s, _) in listed.items() if n != "global_step"} == names
    assert all(listed[n][1] == "float32" for n in head)

    fresh = AlbertSquad(CONFIG, version_2_with_negative=v2)
    report = load_official_checkpoint(fresh, prefix)
    assert report.complete and not report.unused, report.summary()
    want = numpy_out(model(x, training=False))
    for key, value in numpy_out(fresh(x, training=False)).items():
        np.testing.assert_array_equal(value, want[key])
    if not v2:  # stored [2, H]: the transpose of our Dense kernel
        np.testing.assert_array_equal(
            model_official_arrays(fresh)["cls/squad/output_weights"], np.asarray(model.squad_output.kernel).T
        )


def test_init_from_pretraining_checkpoint_reports_the_head_missing(tmp_path):
    """An official pretraining checkpoint and a pretraining run's own (trainer layout) both initialise the encoder."""
    from albert_tf import checkpoints as checkpointing

    source = AlbertPretrainer(CONFIG)
    official = save_official_checkpoint(source, str(tmp_path / "pre" / "model.ckpt-1"))
    trainer = tf.train.Checkpoint(
        **{checkpointing.WEIGHTS_KEY: checkpointing.model_weights(source)},
        global_step=tf.Variable(9, dtype=tf.int64),
    ).write(str(tmp_path / "run" / "ckpt-9"))
    for prefix, v2, head in ((official, False, V1_HEAD), (official, True, V2_HEAD), (trainer, True, V2_HEAD)):
        model = AlbertSquad(CONFIG, version_2_with_negative=v2)
        report = restore_pretrained(model, prefix)
        assert sorted(report.missing) == sorted(head)
        assert len(report.unused) == 7  # the MLM and SOP heads
        got = model_official_arrays(model)
        for name, value in model_official_arrays(source).items():
            if name.startswith("bert/"):
                np.testing.assert_array_equal(got[name], value)


# ----------------------------------------------------------------------------- Hugging Face


def test_v1_from_huggingface_question_answering_matches_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from albert_tf.checkpoints.huggingface import (
        albert_config_from_huggingface,
        load_huggingface_state_dict,
        save_huggingface,
    )

    hf_config = transformers.AlbertConfig(
        vocab_size=60, embedding_size=8, hidden_size=16, num_hidden_layers=4, num_hidden_groups=2,
        inner_group_num=2, num_attention_heads=4, intermediate_size=24, hidden_act="gelu_new",
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=32, num_labels=2,
    )
    torch.manual_seed(0)
    reference = transformers.AlbertForQuestionAnswering(hf_config).eval()
    with torch.no_grad():
        for name, p in reference.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(0.1 * torch.randn_like(p))
    model = AlbertSquad(albert_config_from_huggingface(hf_config.to_dict()))
    report = load_huggingface_state_dict(model, reference.state_dict(), hf_config.to_dict())
    # AlbertForQuestionAnswering has no pooler (add_pooling_layer=False); SQuAD does not use it
    assert sorted(report.missing) == ["bert/pooler/dense/bias", "bert/pooler/dense/kernel"], report.summary()
    assert not report.unused and not report.shape_mismatches

    rng = np.random.default_rng(4)
    ids = rng.integers(0, 60, (2, 11)).astype("int32")
    mask = np.ones((2, 11), "int32")
    mask[0, 8:] = 0
    seg = np.zeros((2, 11), "int32")
    seg[:, 5:] = 1
    out = numpy_out(model({"input_ids": ids, "input_mask": mask, "segment_ids": seg}, training=False))
    with torch.no_grad():
        want = reference(
            input_ids=torch.tensor(ids, dtype=torch.long),
            attention_mask=torch.tensor(mask, dtype=torch.long),
            token_type_ids=torch.tensor(seg, dtype=torch.long),
        )
    np.testing.assert_allclose(out["start_logits"], want.start_logits.numpy(), atol=1e-4)
    np.testing.assert_allclose(out["end_logits"], want.end_logits.numpy(), atol=1e-4)

    # and back: our v1 model written as Hugging Face weights loads as AlbertForQuestionAnswering
    save_huggingface(model, str(tmp_path / "qa"))
    qa_class = transformers.AlbertForQuestionAnswering
    loaded, info = qa_class.from_pretrained(str(tmp_path / "qa"), output_loading_info=True)
    assert not info["missing_keys"], info
    with torch.no_grad():
        again = loaded.eval()(
            input_ids=torch.tensor(ids, dtype=torch.long),
            attention_mask=torch.tensor(mask, dtype=torch.long),
            token_type_ids=torch.tensor(seg, dtype=torch.long),
        )
    np.testing.assert_allclose(out["start_logits"], again.start_logits.numpy(), atol=1e-4)
    np.testing.assert_allclose(out["end_logits"], again.end_logits.numpy(), atol=1e-4)


def test_v1_training_gradient_matches_pytorch_but_for_its_frozen_pad_row():
    """The official v1 loss softmaxes over padding positions, so the ``<pad>`` token's embedding gets a gradient.
    albert-tf trains that row as the official ``embedding_lookup`` does; transformers' ``AlbertEmbeddings`` has
    ``padding_idx=pad_token_id`` and leaves it at 0. With that row trained on both sides the loss and every
    embedding gradient agree (benchmarks/README.md: the SQuAD v1 parity gap and ``--lockstep``)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from albert_tf.checkpoints.huggingface import albert_config_from_huggingface, load_huggingface_state_dict

    hf_config = transformers.AlbertConfig(
        vocab_size=60, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=24, hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        max_position_embeddings=32, pad_token_id=0,
    )
    torch.manual_seed(1)
    reference = transformers.AlbertForQuestionAnswering(hf_config).train()
    model = AlbertSquad(albert_config_from_huggingface(hf_config.to_dict()))
    load_huggingface_state_dict(model, reference.state_dict(), hf_config.to_dict())

    rng = np.random.default_rng(5)
    ids = rng.integers(1, 60, (3, 12)).astype("int32")
    mask = np.ones((3, 12), "int32")
    mask[0, 7:] = mask[1, 10:] = 0
    ids[mask == 0] = 0  # <pad>
    seg = np.zeros((3, 12), "int32")
    seg[:, 4:] = 1
    starts, ends = np.array([5, 4, 9], "int32"), np.array([6, 8, 11], "int32")
    features = {"input_ids": ids, "input_mask": mask, "segment_ids": seg, "start_positions": starts,
                "end_positions": ends}
    word_embeddings = next(v for v in model.trainable_variables if "word_embeddings" in v.path)
    with tf.GradientTape() as tape:
        loss = squad_loss(model(features, training=True), features, False)
    ours = tf.convert_to_tensor(tape.gradient(loss, word_embeddings)).numpy()
    assert np.abs(ours[0]).max() > 1e-4  # the padding positions' logits reach the loss through the <pad> row

    def theirs(pad_row_trained: bool):
        reference.zero_grad()
        reference.albert.embeddings.word_embeddings.padding_idx = None if pad_row_trained else 0
        out = reference(input_ids=torch.tensor(ids, dtype=torch.long), attention_mask=torch.tensor(mask),
                        token_type_ids=torch.tensor(seg, dtype=torch.long),
                        start_positions=torch.tensor(starts, dtype=torch.long),
                        end_positions=torch.tensor(ends, dtype=torch.long))
        out.loss.backward()
        return out.loss.item(), reference.albert.embeddings.word_embeddings.weight.grad.numpy().copy()

    loss_frozen, frozen = theirs(pad_row_trained=False)
    assert float(loss) == pytest.approx(loss_frozen, rel=1e-5)  # the same loss: only the gradient differs
    assert not frozen[0].any()
    np.testing.assert_allclose(ours[1:], frozen[1:], atol=1e-5)
    loss_trained, trained = theirs(pad_row_trained=True)
    assert loss_trained == pytest.approx(loss_frozen, rel=1e-6)
    np.testing.assert_allclose(ours, trained, atol=1e-5)
