"""SavedModel export: raw text in, probabilities + label out, loaded through the TF1 session loader TF Serving uses.

The exports are the session's shared ones (``tests/artefacts.py``): a 3-label pair classifier with a threshold, a
single-sentence regression, and one 2-label classifier exported four ways (length buckets + real tokens, the
official padding, buckets only, XLA). Every TF1 request of this module goes to one fresh process (``served``).
Only the command-line test exports (``export_savedmodel.py``, the GLUE task's one command-line run).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import artefacts
import commands
import numpy as np
import pytest
from conftest import ROOT, shared_path
from tf1_client import as_json_text, serve_in_fresh_process

from albert_tf.config import AlbertConfig
from albert_tf.data import glue

LONG = ("The quick brown fox jumps over the lazy dog; naïve café owners, 1,000 times. " * 200)[:10000]
PAIRS = [
    ("The cat sat on the mat.", "A cat was sitting on a mat."),
    ("", "Only the second segment has text."),
    (LONG, "A short hypothesis."),
    ("Héllo WORLD, it's 1999,2000 — “quoted” ﬁne text.", ""),
    ("Tiếng Việt có dấu.", LONG),
]
LABELS = ["contradiction", "entailment", "neutral"]
# Bytes that are not UTF-8 are answered as the Python path reads them (each bad byte a U+FFFD).
BAD = [b"caf\xe9 \xff\xfe ok", b"\xc3\x28 second \x80"]
# A batch of mixed lengths, all short: the length buckets cut it (to 64), most of its short rows is padding.
MIXED_A = ["The cat sat on the mat.", "Héllo WORLD, it's 1999,2000.", "", "The quick brown fox jumps " * 12]
MIXED_B = ["A cat was sitting on a mat.", "", "Only the second segment has text.", "Short."]
IDS = ("input_ids", "input_mask", "segment_ids")


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _tokenizer():
    from albert_tf.tokenization import FullTokenizer

    return FullTokenizer(spm_model_file=str(shared_path("spm", "30k-clean.model")))


@pytest.fixture(scope="module")
def shared(tmp_path_factory, spm_model):
    """The session's exports by name (``tests/artefacts.py``); this module's tests need the real 30k-clean model
    (token counts), so they skip where ``../shared`` is absent."""
    shared_path("spm", "30k-clean.model")
    return lambda name: artefacts.exports(tmp_path_factory, spm_model, name)


def _ids(pre, a, b=None) -> dict:
    import tensorflow as tf

    inputs = {"text_a": tf.constant(a)} if b is None else {"text_a": tf.constant(a), "text_b": tf.constant(b)}
    return {k: v.numpy() for k, v in pre(inputs).items() if k in IDS}


@pytest.fixture(scope="module")
def served(shared, tmp_path_factory):
    """Every TF1 request of this module, answered by one fresh process (TF Serving's loader): ``{name: outputs}``,
    with the features sent and the Keras references. Named ``<export>-<what>``."""
    from albert_tf.tokenization import AlbertPreprocessor

    tokenizer = _tokenizer()
    cls, reg, var = shared("classifier"), shared("regression"), shared("classifier_variants")
    a, b = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    # The classifier: raw text, the Python pipeline's features (token ids, tf.Example records), bad bytes, bad batch.
    proc = glue.get_processor("mnli")
    py = [glue.convert_example(glue.InputExample(str(i), x, y, None), proc, cls.seq, tokenizer)
          for i, (x, y) in enumerate(PAIRS)]
    ids_feeds = {k: [getattr(f, k) for f in py] for k in IDS}
    examples = [as_json_text(glue._serialize(f, False)) for f in py]
    replaced = [x.decode("utf-8", "replace") for x in BAD]
    path = cls.path()
    requests = [
        {"name": "cls-text", "dir": path, "signature": "serving_default", "feeds": {"text_a": a, "text_b": b}},
        {"name": "cls-ids", "dir": path, "signature": "serve_token_ids", "feeds": ids_feeds},
        {"name": "cls-examples", "dir": path, "signature": "serve_tf_examples",
         "feeds": {"serialized_example": examples}},
        {"name": "cls-bytes", "dir": path, "signature": "serving_default",
         "feeds": {"text_a": [as_json_text(x) for x in BAD], "text_b": ["", as_json_text(BAD[0])]}},
        {"name": "cls-replaced", "dir": path, "signature": "serving_default",
         "feeds": {"text_a": replaced, "text_b": ["", replaced[0]]}},
        {"name": "cls-batch", "dir": path, "signature": "serving_default", "feeds": {"text_a": a, "text_b": b[:2]}},
        # The single-sentence regression.
        {"name": "reg-text", "dir": reg.path(), "signature": "serving_default", "feeds": {"text_a": a}},
    ]
    # The four exports of one classifier on a batch of mixed lengths: raw text, and token ids where the signature's
    # own code differs (the XLA forward).
    var_ids = _ids(AlbertPreprocessor.from_tokenizer(tokenizer, var.seq), MIXED_A, MIXED_B)
    for variant in ("default", "bucketed", "padded", "xla"):
        requests.append({"name": f"{variant}-text", "dir": var.path(variant), "signature": "serving_default",
                         "feeds": {"text_a": MIXED_A, "text_b": MIXED_B}})
    for variant in ("default", "xla"):
        requests.append({"name": f"{variant}-ids", "dir": var.path(variant), "signature": "serve_token_ids",
                         "feeds": {k: v.tolist() for k, v in var_ids.items()}})
    got = serve_in_fresh_process(tmp_path_factory.mktemp("served"), requests)
    cls_ids = _ids(AlbertPreprocessor.from_tokenizer(tokenizer, cls.seq), a, b)
    reg_ids = _ids(AlbertPreprocessor.from_tokenizer(tokenizer, reg.seq), a)
    return {
        "got": got,
        "cls_ids": cls_ids, "cls_python_ids": ids_feeds,
        "cls_ref": _softmax(cls.model()(cls_ids, training=False).numpy().astype(np.float64)),
        "reg_ref": reg.model()(reg_ids, training=False).numpy()[:, 0],
        "var_ids": var_ids, "var_ref": var.model()(var_ids, training=False).numpy(),
    }


@pytest.mark.heavy
def test_export_answers_raw_text_like_keras_in_tf1_session(shared, served):
    from albert_tf.export import savedmodel

    assert savedmodel.load_export_info(shared("classifier").path())["labels"] == LABELS
    got, ref_probs = served["got"], served["cls_ref"]
    assert ref_probs.std(axis=0).max() > 1e-3  # the inputs give different answers
    assert "error" not in got["cls-bytes"] and got["cls-bytes"]["probabilities"] == got["cls-replaced"]["probabilities"]
    assert "text_a and text_b must hold the same number of strings" in got["cls-batch"]["error"]
    text = got["cls-text"]
    assert text["inputs"] == ["text_a", "text_b"] and text["method"] == "tensorflow/serving/predict"
    np.testing.assert_allclose(np.array(text["probabilities"]), ref_probs, atol=1e-6)
    assert text["label"] == [LABELS[i] for i in ref_probs.argmax(1)]
    # The token-id signature fed with the Python pipeline's features answers the same: in-graph tokenization
    # of the raw strings (empty and 10,000-character ones included) equals the training-time features.
    np.testing.assert_array_equal(served["cls_ids"]["input_ids"], np.array(served["cls_python_ids"]["input_ids"]))
    np.testing.assert_allclose(np.array(got["cls-ids"]["probabilities"]), ref_probs, atol=1e-6)
    np.testing.assert_allclose(np.array(got["cls-examples"]["probabilities"]), ref_probs, atol=1e-6)
    assert got["cls-examples"]["inputs"] == ["serialized_example"]
    assert text["threshold"] == got["cls-examples"]["threshold"] == 0.25


def _function_library(export_dir: str) -> list:
    """The functions of a SavedModel's graph (the signatures' bodies live there)."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    return list(proto.meta_graphs[0].graph_def.library.function)


