"""``restore_pretrained``: the one call runners use for ``--init_checkpoint`` in any format."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from test_checkpoints_official import TINY, random_official_arrays, write_with_tf1_saver

from albert_tf.checkpoints import (
    CheckpointError,
    ConfigMismatchError,
    detect_format,
    model_official_arrays,
    restore_pretrained,
)
from albert_tf.checkpoints.native import save_native
from albert_tf.config import AlbertConfig
from albert_tf.modeling import AlbertEncoder, AlbertPretrainer
from albert_tf.tasks.glue.model import AlbertClassifier

CONFIG = AlbertConfig(**TINY, num_hidden_groups=2, inner_group_num=2)


def backbone(arrays):
    return {n: v for n, v in arrays.items() if n.startswith("bert/")}


def assert_backbone_equal(model, arrays):
    got = model_official_arrays(model)
    for name, value in backbone(arrays).items():
        assert np.array_equal(got[name], value), name


@pytest.mark.heavy
def test_official_finetuned_classifier_into_classifier(tmp_path):
    """run_classifier.py's output_weights [num_labels, H] land transposed in our Dense head."""
    arrays = random_official_arrays(CONFIG, 3)
    rng = np.random.RandomState(0)
    arrays["output_weights"] = rng.standard_normal((3, CONFIG.hidden_size)).astype(np.float32)
    arrays["output_bias"] = rng.standard_normal(3).astype(np.float32)
    prefix = write_with_tf1_saver(arrays, str(tmp_path / "model.ckpt-300"), optimizer_slots=True)
    assert detect_format(prefix) == "official"
    model = AlbertClassifier(CONFIG, num_labels=3, return_pooled_output=True)
    report = restore_pretrained(model, prefix)
    assert not report.missing and len(report.unused) == 7  # the pretraining heads
    feed = {
        "input_ids": np.array([[2, 5, 9, 3]], np.int32),
        "input_mask": np.ones((1, 4), np.int32),
        "segment_ids": np.zeros((1, 4), np.int32),
    }
    out = model(feed, training=False)
    want = np.asarray(out["pooled_output"]) @ arrays["output_weights"].T + arrays["output_bias"]
    np.testing.assert_allclose(np.asarray(out["logits"]), want, atol=1e-5)


def test_official_into_classifier_with_other_label_count_reports_head_mismatch(tmp_path):
    arrays = random_official_arrays(CONFIG, 4)
    arrays["output_weights"] = np.zeros((3, CONFIG.hidden_size), np.float32)
    arrays["output_bias"] = np.zeros(3, np.float32)
    prefix = write_with_tf1_saver(arrays, str(tmp_path / "m.ckpt"))
    report = restore_pretrained(AlbertClassifier(CONFIG, num_labels=2), prefix)
    assert [m[0] for m in report.shape_mismatches] == ["output_weights", "output_bias"]
    assert report.shape_mismatches[0][1:] == ((3, 12), (2, 12))


def test_missing_backbone_variable_raises(tmp_path):
    arrays = random_official_arrays(CONFIG, 5)
    del arrays["bert/encoder/transformer/group_1/inner_group_0/LayerNorm_1/gamma"]
    prefix = write_with_tf1_saver(arrays, str(tmp_path / "m.ckpt"))
    with pytest.raises(CheckpointError, match="1 backbone variable.*group_1/inner_group_0/LayerNorm_1/gamma"):
        restore_pretrained(AlbertEncoder(CONFIG), prefix)
    assert restore_pretrained(AlbertEncoder(CONFIG), prefix, require_backbone=False).missing


def test_trainer_checkpoint_into_classifier(tmp_path):
    """A pretraining run's checkpoint (trainer layout, with optimizer state) initialises a classifier."""
    from albert_tf import checkpoints as checkpointing

    source = AlbertPretrainer(CONFIG)
    ckpt = tf.train.Checkpoint(
        **{checkpointing.WEIGHTS_KEY: checkpointing.model_weights(source)},
        global_step=tf.Variable(9, dtype=tf.int64),
    )
    prefix = ckpt.write(str(tmp_path / "run" / "ckpt-9"))
    assert detect_format(prefix) == "albert_tf"
    model = AlbertClassifier(CONFIG, num_labels=2)
    report = restore_pretrained(model, prefix)
    assert sorted(report.missing) == ["output_bias", "output_weights"]
    assert_backbone_equal(model, model_official_arrays(source))


@pytest.mark.heavy
def test_object_checkpoint_and_keras_file(tmp_path):
    source = AlbertPretrainer(CONFIG)
    arrays = model_official_arrays(source)
    prefix = save_native(source, str(tmp_path / "tf2" / "ckpt-1"))
    keras_file = save_native(source, str(tmp_path / "model.keras"))
    for path in (prefix, str(tmp_path / "tf2"), keras_file):
        assert detect_format(path) == "albert_tf"
        encoder = AlbertEncoder(CONFIG)
        report = restore_pretrained(encoder, path)
        assert report.complete and len(report.unused) == 7
        assert_backbone_equal(encoder, arrays)


@pytest.mark.heavy
def test_object_checkpoint_of_another_size_is_refused(tmp_path):
    prefix = save_native(AlbertPretrainer(CONFIG), str(tmp_path / "tf2" / "ckpt-1"))
    with pytest.raises(CheckpointError, match="checkpoint and config disagree"):
        restore_pretrained(AlbertEncoder(CONFIG.replace(hidden_size=24, num_attention_heads=4)), prefix)
    keras_file = save_native(AlbertEncoder(CONFIG), str(tmp_path / "e.keras"))
    with pytest.raises(ConfigMismatchError, match="hidden_size 12 in the checkpoint vs 24 in the config"):
        restore_pretrained(AlbertEncoder(CONFIG.replace(hidden_size=24, num_attention_heads=4)), keras_file)


def test_plain_object_checkpoint_of_a_pretrainer(tmp_path):
    """``tf.train.Checkpoint(model=...)`` keys are graph positions; still read by restoring a same-shaped source."""
    source = AlbertPretrainer(CONFIG)
    prefix = tf.train.Checkpoint(model=source).write(str(tmp_path / "obj" / "ckpt-1"))
    model = AlbertClassifier(CONFIG, num_labels=2)
    report = restore_pretrained(model, prefix)
    assert sorted(report.missing) == ["output_bias", "output_weights"]
    assert_backbone_equal(model, model_official_arrays(source))
