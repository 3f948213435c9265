"""``--init_from_group0`` (spec 3.5): every group of a G-group model starts as group_0 of a checkpoint.

The strong check: a G = 1 source and the G > 1 model initialised from it hold the same block in
every group, so (dropout off) they compute the same function; their outputs are compared.
"""

from __future__ import annotations

import numpy as np
import pytest

from albert_tf.checkpoints import ConfigMismatchError, NotAlbertCheckpointError, restore_pretrained
from albert_tf.checkpoints.group0 import broadcast_group0, load_from_group0, split_group0
from albert_tf.checkpoints.native import save_native
from albert_tf.checkpoints.official import save_official_checkpoint, write_official_arrays
from albert_tf.checkpoints.report import CheckpointError, assign_official_arrays, model_official_arrays
from albert_tf.config import AlbertConfig
from albert_tf.modeling import AlbertEncoder, AlbertPretrainer

# albert_tiny (E=16 != H=32, so embedding_hidden_mapping_in exists, dropout 0) with L = 4
BASE = AlbertConfig.from_name("albert_tiny").replace(num_hidden_layers=4, vocab_size=64, max_position_embeddings=16)
L = BASE.num_hidden_layers
SCOPE = "bert/encoder/transformer/"
N_HEAD_VARS = 7  # cls/predictions/* (5) and cls/seq_relationship/* (2)


def randomise(model, seed: int):
    """Give every variable random values (LayerNorm gammas around 1), so equal outputs mean something."""
    rng = np.random.RandomState(seed)
    arrays = {}
    for name, value in model_official_arrays(model).items():
        base = 1.0 if name.endswith("gamma") else 0.0
        arrays[name] = (base + 0.2 * rng.standard_normal(value.shape)).astype(np.float32)
    report = assign_official_arrays(model, arrays)
    assert report.complete, report.summary()
    return model


def example_inputs():
    rng = np.random.RandomState(7)
    ids = rng.randint(0, BASE.vocab_size, (2, 8)).astype(np.int32)
    mask = np.ones((2, 8), np.int32)
    mask[1, 5:] = 0
    seg = np.zeros((2, 8), np.int32)
    seg[:, 4:] = 1
    positions = np.array([[1, 3, 6], [0, 2, 4]], np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": seg, "masked_lm_positions": positions}


def outputs(model):
    out = model(example_inputs(), training=False)
    # sequence_output only where the model computes its full last layer (last_layer_subset=False)
    return {k: np.asarray(out[k]) for k in ("sequence_output", "pooled_output", "mlm_logits", "sop_logits")
            if k in out}


def group_of(name: str) -> int | None:
    if not name.startswith(SCOPE + "group_"):
        return None
    return int(name[len(SCOPE + "group_") :].split("/", 1)[0])


def as_group0(name: str) -> str:
    g = group_of(name)
    return name if g is None else name.replace(f"{SCOPE}group_{g}/", f"{SCOPE}group_0/", 1)


def assert_initialised_from_group0(model, source_arrays):
    """Every block variable equals the source's group_0 (same inner_group k); the rest by own name."""
    got = model_official_arrays(model)
    groups = {group_of(n) for n in got} - {None}
    assert groups, "the model has no group variables"
    for name, value in got.items():
        np.testing.assert_array_equal(value, source_arrays[as_group0(name)], err_msg=name)
    return groups


@pytest.fixture(scope="module")
def g1_source(tmp_path_factory):
    """A randomised G = 1 pretrainer, its official arrays and its official TF1 checkpoint."""
    source = randomise(AlbertPretrainer(BASE), seed=1)
    prefix = save_official_checkpoint(source, str(tmp_path_factory.mktemp("g1") / "model.ckpt-best"), global_step=9)
    return source, model_official_arrays(source), prefix


# ----------------------------------------------------------------------------- the pure function


def test_broadcast_group0_is_pure_and_keeps_inner_index():
    a, b, c, d, e = (np.full((2,), v, np.float32) for v in range(5))
    arrays = {
        "bert/embeddings/word_embeddings": a,
        f"{SCOPE}group_0/inner_group_0/LayerNorm/gamma": b,
        f"{SCOPE}group_0/inner_group_1/LayerNorm/gamma": c,
        f"{SCOPE}group_1/inner_group_0/LayerNorm/gamma": d,
        "cls/predictions/output_bias": e,
    }
    before = dict(arrays)
    out = broadcast_group0(arrays, 3)
    assert arrays == before  # input untouched
    want = {"bert/embeddings/word_embeddings": a, "cls/predictions/output_bias": e}
    for g in range(3):
        want[f"{SCOPE}group_{g}/inner_group_0/LayerNorm/gamma"] = b
        want[f"{SCOPE}group_{g}/inner_group_1/LayerNorm/gamma"] = c
    assert sorted(out) == sorted(want)
    for name in want:
        assert out[name] is want[name], name  # group_1 of the source (d) is not used anywhere
    assert split_group0(arrays)[1] == [f"{SCOPE}group_1/inner_group_0/LayerNorm/gamma"]
    assert sorted(broadcast_group0(arrays, 1)) == sorted(n for n in arrays if "/group_1/" not in n)
    with pytest.raises(ValueError, match="positive integer"):
        broadcast_group0(arrays, 0)


def test_broadcast_group0_without_group0_is_a_one_line_error():
    arrays = {"bert/embeddings/word_embeddings": np.zeros((2, 2)), f"{SCOPE}group_1/inner_group_0/x": np.zeros(2)}
    with pytest.raises(CheckpointError) as err:
        broadcast_group0(arrays, 2, source="some/model.ckpt")
    assert "\n" not in str(err.value)
    assert str(err.value).startswith("some/model.ckpt: no bert/encoder/transformer/group_0/")


# ----------------------------------------------------------------------------- official TF1 source


@pytest.mark.parametrize("groups,sharing", [(2, "all"), (L, "all"), (1, "none")], ids=["G=2", "G=L", "sharing=none"])
def test_g1_official_checkpoint_into_more_groups(g1_source, groups, sharing):
    source, source_arrays, prefix = g1_source
    model = AlbertPretrainer(BASE.replace(num_hidden_groups=groups), sharing=sharing)
    report = load_from_group0(model, prefix)

    assert report.complete, report.summary()
    assert report.missing == [] and report.unused == [] and report.shape_mismatches == []
    assert report.ignored == ["global_step"]
    want_groups = L if (sharing == "none" or groups == L) else groups
    assert assert_initialised_from_group0(model, source_arrays) == set(range(want_groups))
    assert len(report.loaded) == len(source_arrays) + (want_groups - 1) * 16  # 16 variables per block

    # all groups hold the same block, so the G-group model is the G=1 source's function
    want, got = outputs(source), outputs(model)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], atol=1e-5, err_msg=key)