def _xla_functions(export_dir: str) -> list[str]:
    """Names of the functions in a SavedModel's graph that are marked for XLA compilation."""
    return [f.signature.name for f in _function_library(export_dir) if f.attr["_XlaMustCompile"].b]


@pytest.mark.heavy
def test_jit_compile_export_answers_like_keras_in_tf1_session(shared, served):
    """export_classifier(jit_compile=True): the forward is an XLA function in every signature, the answers equal
    the Keras model's through the TF1 loader (TF Serving's), raw text and token ids alike."""
    from albert_tf.export import savedmodel

    var = shared("classifier_variants")
    xla, plain = var.path("xla"), var.path("default")
    assert savedmodel.load_export_info(xla)["jit_compile"] is True
    assert _xla_functions(xla) and not _xla_functions(plain)
    ref = _softmax(served["var_ref"].astype(np.float64))
    for name in ("xla-text", "xla-ids"):
        np.testing.assert_allclose(np.array(served["got"][name]["probabilities"]), ref, atol=1e-5)
        assert served["got"][name]["label"] == [str(i) for i in ref.argmax(1)]


@pytest.mark.heavy
def test_regression_single_sentence_export_returns_scores(served):
    got = served["got"]["reg-text"]
    assert got["inputs"] == ["text_a"] and "probabilities" not in got
    np.testing.assert_allclose(np.array(got["score"]), served["reg_ref"], atol=1e-5)


