"""ONNX conversion of the token-id signatures (``export_savedmodel --onnx``, ``albert_tf.export.onnx``): the file
answers through ONNX Runtime as the SavedModel it came from, within 1e-4, at batch 2 and 1 (classifier, SQuAD v2's
beam, RACE); the raw-text signature is refused with a reason. The models and features are those of the TFLite
tests."""

from __future__ import annotations

import os

import numpy as np
import pytest
from test_export_tflite import (  # noqa: F401  (fixtures used by name)
    KEYS,
    _batches,
    _config,
    _savedmodel,
    classifier_export,
    inputs,
    preprocessor,
    race_export,
    tokenizer,
)

pytest.importorskip("tf2onnx")
pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.heavy

TOL = 1e-4


def _convert_and_compare(export_dir, key, batches):
    from albert_tf.export.onnx import convert_signature, run_onnx

    path = convert_signature(export_dir, signature_key=key)
    assert path == os.path.join(export_dir, "model.onnx") and os.path.getsize(path) > 0
    for feeds, ref in zip(batches, _savedmodel(export_dir, key, batches), strict=True):
        got = run_onnx(path, feeds)
        assert sorted(got) == sorted(ref)
        for name, value in ref.items():
            if value.dtype.kind == "f":
                assert float(np.abs(got[name] - value).max()) <= TOL, name
            elif value.dtype.kind in "iu":
                np.testing.assert_array_equal(got[name], value, err_msg=name)
    return path


def test_classifier_token_ids_onnx_equals_savedmodel(classifier_export, inputs):  # noqa: F811
    export_dir, _ = classifier_export
    from albert_tf.export.savedmodel import IDS_SIGNATURE

    batches = _batches(inputs["pairs"])
    ref = _savedmodel(export_dir, IDS_SIGNATURE, batches)
    assert ref[0]["probabilities"].std(axis=0).max() > 2 * TOL  # the inputs answer apart: the comparisons can tell
    _convert_and_compare(export_dir, IDS_SIGNATURE, batches)


def test_squad_v2_and_race_token_ids_onnx_equal_savedmodel(tokenizer, preprocessor, inputs, tmp_path):  # noqa: F811
    import keras

    from albert_tf.tasks.race.export import IDS_SIGNATURE as RACE_IDS
    from albert_tf.tasks.squad.export import export_squad
    from albert_tf.tasks.squad.model import AlbertSquad

    keras.utils.set_random_seed(3)
    squad = AlbertSquad(_config(tokenizer), version_2_with_negative=True)
    squad_dir = str(tmp_path / "squad" / "1")
    export_squad(squad, squad_dir, preprocessor=preprocessor, doc_stride=8, max_query_length=8, max_answer_length=8)
    _convert_and_compare(squad_dir, "serve_token_ids", _batches(inputs["squad"]))

    _convert_and_compare(race_export(tokenizer, preprocessor, tmp_path), RACE_IDS, _batches(inputs["race"]))


def test_the_raw_text_signature_is_refused_with_its_reason(classifier_export):  # noqa: F811
    from albert_tf.export.onnx import convert_signature

    export_dir, _ = classifier_export
    with pytest.raises(ValueError, match="only the token-id signatures convert to ONNX"):
        convert_signature(export_dir, signature_key="serving_default")
