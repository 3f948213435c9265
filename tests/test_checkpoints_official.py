"""Official TF1 checkpoints in and out (spec 1.4), checked against independent references.

* Checkpoints to *read* are written here with a TF1 graph and ``tf.compat.v1.train.Saver``,
  exactly as the official scripts do, from known random arrays (optimizer slots and
  ``global_step`` included, with and without the TF-Hub ``module/`` prefix).
* "Every variable landed where the spec says" is checked by a numpy forward pass written in
  this file from the spec 1.2 formulas on the *official-name* arrays, compared with our model.
* The names/shapes a written checkpoint must list are restated here from spec 1.4.
* Our written checkpoints are read back by the TF1 loader the official runners use
  (``tf.compat.v1.train.init_from_checkpoint`` in a graph).
"""

from __future__ import annotations

import math
import os
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import ConfigMismatchError, NotAlbertCheckpointError, restore_pretrained
from albert_tf.checkpoints.official import (
    check_config_matches,
    list_checkpoint,
    load_official_checkpoint,
    official_variable_shapes,
    save_official_checkpoint,
)
from albert_tf.checkpoints.report import CheckpointError, model_official_arrays
from albert_tf.config import AlbertConfig
from albert_tf.modeling import AlbertEncoder, AlbertPretrainer

ROOT = pathlib.Path(__file__).resolve().parent.parent
TINY = dict(
    vocab_size=40,
    embedding_size=8,
    hidden_size=12,
    num_hidden_layers=4,
    num_attention_heads=3,
    intermediate_size=20,
    max_position_embeddings=16,
    type_vocab_size=2,
    hidden_act="gelu",
)

# ----------------------------------------------------------------------------- spec 1.4, restated


def spec_names_and_shapes(c: AlbertConfig, pretraining_heads: bool = True) -> dict[str, tuple[int, ...]]:
    """Spec 1.4's listing, written out independently of the code under test."""
    V, E, H, inter = c.vocab_size, c.embedding_size, c.hidden_size, c.intermediate_size
    T, P = c.type_vocab_size, c.max_position_embeddings
    out = {
        "bert/embeddings/word_embeddings": (V, E),
        "bert/embeddings/token_type_embeddings": (T, E),
        "bert/embeddings/position_embeddings": (P, E),
        "bert/embeddings/LayerNorm/beta": (E,),
        "bert/embeddings/LayerNorm/gamma": (E,),
        "bert/pooler/dense/kernel": (H, H),
        "bert/pooler/dense/bias": (H,),
    }
    if E != H:
        out["bert/encoder/embedding_hidden_mapping_in/kernel"] = (E, H)
        out["bert/encoder/embedding_hidden_mapping_in/bias"] = (H,)
    block = """attention_1/self/query/kernel H,H
attention_1/self/query/bias H
attention_1/self/key/kernel H,H
attention_1/self/key/bias H
attention_1/self/value/kernel H,H
attention_1/self/value/bias H
attention_1/output/dense/kernel H,H
attention_1/output/dense/bias H
LayerNorm/beta H
LayerNorm/gamma H
ffn_1/intermediate/dense/kernel H,I
ffn_1/intermediate/dense/bias I
ffn_1/intermediate/output/dense/kernel I,H
ffn_1/intermediate/output/dense/bias H
LayerNorm_1/beta H
LayerNorm_1/gamma H"""
    dims = {"H": H, "I": inter}
    for g in range(c.num_hidden_groups):
        for k in range(c.inner_group_num):
            for line in block.splitlines():
                suffix, shape = line.split()
                name = f"bert/encoder/transformer/group_{g}/inner_group_{k}/{suffix}"
                out[name] = tuple(dims[d] for d in shape.split(","))
    if pretraining_heads:
        out.update(
            {
                "cls/predictions/transform/dense/kernel": (H, E),
                "cls/predictions/transform/dense/bias": (E,),
                "cls/predictions/transform/LayerNorm/beta": (E,),
                "cls/predictions/transform/LayerNorm/gamma": (E,),
                "cls/predictions/output_bias": (V,),
                "cls/seq_relationship/output_weights": (2, H),
                "cls/seq_relationship/output_bias": (2,),
            }
        )
    return out