def test_without_group0_the_same_load_is_refused(g1_source):
    """Negative control: the plain init (restore_pretrained) refuses G=1 -> G=2; group0 is what makes it work."""
    _, _, prefix = g1_source
    model = AlbertPretrainer(BASE.replace(num_hidden_groups=2))
    before = [np.asarray(w).copy() for w in model.weights]
    with pytest.raises(ConfigMismatchError, match="num_hidden_groups 1 in the checkpoint vs 2 in the config"):
        restore_pretrained(model, prefix)
    assert all(np.array_equal(a, np.asarray(b)) for a, b in zip(before, model.weights, strict=True))


def test_g2_source_group1_is_not_used(tmp_path):
    c2 = BASE.replace(num_hidden_groups=2)
    source = randomise(AlbertPretrainer(c2), seed=2)
    source_arrays = model_official_arrays(source)
    group1 = sorted(n for n in source_arrays if group_of(n) == 1)
    assert len(group1) == 16
    assert not np.array_equal(
        source_arrays[f"{SCOPE}group_0/inner_group_0/attention_1/self/query/kernel"],
        source_arrays[f"{SCOPE}group_1/inner_group_0/attention_1/self/query/kernel"],
    )
    prefix = save_official_checkpoint(source, str(tmp_path / "model.ckpt-5"))

    model = AlbertPretrainer(c2)
    report = load_from_group0(model, prefix)
    assert report.missing == [] and report.shape_mismatches == []
    assert sorted(report.unused) == group1  # the source's group_1, reported rather than dropped silently
    assert_initialised_from_group0(model, source_arrays)  # so group_1 == source group_0
    got = model_official_arrays(model)
    for name in group1:
        assert not np.array_equal(got[name], source_arrays[name]), name
    # and the plain load of the same checkpoint does take group_1 by name (the flag changed it)
    plain = AlbertPretrainer(c2)
    restore_pretrained(plain, prefix)
    assert all(np.array_equal(model_official_arrays(plain)[n], source_arrays[n]) for n in group1)


# ----------------------------------------------------------------------------- other formats


def test_keras_file_source(g1_source, tmp_path):
    source, source_arrays, _ = g1_source
    path = save_native(source, str(tmp_path / "g1.keras"))

    model = AlbertPretrainer(BASE.replace(num_hidden_groups=2))
    report = load_from_group0(model, path)
    assert report.complete and report.unused == [], report.summary()
    assert_initialised_from_group0(model, source_arrays)
    want, got = outputs(source), outputs(model)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], atol=1e-5, err_msg=key)

    # into a bare encoder: the pretraining heads are the only unused names
    encoder = AlbertEncoder(BASE.replace(num_hidden_groups=4))
    report = load_from_group0(encoder, path, input_format="albert_tf")
    assert report.complete and len(report.unused) == N_HEAD_VARS, report.summary()
    assert all(n.startswith("cls/") for n in report.unused)
    assert assert_initialised_from_group0(encoder, source_arrays) == {0, 1, 2, 3}


