"""TFLite conversion of the token-id signatures (classifier, regression, SQuAD v1 / v2, RACE): the ``.tflite`` file
answers as the SavedModel it came from (within 1e-4), on realistic windows (two segments, padding) at batch 2 and 1.

The exports are the session's shared ones (``tests/artefacts.py``), read, never written: a conversion writes to the
test's own folder, or (the default ``<export>/model.tflite`` path) into this module's copy of the classifier export.

``run_tflite`` runs the pip wheel's ``tf.lite.Interpreter``, which has no Flex delegate and refuses a file holding
Select TF ops, so every comparison here also shows that the file needs TFLite builtins only.
"""

from __future__ import annotations

import os

import artefacts
import numpy as np
import pytest

pytestmark = pytest.mark.heavy  # conversions (the exports are shared: tests/artefacts.py)

# Long enough that every test pair leaves padding with the substitute SentencePiece model of a checkout without
# ../shared (a 250-piece vocabulary: up to 49 pieces for a pair here), which _features asserts. The exports'
# max_seq_length (artefacts.EXPORTS).
SEQ = 64
KEYS = ("input_ids", "input_mask", "segment_ids")
TOL = 1e-4
# Two segments of different lengths, both shorter than SEQ: [CLS] a [SEP] b [SEP] then padding.
PAIRS = [
    ("The cat sat on the mat.", "A cat was sitting on a mat near the door."),
    ("Who wrote it?", "Jane Austen wrote Pride and Prejudice in 1813."),
]
RACE_ARTICLES = [c for _, c in PAIRS]
RACE_OPTIONS = ["on a mat", "in 1813", "near the door", "Jane Austen"]


@pytest.fixture(scope="module")
def tokenizer(spm_model):
    from albert_tf.tokenization import FullTokenizer

    return FullTokenizer(spm_model_file=str(spm_model))


@pytest.fixture(scope="module")
def preprocessor(tokenizer):
    from albert_tf.tokenization import AlbertPreprocessor

    return AlbertPreprocessor.from_tokenizer(tokenizer, SEQ)


@pytest.fixture(scope="module")
def inputs(preprocessor) -> dict[str, dict[str, np.ndarray]]:
    """Every test's id features, built once."""
    race = _features(preprocessor, [(a, o) for a in RACE_ARTICLES for o in RACE_OPTIONS])
    return {
        "pairs": _features(preprocessor),
        "squad": _squad_windows(preprocessor),
        "race": {k: v.reshape(len(RACE_ARTICLES), 4, SEQ) for k, v in race.items()},
    }


def _features(preprocessor, pairs=PAIRS) -> dict[str, np.ndarray]:
    import tensorflow as tf

    out = preprocessor({"text_a": tf.constant([a for a, _ in pairs]), "text_b": tf.constant([b for _, b in pairs])})
    feats = {k: out[k].numpy().astype(np.int32) for k in KEYS}
    assert (feats["input_mask"] == 0).any(axis=1).all() and (feats["segment_ids"] == 1).any(axis=1).all()
    return feats


