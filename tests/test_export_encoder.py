"""export_savedmodel --task=encoder: a reusable TF-Hub-style encoder SavedModel and its raw-text preprocessor.

The exports are loaded in a fresh process that imports only tensorflow and tensorflow_text (what a user of the
SavedModels has), through the TF2 object API (``loaded(inputs, training=...)``, ``trainable_variables``, one
gradient step) and the TF1 session loader TF Serving uses, and compared with the in-process ``AlbertEncoder`` on
``FullTokenizer`` ids. The SentencePiece model is conftest's ``spm_model`` (30k-clean where ``../shared`` is
present, else the sample-corpus substitute): every check holds for any model, with the encoder's vocab size the
model's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import commands
import numpy as np
import pytest
from conftest import ROOT

from albert_tf.config import AlbertConfig

pytestmark = pytest.mark.heavy  # module fixtures build and export models

SEQ = 32
LONG = ("The quick brown fox jumps over the lazy dog; naïve café owners, 1,000 times. " * 40)[:3000]
SINGLES = ["Hello world!", "", "Héllo WORLD, it's 1999,2000 — “quoted” ﬁne text.", LONG, "Tiếng Việt có dấu."]
PAIRS = [
    ("The cat sat on the mat.", "A cat was sitting on a mat."),
    ("", "Only the second segment has text."),
    (LONG, "A short hypothesis."),
    ("No second segment here.", ""),
    ("Short.", LONG),
]

# A fresh process with nothing from albert-tf: the TF2 object API, one fine-tuning step, and the TF1 loader.
LOADER = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (SentencePiece ops of the preprocessor)

    hub_dir, singles, pairs, out_path = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
    pre = tf.saved_model.load(hub_dir + "/preprocessor")
    enc = tf.saved_model.load(hub_dir + "/encoder")
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    ids = {
        "single": pre(tf.constant(singles)),
        "single_sig": pre.signatures["serving_default"](text_a=tf.constant(singles)),
        "pair": pre.signatures["serve_text_pair"](text_a=tf.constant(a), text_b=tf.constant(b)),
        "pair_packed": pre.bert_pack_inputs([pre.tokenize(tf.constant(a)), pre.tokenize(tf.constant(b))]),
        "single_packed": pre.bert_pack_inputs([pre.tokenize(tf.constant(singles))]),
    }
    result = {"ids": {k: {n: v.numpy().tolist() for n, v in d.items()} for k, d in ids.items()}}
    for k in ("single", "pair"):
        result[k] = {n: v.numpy().tolist() for n, v in enc(ids[k]).items()}  # reusable __call__, training=False
    result["pair_sig"] = {
        n: v.numpy().tolist() for n, v in enc.signatures["serving_default"](**ids["pair"]).items()
    }
    x = ids["pair"]
    eval_out = enc(x, training=False)["sequence_output"]
    with tf.GradientTape() as tape:
        train_out = enc(x, training=True)
        loss = tf.reduce_mean(tf.square(train_out["pooled_output"])) + tf.reduce_mean(train_out["sequence_output"])
    grads = tape.gradient(loss, enc.trainable_variables)
    for v, g in zip(enc.trainable_variables, grads):
        v.assign_sub(0.5 * tf.convert_to_tensor(g))  # the embedding gradient is IndexedSlices
    result["reuse"] = {
        "variables": len(enc.variables),
        "trainable_variables": len(enc.trainable_variables),
        "grads": sum(g is not None for g in grads),
        "regularization_losses": len(enc.regularization_losses),
        "dropout_changes_output": float(tf.reduce_max(tf.abs(train_out["sequence_output"] - eval_out))),
        "step_changes_output": float(tf.reduce_max(tf.abs(enc(x)["sequence_output"] - eval_out))),
        "do_lower_case": bool(enc.do_lower_case.numpy()),
        "assets": sorted(os.path.basename(p.asset_path.numpy().decode()) for p in (enc.sp_model_file,
                                                                                    enc.albert_config_file)),
    }
    # The TF1 session loader (TF Serving's SavedModelBundle): preprocessor then encoder, by signature.
    def tf1(export_dir, signature, feeds):
        graph = tf.Graph()
        with graph.as_default(), tf.compat.v1.Session(graph=graph) as sess:
            meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], export_dir)
            sig = meta.signature_def[signature]
            names = sorted(sig.outputs)
            values = sess.run([sig.outputs[n].name for n in names],
                              feed_dict={sig.inputs[k].name: v for k, v in feeds.items()})
            return dict(zip(names, values))
    text = {"text_a": np.array(a, dtype=object), "text_b": np.array(b, dtype=object)}
    tf1_ids = tf1(hub_dir + "/preprocessor", "serve_text_pair", text)
    result["ids"]["tf1_pair"] = {n: v.tolist() for n, v in tf1_ids.items()}
    result["tf1"] = {n: v.tolist() for n, v in tf1(hub_dir + "/encoder", "serving_default", tf1_ids).items()}
    result["albert_tf_imported"] = sorted(m for m in sys.modules if m.startswith("albert_tf"))
    json.dump(result, open(out_path, "w"))
    """
)