def random_official_arrays(c: AlbertConfig, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.RandomState(seed)
    arrays = {}
    for name, shape in spec_names_and_shapes(c).items():
        scale = 0.3 if len(shape) > 1 else 0.1
        base = 1.0 if name.endswith("gamma") else 0.0
        arrays[name] = (base + scale * rng.standard_normal(shape)).astype(np.float32)
    return arrays


# ----------------------------------------------------------------------------- TF1 writer (the official way)


def write_with_tf1_saver(arrays, prefix: str, module: bool = False, optimizer_slots: bool = False, step: int = 123):
    """Build a TF1 graph with ``tf.compat.v1.get_variable`` under the official names and ``Saver.save`` it."""
    graph = tf.Graph()
    with graph.as_default():
        scope = "module/" if module else ""
        for name, value in arrays.items():
            tf.compat.v1.get_variable(scope + name, initializer=tf.constant(value))
            if optimizer_slots:
                for slot in ("adam_m", "adam_v"):
                    tf.compat.v1.get_variable(
                        f"{scope}{name}/{slot}", initializer=tf.constant(np.full(value.shape, 7.0, np.float32))
                    )
        tf.compat.v1.get_variable(
            scope + "global_step", initializer=tf.constant(step, tf.int64), dtype=tf.int64, trainable=False
        )
        if optimizer_slots:
            # a TF1 Adam slot and beta power from other optimizers, to be ignored as well
            tf.compat.v1.get_variable("beta1_power", initializer=tf.constant(0.9))
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return saver.save(sess, prefix)


# ----------------------------------------------------------------------------- numpy forward (spec 1.2)


def _layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def reference_forward(w, c: AlbertConfig, ids, mask, seg, positions):
    """Spec 1.2 on float64 numpy arrays keyed by official names: (sequence, pooled, mlm logits, sop logits)."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    B, S = ids.shape
    N = c.num_attention_heads
    D = c.hidden_size // N
    x = w["bert/embeddings/word_embeddings"][ids] + w["bert/embeddings/token_type_embeddings"][seg]
    x = x + w["bert/embeddings/position_embeddings"][:S][None]
    x = _layer_norm(x, w["bert/embeddings/LayerNorm/gamma"], w["bert/embeddings/LayerNorm/beta"])
    if c.embedding_size != c.hidden_size:
        x = (
            x @ w["bert/encoder/embedding_hidden_mapping_in/kernel"]
            + w["bert/encoder/embedding_hidden_mapping_in/bias"]
        )
    bias = (1.0 - mask[:, None, None, :].astype(np.float64)) * -10000.0
    for layer in range(c.num_hidden_layers):
        g = int(layer / c.num_hidden_layers * c.num_hidden_groups)
        for k in range(c.inner_group_num):
            p = f"bert/encoder/transformer/group_{g}/inner_group_{k}/"

            def proj(name, h, p=p):
                return (h @ w[p + f"attention_1/self/{name}/kernel"] + w[p + f"attention_1/self/{name}/bias"]).reshape(
                    B, S, N, D
                )

            q, kk, v = proj("query", x), proj("key", x), proj("value", x)
            scores = np.einsum("bfnd,btnd->bnft", q, kk) / math.sqrt(D) + bias
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            ctx = np.einsum("bnft,btnd->bfnd", probs, v).reshape(B, S, N * D)
            a = ctx @ w[p + "attention_1/output/dense/kernel"] + w[p + "attention_1/output/dense/bias"]
            a = _layer_norm(a + x, w[p + "LayerNorm/gamma"], w[p + "LayerNorm/beta"])
            f = _gelu_tanh(a @ w[p + "ffn_1/intermediate/dense/kernel"] + w[p + "ffn_1/intermediate/dense/bias"])
            f = f @ w[p + "ffn_1/intermediate/output/dense/kernel"] + w[p + "ffn_1/intermediate/output/dense/bias"]
            x = _layer_norm(f + a, w[p + "LayerNorm_1/gamma"], w[p + "LayerNorm_1/beta"])
    pooled = np.tanh(x[:, 0] @ w["bert/pooler/dense/kernel"] + w["bert/pooler/dense/bias"])
    picked = np.take_along_axis(x, positions[..., None], axis=1)
    t = _gelu_tanh(picked @ w["cls/predictions/transform/dense/kernel"] + w["cls/predictions/transform/dense/bias"])
    t = _layer_norm(t, w["cls/predictions/transform/LayerNorm/gamma"], w["cls/predictions/transform/LayerNorm/beta"])
    mlm = t @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]
    sop = pooled @ w["cls/seq_relationship/output_weights"].T + w["cls/seq_relationship/output_bias"]
    return x, pooled, mlm, sop


def example_inputs(c: AlbertConfig, seed: int = 1):
    rng = np.random.RandomState(seed)
    B, S = 2, 9
    ids = rng.randint(0, c.vocab_size, (B, S)).astype(np.int32)
    mask = np.ones((B, S), np.int32)
    mask[1, 6:] = 0
    seg = np.zeros((B, S), np.int32)
    seg[:, 5:] = 1
    positions = np.array([[1, 3, 8], [0, 2, 5]], np.int32)
    return ids, mask, seg, positions


def model_outputs(model, c: AlbertConfig):
    ids, mask, seg, positions = example_inputs(c)
    out = model(
        {"input_ids": ids, "input_mask": mask, "segment_ids": seg, "masked_lm_positions": positions}, training=False
    )
    return {k: np.asarray(out[k]) for k in ("sequence_output", "pooled_output", "mlm_logits", "sop_logits")}


# ----------------------------------------------------------------------------- tests


@pytest.mark.parametrize(
    "groups,inner,module,slots",
    [(1, 1, False, False), (1, 1, True, True), (2, 2, False, True), (2, 2, True, False)],
)
@pytest.mark.heavy
def test_tf1_saver_checkpoint_loads_where_spec_says(tmp_path, groups, inner, module, slots):
    c = AlbertConfig(**TINY, num_hidden_groups=groups, inner_group_num=inner)
    arrays = random_official_arrays(c, seed=groups * 10 + inner)
    prefix = write_with_tf1_saver(arrays, str(tmp_path / "model.ckpt-best"), module=module, optimizer_slots=slots)

    model = AlbertPretrainer(c, last_layer_subset=False)  # full last layer: sequence_output is compared
    report = load_official_checkpoint(model, prefix)
    assert report.complete, report.summary()
    assert sorted(report.loaded) == sorted(arrays)
    assert report.unused == []
    # optimizer slots (2 per variable), global_step and beta1_power are ignored, and counted
    assert len(report.ignored) == (2 * len(arrays) + 2 if slots else 1)

    # the spec's forward pass on the official-name arrays equals our model's outputs
    ids, mask, seg, positions = example_inputs(c)
    ref_seq, ref_pooled, ref_mlm, ref_sop = reference_forward(arrays, c, ids, mask, seg, positions)
    got = model_outputs(model, c)
    np.testing.assert_allclose(got["sequence_output"], ref_seq, atol=2e-5)
    np.testing.assert_allclose(got["pooled_output"], ref_pooled, atol=2e-5)
    np.testing.assert_allclose(got["mlm_logits"], ref_mlm, atol=2e-5)
    np.testing.assert_allclose(got["sop_logits"], ref_sop, atol=2e-5)
    # the tied table and the stored-[out, in] SOP weights, checked directly as well
    np.testing.assert_array_equal(
        np.asarray(model.encoder.word_embeddings.embeddings), arrays["bert/embeddings/word_embeddings"]
    )


def test_group_assignment_matters(tmp_path):
    """Swapping two groups' arrays changes the output: the reference check above can fail."""
    c = AlbertConfig(**TINY, num_hidden_groups=2, inner_group_num=2)
    arrays = random_official_arrays(c, seed=5)
    swapped = dict(arrays)
    for name in arrays:
        if "/group_0/" in name:
            other = name.replace("/group_0/", "/group_1/")
            swapped[name], swapped[other] = arrays[other], arrays[name]
    model = AlbertPretrainer(c, last_layer_subset=False)  # full last layer: sequence_output is compared
    load_official_checkpoint(model, write_with_tf1_saver(swapped, str(tmp_path / "m.ckpt")))
    ids, mask, seg, positions = example_inputs(c)
    ref_seq = reference_forward(arrays, c, ids, mask, seg, positions)[0]
    assert np.abs(model_outputs(model, c)["sequence_output"] - ref_seq).max() > 1e-2


def _round_trip(c: AlbertConfig, tmp_path, seed_a: int = 0):
    import keras

    keras.utils.set_random_seed(seed_a)
    source = AlbertPretrainer(c)
    prefix = save_official_checkpoint(source, str(tmp_path / "model.ckpt-best"), global_step=42)
    listing = list_checkpoint(prefix)
    expected = spec_names_and_shapes(c)
    stored = {n: s for n, (s, _) in listing.items() if n != "global_step"}
    assert stored == expected  # exactly the spec's names and shapes: none extra, none missing
    assert {d for n, (_, d) in listing.items() if n != "global_step"} == {"float32"}
    assert listing["global_step"] == ((), "int64")

    keras.utils.set_random_seed(seed_a + 1)
    target = AlbertPretrainer(c)
    report = load_official_checkpoint(target, prefix)
    assert report.complete and not report.unused, report.summary()
    a, b = model_official_arrays(source), model_official_arrays(target)
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name]), name  # bit-identical
    for x, y in zip(source.weights, target.weights, strict=True):
        assert np.array_equal(np.asarray(x), np.asarray(y))
    return prefix


