"""Parity with an independent implementation: transformers' PyTorch AlbertForPreTraining.

A randomly initialised HF model (dropout 0, ``gelu_new`` = the official tanh GELU) is loaded into
ours through ``albert_tf.checkpoints.huggingface``; sequence output, pooled output, MLM logits
and SOP logits must agree within 1e-5 (float32), with padding in the batch.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="parity extra (torch) not installed")
transformers = pytest.importorskip("transformers", reason="parity extra (transformers) not installed")

from albert_tf.checkpoints.huggingface import load_huggingface_state_dict  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.modeling import AlbertPretrainer  # noqa: E402

pytestmark = pytest.mark.parity

VOCAB = 97
SEQ = 11


def hf_model(groups, inner, embedding, hidden=32, layers=4, seed=0):
    torch.manual_seed(seed)
    cfg = transformers.AlbertConfig(
        vocab_size=VOCAB,
        embedding_size=embedding,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_hidden_groups=groups,
        num_attention_heads=4,
        intermediate_size=48,
        inner_group_num=inner,
        hidden_act="gelu_new",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        classifier_dropout_prob=0.0,
        max_position_embeddings=32,
        type_vocab_size=2,
        initializer_range=0.2,  # large enough that every block visibly matters
        attn_implementation="eager",
    )
    model = transformers.AlbertForPreTraining(cfg).eval()
    # HF initialises LayerNorms to 1/0 and biases to 0: randomise them too so the test sees them.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or "layer_norm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    return model, cfg


def batch(seed=1):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB, size=(3, SEQ)).astype("int32")
    mask = np.ones((3, SEQ), "int32")
    mask[1, 7:] = 0
    mask[2, 4:] = 0
    ids[mask == 0] = 0
    seg = np.zeros((3, SEQ), "int32")
    seg[:, 5:] = 1
    seg *= mask
    positions = np.array([[1, 4, 8], [2, 3, 6], [1, 2, 0]], "int32")
    return ids, mask, seg, positions


@pytest.mark.heavy
@pytest.mark.parametrize("groups, inner", [(1, 1), (2, 1), (1, 2), (2, 2)])
@pytest.mark.parametrize("embedding", [16, 32], ids=["E<H", "E=H"])
def test_pretrainer_matches_transformers(groups, inner, embedding):
    hf, hf_cfg = hf_model(groups, inner, embedding)
    if embedding == 32:
        # HF always applies embedding_hidden_mapping_in; the official model has none when E == H.
        # An official E == H checkpoint in HF form therefore carries an identity projection.
        with torch.no_grad():
            hf.albert.encoder.embedding_hidden_mapping_in.weight.copy_(torch.eye(32))
            hf.albert.encoder.embedding_hidden_mapping_in.bias.zero_()
    ours = AlbertPretrainer(
        AlbertConfig(
            vocab_size=VOCAB,
            embedding_size=embedding,
            hidden_size=32,
            num_hidden_layers=4,
            num_hidden_groups=groups,
            num_attention_heads=4,
            intermediate_size=48,
            inner_group_num=inner,
            hidden_act="gelu",
            max_position_embeddings=32,
            initializer_range=0.02,
        ),
        last_layer_subset=False,  # full last layer: sequence_output is compared
    )
    ids, mask, seg, positions = batch()
    feats = {"input_ids": ids, "input_mask": mask, "segment_ids": seg, "masked_lm_positions": positions}
    ours(feats)
    report = load_huggingface_state_dict(ours, hf.state_dict(), hf_cfg.to_dict())
    assert report.complete, report.summary()
    expected_unused = [] if embedding != 32 else [
        "bert/encoder/embedding_hidden_mapping_in/kernel",
        "bert/encoder/embedding_hidden_mapping_in/bias",
    ]
    assert sorted(report.unused) == sorted(expected_unused), report.unused

    out = ours(feats)
    with torch.no_grad():
        ref = hf(
            input_ids=torch.tensor(ids, dtype=torch.long),
            attention_mask=torch.tensor(mask, dtype=torch.long),
            token_type_ids=torch.tensor(seg, dtype=torch.long),
            output_hidden_states=True,
        )
        base = hf.albert(
            input_ids=torch.tensor(ids, dtype=torch.long),
            attention_mask=torch.tensor(mask, dtype=torch.long),
            token_type_ids=torch.tensor(seg, dtype=torch.long),
        )
    ref_seq = base.last_hidden_state.numpy()
    ref_pooled = base.pooler_output.numpy()
    ref_mlm = np.take_along_axis(ref.prediction_logits.numpy(), positions[:, :, None].astype(int), axis=1)
    ref_sop = ref.sop_logits.numpy()

    def max_diff(a, b):
        return float(np.max(np.abs(np.asarray(a) - b)))

    diffs = {
        "sequence_output": max_diff(out["sequence_output"], ref_seq),
        "pooled_output": max_diff(out["pooled_output"], ref_pooled),
        "mlm_logits": max_diff(out["mlm_logits"], ref_mlm),
        "sop_logits": max_diff(out["sop_logits"], ref_sop),
    }
    assert all(d <= 1e-5 for d in diffs.values()), diffs
    # The comparison is meaningful: outputs are far from zero and differ between examples.
    assert np.std(ref_seq) > 0.1 and np.std(ref_mlm) > 0.1


def test_non_identity_projection_with_e_equal_h_is_refused():
    from albert_tf.checkpoints.report import CheckpointError

    hf, hf_cfg = hf_model(1, 1, 32)  # E == H, random (non-identity) embedding_hidden_mapping_in
    ours = AlbertPretrainer(
        AlbertConfig(vocab_size=VOCAB, embedding_size=32, hidden_size=32, num_hidden_layers=4,
                     num_attention_heads=4, intermediate_size=48, max_position_embeddings=32)
    )
    ids, mask, seg, positions = batch()
    ours({"input_ids": ids, "input_mask": mask, "segment_ids": seg, "masked_lm_positions": positions})
    with pytest.raises(CheckpointError, match="non-identity"):
        load_huggingface_state_dict(ours, hf.state_dict(), hf_cfg.to_dict())