def test_huggingface_source(g1_source, tmp_path):
    pytest.importorskip("safetensors")
    from albert_tf.checkpoints.huggingface import save_huggingface

    source, source_arrays, _ = g1_source
    save_huggingface(source, str(tmp_path / "hf"))
    model = AlbertPretrainer(BASE.replace(num_hidden_groups=2))
    report = load_from_group0(model, str(tmp_path / "hf"))
    assert report.complete and report.unused == [], report.summary()
    assert_initialised_from_group0(model, source_arrays)
    np.testing.assert_allclose(outputs(model)["mlm_logits"], outputs(source)["mlm_logits"], atol=1e-5)


# ----------------------------------------------------------------------------- errors


def test_other_hidden_size_is_a_config_mismatch(tmp_path):
    other = BASE.replace(hidden_size=24, intermediate_size=48)
    prefix = save_official_checkpoint(AlbertPretrainer(other), str(tmp_path / "model.ckpt-1"))
    model = AlbertPretrainer(BASE.replace(num_hidden_groups=2))
    before = [np.asarray(w).copy() for w in model.weights]
    with pytest.raises(ConfigMismatchError) as err:
        load_from_group0(model, prefix)
    message = str(err.value)
    assert "\n" not in message
    assert "hidden_size 24 in the checkpoint vs 32 in the config" in message
    assert "num_hidden_groups" not in message  # the group count is never the complaint
    assert all(np.array_equal(a, np.asarray(b)) for a, b in zip(before, model.weights, strict=True))


def test_other_inner_group_num_is_a_config_mismatch(g1_source):
    _, _, prefix = g1_source
    model = AlbertEncoder(BASE.replace(num_hidden_groups=2, inner_group_num=2))
    with pytest.raises(ConfigMismatchError, match="inner_group_num 1 in the checkpoint vs 2 in the config"):
        load_from_group0(model, prefix)


def test_bert_layout_is_refused(tmp_path):
    arrays = {
        "bert/embeddings/word_embeddings": np.zeros((64, 16), np.float32),
        "bert/encoder/layer_0/attention/self/query/kernel": np.zeros((32, 32), np.float32),
        "bert/pooler/dense/kernel": np.zeros((32, 32), np.float32),
    }
    prefix = write_official_arrays(arrays, str(tmp_path / "bert.ckpt"))
    with pytest.raises(NotAlbertCheckpointError) as err:
        load_from_group0(AlbertEncoder(BASE.replace(num_hidden_groups=2)), prefix)
    assert "\n" not in str(err.value) and "BERT checkpoint" in str(err.value)


def test_official_layout_without_group0_is_refused(g1_source, tmp_path):
    _, source_arrays, _ = g1_source
    shifted = {n.replace("/group_0/", "/group_1/"): v for n, v in source_arrays.items()}
    prefix = write_official_arrays(shifted, str(tmp_path / "nogroup0.ckpt"))
    with pytest.raises(CheckpointError) as err:
        load_from_group0(AlbertPretrainer(BASE.replace(num_hidden_groups=2)), prefix)
    message = str(err.value)
    assert "\n" not in message and message.startswith(prefix) and "group_0" in message


def test_tf2_checkpoint_source_with_two_groups(tmp_path):
    """An albert-tf TF2 checkpoint of a G=2 model (its group count read from its names) into G=3."""
    source = randomise(AlbertPretrainer(BASE.replace(num_hidden_groups=2)), seed=3)
    source_arrays = model_official_arrays(source)
    prefix = save_native(source, str(tmp_path / "run" / "ckpt-3"))
    model = AlbertPretrainer(BASE.replace(num_hidden_groups=3))
    report = load_from_group0(model, prefix)
    assert report.missing == [] and report.shape_mismatches == []
    assert sorted(report.unused) == sorted(n for n in source_arrays if group_of(n) == 1)
    assert assert_initialised_from_group0(model, source_arrays) == {0, 1, 2}


def test_huggingface_source_with_identity_projection(tmp_path):
    """E == H: HF stores an identity embedding_hidden_mapping_in; it is checked and reported unused."""
    pytest.importorskip("safetensors")
    from albert_tf.checkpoints.huggingface import save_huggingface

    square = BASE.replace(embedding_size=32)
    source = randomise(AlbertPretrainer(square), seed=4)
    save_huggingface(source, str(tmp_path / "hf"))
    model = AlbertPretrainer(square.replace(num_hidden_groups=2))
    report = load_from_group0(model, str(tmp_path / "hf"))
    assert report.complete, report.summary()
    assert sorted(report.unused) == [
        "bert/encoder/embedding_hidden_mapping_in/bias",
        "bert/encoder/embedding_hidden_mapping_in/kernel",
    ]
    assert_initialised_from_group0(model, model_official_arrays(source))
    np.testing.assert_allclose(outputs(model)["sop_logits"], outputs(source)["sop_logits"], atol=1e-5)