@pytest.mark.parametrize("groups,inner", [(1, 1), (2, 2)])
def test_round_trip_tiny_bit_identical_and_spec_listing(tmp_path, groups, inner):
    c = AlbertConfig(**TINY, num_hidden_groups=groups, inner_group_num=inner)
    _round_trip(c, tmp_path)


def test_round_trip_base_v2_config(tmp_path):
    c = AlbertConfig.from_json_file(str(ROOT / "configs" / "albert_base_v2.json"))
    _round_trip(c, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["albert_large_v2", "albert_xlarge_v2", "albert_xxlarge_v2", "albert_base_v1"])
def test_round_trip_size_configs(tmp_path, name):
    c = AlbertConfig.from_json_file(str(ROOT / "configs" / f"{name}.json"))
    _round_trip(c, tmp_path)


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "configs").glob("*.json")))
def test_spec_listing_for_every_shipped_config(name):
    """Graph-free listing (what the writer checks against) equals the spec, for all shipped configs."""
    c = AlbertConfig.from_json_file(str(ROOT / "configs" / f"{name}.json"))
    assert official_variable_shapes(c) == spec_names_and_shapes(c)


def test_official_tf1_loader_reads_our_checkpoint(tmp_path):
    """``init_from_checkpoint`` in a TF1 graph (what run_classifier/run_squad call) restores our file."""
    c = AlbertConfig(**TINY, num_hidden_groups=2, inner_group_num=2)
    source = AlbertPretrainer(c)
    prefix = save_official_checkpoint(source, str(tmp_path / "out" / "model.ckpt-5"), global_step=5)
    ours = model_official_arrays(source)
    graph = tf.Graph()
    with graph.as_default():
        variables = {
            name: tf.compat.v1.get_variable(name, shape=shape, initializer=tf.compat.v1.zeros_initializer())
            for name, shape in spec_names_and_shapes(c).items()
        }
        step = tf.compat.v1.train.get_or_create_global_step()
        tf.compat.v1.train.init_from_checkpoint(prefix, {name: name for name in variables})
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            values = sess.run(variables)
            assert sess.run(step) == 0  # init_from_checkpoint does not touch global_step (not mapped)
        saver = tf.compat.v1.train.Saver(list(variables.values()) + [step])
        with tf.compat.v1.Session(graph=graph) as sess:
            saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path / "out")))
            assert sess.run(step) == 5
    for name, value in values.items():
        np.testing.assert_array_equal(value, ours[name])


