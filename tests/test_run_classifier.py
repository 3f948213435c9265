"""run_classifier.py end to end on real MRPC and STS-B with a tiny model; CLI errors; GLUE flagfiles."""

from __future__ import annotations

import csv
import hashlib
import json
import os

import commands
import numpy as np
import pytest
from conftest import ROOT, shared_path

from albert_tf.checkpoints import CheckpointInitError
from albert_tf.config import AlbertConfig
from albert_tf.data import glue
from albert_tf.tasks import glue as glue_task
from albert_tf.tasks.glue.task import run as run_glue
from albert_tf.training.run_config import RunError

SPM = ("spm", "30k-clean.model")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)}


@pytest.fixture
def tiny_config(tmp_path):
    path = tmp_path / "albert_tiny_30k.json"
    AlbertConfig.from_name("albert_tiny").replace(vocab_size=30000).to_json_file(str(path))
    return str(path)


def _cli(*args, cwd=None):
    return commands.run([str(ROOT / "run_classifier.py"), *args], env=ENV, cwd=cwd or str(ROOT), timeout=600)


def _events(logdir) -> dict[str, dict[int, float]]:
    """Every scalar in the TensorBoard event files under ``logdir``, read with TensorFlow's own iterator."""
    import tensorflow as tf

    out: dict[str, dict[int, float]] = {}
    files = sorted(str(p) for p in logdir.glob("events.out.tfevents.*"))
    assert files, f"no event file in {logdir}"
    for path in files:
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                out.setdefault(value.tag, {})[int(event.step)] = float(tf.make_ndarray(value.tensor))
    return out


def _glue_test_index(path):
    with open(path, encoding="utf-8-sig") as f:
        rows = [line.split("\t") for line in f.read().split("\n") if line]
    return [r[0] for r in rows[1:]]


def _read_submission(path):
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows[0], rows[1:]


