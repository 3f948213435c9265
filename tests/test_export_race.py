"""RACE SavedModel export: raw article / question / options [B, 4] in, probabilities + answer letter out, the
features of the Python pipeline (``convert_example``) built in the graph; loaded through the TF1 session loader."""

from __future__ import annotations

import os

import artefacts
import commands
import numpy as np
import pytest
from conftest import ROOT, shared_path
from tf1_client import as_json_text, serve_in_fresh_process

from albert_tf.config import AlbertConfig
from albert_tf.data import race
from albert_tf.data.race.reader import RaceExample

pytestmark = pytest.mark.heavy  # the shared export (tests/artefacts.py), a TF1 process, the command line

SEQ, QA = 64, 16
BAD_BYTES = (b"Caf\xe9 article \xff\xfe text", b"Which _ is \xc3\x28 right?", b"opt\x80ion")
KEYS = ("input_ids", "input_mask", "segment_ids")
# Cloze blanks at either end, several blanks, empty fields, whitespace runs, accents, İ (lower() adds a combining
# mark) and U+FF3F (NFKD makes it a "_": a cloze question only after pre-processing), digit commas, a long article.
EDGE = [
    ("Art  icle İstanbul", "_ starts  the blank", ("", " x ", "İ", "a_b")),
    ("", "Ends with blank _", ("Ｏne", "two  words", "", "1,000,000")),
    ("Fullwidth", "Question with ＿ fullwidth", ("opt", "", "ÉCOLE", "naïve")),
    ("word " * 200, "", ("", "", "", "")),
    ("café", "__double__", ("ab", "c", "", "Ⅻ")),
]

def _examples(real: bool) -> list[RaceExample]:
    edge = [RaceExample(f"edge-{i}", a, q, o, 0, "middle") for i, (a, q, o) in enumerate(EDGE)]
    if not real:
        return edge
    return race.read_race_examples(str(shared_path("race")), "dev") + edge


@pytest.fixture(scope="module")
def exported(spm_model, tmp_path_factory):
    """(tokenizer, Keras model, export dir) of the session's tiny 4-choice model whose choices answer clearly apart
    (``tests/artefacts.py``), exported at SEQ and QA with its task's metadata."""
    from albert_tf.tokenization import FullTokenizer

    shared = artefacts.exports(tmp_path_factory, spm_model, "race")
    assert (shared.seq, shared.spec["exports"]["default"]["max_qa_length"]) == (SEQ, QA)
    return FullTokenizer(spm_model_file=str(spm_model)), shared.model(), shared.path()


def _python_features(examples, tokenizer) -> dict[str, np.ndarray]:
    feats = [race.convert_example(e, tokenizer, SEQ, QA) for e in examples]
    return {k: np.array([getattr(f, k) for f in feats], np.int32).reshape(-1, 4, SEQ) for k in KEYS}, feats


def _raw(examples) -> dict[str, list]:
    return {
        "article": [e.article for e in examples],
        "question": [e.question for e in examples],
        "options": [list(e.options) for e in examples],
    }


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_raw_text_signature_equals_keras_on_python_features(exported):
    import tensorflow as tf

    from albert_tf.export import load_export_info
    from albert_tf.tasks.race.export import RaceFeaturizer
    from albert_tf.tokenization import AlbertPreprocessor

    tokenizer, model, export_dir = exported
    examples = _examples(real=True)
    ref, feats = _python_features(examples, tokenizer)
    assert any("_" in e.question for e in examples[:-len(EDGE)])  # a real cloze question
    assert any(f.article_cut for f in feats[:-len(EDGE)]) and any(f.qa_cut for f in feats)  # real articles cut
    # The in-graph features are the Python pipeline's, id for id.
    featurizer = RaceFeaturizer(AlbertPreprocessor.from_tokenizer(tokenizer, SEQ), QA)
    raw = _raw(examples)
    got = featurizer(tf.constant(raw["article"]), tf.constant(raw["question"]), tf.constant(raw["options"]))
    for k in KEYS:
        np.testing.assert_array_equal(got[k].numpy(), ref[k], err_msg=k)
    logits = model(ref, training=False).numpy()
    probs = _softmax(logits.astype(np.float64))
    assert probs.std(axis=0).max() > 1e-2
    loaded = tf.saved_model.load(export_dir)
    out = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in raw.items()})
    np.testing.assert_allclose(out["probabilities"].numpy(), probs, atol=1e-5)
    assert [x.decode() for x in out["answer"].numpy()] == ["ABCD"[i] for i in probs.argmax(1)]
    info = load_export_info(export_dir)
    assert info["signatures"]["serving_default"] == ["article", "question", "options"]
    assert (info["max_seq_length"], info["max_qa_length"], info["task"]) == (SEQ, QA, "race")