def test_export_refuses_non_empty_dir_and_label_mismatch(tmp_path):
    from albert_tf.tasks.glue import export as serving

    class Dummy:
        num_labels = 2

    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("user file")
    with pytest.raises(ValueError, match="3 label strings for a model with 2 labels"):
        serving.export_classifier(Dummy(), str(tmp_path / "y"), labels=["a", "b", "c"], text_pair=False, preprocessor=1)
    with pytest.raises(FileExistsError, match="not empty"):
        serving.export_classifier(Dummy(), str(tmp_path / "x"), labels=["a", "b"], text_pair=False, preprocessor=1)
    assert (tmp_path / "x" / "keep.txt").read_text() == "user file"


def test_export_real_tokens_is_one_option_on_by_default_for_every_task():
    """``--export_real_tokens`` is a field of the shared options, on by default; with ``--export_jit_compile`` the
    export computes every position instead (no error: XLA compiles no data-dependent token count)."""
    from albert_tf.tasks.base import FineTuningOptions
    from albert_tf.tasks.glue.options import GlueOptions
    from albert_tf.tasks.registry import SHARED_EXPORT_FLAGS

    assert FineTuningOptions().export_real_tokens and "export_real_tokens" in SHARED_EXPORT_FLAGS
    assert GlueOptions(export_jit_compile=True).export_real_tokens