def _env() -> dict:
    """This process's environment without PYTHONPATH: the commands find albert-tf as a user's would."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("PYTHONPATH", None)
    return env


def _run(args, cwd, timeout=300):
    return subprocess.run(args, capture_output=True, text=True, cwd=str(cwd), env=_env(), timeout=timeout)


def _tokenizer(spm_model):
    from albert_tf.tokenization import FullTokenizer

    return FullTokenizer(spm_model_file=str(spm_model))


def _tiny_encoder(vocab_size, seed=3):
    import keras

    from albert_tf.modeling import AlbertEncoder

    keras.utils.set_random_seed(seed)
    config = AlbertConfig.from_name("albert_tiny").replace(vocab_size=vocab_size, hidden_dropout_prob=0.1)
    return AlbertEncoder(config)


def _python_ids(tokenizer, pairs):
    """``FullTokenizer`` ids packed by the Python reference of the official packing (what training uses)."""
    from albert_tf.tokenization.packing import pack_inputs

    rows = [
        pack_inputs(tokenizer.encode(a), tokenizer.encode(b) if b is not None else None, SEQ, tokenizer.cls_id,
                    tokenizer.sep_id)
        for a, b in pairs
    ]
    ids = {k: np.array([r[k] for r in rows], np.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    return {"input_word_ids": ids["input_ids"], "input_mask": ids["input_mask"], "input_type_ids": ids["segment_ids"]}


def _reference(encoder, ids):
    from albert_tf.export.encoder import albert_inputs

    out = encoder(albert_inputs(ids), training=False)
    return {k: np.asarray(v) for k, v in out.items()}


def _max_diff(got, want):
    return max(float(np.max(np.abs(np.asarray(got[k], np.float64) - want[k]))) for k in want)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, spm_model):
    """One export through the command line (``python -m albert_tf.cli.export_savedmodel --task=encoder``) of a tiny
    random encoder written as an official TF1 checkpoint; returns ``(encoder, hub dir, process)``."""
    from albert_tf.checkpoints.official import save_official_checkpoint

    tmp = tmp_path_factory.mktemp("export_encoder")
    model = _tiny_encoder(_tokenizer(spm_model).vocab_size)
    prefix = save_official_checkpoint(model, str(tmp / "albert" / "model.ckpt-best"))
    config_path = tmp / "albert" / "albert_config.json"
    model.config.to_json_file(str(config_path))
    spm = spm_model
    proc = commands.run(
        [
            "-m", "albert_tf.cli.export_savedmodel", "--task=encoder",
            f"--albert_config_file={config_path}", f"--spm_model_file={spm}", f"--max_seq_length={SEQ}",
            f"--init_checkpoint={prefix}", f"--export_dir={tmp / 'hub'}",
        ],
        cwd=ROOT, timeout=600, env=_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return model, tmp / "hub", proc


def test_export_savedmodel_cli_task_encoder_writes_encoder_and_preprocessor(exported, spm_model):
    from albert_tf.export import load_export_info

    model, hub, proc = exported
    for kind in ("encoder", "preprocessor"):
        assert f"exported {kind} {hub / kind}" in proc.stdout
        assert (hub / kind / "saved_model.pb").is_file()
    assert sorted(os.listdir(hub)) == ["encoder", "preprocessor"]  # temporary directories renamed into place
    assert sorted(os.listdir(hub / "encoder" / "assets")) == sorted([spm_model.name, "albert_config.json"])
    saved_config = json.loads((hub / "encoder" / "assets" / "albert_config.json").read_text())
    assert AlbertConfig.from_dict(saved_config) == model.config
    assert load_export_info(str(hub / "preprocessor"))["max_seq_length"] == SEQ
    info = load_export_info(str(hub / "encoder"))
    assert info["outputs"] == ["pooled_output", "sequence_output"] and info["checkpoint"].endswith("model.ckpt-best")


def test_encoder_and_preprocessor_reload_without_albert_tf_and_match(exported, tmp_path, spm_model):
    model, hub, _ = exported
    tokenizer = _tokenizer(spm_model)
    script = tmp_path / "load.py"
    script.write_text(LOADER)
    out = tmp_path / "out.json"
    proc = _run([sys.executable, str(script), str(hub), json.dumps(SINGLES), json.dumps(PAIRS), str(out)],
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got["albert_tf_imported"] == []

    # Ids: the in-graph preprocessor equals FullTokenizer + the official packing, exactly, on every path.
    single_ids = _python_ids(tokenizer, [(s, None) for s in SINGLES])
    pair_ids = _python_ids(tokenizer, PAIRS)
    for name, want in (("single", single_ids), ("single_sig", single_ids), ("single_packed", single_ids),
                       ("pair", pair_ids), ("pair_packed", pair_ids), ("tf1_pair", pair_ids)):
        for k, v in want.items():
            np.testing.assert_array_equal(np.array(got["ids"][name][k]), v, err_msg=f"{name}/{k}")
    assert pair_ids["input_type_ids"].max() == 1 and pair_ids["input_mask"][2].sum() == SEQ  # pairs, truncation

    # Outputs: the reloaded encoder (weights from the official checkpoint) equals the in-process AlbertEncoder.
    want_single, want_pair = _reference(model, single_ids), _reference(model, pair_ids)
    assert want_pair["sequence_output"].shape == (len(PAIRS), SEQ, model.config.hidden_size)
    diffs = {
        "single": _max_diff(got["single"], want_single),
        "pair": _max_diff(got["pair"], want_pair),
        "pair_signature": _max_diff(got["pair_sig"], want_pair),
        "tf1_session": _max_diff(got["tf1"], want_pair),
    }
    print("max |reloaded - in-process|:", diffs)
    assert max(diffs.values()) < 1e-5, diffs

    # Reusable SavedModel: every weight trainable and reached by the gradient, dropout only in training mode.
    reuse = got["reuse"]
    assert reuse["trainable_variables"] == len(model.trainable_variables) == reuse["grads"] > 0
    assert reuse["variables"] == len(model.variables) and reuse["regularization_losses"] == 0
    assert reuse["dropout_changes_output"] > 1e-3 and reuse["step_changes_output"] > 1e-3
    assert reuse["do_lower_case"] is True and reuse["assets"] == sorted([spm_model.name, "albert_config.json"])


def test_export_refuses_non_empty_dir_and_a_foreign_vocab(tmp_path, spm_model):
    from albert_tf.config import ConfigError
    from albert_tf.export import encoder as hub

    spm = str(spm_model)
    pieces = _tokenizer(spm_model).vocab_size  # 30000 for 30k-clean
    (tmp_path / "a" / "preprocessor").mkdir(parents=True)
    (tmp_path / "a" / "preprocessor" / "keep.txt").write_text("user file")
    with pytest.raises(FileExistsError, match="not empty"):
        hub.export_encoder_and_preprocessor(_tiny_encoder(pieces), str(tmp_path / "a"), spm_model_file=spm,
                                            max_seq_length=SEQ)
    assert sorted(os.listdir(tmp_path / "a")) == ["preprocessor"]  # the encoder was not written either
    with pytest.raises(ConfigError, match=f"{pieces} pieces but albert_config vocab_size is 1000"):
        hub.export_encoder_and_preprocessor(_tiny_encoder(1000), str(tmp_path / "b"), spm_model_file=spm,
                                            max_seq_length=SEQ)
    assert not (tmp_path / "b").exists()


def test_export_savedmodel_cli_bad_task_is_one_line():
    proc = commands.run(["-m", "albert_tf.cli.export_savedmodel", "--task=hub"], cwd=ROOT, timeout=300, env=_env())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "--task" in errors[0], proc.stderr[-2000:]
    assert "classifier" in errors[0] and "encoder" in errors[0], errors[0]