def test_tf1_session_loader_text_ids_and_bad_inputs(exported, tmp_path):
    """TF Serving's loader in a fresh process: raw text, token ids, and bad requests failing with a message."""
    tokenizer, model, export_dir = exported
    examples = _examples(real=False)
    ref, _ = _python_features(examples, tokenizer)
    probs = _softmax(model(ref, training=False).numpy().astype(np.float64))
    raw = _raw(examples)
    three = {**raw, "options": [o[:3] for o in raw["options"]]}
    short = {**raw, "question": raw["question"][:-1]}
    ids = {k: v.tolist() for k, v in ref.items()}
    bad_ids = {**ids, "input_mask": [m[:3] for m in ids["input_mask"]]}
    requests = [
        {"name": "text", "signature": "serving_default", "feeds": raw},
        {"name": "ids", "signature": "serve_token_ids", "feeds": ids},
        {"name": "three_options", "signature": "serving_default", "feeds": three},
        {"name": "batch_mismatch", "signature": "serving_default", "feeds": short},
        {"name": "bad_ids", "signature": "serve_token_ids", "feeds": bad_ids},
        {"name": "flat_options", "signature": "serving_default", "feeds": {**raw, "options": raw["question"]}},
        {"name": "bytes", "signature": "serving_default", "feeds": {
            "article": [as_json_text(BAD_BYTES[0])], "question": [as_json_text(BAD_BYTES[1])],
            "options": [[as_json_text(BAD_BYTES[2]), "b", as_json_text(BAD_BYTES[0]), ""]]}},
        {"name": "replaced", "signature": "serving_default", "feeds": {
            "article": [BAD_BYTES[0].decode("utf-8", "replace")], "question": [BAD_BYTES[1].decode("utf-8", "replace")],
            "options": [[BAD_BYTES[2].decode("utf-8", "replace"), "b", BAD_BYTES[0].decode("utf-8", "replace"), ""]]}},
    ]
    got = serve_in_fresh_process(tmp_path, [{**r, "dir": export_dir} for r in requests])
    for name in ("text", "ids"):
        np.testing.assert_allclose(np.array(got[name]["probabilities"]), probs, atol=1e-5, err_msg=name)
        assert got[name]["answer"] == ["ABCD"[i] for i in probs.argmax(1)]
    assert "4 strings per question" in got["three_options"]["error"]
    assert "same number of strings" in got["batch_mismatch"]["error"]
    assert "must have the shape of input_ids" in got["bad_ids"]["error"]
    # A rank-1 options feed: the session client refuses it against the [None, None] placeholder (the graph's own
    # check says "[batch, 4]" where a server feeds it past the client).
    assert "options" in got["flat_options"]["error"] and "shape" in got["flat_options"]["error"]
    # Bytes that are not UTF-8 are answered as the Python path reads them (each bad byte a U+FFFD).
    assert "error" not in got["bytes"] and got["bytes"]["probabilities"] == got["replaced"]["probabilities"]


def test_export_savedmodel_cli_task_race(spm_model, tmp_path):
    """export_savedmodel --task=race: a Trainer-layout checkpoint -> <export_dir>/<step> answering raw text."""
    import tensorflow as tf

    from albert_tf import checkpoints as checkpointing
    from albert_tf.export import load_export_info, run_tf1_session
    from albert_tf.tasks.race.model import AlbertMultipleChoice
    from albert_tf.tokenization import FullTokenizer

    vocab = FullTokenizer(spm_model_file=str(spm_model)).vocab_size
    config_path = tmp_path / "tiny.json"
    AlbertConfig.from_name("albert_tiny").replace(vocab_size=vocab).to_json_file(str(config_path))
    model = AlbertMultipleChoice(AlbertConfig.load(str(config_path)))
    model({k: np.zeros((1, 4, 2), np.int32) for k in KEYS}, training=False)
    items = {checkpointing.WEIGHTS_KEY: checkpointing.model_weights(model), "global_step": tf.Variable(5, tf.int64)}
    tf.train.Checkpoint(**items).write(str(tmp_path / "run" / "ckpt-5"))
    argv = ["--task=race", f"--albert_config_file={config_path}", f"--spm_model_file={spm_model}",
            "--max_seq_length=32", "--max_qa_length=8", f"--checkpoint={tmp_path / 'run' / 'ckpt-5'}",
            f"--export_dir={tmp_path / 'serving'}"]
    proc = commands.run([str(ROOT / "export_savedmodel.py"), *argv], env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
                        cwd=str(ROOT), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    export = str(tmp_path / "serving" / "5")
    info = load_export_info(export)
    assert (info["max_seq_length"], info["max_qa_length"], info["global_step"]) == (32, 8, 5)
    x = {k: np.zeros((1, 4, 32), np.int32) for k in KEYS}
    x["input_ids"][:, :, :2] = [2, 3]
    x["input_mask"][:, :, :2] = 1
    out = run_tf1_session(export, x, "serve_token_ids")  # the checkpoint's weights
    np.testing.assert_allclose(out["probabilities"], _softmax(model(x, training=False).numpy()), atol=1e-6)
