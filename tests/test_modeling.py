"""AlbertEncoder / AlbertPretrainer: parameter counts, sharing, and the spec's forward pass.

The forward pass is checked against a NumPy re-statement of spec 1.2 written here
(independent of the Keras code); Hugging Face parity is in test_parity_huggingface.py.
"""

import math

import numpy as np
import pytest

from albert_tf.checkpoints.names import official_variable_map
from albert_tf.config import AlbertConfig
from albert_tf.modeling import AlbertEncoder, AlbertPretrainer
from albert_tf.modeling.counting import encoder_parameter_formula
from albert_tf.modeling.losses import pretraining_losses, pretraining_metrics

SPEC_COUNTS = {  # spec 1.1: backbone incl. pooler / + MLM and SOP heads
    "albert_base_v2": (11_683_584, 11_813_810),
    "albert_large_v2": (17_683_968, 17_847_474),
    "albert_xlarge_v2": (58_724_864, 59_021_490),
    "albert_xxlarge_v2": (222_595_584, 223_158_450),
}


def tiny(**changes):
    return AlbertConfig.from_name("albert_tiny").replace(**changes)


def random_inputs(batch=3, seq=9, vocab=1000, seed=0, pad=True):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab, size=(batch, seq)).astype("int32")
    mask = np.ones((batch, seq), "int32")
    if pad:
        for b in range(batch):
            real = seq - 2 * b
            mask[b, real:] = 0
            ids[b, real:] = 0
    seg = np.zeros((batch, seq), "int32")
    seg[:, seq // 2 :] = 1
    seg *= mask
    return {"input_ids": ids, "input_mask": mask, "segment_ids": seg}


@pytest.mark.heavy
@pytest.mark.parametrize("preset", sorted(SPEC_COUNTS))
def test_parameter_counts_match_spec(preset):
    cfg = AlbertConfig.from_name(preset)
    backbone, with_heads = SPEC_COUNTS[preset]
    assert AlbertEncoder(cfg).count_params() == backbone
    assert AlbertPretrainer(cfg).count_params() == with_heads


@pytest.mark.heavy
def test_v1_and_v2_have_the_same_counts():
    for size in ("base", "large"):
        v1 = AlbertEncoder(AlbertConfig.from_name(f"albert_{size}_v1")).count_params()
        v2 = AlbertEncoder(AlbertConfig.from_name(f"albert_{size}_v2")).count_params()
        assert v1 == v2


@pytest.mark.heavy
@pytest.mark.parametrize("preset, low, high", [("bert_base", 105e6, 112e6), ("bert_large", 330e6, 340e6)])
def test_bert_equivalents(preset, low, high):
    n = AlbertEncoder(AlbertConfig.from_name(preset)).count_params()
    assert low <= n <= high


@pytest.mark.heavy
@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
@pytest.mark.parametrize("groups", [1, 2])
def test_sharing_ablation_parameter_counts(sharing, groups):
    cfg = tiny(num_hidden_layers=4, num_hidden_groups=groups, inner_group_num=2)
    enc = AlbertEncoder(cfg, sharing=sharing)
    assert enc.count_params() == encoder_parameter_formula(cfg, sharing)  # the hand formula


def test_all_shared_encoder_holds_one_block():
    cfg = tiny(num_hidden_layers=6)
    enc = AlbertEncoder(cfg)
    blocks = enc.unique_blocks()
    assert len(blocks) == 1
    # The same object is applied at every layer, and its 16 variables appear once in the model.
    assert all(row[0] is blocks[0] for row in enc.layer_blocks)
    block_vars = {id(v) for v in blocks[0].weights}
    assert len(block_vars) == 16
    model_vars = [id(v) for v in enc.weights]
    assert len(model_vars) == len(set(model_vars))
    assert block_vars <= set(model_vars)


def test_groups_hold_g_blocks_and_follow_official_assignment():
    cfg = tiny(num_hidden_layers=6, num_hidden_groups=3, inner_group_num=2)
    enc = AlbertEncoder(cfg)
    assert len(enc.unique_blocks()) == 3 * 2
    for layer, row in enumerate(enc.layer_blocks):
        g = int(layer / 6 * 3)
        assert [b.name for b in row] == [f"transformer_group_{g}_inner_group_{k}" for k in range(2)]


def test_embedding_projection_only_when_e_differs_from_h():
    assert AlbertEncoder(tiny()).embedding_hidden_mapping_in is not None
    assert AlbertEncoder(tiny(embedding_size=32)).embedding_hidden_mapping_in is None


def test_outputs_and_all_layers():
    cfg = tiny(num_hidden_layers=3, inner_group_num=2)
    enc = AlbertEncoder(cfg, output_all_layers=True)
    out = enc(random_inputs())
    assert tuple(out["sequence_output"].shape) == (3, 9, 32)
    assert tuple(out["pooled_output"].shape) == (3, 32)
    assert tuple(out["embedding_output"].shape) == (3, 9, 16)  # E-sized, as modeling_test.py asserts
    assert len(out["encoder_outputs"]) == 3 * 2
    np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])