@pytest.mark.slow
def test_export_savedmodel_cli_from_a_trainer_checkpoint(tmp_path):
    """export_savedmodel.py: a Trainer-layout checkpoint of an SST-2 model -> <export_dir>/<step> serving raw text."""
    import tensorflow as tf

    from albert_tf import checkpoints as checkpointing
    from albert_tf.export import savedmodel
    from albert_tf.tasks.glue.task import GlueTask

    config_path = tmp_path / "tiny.json"
    AlbertConfig.from_name("albert_tiny").replace(vocab_size=30000).to_json_file(str(config_path))
    model = GlueTask(
        glue.get_processor("sst-2"), AlbertConfig.load(str(config_path)), 16
    ).build_model()
    items = {
        checkpointing.WEIGHTS_KEY: checkpointing.model_weights(model),
        "global_step": tf.Variable(7, dtype=tf.int64),
    }
    tf.train.Checkpoint(**items).write(str(tmp_path / "run" / "ckpt-7"))
    spm = shared_path("spm", "30k-clean.model")
    proc = commands.run(
        [
            str(ROOT / "export_savedmodel.py"),
            "--task_name=SST-2",
            f"--albert_config_file={config_path}",
            f"--spm_model_file={spm}",
            "--max_seq_length=16",
            f"--checkpoint={tmp_path / 'run' / 'ckpt-7'}",
            f"--export_dir={tmp_path / 'serving'}",
            "--tflite",
            "--noexport_real_tokens",
        ],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        cwd=str(ROOT),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    export = tmp_path / "serving" / "7"
    assert savedmodel.load_export_info(str(export))["real_tokens"] is False  # the flag reached the export
    ids = [[2, 3] + [0] * 14]
    feeds = {"input_ids": ids, "input_mask": [[1, 1] + [0] * 14], "segment_ids": [[0] * 16]}
    got = serve_in_fresh_process(tmp_path, [
        {"name": "t", "dir": str(export), "signature": "serving_default", "feeds": {"text_a": ["a b", ""]}},
        {"name": "i", "dir": str(export), "signature": "serve_token_ids", "feeds": feeds}])
    assert got["t"]["inputs"] == ["text_a"] and set(got["t"]["label"]) <= {"0", "1"}
    x = {"input_ids": np.array([[2, 3]], np.int32), "input_mask": np.ones((1, 2), np.int32)}
    x["segment_ids"] = np.zeros((1, 2), np.int32)
    ref = _softmax(model(x, training=False).numpy())
    np.testing.assert_allclose(np.array(got["i"]["probabilities"]), ref, atol=1e-6)  # the checkpoint's weights
    # --tflite: the token-id signature as builtin-only TFLite next to the SavedModel, answering the same.
    from albert_tf.export.tflite import run_tflite

    assert f"wrote {export / 'model.tflite'}" in proc.stdout
    lite = run_tflite(str(export / "model.tflite"), {k: np.array(v, np.int32) for k, v in feeds.items()})
    np.testing.assert_allclose(lite["probabilities"], ref, atol=1e-4)
    # docs/serving.md's query snippet, as written but for the export's path, in a fresh interpreter.
    page = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    snippet = re.search(r"<!-- query:begin -->\s*```python\n(.*?)```\s*<!-- query:end -->", page, re.S).group(1)
    assert '"out/sst-2/export/2000"' in snippet
    script = tmp_path / "query.py"
    script.write_text(snippet.replace('"out/sst-2/export/2000"', repr(str(export))), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"\[b'[01]' b'[01]'\]", done.stdout), done.stdout


def test_every_export_is_written_under_a_temporary_name_and_renamed(tmp_path):
    """The one SavedModel writer of the package: a failed write leaves nothing, a finished one no temporary."""
    from albert_tf.export.savedmodel import EXPORT_INFO, write_savedmodel_atomic

    target = tmp_path / "export" / "7"

    def failing(tmp):
        os.makedirs(os.path.join(tmp, "variables"))
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError, match="killed mid-write"):
        write_savedmodel_atomic(str(target), failing, {"kind": "test"})
    assert not target.exists() and not list(tmp_path.rglob("*.tmp-*"))

    def writes(tmp):
        os.makedirs(tmp)
        with open(os.path.join(tmp, "saved_model.pb"), "wb") as f:
            f.write(b"graph")

    assert write_savedmodel_atomic(str(target), writes, {"kind": "test"}) == str(target)
    assert (target / "saved_model.pb").read_bytes() == b"graph"
    assert json.loads((target / EXPORT_INFO).read_text()) == {"kind": "test"}
    assert sorted(p.name for p in target.parent.iterdir()) == ["7"]
    with pytest.raises(FileExistsError, match="not empty"):
        write_savedmodel_atomic(str(target), writes, {})


def test_the_writer_traces_each_signature_once_and_tf_serving_answers(tmp_path):
    """``write_archive`` runs each signature's Python body once (``tf.saved_model.save`` would trace again what
    was traced outside its save context: seconds per export), writes every endpoint as a signature plus the
    ``serving_default`` alias of the first, and the TF1 session loader (TF Serving's) answers from the variables."""
    import keras
    import tensorflow as tf

    from albert_tf.export.savedmodel import run_tf1_session, write_archive

    layer = keras.layers.Dense(2, kernel_initializer="ones", bias_initializer="ones")
    layer.build((None, 3))
    traced = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def double(x):
        traced.append("double")
        return {"y": 2.0 * layer(x)}

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def plain(x):
        traced.append("plain")
        return {"y": layer(x)}

    path = write_archive(str(tmp_path / "m" / "1"), [layer], {"serve_double": double, "serve_plain": plain},
                         {"kind": "test"})
    assert sorted(traced) == ["double", "plain"]
    x = [[1.0, 2.0, 3.0]]
    assert run_tf1_session(path, {"x": x}, "serve_plain")["y"].tolist() == [[7.0, 7.0]]
    assert run_tf1_session(path, {"x": x}, "serve_double")["y"].tolist() == [[14.0, 14.0]]
    assert run_tf1_session(path, {"x": x})["y"].tolist() == [[14.0, 14.0]]  # serving_default: the first endpoint


