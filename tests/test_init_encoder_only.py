"""--init_encoder_only: the encoder from another model's checkpoint, the task head left at its own initial values."""

import keras
import numpy as np
import pytest

from albert_tf.checkpoints import CheckpointInitError, init_from_checkpoint
from albert_tf.checkpoints.trainer_layout import write_weights
from albert_tf.config import AlbertConfig
from albert_tf.tasks.glue.model import AlbertClassifier


def classifier(seed: int, num_labels: int) -> AlbertClassifier:
    keras.utils.set_random_seed(seed)
    model = AlbertClassifier(AlbertConfig.from_name("albert_tiny"), num_labels=num_labels)
    ids = np.ones((1, 8), "int32")
    model({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids})
    return model


def head_values(model) -> list[np.ndarray]:
    in_encoder = {id(v) for v in model.encoder.variables}
    return [v.numpy() for v in model.variables if id(v) not in in_encoder and "seed_generator" not in v.path]


def assert_same(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b) and a
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def assert_encoder_from(target, source) -> None:
    assert_same([v.numpy() for v in target.encoder.weights], [v.numpy() for v in source.encoder.weights])


@pytest.fixture
def mnli_like(tmp_path):
    """A fine-tuned three-label classifier (another task's model), saved by the trainer and as a Hugging Face folder."""
    model = classifier(1, num_labels=3)
    for v in model.variables:  # every weight away from any initial value, so that a wrong copy shows
        if "seed_generator" not in v.path:
            v.assign(v.numpy() + 0.5)
    return model, write_weights(model, str(tmp_path / "ckpt-10"), step=10)


def test_same_label_count_loads_the_head_unless_encoder_only(mnli_like):
    source, prefix = mnli_like
    plain = classifier(2, num_labels=3)
    init_from_checkpoint(plain, prefix)
    assert_same(head_values(plain), head_values(source))  # the default copies another task's head: the flag matters

    target = classifier(2, num_labels=3)
    fresh_head = head_values(target)
    report = init_from_checkpoint(target, prefix, encoder_only=True)
    assert_encoder_from(target, source)
    assert_same(head_values(target), fresh_head)
    assert len(report.head_skipped) == 2 and not report.shape_mismatches  # the classifier's kernel and bias
    assert all(name.startswith(report.encoder_prefixes) for name in report.loaded)
    assert "head skipped 2" in report.summary(verbose=False)


def test_another_label_count_is_refused_with_the_way_out_then_loads_encoder_only(mnli_like):
    source, prefix = mnli_like
    with pytest.raises(CheckpointInitError, match="task head does not fit.*--init_encoder_only"):
        init_from_checkpoint(classifier(2, num_labels=2), prefix)

    target = classifier(2, num_labels=2)
    fresh_head = head_values(target)
    report = init_from_checkpoint(target, prefix, encoder_only=True)
    assert_encoder_from(target, source)
    assert_same(head_values(target), fresh_head)
    assert len(report.head_skipped) == 2 and not report.shape_mismatches


def test_encoder_only_from_official_names(mnli_like, tmp_path):
    """The Hugging Face folder is read by official name (``bert/...`` vs ``output_weights``), not by Keras path."""
    pytest.importorskip("safetensors")
    from albert_tf.checkpoints.huggingface import save_huggingface

    source, _ = mnli_like
    save_huggingface(source, str(tmp_path / "hf"))
    target = classifier(2, num_labels=2)
    fresh_head = head_values(target)
    report = init_from_checkpoint(target, str(tmp_path / "hf"), encoder_only=True)
    assert_encoder_from(target, source)
    assert_same(head_values(target), fresh_head)
    assert report.encoder_prefixes == ("bert/",) and len(report.head_skipped) == 2
    assert report.encoder_summary().startswith(f"encoder weights: loaded {len(report.loaded)}, missing 0")


def test_encoder_only_needs_a_model_with_an_encoder(mnli_like):
    _, prefix = mnli_like
    with pytest.raises(CheckpointInitError, match="encoder only needs a model with an encoder"):
        init_from_checkpoint(keras.Sequential([keras.layers.Dense(2)]), prefix, encoder_only=True)
