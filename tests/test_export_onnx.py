"""ONNX conversion of the token-id signatures (``export_savedmodel --onnx``, ``albert_tf.export.onnx``): the file
answers through ONNX Runtime as the SavedModel it came from, within 1e-4, at batch 2 and 1 (classifier, SQuAD v2's
beam, RACE); the raw-text signature is refused with a reason. The exports are the session's shared ones
(``tests/artefacts.py``, those of the TFLite tests), read, never written; the features are those of the TFLite
tests."""

from __future__ import annotations

import os

import artefacts
import numpy as np
import pytest
from test_export_tflite import (  # noqa: F401  (fixtures used by name)
    _batches,
    _savedmodel,
    inputs,
    preprocessor,
    shared,
    tokenizer,
)

pytest.importorskip("tf2onnx")
pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.heavy

TOL = 1e-4


def _convert_and_compare(export_dir, key, batches, output_path=None):
    from albert_tf.export.onnx import convert_signature, run_onnx

    path = convert_signature(export_dir, output_path, signature_key=key)
    assert path == (output_path or os.path.join(export_dir, "model.onnx")) and os.path.getsize(path) > 0
    for feeds, ref in zip(batches, _savedmodel(export_dir, key, batches), strict=True):
        got = run_onnx(path, feeds)
        assert sorted(got) == sorted(ref)
        for name, value in ref.items():
            if value.dtype.kind == "f":
                assert float(np.abs(got[name] - value).max()) <= TOL, name
            elif value.dtype.kind in "iu":
                np.testing.assert_array_equal(got[name], value, err_msg=name)
    return path


def test_classifier_token_ids_onnx_equals_savedmodel(shared, inputs, tmp_path):  # noqa: F811
    """Written to the default ``<export>/model.onnx`` (of this test's copy of the shared export)."""
    from albert_tf.export.savedmodel import IDS_SIGNATURE

    export_dir = artefacts.copy_export(shared("classifier").path(), tmp_path)
    batches = _batches(inputs["pairs"])
    ref = _savedmodel(export_dir, IDS_SIGNATURE, batches)
    assert ref[0]["probabilities"].std(axis=0).max() > 2 * TOL  # the inputs answer apart: the comparisons can tell
    _convert_and_compare(export_dir, IDS_SIGNATURE, batches)


def test_squad_v2_and_race_token_ids_onnx_equal_savedmodel(shared, inputs, tmp_path):  # noqa: F811
    from albert_tf.tasks.race.export import IDS_SIGNATURE as RACE_IDS

    squad, race = shared("squad").path("v2"), shared("race").path()
    _convert_and_compare(squad, "serve_token_ids", _batches(inputs["squad"]), str(tmp_path / "squad.onnx"))
    _convert_and_compare(race, RACE_IDS, _batches(inputs["race"]), str(tmp_path / "race.onnx"))


def test_the_raw_text_signature_is_refused_with_its_reason(shared):  # noqa: F811
    from albert_tf.export.onnx import convert_signature

    with pytest.raises(ValueError, match="only the token-id signatures convert to ONNX"):
        convert_signature(shared("classifier").path(), signature_key="serving_default")