def test_module_prefix_written_and_read(tmp_path):
    c = AlbertConfig(**TINY)
    source = AlbertPretrainer(c)
    from albert_tf.checkpoints.official import write_official_arrays

    prefix = write_official_arrays(model_official_arrays(source), str(tmp_path / "hub.ckpt"), 3, module_prefix=True)
    names = list_checkpoint(prefix)
    assert all(n.startswith("module/") for n in names)
    target = AlbertPretrainer(c)
    assert restore_pretrained(target, prefix).complete


def _write_named(tmp_path, names_shapes, name="other.ckpt"):
    from albert_tf.checkpoints.official import write_official_arrays

    arrays = {n: np.zeros(s, np.float32) for n, s in names_shapes.items()}
    return write_official_arrays(arrays, str(tmp_path / name), None)


def test_refuses_brightmart_layout(tmp_path):
    prefix = _write_named(
        tmp_path,
        {
            "bert/embeddings/word_embeddings": (21128, 4),
            "bert/embeddings/word_embeddings_2": (4, 8),
            "bert/encoder/layer_shared/attention/self/query/kernel": (8, 8),
        },
    )
    with pytest.raises(NotAlbertCheckpointError, match="brightmart"):
        restore_pretrained(AlbertEncoder(AlbertConfig(**TINY)), prefix)