# ----------------------------------------------------------------------------- NumPy re-statement of spec 1.2


def np_layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def np_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_albert(w, cfg, ids, mask, seg):
    """Spec 1.2 with the official variable names, in float64."""
    S = ids.shape[1]
    x = w["bert/embeddings/word_embeddings"][ids] + w["bert/embeddings/token_type_embeddings"][seg]
    x = x + w["bert/embeddings/position_embeddings"][:S][None]
    x = np_layer_norm(x, w["bert/embeddings/LayerNorm/gamma"], w["bert/embeddings/LayerNorm/beta"])
    if cfg.embedding_size != cfg.hidden_size:
        mapping = "bert/encoder/embedding_hidden_mapping_in"
        x = x @ w[mapping + "/kernel"] + w[mapping + "/bias"]
    N = cfg.num_attention_heads
    D = cfg.hidden_size // N
    bias = (1.0 - mask[:, None, None, :]) * -10000.0
    for layer in range(cfg.num_hidden_layers):
        g = int(layer / cfg.num_hidden_layers * cfg.num_hidden_groups)
        for k in range(cfg.inner_group_num):
            p = f"bert/encoder/transformer/group_{g}/inner_group_{k}/"

            def heads(name, x=x, p=p):
                t = x @ w[p + f"attention_1/self/{name}/kernel"] + w[p + f"attention_1/self/{name}/bias"]
                return t.reshape(t.shape[0], S, N, D).transpose(0, 2, 1, 3)

            q, kk, v = heads("query"), heads("key"), heads("value")
            scores = q @ kk.transpose(0, 1, 3, 2) / math.sqrt(D) + bias
            ctx = (np_softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(x.shape[0], S, N * D)
            a = ctx @ w[p + "attention_1/output/dense/kernel"] + w[p + "attention_1/output/dense/bias"]
            a = np_layer_norm(a + x, w[p + "LayerNorm/gamma"], w[p + "LayerNorm/beta"])
            f = np_gelu(a @ w[p + "ffn_1/intermediate/dense/kernel"] + w[p + "ffn_1/intermediate/dense/bias"])
            f = f @ w[p + "ffn_1/intermediate/output/dense/kernel"] + w[p + "ffn_1/intermediate/output/dense/bias"]
            x = np_layer_norm(f + a, w[p + "LayerNorm_1/gamma"], w[p + "LayerNorm_1/beta"])
    pooled = np.tanh(x[:, 0] @ w["bert/pooler/dense/kernel"] + w["bert/pooler/dense/bias"])
    return x, pooled


def randomize(model, seed=1):
    """Give every variable (LayerNorm and biases too) a non-trivial random value."""
    rng = np.random.default_rng(seed)
    for v in model.weights:
        v.assign(rng.normal(0, 0.3, size=tuple(v.shape)).astype("float32"))


@pytest.mark.parametrize("groups, inner, emb", [(1, 1, 16), (2, 1, 16), (1, 2, 16), (2, 2, 32)])
def test_forward_matches_numpy_restatement_of_spec(groups, inner, emb):
    cfg = tiny(num_hidden_layers=3 if groups == 1 else 4, num_hidden_groups=groups, inner_group_num=inner,
               embedding_size=emb)
    pre = AlbertPretrainer(cfg, last_layer_subset=False)  # full last layer: sequence_output is compared
    feats = random_inputs()
    feats["masked_lm_positions"] = np.array([[1, 2, 0], [3, 0, 0], [2, 4, 5]], "int32")
    pre(feats)
    randomize(pre)
    out = pre(feats)
    w = {name: ref.to_official().astype("float64") for name, ref in official_variable_map(pre).items()}
    seq, pooled = np_albert(w, cfg, feats["input_ids"], feats["input_mask"].astype("float64"), feats["segment_ids"])
    np.testing.assert_allclose(out["sequence_output"], seq, atol=2e-4, rtol=1e-4)
    np.testing.assert_allclose(out["pooled_output"], pooled, atol=2e-4, rtol=1e-4)
    # MLM head: dense H->E + gelu + LN(E) + tied decoder + bias, at the masked positions only.
    gathered = np.take_along_axis(seq, feats["masked_lm_positions"][:, :, None].astype(int), axis=1)
    t = np_gelu(gathered @ w["cls/predictions/transform/dense/kernel"] + w["cls/predictions/transform/dense/bias"])
    t = np_layer_norm(t, w["cls/predictions/transform/LayerNorm/gamma"], w["cls/predictions/transform/LayerNorm/beta"])
    mlm = t @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]
    np.testing.assert_allclose(out["mlm_logits"], mlm, atol=2e-3, rtol=1e-4)
    sop = pooled @ w["cls/seq_relationship/output_weights"].T + w["cls/seq_relationship/output_bias"]
    np.testing.assert_allclose(out["sop_logits"], sop, atol=2e-4, rtol=1e-4)