@pytest.mark.heavy
def test_mrpc_end_to_end_cli(tmp_path, tiny_config):
    """Train 20 steps (ckpt every 10), evaluate each checkpoint, keep the best, predict test, warn on random init."""
    glue_dir = shared_path("glue")
    spm = shared_path(*SPM)
    out = tmp_path / "mrpc"
    proc = _cli(
        f"--data_dir={glue_dir}",
        "--task_name=MRPC",
        f"--output_dir={out}",
        f"--albert_config_file={tiny_config}",
        f"--spm_model_file={spm}",
        "--max_seq_length=32",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--train_step=20",
        "--save_checkpoints_steps=10",
        "--train_batch_size=16",
        "--eval_batch_size=64",
        "--predict_batch_size=64",
        "--learning_rate=1e-3",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RANDOM initialisation" in proc.stderr  # loud warning without --init_checkpoint
    # Every checkpoint evaluated, none deleted.
    assert (out / "ckpt-10.index").exists() and (out / "ckpt-20.index").exists()
    results = json.loads((out / "eval_results.json").read_text())
    steps = [h["global_step"] for h in results["checkpoints"]]
    assert steps == [10, 20]
    for h in results["checkpoints"]:
        assert set(h) >= {"accuracy", "f1", "eval_loss", "num_examples"} and h["num_examples"] == 408
    assert results["key_metric"] == "accuracy"
    accs = [h["accuracy"] for h in results["checkpoints"]]
    assert results["best"]["global_step"] == steps[int(np.argmax(accs))]  # first best on ties
    assert (out / "best" / "ckpt-best.index").exists()
    last, best_step, best_value = (out / "best_trial.txt").read_text().strip().split(":")
    assert (int(last), int(best_step), float(best_value)) == (20, results["best"]["global_step"], max(accs))
    text = (out / "eval_results.txt").read_text()
    assert "accuracy = " in text and "eval_loss = " in text
    # TensorBoard: eval scalars for every evaluated checkpoint, beside the training scalars, equal to the JSON.
    events = _events(out / "eval")
    for h in results["checkpoints"]:
        for metric in ("accuracy", "f1", "eval_loss"):
            assert events[metric][h["global_step"]] == pytest.approx(h[metric], rel=1e-6), metric
    assert sorted(events["accuracy"]) == steps
    assert {10, 20} <= set(_events(out / "train")["loss"])
    # Submission: every test row, index column of test.tsv, label strings.
    header, rows = _read_submission(out / "MRPC.tsv")
    assert header == ["index", "prediction"]
    assert [r[0] for r in rows] == _glue_test_index(glue_dir / "MRPC" / "test.tsv")
    assert {r[1] for r in rows} <= {"0", "1"}
    probs = np.loadtxt(out / "test_results.tsv", delimiter="\t")
    assert probs.shape == (1725, 2) and np.allclose(probs.sum(1), 1.0, atol=1e-5)
    assert [r[1] for r in rows] == [str(i) for i in probs.argmax(1)]


@pytest.mark.heavy
def test_stsb_end_to_end_and_predict_only(tmp_path, tiny_config):
    """Regression: Pearson is the key metric; scores clipped to [0, 5]; predict-only from a given checkpoint."""
    glue_dir = str(shared_path("glue"))
    spm = str(shared_path(*SPM))
    out = str(tmp_path / "stsb")
    base = dict(
        data_dir=glue_dir,
        task_name="STS-B",
        output_dir=out,
        albert_config_file=tiny_config,
        spm_model_file=spm,
        max_seq_length=32,
        train_batch_size=16,
        eval_batch_size=128,
        predict_batch_size=128,
        learning_rate=1e-3,
        train_step=16,
        save_checkpoints_steps=8,
        cached_dir=str(tmp_path / "cache"),
    )
    summary = run_glue(glue_task.make_config(**base, do_train=True, do_eval=True, do_predict=True))
    assert summary["key_metric"] == "pearson"
    # What reading each split counted (run_summary.json "data"): every row used, nothing skipped.
    assert summary["data"]["train"]["examples"] == 5749 and summary["data"]["dev"]["examples"] == 1500
    assert summary["data"]["dev"]["skipped_short_rows"] == 0 and summary["data"]["dev"]["path"].endswith("dev.tsv")
    hist = summary["eval"]
    assert [h["global_step"] for h in hist] == [8, 16]
    for h in hist:
        assert set(h) >= {"pearson", "spearman", "mse", "eval_loss"} and h["num_examples"] == 1500
        assert h["mse"] == pytest.approx(h["eval_loss"], rel=1e-5)  # official STS-B loss is the squared error
    assert summary["best"]["pearson"] == max(h["pearson"] for h in hist)
    # run.json records the tokenizer (what export_savedmodel checks and convert_checkpoint uses)
    with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
        recorded = json.load(f)["tokenizer"]
    with open(spm, "rb") as f:
        assert recorded["sha256"] == hashlib.sha256(f.read()).hexdigest()
    assert recorded["file"] == os.path.abspath(spm) and recorded["do_lower_case"] is True
    header, rows = _read_submission(os.path.join(out, "STS-B.tsv"))
    assert header == ["index", "prediction"]
    assert [r[0] for r in rows] == _glue_test_index(os.path.join(glue_dir, "STS-B", "test.tsv"))
    scores = np.array([float(r[1]) for r in rows])
    raw = np.loadtxt(os.path.join(out, "test_results.tsv")).reshape(-1)
    assert scores.min() >= 0.0 and scores.max() <= 5.0
    assert np.allclose(scores, np.clip(raw, 0, 5), atol=5e-4)
    assert all(len(r[1].split(".")[1]) == 3 for r in rows)

    # Resume: more steps in the same output_dir continue from ckpt-16 and evaluate only the new checkpoint.
    more = run_glue(glue_task.make_config(**{**base, "train_step": 24}, do_train=True, do_eval=True))
    assert [h["global_step"] for h in more["eval"]] == [8, 16, 24]
    assert more["eval"][:2] == hist  # earlier results kept, not recomputed
    assert all(os.path.exists(os.path.join(out, f"ckpt-{s}.index")) for s in (8, 16, 24))

    # Evaluate and predict the first checkpoint into a fresh directory (features come from the shared cache): the
    # named checkpoint is evaluated (not output_dir's, which has none), with the metrics training recorded for it.
    out2 = str(tmp_path / "stsb_predict")
    summary2 = run_glue(
        glue_task.make_config(
            **{**base, "output_dir": out2}, do_eval=True, do_predict=True,
            predict_checkpoint=os.path.join(out, "ckpt-8")
        )
    )
    assert summary2["inference_checkpoint"].endswith("ckpt-8")
    assert [h["global_step"] for h in summary2["eval"]] == [8]
    for key in ("pearson", "spearman", "eval_loss"):
        assert summary2["eval"][0][key] == pytest.approx(hist[0][key], rel=1e-5, abs=1e-6), key
    _, rows2 = _read_submission(os.path.join(out2, "STS-B.tsv"))
    assert len(rows2) == 1379


def test_bad_input_is_rejected_before_training(tmp_path, tiny_config):
    spm = str(shared_path(*SPM))

    def cfg(**kw):
        base = dict(
            data_dir=str(tmp_path),
            task_name="RTE",
            output_dir=str(tmp_path / "o2"),
            albert_config_file=tiny_config,
            spm_model_file=spm,
            do_train=True,
            max_seq_length=16,
        )
        return glue_task.make_config(**{**base, **kw})

    # Unknown task: lists the known ones.
    with pytest.raises(
        glue.GlueDataError, match="unknown GLUE task 'MNLI2'; known tasks: cola, mnli"
    ):
        run_glue(cfg(task_name="MNLI2"))
    # Malformed TSV: file, line and expected layout, before any model is built or directory written.
    (tmp_path / "RTE").mkdir()
    (tmp_path / "RTE" / "train.tsv").write_text("index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\tonly a\n")
    with pytest.raises(glue.GlueDataError) as e:
        run_glue(cfg())
    assert "RTE/train.tsv:3: 2 column(s), expected a header line, then 4 tab-separated columns" in str(e.value)
    assert not (tmp_path / "o2").exists()
    (tmp_path / "RTE" / "train.tsv").write_text("index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n")
    # An output_dir holding someone else's checkpoint (e.g. the pretrained model dir) is not "resumed".
    foreign = tmp_path / "pretrained"
    foreign.mkdir()
    (foreign / "model.ckpt-best.index").write_bytes(b"")
    with pytest.raises(RunError, match="pass it as --init_checkpoint"):
        run_glue(cfg(output_dir=str(foreign)))
    # max_seq_length beyond the position table, a vocab that does not fit the config, nothing to do.
    with pytest.raises(ValueError, match="max_seq_length"):
        run_glue(cfg(max_seq_length=4096))
    with pytest.raises(RunError, match="30000 pieces but albert_config vocab_size is 1000"):
        run_glue(cfg(albert_config_file="albert_tiny"))
    with pytest.raises(RunError, match="at least one of"):
        run_glue(cfg(do_train=False))
    with pytest.raises(RunError, match="needs --spm_model_file"):  # WordPiece has no in-graph path
        run_glue(cfg(spm_model_file=None, vocab_file="vocab.txt", export_dir=str(tmp_path / "e")))


# run_glue.sh values as spec 4.1 tabulates them: warmup, lr, steps, save, batch.
RUN_GLUE_SH = {
    "sst-2": ("SST-2", 1256, 1e-5, 20935, 100, 32),
    "mnli": ("MNLI", 1000, 3e-5, 10000, 100, 128),
    "cola": ("CoLA", 320, 1e-5, 5336, 100, 16),
    "qnli": ("QNLI", 1986, 1e-5, 33112, 200, 32),
    "qqp": ("QQP", 1000, 5e-5, 14000, 100, 128),
    "rte": ("RTE", 200, 3e-5, 800, 100, 32),
    "sts-b": ("STS-B", 214, 2e-5, 3598, 100, 16),
    "mrpc": ("MRPC", 200, 2e-5, 800, 100, 32),
}


def test_glue_flagfiles_match_run_glue_sh():
    """Each configs/glue/<task>.flags parses (on a private FlagValues) into the run_glue.sh values."""
    from absl import flags

    import run_classifier

    fv = flags.FlagValues()
    run_classifier.define_flags(fv)
    for flag in OFFICIAL_FLAGS + ("strategy", "mixed_precision", "jit_compile", "gradient_accumulation_steps"):
        assert flag in fv, flag
    for name, (task, warmup, lr, steps, save, batch) in RUN_GLUE_SH.items():
        fv.unparse_flags()
        fv(["prog", f"--flagfile={ROOT / 'configs' / 'glue' / f'{name}.flags'}"])
        assert fv.task_name == task
        assert (fv.warmup_step, fv.learning_rate, fv.train_step) == (warmup, lr, steps), name
        assert (fv.save_checkpoints_steps, fv.train_batch_size) == (save, batch), name
        assert fv.max_seq_length == 512 and fv.do_lower_case and fv.optimizer == "adamw"


# Spec 4.1 flag table (plus output_dir).
OFFICIAL_FLAGS = (
    "data_dir",
    "task_name",
    "output_dir",
    "spm_model_file",
    "vocab_file",
    "albert_config_file",
    "init_checkpoint",
    "cached_dir",
    "do_lower_case",
    "max_seq_length",
    "do_train",
    "do_eval",
    "do_predict",
    "train_batch_size",
    "eval_batch_size",
    "predict_batch_size",
    "learning_rate",
    "train_step",
    "warmup_step",
    "save_checkpoints_steps",
    "keep_checkpoint_max",
    "iterations_per_loop",
    "use_tpu",
    "optimizer",
    "tpu_name",
    "tpu_zone",
    "gcp_project",
    "export_dir",
)


@pytest.mark.slow
def test_mnli_model_serves_mismatched_dev_and_ax(tmp_path, tiny_config):
    """MNLI format samples: train; evaluate mnli-mm and predict AX with that model into their own subfolders."""
    samples = shared_path("glue", "format_samples")
    spm = str(shared_path(*SPM))
    out = str(tmp_path / "mnli")
    base = dict(
        output_dir=out,
        albert_config_file=tiny_config,
        spm_model_file=spm,
        max_seq_length=16,
        train_batch_size=2,
        eval_batch_size=2,
        predict_batch_size=2,
        train_step=2,
        save_checkpoints_steps=2,
    )
    mnli = glue_task.make_config(
        data_dir=str(samples / "mnli"), task_name="MNLI", do_train=True, do_eval=True, do_predict=True, **base
    )
    assert run_glue(mnli)["best"]["num_examples"] == 2
    mm = run_glue(
        glue_task.make_config(data_dir=str(samples / "mnli"), task_name="mnli-mm", do_eval=True, **base)
    )
    assert mm["eval"][0]["global_step"] == 2 and os.path.exists(os.path.join(out, "mnli-mm", "eval_results.json"))
    ax = run_glue(
        glue_task.make_config(data_dir=str(samples / "ax"), task_name="AX", do_predict=True, **base)
    )
    assert ax["inference_checkpoint"] == os.path.join(out, "best", "ckpt-best")
    header, rows = _read_submission(os.path.join(out, "ax", "AX.tsv"))
    assert [r[0] for r in rows] == ["0", "1", "2"] and {r[1] for r in rows} <= {
        "contradiction",
        "entailment",
        "neutral",
    }
    assert os.path.exists(os.path.join(out, "MNLI-m.tsv"))  # the MNLI run's own submission is untouched
    # Training another task into the same folder is refused.
    with pytest.raises(RunError, match="holds a mnli run"):
        run_glue(
            glue_task.make_config(
                data_dir=str(samples / "rte"), task_name="RTE", do_train=True, **{**base, "max_seq_length": 16}
            )
        )
    # RTE from the MNLI model (the paper's MNLI-first recipe): its three-label head is refused, with the way out.
    rte = dict(base, output_dir=str(tmp_path / "rte"), init_checkpoint=os.path.join(out, "best", "ckpt-best"))
    with pytest.raises(CheckpointInitError, match="task head does not fit.*--init_encoder_only"):
        run_glue(glue_task.make_config(data_dir=str(samples / "rte"), task_name="RTE", do_train=True, **rte))
    summary = run_glue(glue_task.make_config(data_dir=str(samples / "rte"), task_name="RTE", do_train=True,
                                                  init_encoder_only=True, **rte))
    assert summary["global_step"] == 2