def _batches(feats: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    return [feats, {k: v[1:] for k, v in feats.items()}]  # batch 2, then batch 1


def _savedmodel(export_dir: str, key: str, batches: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """The SavedModel signature's outputs on each batch (TF2 loader)."""
    import tensorflow as tf

    fn = tf.saved_model.load(export_dir).signatures[key]
    return [{k: v.numpy() for k, v in fn(**{k: tf.constant(v) for k, v in feeds.items()}).items()} for feeds in batches]


def _compare(got: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> dict[str, float]:
    """Float outputs within TOL (returns their max abs difference), integer and string outputs equal."""
    assert sorted(got) == sorted(ref)
    diffs = {}
    for k, r in ref.items():
        g = got[k]
        assert g.shape == r.shape, k
        if r.dtype.kind == "f":
            diffs[k] = float(np.abs(g.astype(np.float64) - r).max())
            assert diffs[k] <= TOL, (k, diffs[k])
        else:
            np.testing.assert_array_equal(g, r, err_msg=k)
    return diffs


def _convert_and_compare(export_dir, key, batches, tmp_path=None):
    from albert_tf.export.tflite import convert_signature, run_tflite

    out = None if tmp_path is None else str(tmp_path / "converted" / f"{key}.tflite")
    path = convert_signature(export_dir, out, signature_key=key)
    assert path == (out or os.path.join(export_dir, "model.tflite")) and os.path.getsize(path) > 0
    assert not [f for f in os.listdir(os.path.dirname(path)) if ".tmp-" in f]  # written, then renamed
    for feeds, ref in zip(batches, _savedmodel(export_dir, key, batches), strict=True):
        _compare(run_tflite(path, feeds, key), ref)
    return path


@pytest.fixture(scope="module")
def shared(tmp_path_factory, spm_model):
    """The session's exports (``tests/artefacts.py``) by name: classifier, regression, squad, race."""
    return lambda name: artefacts.exports(tmp_path_factory, spm_model, name)


@pytest.fixture(scope="module")
def classifier_export(shared, inputs, tmp_path_factory):
    """A tiny 3-label pair classifier exported with a threshold (a scalar output): this module's copy of the shared
    export, its token-id signature converted to the default ``<export>/model.tflite``."""
    assert shared("classifier").seq == SEQ
    export_dir = artefacts.copy_export(shared("classifier").path(), tmp_path_factory.mktemp("cls_export"))
    return export_dir, _convert_and_compare(export_dir, "serve_token_ids", _batches(inputs["pairs"]))


def test_classifier_token_ids_tflite_equals_savedmodel(classifier_export, inputs):
    from albert_tf.export.savedmodel import IDS_SIGNATURE, run_tf1_session
    from albert_tf.export.tflite import run_tflite, signature_inputs

    export_dir, path = classifier_export
    feeds = inputs["pairs"]
    got = run_tflite(path, feeds)
    assert got["probabilities"].std(axis=0).max() > 2 * TOL  # the inputs answer apart: the comparisons can tell
    # TF Serving's TF1 session loader answers the same (the fixture compared with the TF2 loader).
    diffs = _compare(got, run_tf1_session(export_dir, feeds, signature=IDS_SIGNATURE))
    assert set(diffs) == {"logits", "probabilities", "threshold"} and float(got["threshold"]) == 0.25
    assert [x.decode() for x in got["label"]] == [["contradiction", "entailment", "neutral"][i]
                                                  for i in got["probabilities"].argmax(1)]
    # Any batch size, at the export's max_seq_length.
    assert signature_inputs(path) == {k: ([-1, SEQ], "int32") for k in KEYS}


def test_quantized_classifier_files_are_smaller_and_answer_close_to_float32(classifier_export, inputs):
    """``quantize='dynamic'`` stores int8 weights (a quarter of every large float32 tensor), ``'float16'`` half;
    both answer close to the float32 file (the size and dev-metric figures of a trained model:
    benchmarks/tflite_quantization.py)."""
    from albert_tf.export.tflite import convert_signature, run_tflite, signature_inputs

    export_dir, path = classifier_export
    feeds = inputs["pairs"]
    reference = run_tflite(path, feeds)
    sizes = {"none": os.path.getsize(path)}
    for quantize, tol in (("dynamic", 0.05), ("float16", 2e-3)):
        quantized = convert_signature(export_dir, quantize=quantize)
        assert quantized == os.path.join(export_dir, f"model_{quantize}.tflite")
        sizes[quantize] = os.path.getsize(quantized)
        got = run_tflite(quantized, feeds)
        assert signature_inputs(quantized) == signature_inputs(path)
        np.testing.assert_allclose(got["probabilities"], reference["probabilities"], atol=tol)
        assert not np.array_equal(got["logits"], reference["logits"])  # the weights did change
    assert sizes["dynamic"] < 0.4 * sizes["none"] and sizes["float16"] < 0.6 * sizes["none"], sizes
    with pytest.raises(ValueError, match="quantize='int4': expected one of none, dynamic, float16"):
        convert_signature(export_dir, quantize="int4")


def test_regression_token_ids_tflite_equals_savedmodel(shared, inputs, tmp_path):
    """STS-B style (labels=None): ``score`` and ``logits``; written to an explicit output path."""
    _convert_and_compare(shared("regression").path(), "serve_token_ids", _batches(inputs["pairs"]), tmp_path)


def _squad_windows(preprocessor) -> dict[str, np.ndarray]:
    """[CLS] question [SEP] context [SEP] padding, and the official ``p_mask``: 0 on [CLS] and the context, 1 on the
    question, the [SEP]s and the padding."""
    feats = _features(preprocessor, [(q, c) for c, q in PAIRS])
    sep = preprocessor.sep_id
    context = (feats["segment_ids"] == 1) & (feats["input_mask"] == 1) & (feats["input_ids"] != sep)
    p_mask = np.where(context, 0, 1).astype(np.int32)
    p_mask[:, 0] = 0
    return {**feats, "p_mask": p_mask}


@pytest.mark.parametrize("version_2", [False, True], ids=["v1", "v2"])
def test_squad_token_ids_tflite_equals_savedmodel(shared, inputs, tmp_path, version_2):
    """v1: ``start_logits`` / ``end_logits`` (logits of order 1); v2 (``p_mask`` input): the beam's top log-probs and
    indices, and ``cls_logits``; the indices are equal, the floats within 1e-4."""
    windows = {k: v for k, v in inputs["squad"].items() if version_2 or k != "p_mask"}
    export_dir = shared("squad").path("v2" if version_2 else "v1")
    _convert_and_compare(export_dir, "serve_token_ids", _batches(windows), tmp_path)


def test_race_token_ids_tflite_equals_savedmodel(shared, inputs, tmp_path):
    """RACE ``serve_token_ids``: [B, 4, L] ids -> probabilities, answer letter and logits."""
    from albert_tf.export.savedmodel import IDS_SIGNATURE

    _convert_and_compare(shared("race").path(), IDS_SIGNATURE, _batches(inputs["race"]), tmp_path)


def test_bad_calls_say_what_is_wrong(classifier_export, inputs, tmp_path):
    from albert_tf.export.tflite import convert_signature, run_tflite

    export_dir, path = classifier_export
    feeds = inputs["pairs"]
    with pytest.raises(ValueError, match=r"missing \['segment_ids'\]"):
        run_tflite(path, {k: feeds[k] for k in ("input_ids", "input_mask")})
    with pytest.raises(ValueError, match=rf"shape \[2, 16\].*takes \['\?', {SEQ}\]"):
        run_tflite(path, {k: v[:, :16] for k, v in feeds.items()})
    with pytest.raises(ValueError, match=r"no signature 'serve_ids'.*\['serve_tf_examples', 'serve_token_ids', "
                                         r"'serving_default'\]"):
        convert_signature(export_dir, str(tmp_path / "x.tflite"), signature_key="serve_ids")
    with pytest.raises(ValueError, match=r"has no signature 'serving_default'.*\['serve_token_ids'\]"):
        run_tflite(path, feeds, signature_key="serving_default")
    # The tf.Example receiver needs TF kernels (its parser; the length bucketing's dynamic slice); the error names
    # them and the Flex way out (the real-token path's cut to the longest adds Unpack).
    with pytest.raises(ValueError, match=r"'serve_tf_examples'.*TFLITE_BUILTINS: ops ParseExampleV2(, \w+)* "
                                         r"are not supported; select_tf_ops=True"):
        convert_signature(export_dir, str(tmp_path / "examples.tflite"), signature_key="serve_tf_examples")
    assert not list(tmp_path.iterdir())  # nothing written, no temporary left


@pytest.mark.slow  # converting the whole in-graph tokenizer takes a while before it fails
def test_raw_text_signature_names_the_ops_that_block_it(shared, tmp_path):
    """TF string ops and tensorflow_text's SentencePiece ops; with SELECT_TF_OPS it converts (a file for the Flex
    delegate, which the pip wheel's interpreter lacks, so it is not run here)."""
    from albert_tf.export.tflite import convert_signature

    export_dir = shared("classifier").path()
    out = str(tmp_path / "text.tflite")
    with pytest.raises(ValueError, match=r"'serving_default'.*SentencepieceTokenizeOp.*StringLower.*select_tf_ops"):
        convert_signature(export_dir, out, signature_key="serving_default")
    assert not list(tmp_path.iterdir())
    assert os.path.getsize(convert_signature(export_dir, out, signature_key="serving_default", select_tf_ops=True))