def test_padding_keys_do_not_change_real_positions():
    """Only keys are masked: changing the ids of padded positions leaves real positions unchanged."""
    cfg = tiny()
    enc = AlbertEncoder(cfg)
    a = random_inputs(pad=True)
    b = {k: v.copy() for k, v in a.items()}
    b["input_ids"][a["input_mask"] == 0] = 7
    oa, ob = enc(a)["sequence_output"].numpy(), enc(b)["sequence_output"].numpy()
    real = a["input_mask"] == 1
    np.testing.assert_allclose(oa[real], ob[real], atol=1e-6)


def test_losses_follow_spec_formulas():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(2, 4, 11)).astype("float32")
    sop_logits = rng.normal(size=(2, 2)).astype("float32")
    ids = rng.integers(0, 11, size=(2, 4))
    weights = np.array([[1, 1, 1, 0], [1, 0, 0, 0]], "float32")
    labels = np.array([[1], [0]])
    out = {"mlm_logits": logits, "sop_logits": sop_logits}
    feats = {"masked_lm_ids": ids, "masked_lm_weights": weights, "next_sentence_labels": labels}
    losses = pretraining_losses(out, feats)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    nll = -np.take_along_axis(logp, ids[..., None], -1)[..., 0]
    expected_mlm = (weights * nll).sum() / (weights.sum() + 1e-5)
    sp = sop_logits - np.log(np.exp(sop_logits).sum(-1, keepdims=True))
    expected_sop = -np.mean(sp[np.arange(2), labels[:, 0]])
    np.testing.assert_allclose(losses["mlm_loss"], expected_mlm, rtol=1e-5)
    np.testing.assert_allclose(losses["sop_loss"], expected_sop, rtol=1e-5)
    np.testing.assert_allclose(losses["total_loss"], expected_mlm + expected_sop, rtol=1e-5)
    metrics = pretraining_metrics(out, feats)
    pred = logits.argmax(-1)
    np.testing.assert_allclose(metrics["masked_lm_accuracy"], ((pred == ids) * weights).sum() / weights.sum())
    np.testing.assert_allclose(metrics["sentence_order_accuracy"], np.mean(sop_logits.argmax(-1) == labels[:, 0]))


def test_mlm_head_is_tied_to_word_embeddings():
    pre = AlbertPretrainer(tiny())
    feats = random_inputs()
    feats["masked_lm_positions"] = np.zeros((3, 2), "int32")
    pre(feats)
    table = pre.encoder.word_embeddings.embeddings
    ids_of_table = [id(v) for v in pre.weights if v is table]
    assert len(ids_of_table) == 1  # counted once
    before = pre(feats)["mlm_logits"].numpy()
    table.assign(table.numpy() * 2.0)
    after = pre(feats)["mlm_logits"].numpy()
    assert not np.allclose(before, after)


@pytest.mark.heavy
def test_table1_unshared_equivalent_is_measured_correctly():
    """The demo's shortcut (1-layer model + (L-1) blocks) equals building BERT-base outright."""
    from albert_tf.demo.table1 import measure

    row = measure(AlbertConfig.from_name("albert_base_v2"))
    assert row["params"] == 11_683_584
    assert row["unshared_equivalent_params"] == AlbertEncoder(AlbertConfig.from_name("bert_base")).count_params()
    assert 0.3 < row["embedding_share"] < 0.4  # 4.0M of 11.7M are embeddings in ALBERT-base
