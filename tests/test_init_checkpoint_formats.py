"""--init_checkpoint accepts every format the converter reads: .keras files and Hugging Face dirs too."""

import keras
import numpy as np
import pytest

from albert_tf.checkpoints import CheckpointInitError, init_from_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.modeling import AlbertPretrainer


def built(seed):
    keras.utils.set_random_seed(seed)
    model = AlbertPretrainer(AlbertConfig.from_name("albert_tiny"))
    ids = np.ones((1, 8), "int32")
    model({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids, "masked_lm_positions": ids[:, :2]})
    return model


def assert_same_weights(a, b):
    for x, y in zip(a.weights, b.weights):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_init_from_keras_file(tmp_path):
    source = built(1)
    source.save(tmp_path / "pre.keras")
    target = built(2)
    report = init_from_checkpoint(target, str(tmp_path / "pre.keras"))
    assert report.loaded and not report.missing
    assert_same_weights(source, target)


def test_init_from_huggingface_dir(tmp_path):
    pytest.importorskip("safetensors")
    from albert_tf.checkpoints.huggingface import save_huggingface

    source = built(1)
    save_huggingface(source, str(tmp_path / "hf"))
    target = built(2)
    report = init_from_checkpoint(target, str(tmp_path / "hf"))
    assert report.loaded and not report.missing
    assert_same_weights(source, target)


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointInitError, match="does not exist|not found|no checkpoint"):
        init_from_checkpoint(built(1), str(tmp_path / "nothing_here"))


def test_an_official_checkpoint_is_resolved_and_opened_once_per_load(tmp_path, monkeypatch):
    """The format detector opens the checkpoint and the loader reads through what it opened."""
    from albert_tf.checkpoints import official, paths
    from albert_tf.checkpoints.official import save_official_checkpoint

    source = built(1)
    save_official_checkpoint(source, str(tmp_path / "model.ckpt-5"))
    counts = {"resolve": 0, "open": 0}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return function(*args, **kwargs)
        return wrapper

    reader = counted("open", paths.checkpoint_reader)
    for module in (paths, official):
        monkeypatch.setattr(module, "checkpoint_reader", reader)
    resolve = counted("resolve", paths.resolve_checkpoint_path)
    monkeypatch.setattr(official, "resolve_checkpoint_path", resolve)
    monkeypatch.setattr(paths, "resolve_checkpoint_path", resolve)
    target = built(2)
    init_from_checkpoint(target, str(tmp_path))  # a directory: resolved to its prefix once
    assert counts == {"resolve": 1, "open": 1}
    assert_same_weights(source, target)


def test_trainer_checkpoint_into_a_classifier_reports_the_encoder_in_keras_paths(tmp_path):
    """A trainer checkpoint is matched by Keras path; the encoder line still counts the encoder's variables
    (it once read 'loaded 0' there because it looked for official ``bert/`` names)."""
    from albert_tf.checkpoints.trainer_layout import write_weights
    from albert_tf.tasks.glue.model import AlbertClassifier

    source = built(1)
    prefix = write_weights(source, str(tmp_path / "ckpt-7"), step=7)
    classifier = AlbertClassifier(AlbertConfig.from_name("albert_tiny"), num_labels=3)
    ids = np.ones((1, 8), "int32")
    classifier({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids})
    report = init_from_checkpoint(classifier, prefix)
    encoder_vars = len(source.encoder.variables) - sum("seed_generator" in v.path for v in source.encoder.variables)
    assert report.encoder_summary() == (
        f"encoder weights: loaded {encoder_vars}, missing 0, unused 0, shape mismatches 0")
    assert len(report.missing) == 2  # the new classifier's kernel and bias
    for ours, theirs in zip(classifier.encoder.weights, source.encoder.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