def _length_probe():
    """A stand-in classifier whose logits are [sequence length it was called with, 0]: the served logits show where
    the export's length bucketing cut each request."""
    import keras
    import tensorflow as tf

    class LengthProbe(keras.Model):
        num_labels = 2

        def call(self, inputs, training=False):
            ids = inputs["input_ids"]
            length = tf.cast(tf.shape(ids)[1], tf.float32) * tf.ones_like(tf.cast(ids[:, 0], tf.float32))
            return tf.stack([length, tf.zeros_like(length)], axis=-1)

    probe = LengthProbe()
    probe({k: tf.zeros([1, 8], tf.int32) for k in ("input_ids", "input_mask", "segment_ids")})  # built
    return probe


@pytest.mark.heavy
def test_bucketed_export_cuts_each_text_request_to_its_bucket(tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (SentencePiece ops of the raw-text signature)

    from albert_tf.export import savedmodel
    from albert_tf.tasks.glue import export as serving
    from albert_tf.tokenization import AlbertPreprocessor

    pre = AlbertPreprocessor.from_tokenizer(_tokenizer(), 128)
    short = ("The cat sat on the mat.", "A dog.")  # 14 tokens packed -> bucket 32
    medium = ("The quick brown fox jumps over the lazy dog " * 3, "and runs away.")  # ~35 tokens -> 48
    exports = {}
    for name, buckets in (("bucketed", "32,48,64"), ("fixed", "none")):
        exports[name] = str(tmp_path / name / "1")
        serving.export_classifier(_length_probe(), exports[name], labels=["a", "b"], text_pair=True,
                                  preprocessor=pre, bucket_lengths=buckets, real_tokens=False)
    assert savedmodel.load_export_info(exports["bucketed"])["bucket_lengths"] == [32, 48, 64, 128]
    assert savedmodel.load_export_info(exports["fixed"])["bucket_lengths"] is None
    loaded = {k: tf.saved_model.load(v) for k, v in exports.items()}

    def lengths(name, signature, **feeds):
        out = loaded[name].signatures[signature](**{k: tf.constant(v) for k, v in feeds.items()})
        return out["logits"].numpy()[:, 0].tolist()

    n_medium = int(pre({"text_a": tf.constant([medium[0]]), "text_b": tf.constant([medium[1]])})["input_mask"]
                   .numpy().sum())
    assert 32 < n_medium <= 48
    text = "serving_default"
    assert lengths("bucketed", text, text_a=[short[0]], text_b=[short[1]]) == [32]
    assert lengths("bucketed", text, text_a=[short[0], medium[0]], text_b=[short[1], medium[1]]) == [48, 48]
    assert lengths("bucketed", text, text_a=[LONG], text_b=["x"]) == [128]
    assert lengths("fixed", text, text_a=[short[0]], text_b=[short[1]]) == [128]
    # tf.Example records (padded to max_seq_length by the feature writer) are cut the same way.
    record = tf.train.Example(features=tf.train.Features(feature={
        k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in
        (("input_ids", [2, 9, 3] + [0] * 125), ("input_mask", [1, 1, 1] + [0] * 125), ("segment_ids", [0] * 128))
    })).SerializeToString()
    assert lengths("bucketed", "serve_tf_examples", serialized_example=[record]) == [32]
    assert lengths("fixed", "serve_tf_examples", serialized_example=[record]) == [128]
    # Token ids run at the length the caller sends (--tflite converts this signature, builtins only, fixed length).
    ids = np.full((2, 200), 7, np.int32)
    mask = np.zeros((2, 200), np.int32)
    mask[0, :10] = 1
    mask[1, :4] = 1  # a row with no real token is refused
    assert lengths("bucketed", "serve_token_ids", input_ids=ids, input_mask=mask, segment_ids=0 * ids) == [200, 200]


def _library_op_types(export_dir: str) -> set[str]:
    """Op types of every function in a SavedModel's graph."""
    return {node.op for f in _function_library(export_dir) for node in f.node_def}


@pytest.mark.heavy
def test_real_token_export_answers_like_the_bucketed_export(shared, served):
    """export_classifier's default (real_tokens=True): a batch of mixed lengths (the short examples padded to the
    long one's bucket) through the raw-text and tf.Example signatures, loaded by the TF1 loader TF Serving uses, gives
    the every-position export's answers (real_tokens=False); its graph lays the real tokens out in rows
    (``FloorMod``), the other's does not; the token-id signature is the same (what --tflite converts); with
    jit_compile every position is computed."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (SentencePiece ops of the raw-text signature)

    from albert_tf.export import savedmodel

    var = shared("classifier_variants")
    real, bucketed = var.path("default"), var.path("bucketed")
    feats, ref, got = served["var_ids"], served["var_ref"], served["got"]
    lengths = feats["input_mask"].sum(1)
    assert lengths.max() > 2 * lengths.min()  # mixed: most of the short rows is padding
    assert savedmodel.load_export_info(real)["real_tokens"] is True
    assert savedmodel.load_export_info(bucketed)["real_tokens"] is False
    # the layout of the real tokens splits each one's flat position into row and column (TokenLayout.of, to gather
    # Q, K and V into rows for attention): ops the default graph has not (test_export_work counts the dense work)
    assert {"FloorDiv", "FloorMod"} <= _library_op_types(real)
    assert not {"FloorDiv", "FloorMod"} & _library_op_types(bucketed)
    for name in ("default-text", "bucketed-text", "default-ids"):
        np.testing.assert_allclose(np.array(got[name]["logits"]), ref, atol=1e-5, err_msg=name)
        assert got[name]["label"] == [str(i) for i in ref.argmax(1)]
    assert ref.std(axis=0).max() > 1e-2  # the inputs give different answers
    records = [tf.train.Example(features=tf.train.Features(feature={
        k: tf.train.Feature(int64_list=tf.train.Int64List(value=feats[k][i].tolist())) for k in IDS
    })).SerializeToString() for i in range(len(MIXED_A))]
    out = tf.saved_model.load(real).signatures["serve_tf_examples"](serialized_example=tf.constant(records))
    np.testing.assert_allclose(out["logits"].numpy(), ref, atol=1e-5)
    assert savedmodel.load_export_info(var.path("xla"))["real_tokens"] is False


@pytest.mark.heavy
def test_bucketed_export_answers_like_fixed_padding(shared, served):
    """The real classifier: short requests through the bucketed export (the default) give the official padding
    export's logits (every request padded to max_seq_length) and the Keras model's at full padding."""
    from albert_tf.export import savedmodel

    var = shared("classifier_variants")
    assert savedmodel.load_export_info(var.path("default"))["bucket_lengths"] == [32, 48, 64, 80, 96, 128]
    assert savedmodel.load_export_info(var.path("padded"))["bucket_lengths"] is None
    ref = served["var_ref"]
    assert var.seq == 128 and served["var_ids"]["input_ids"].shape[1] == 128  # the reference at full padding
    for name in ("default-text", "padded-text"):
        np.testing.assert_allclose(np.array(served["got"][name]["logits"]), ref, atol=1e-5, err_msg=name)
    assert ref.std(axis=0).max() > 1e-2  # the inputs give different answers


def test_a_rerun_keeps_the_export_of_the_same_checkpoint_and_length_only(tmp_path):
    """``experiment.existing_export``: what ``export_savedmodel`` and ``--export_dir`` find when the same command
    runs again. The export of the same checkpoint at the same length is kept; another checkpoint or length is not
    (that export is then refused as a non-empty folder, as before)."""
    import json
    from types import SimpleNamespace

    import tensorflow as tf

    from albert_tf.export.savedmodel import EXPORT_INFO
    from albert_tf.training.experiment import existing_export

    prefix = tf.train.Checkpoint(global_step=tf.Variable(7, dtype=tf.int64)).write(str(tmp_path / "run" / "ckpt-7"))
    info = tmp_path / "export" / "7" / EXPORT_INFO
    info.parent.mkdir(parents=True)
    info.write_text(json.dumps({"checkpoint": prefix, "max_seq_length": 64}))
    task = SimpleNamespace(options=SimpleNamespace(max_seq_length=64))
    assert existing_export(str(tmp_path / "export"), prefix, task) == str(tmp_path / "export" / "7")
    assert existing_export(str(tmp_path / "export"), prefix, SimpleNamespace(options=SimpleNamespace(
        max_seq_length=128))) is None
    assert existing_export(str(tmp_path / "export"), prefix + "-other", task) is None
    assert existing_export(str(tmp_path / "elsewhere"), prefix, task) is None