def test_refuses_bert_layout_and_tf2_object_checkpoint(tmp_path):
    prefix = _write_named(
        tmp_path,
        {"bert/embeddings/word_embeddings": (4, 4), "bert/encoder/layer_0/attention/self/query/kernel": (4, 4)},
    )
    with pytest.raises(NotAlbertCheckpointError, match="BERT checkpoint"):
        load_official_checkpoint(AlbertEncoder(AlbertConfig(**TINY)), prefix)
    obj = tf.train.Checkpoint(v=tf.Variable([1.0])).write(str(tmp_path / "obj" / "ckpt-1"))
    with pytest.raises(NotAlbertCheckpointError, match="TF2 object-based"):
        load_official_checkpoint(AlbertEncoder(AlbertConfig(**TINY)), obj)


def test_refuses_missing_file(tmp_path):
    with pytest.raises(CheckpointError, match="not found"):
        restore_pretrained(AlbertEncoder(AlbertConfig(**TINY)), str(tmp_path / "nothing" / "model.ckpt-best"))


def test_config_mismatch_large_checkpoint_with_base_config():
    """Spec 9 item 7: shapes of an albert_large checkpoint against the albert_base config, one line."""
    base = AlbertConfig.from_json_file(str(ROOT / "configs" / "albert_base_v2.json"))
    large = AlbertConfig.from_json_file(str(ROOT / "configs" / "albert_large_v2.json"))
    with pytest.raises(ConfigMismatchError) as err:
        check_config_matches(spec_names_and_shapes(large), base, source="model.ckpt-best")
    message = str(err.value)
    assert "\n" not in message
    assert "hidden_size 1024 in the checkpoint vs 768 in the config" in message
    check_config_matches(spec_names_and_shapes(base), base)  # the matching pair passes


def test_config_mismatch_refused_before_loading(tmp_path):
    small = AlbertConfig(**TINY, num_hidden_groups=2)
    prefix = write_with_tf1_saver(random_official_arrays(small, 0), str(tmp_path / "g2.ckpt"))
    model = AlbertPretrainer(AlbertConfig(**TINY))
    before = [np.asarray(w).copy() for w in model.weights]
    with pytest.raises(ConfigMismatchError, match="num_hidden_groups 2 in the checkpoint vs 1 in the config"):
        restore_pretrained(model, prefix)
    assert all(np.array_equal(a, np.asarray(b)) for a, b in zip(before, model.weights, strict=True))


def test_directory_and_index_paths_resolve(tmp_path):
    c = AlbertConfig(**TINY)
    prefix = save_official_checkpoint(AlbertPretrainer(c), str(tmp_path / "d" / "model.ckpt-best"))
    for path in (str(tmp_path / "d"), prefix + ".index"):
        assert load_official_checkpoint(AlbertPretrainer(c), path).complete
    assert os.path.basename(tf.train.latest_checkpoint(str(tmp_path / "d"))) == "model.ckpt-best"


def test_unshared_model_is_stored_as_one_group_per_layer(tmp_path):
    """sharing='none' (the BERT-like ablation) is the official layout with G = L."""
    c = AlbertConfig(**TINY)
    source = AlbertPretrainer(c, sharing="none")
    prefix = save_official_checkpoint(source, str(tmp_path / "m.ckpt"))
    stored = {n: s for n, (s, _) in list_checkpoint(prefix).items() if n != "global_step"}
    assert stored == spec_names_and_shapes(c.replace(num_hidden_groups=c.num_hidden_layers))
    target = AlbertPretrainer(c, sharing="none")
    assert restore_pretrained(target, prefix).complete
    for x, y in zip(source.weights, target.weights, strict=True):
        assert np.array_equal(np.asarray(x), np.asarray(y))
    with pytest.raises(ConfigMismatchError, match="num_hidden_groups 4 in the checkpoint vs 1"):
        restore_pretrained(AlbertPretrainer(c), prefix)
