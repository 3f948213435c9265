"""Hugging Face weights in and out, against transformers' PyTorch ALBERT (an independent implementation).

transformers' ``AlbertForPreTraining`` with random weights (tiny config, dropout 0, ``gelu_new``
= the official tanh GELU) is the reference: its weights go into albert-tf, then through an
official TF1 checkpoint into a fresh albert-tf model, and the outputs must stay within 1e-5 of
transformers'. The export direction is checked by ``from_pretrained`` on our files with no
missing or unexpected keys, and by the outputs again.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.parity

from test_checkpoints_official import spec_names_and_shapes  # noqa: E402 - after the importorskip guards

from albert_tf.checkpoints import ConfigMismatchError, restore_pretrained  # noqa: E402
from albert_tf.checkpoints.huggingface import (  # noqa: E402
    albert_config_from_huggingface,
    load_huggingface,
    load_huggingface_state_dict,
    save_huggingface,
)
from albert_tf.checkpoints.huggingface_names import (  # noqa: E402
    huggingface_to_official_name,
    official_to_huggingface_name,
)
from albert_tf.checkpoints.official import load_official_checkpoint, save_official_checkpoint  # noqa: E402
from albert_tf.checkpoints.report import NotAlbertCheckpointError  # noqa: E402
from albert_tf.config import ConfigError  # noqa: E402
from albert_tf.modeling import AlbertEncoder, AlbertPretrainer  # noqa: E402

TOL = 1e-5


def hf_config(**overrides):
    values = dict(
        vocab_size=60,
        embedding_size=8,
        hidden_size=16,
        num_hidden_layers=4,
        num_hidden_groups=2,
        inner_group_num=2,
        num_attention_heads=4,
        intermediate_size=24,
        hidden_act="gelu_new",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=32,
        type_vocab_size=2,
    )
    values.update(overrides)
    return transformers.AlbertConfig(**values)


def hf_model(cls, config, seed=0):
    torch.manual_seed(seed)
    model = cls(config).eval()
    # random LayerNorm/bias values too, so a misplaced gamma/beta or bias cannot hide
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def inputs(vocab, seed=3):
    rng = np.random.RandomState(seed)
    B, S = 2, 11
    ids = rng.randint(0, vocab, (B, S)).astype(np.int32)
    mask = np.ones((B, S), np.int32)
    mask[0, 8:] = 0
    seg = np.zeros((B, S), np.int32)
    seg[:, 6:] = 1
    return ids, mask, seg


def hf_outputs(model, ids, mask, seg):
    with torch.no_grad():
        return model(
            input_ids=torch.tensor(ids, dtype=torch.long),
            attention_mask=torch.tensor(mask, dtype=torch.long),
            token_type_ids=torch.tensor(seg, dtype=torch.long),
        )


def ours(model, ids, mask, seg, pretraining=True):
    feed = {"input_ids": ids, "input_mask": mask, "segment_ids": seg}
    if pretraining:
        feed["masked_lm_positions"] = np.tile(np.arange(ids.shape[1], dtype=np.int32), (ids.shape[0], 1))
    return {k: np.asarray(v) for k, v in model(feed, training=False).items() if not isinstance(v, list)}


def max_diff(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())


# ----------------------------------------------------------------------------- names


@pytest.mark.heavy
def test_every_hf_parameter_maps_to_a_spec_name_and_back():
    config = hf_config()
    model = transformers.AlbertForPreTraining(config)
    spec = spec_names_and_shapes(albert_config_from_huggingface(config.to_dict()))
    state = model.state_dict()
    tied = {"predictions.decoder.weight", "predictions.decoder.bias"}
    mapped = {}
    for hf_name, tensor in state.items():
        if hf_name in tied:
            continue
        official, transposed = huggingface_to_official_name(hf_name)
        shape = tuple(tensor.shape)[::-1] if transposed else tuple(tensor.shape)
        assert spec[official] == shape, hf_name
        assert official_to_huggingface_name(official) == (hf_name, transposed)
        mapped[official] = hf_name
    assert set(mapped) == set(spec)  # all spec names covered, one to one
    # the AlbertModel spelling (no "albert." prefix) maps to the same names
    assert huggingface_to_official_name("encoder.albert_layer_groups.1.albert_layers.0.ffn_output.weight") == (
        "bert/encoder/transformer/group_1/inner_group_0/ffn_1/intermediate/output/dense/kernel",
        True,
    )


def test_config_conversion():
    c = albert_config_from_huggingface(hf_config().to_dict())
    assert c.hidden_act == "gelu" and c.num_hidden_groups == 2 and c.inner_group_num == 2
    assert albert_config_from_huggingface(hf_config(hidden_act="gelu").to_dict()).hidden_act == "gelu_exact"
    with pytest.raises(ConfigError, match="layer_norm_eps"):
        albert_config_from_huggingface(hf_config(layer_norm_eps=1e-5).to_dict())


# ----------------------------------------------------------------------------- import + cross-implementation


@pytest.mark.heavy
def test_transformers_to_albert_tf_to_official_to_albert_tf_matches(tmp_path):
    config = hf_config()
    reference = hf_model(transformers.AlbertForPreTraining, config)
    ids, mask, seg = inputs(config.vocab_size)
    want = hf_outputs(reference, ids, mask, seg)

    ours_config = albert_config_from_huggingface(config.to_dict())
    first = AlbertPretrainer(ours_config)
    report = load_huggingface_state_dict(first, reference.state_dict(), config.to_dict())
    assert report.complete and not report.unused, report.summary()
    assert sorted(report.ignored) == ["predictions.decoder.bias", "predictions.decoder.weight"]

    prefix = save_official_checkpoint(first, str(tmp_path / "model.ckpt-best"))
    second = AlbertPretrainer(ours_config, last_layer_subset=False)  # full last layer: sequence_output is compared
    assert load_official_checkpoint(second, prefix).complete
    got = ours(second, ids, mask, seg)
    hidden = hf_outputs(reference.albert, ids, mask, seg)
    diffs = {
        "mlm_logits": max_diff(got["mlm_logits"], want.prediction_logits),
        "sop_logits": max_diff(got["sop_logits"], want.sop_logits),
        "sequence_output": max_diff(got["sequence_output"], hidden.last_hidden_state),
        "pooled_output": max_diff(got["pooled_output"], hidden.pooler_output),
    }
    print("hf->albert_tf->official->albert_tf max |diff| vs transformers:", json.dumps(diffs))  # shown with -s
    assert max(diffs.values()) < TOL, diffs


def test_albert_model_state_dict_without_prefix_into_encoder():
    config = hf_config(num_hidden_groups=1, inner_group_num=1)
    reference = hf_model(transformers.AlbertModel, config, seed=1)
    assert not any(k.startswith("albert.") for k in reference.state_dict())
    encoder = AlbertEncoder(albert_config_from_huggingface(config.to_dict()))
    report = load_huggingface_state_dict(encoder, reference.state_dict())
    assert report.complete and not report.unused, report.summary()
    ids, mask, seg = inputs(config.vocab_size)
    want = hf_outputs(reference, ids, mask, seg)
    got = ours(encoder, ids, mask, seg, pretraining=False)
    assert max_diff(got["sequence_output"], want.last_hidden_state) < TOL
    assert max_diff(got["pooled_output"], want.pooler_output) < TOL


def test_hf_config_mismatch_and_non_albert_state_dict():
    config = hf_config()
    reference = transformers.AlbertForPreTraining(config)
    model = AlbertPretrainer(albert_config_from_huggingface(hf_config(hidden_size=32).to_dict()))
    with pytest.raises(ConfigMismatchError, match="hidden_size 16 in the checkpoint vs 32 in the config"):
        load_huggingface_state_dict(model, reference.state_dict(), config.to_dict())
    with pytest.raises(NotAlbertCheckpointError, match="no ALBERT parameter names"):
        load_huggingface_state_dict(model, {"bert.embeddings.word_embeddings.weight": np.zeros((2, 2))})


# ----------------------------------------------------------------------------- export


def test_export_loads_in_transformers_without_missing_keys(tmp_path):
    import keras

    keras.utils.set_random_seed(7)
    c = albert_config_from_huggingface(hf_config().to_dict())
    model = AlbertPretrainer(c)
    files = save_huggingface(model, str(tmp_path / "hf"))
    assert sorted(p.rsplit("/", 1)[-1] for p in files) == ["config.json", "model.safetensors"]
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["hidden_act"] == "gelu_new"
    loaded, info = transformers.AlbertForPreTraining.from_pretrained(str(tmp_path / "hf"), output_loading_info=True)
    assert info["missing_keys"] in ([], set())
    assert info["unexpected_keys"] in ([], set())
    assert not info.get("mismatched_keys")
    ids, mask, seg = inputs(c.vocab_size, seed=4)
    want = hf_outputs(loaded.eval(), ids, mask, seg)
    got = ours(model, ids, mask, seg)
    diffs = {
        "mlm_logits": max_diff(got["mlm_logits"], want.prediction_logits),
        "sop_logits": max_diff(got["sop_logits"], want.sop_logits),
    }
    print("albert_tf->HF export->transformers max |diff|:", json.dumps(diffs))  # shown with -s
    assert max(diffs.values()) < TOL, diffs

    # and back into albert-tf through the directory loader, bit for bit
    again = AlbertPretrainer(c)
    assert restore_pretrained(again, str(tmp_path / "hf")).complete
    for a, b in zip(model.weights, again.weights, strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_encoder_export_with_equal_embedding_and_hidden_size(tmp_path):
    """E == H: no official projection, HF always has one; the export writes an exact identity."""
    c = albert_config_from_huggingface(hf_config(embedding_size=16).to_dict())
    encoder = AlbertEncoder(c)
    save_huggingface(encoder, str(tmp_path / "hf"))
    loaded, info = transformers.AlbertModel.from_pretrained(str(tmp_path / "hf"), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    ids, mask, seg = inputs(c.vocab_size)
    want = hf_outputs(loaded.eval(), ids, mask, seg)
    got = ours(encoder, ids, mask, seg, pretraining=False)
    assert max_diff(got["sequence_output"], want.last_hidden_state) < TOL


def test_pytorch_model_bin_is_read_with_weights_only(tmp_path):
    config = hf_config(num_hidden_groups=1, inner_group_num=1)
    reference = hf_model(transformers.AlbertForPreTraining, config, seed=2)
    folder = tmp_path / "bin"
    folder.mkdir()
    torch.save(reference.state_dict(), folder / "pytorch_model.bin")
    (folder / "config.json").write_text(json.dumps(config.to_dict()))
    model = AlbertPretrainer(albert_config_from_huggingface(config.to_dict()))
    assert load_huggingface(model, str(folder)).complete
    ids, mask, seg = inputs(config.vocab_size)
    assert max_diff(ours(model, ids, mask, seg)["sop_logits"], hf_outputs(reference, ids, mask, seg).sop_logits) < TOL


def test_sequence_classification_head_both_ways(tmp_path):
    """AlbertForSequenceClassification.classifier <-> official output_weights <-> our AlbertClassifier."""
    from albert_tf.tasks.glue.model import AlbertClassifier

    config = hf_config(num_labels=3)
    reference = hf_model(transformers.AlbertForSequenceClassification, config, seed=5)
    c = albert_config_from_huggingface(config.to_dict())
    model = AlbertClassifier(c, num_labels=3)
    report = load_huggingface_state_dict(model, reference.state_dict(), config.to_dict())
    assert report.complete and not report.unused, report.summary()
    ids, mask, seg = inputs(config.vocab_size)
    got = np.asarray(model({"input_ids": ids, "input_mask": mask, "segment_ids": seg}, training=False))
    assert max_diff(got, hf_outputs(reference, ids, mask, seg).logits) < TOL

    save_huggingface(model, str(tmp_path / "cls"))
    loaded, info = transformers.AlbertForSequenceClassification.from_pretrained(
        str(tmp_path / "cls"), output_loading_info=True
    )
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert max_diff(got, hf_outputs(loaded.eval(), ids, mask, seg).logits) < TOL


def test_unshared_model_exports_with_one_group_per_layer(tmp_path):
    c = albert_config_from_huggingface(hf_config(num_hidden_groups=1, inner_group_num=1).to_dict())
    model = AlbertPretrainer(c, sharing="none")
    save_huggingface(model, str(tmp_path / "hf"))
    loaded, info = transformers.AlbertForPreTraining.from_pretrained(str(tmp_path / "hf"), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert loaded.config.num_hidden_groups == c.num_hidden_layers
    ids, mask, seg = inputs(c.vocab_size)
    got = ours(model, ids, mask, seg)
    assert max_diff(got["mlm_logits"], hf_outputs(loaded.eval(), ids, mask, seg).prediction_logits) < TOL
