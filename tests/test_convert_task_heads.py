"""Conversions keep a fine-tuned model's task head, or refuse to drop it without ``--encoder_only``.

For each task (classifier, regression, SQuAD v1, SQuAD v2, RACE, tagging) a short real fine-tuning run (the
session's, ``tests/artefacts.py``) is converted from its checkpoint to every other format and back; the model read
back must give the run's outputs, hold the same variables and, for the tagger, the same tag names (a Hugging Face
folder keeps them in ``id2label``). The Hugging Face output is checked with transformers' own task class where
transformers has one (SQuAD v2's head has none: refused, or written as ``AlbertModel`` with ``--encoder_only``);
keras-hub holds the classifier and regression heads (``AlbertTextClassifier``) and refuses the others.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import zipfile

import artefacts
import numpy as np
import pytest

from albert_tf.checkpoints import CheckpointError
from albert_tf.checkpoints.convert import convert
from albert_tf.checkpoints.native import read_native
from albert_tf.checkpoints.report import model_official_arrays
from albert_tf.config import AlbertConfig
from albert_tf.tasks.registry import task_heads

pytestmark = pytest.mark.slow

HEADS = tuple(task_heads())
TASKS = artefacts.RUN_TASKS  # classifier, regression, squad_v1, squad_v2, race, tagging
#: The transformers class of each head (None: transformers has none).
TRANSFORMERS = {"classifier": "AlbertForSequenceClassification", "regression": "AlbertForSequenceClassification",
                "squad_v1": "AlbertForQuestionAnswering", "squad_v2": None, "race": "AlbertForMultipleChoice",
                "tagging": "AlbertForTokenClassification"}
KERAS_HUB = ("classifier", "regression")
SEQ = artefacts.RUN_SEQ


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``runs(task)``: the last checkpoint of the session's short real fine-tuning run of ``task``
    (``artefacts.fine_tuned_run``: two steps on real data, read here, never written)."""
    return lambda task: artefacts.fine_tuned_run(tmp_path_factory, task)


def _inputs(task: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    shape = (3, 4, SEQ) if task == "race" else (3, SEQ)
    ids = rng.integers(5, 30000, size=shape).astype(np.int32)
    mask = np.zeros(shape, np.int32)
    for i, n in enumerate((SEQ, 40, 17)):
        mask[i, ..., :n] = 1
    segments = np.zeros(shape, np.int32)
    segments[..., 10:] = 1
    ids[..., 0] = 2  # [CLS]
    out = {"input_ids": ids * mask, "input_mask": mask, "segment_ids": segments * mask}
    if task == "squad_v2":
        out["p_mask"] = 1 - mask
    return out


def _outputs(model, task: str) -> dict[str, np.ndarray]:
    result = model(_inputs(task), training=False)
    result = result if isinstance(result, dict) else {"logits": result}
    return {k: np.asarray(v) for k, v in result.items()}


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert sorted(a) == sorted(b)
    for key in a:
        if a[key].dtype.kind in "iu":
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        else:
            np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)


def _read(path: str, config_path: str):
    return read_native(path, AlbertConfig.from_json_file(config_path))


def _run_model(ckpt: str):
    model, unplaced = _read(ckpt, str(pathlib.Path(ckpt).parent / "albert_config.json"))
    assert unplaced == []
    return model


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("middle", ["official", "keras", "huggingface", "keras_hub"])
def test_converted_there_and_back_gives_the_same_outputs(task, middle, runs, tmp_path):
    """From the run's checkpoint alone (no albert_config_file: the run's config and model are found) to ``middle``
    and back. The official output holds the head: the conversion's report counts every variable of the task model,
    head included."""
    ckpt = runs(task)
    model = _run_model(ckpt)
    assert type(model).__name__ != "AlbertEncoder"
    want = _outputs(model, task)
    count = len(model_official_arrays(model))
    fmt, there = {"official": ("official", tmp_path / "o" / "model.ckpt"), "keras": ("albert_tf", tmp_path / "m.keras"),
                  "huggingface": ("huggingface", tmp_path / "hf"), "keras_hub": ("keras_hub", tmp_path / "kh")}[middle]
    refused = (middle == "huggingface" and TRANSFORMERS[task] is None) or (middle == "keras_hub"
                                                                           and task not in KERAS_HUB)
    if middle == "keras_hub":
        pytest.importorskip("keras_hub")
    if refused:
        with pytest.raises(CheckpointError, match="head has no .* equivalent .*pass --encoder_only") as e:
            convert(ckpt, "albert_tf", str(there), fmt, heads=HEADS, log=lambda line: None)
        assert "\n" not in str(e.value) and not there.exists()
        logs = []
        result = convert(ckpt, "albert_tf", str(there), fmt, heads=HEADS, encoder_only=True, log=logs.append)
        assert result.dropped and any(f"left out (--encoder_only): {len(result.dropped)} head variables" in line
                                      for line in logs)
        return
    logs = []
    convert(ckpt, "albert_tf", str(there), fmt, heads=HEADS, log=logs.append)
    if middle == "official":
        assert f"loaded {count}, missing 0, unused 0" in logs[0], logs[0]
    back = tmp_path / "back" / "ckpt-1"
    logs = []
    convert(str(there), fmt, str(back), "albert_tf", heads=HEADS, log=logs.append)
    assert f"loaded {count}, missing 0, unused 0" in logs[0], logs[0]
    again, unplaced = _read(str(back), str(back.parent / "albert_config.json"))
    assert unplaced == [] and type(again) is type(model) and len(model_official_arrays(again)) == count
    assert getattr(again, "labels", None) == getattr(model, "labels", None)  # the tagger's tag names
    _same(_outputs(again, task), want)


@pytest.mark.parametrize("task", [t for t in TASKS if TRANSFORMERS[t]])
def test_transformers_task_class_gives_the_same_logits(task, runs, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    ckpt = runs(task)
    model = _run_model(ckpt)
    want = _outputs(model, task)
    convert(ckpt, "albert_tf", str(tmp_path / "hf"), "huggingface", heads=HEADS, log=lambda line: None)
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == [TRANSFORMERS[task]]
    theirs = getattr(transformers, TRANSFORMERS[task]).from_pretrained(str(tmp_path / "hf")).eval()
    x = _inputs(task)
    with torch.no_grad():
        out = theirs(input_ids=torch.tensor(x["input_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(x["input_mask"], dtype=torch.long),
                     token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long))
    if task == "squad_v1":
        got = {"start_logits": out.start_logits.numpy(), "end_logits": out.end_logits.numpy()}
        mask = x["input_mask"].astype(bool)  # transformers leaves padding logits unmasked, as albert-tf's v1 does
        for key in got:
            np.testing.assert_allclose(got[key][mask], want[key][mask], atol=1e-5, err_msg=key)
        return
    assert config.get("num_labels", len(config.get("id2label", {}))) == want["logits"].shape[-1] or task == "race"
    if task == "tagging":
        assert [config["id2label"][str(i)] for i in range(len(model.labels))] == model.labels
    np.testing.assert_allclose(out.logits.numpy(), want["logits"], atol=1e-5)


#: Run in a new interpreter: the converter's command line (``run_cli``, what ``albert_convert_checkpoint`` runs) on
#: each ``.keras`` file in turn, noting whether the file's model module was imported before its conversion.
FRESH = """
import contextlib, io, json, sys

from albert_tf.cli.convert_checkpoint import run_cli

report = []
for task, keras_file, output, module in json.loads(sys.argv[1]):
    before = module in sys.modules
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_cli(["albert_convert_checkpoint", "convert", f"--input={keras_file}", "--input_format=albert_tf",
                        f"--output={output}", "--output_format=official"])
    report.append({"task": task, "code": code, "imported_before": before, "stdout": out.getvalue(),
                   "stderr": err.getvalue()})
json.dump(report, open(sys.argv[2], "w"))
"""


def test_keras_file_of_each_task_model_converts_in_a_fresh_process(runs, tmp_path):
    """A ``.keras`` task model read by the converter's command line in a new process (nothing imported first): one
    process converts the six files in turn, and the first file of each task model's module (GLUE's, SQuAD's, RACE's,
    the tagger's) is read before anything imported that module, so reading the file imports it."""
    files = []
    for task in TASKS:
        convert(runs(task), "albert_tf", str(tmp_path / f"{task}.keras"), "albert_tf", heads=HEADS,
                log=lambda line: None)
        module = json.loads(zipfile.ZipFile(tmp_path / f"{task}.keras").read("config.json"))["module"]
        files.append((task, str(tmp_path / f"{task}.keras"), str(tmp_path / task / "model.ckpt"), module))
    modules = {module for *_, module in files}
    assert len(modules) == 4 and all(m.startswith("albert_tf.tasks.") for m in modules), modules
    script = tmp_path / "fresh.py"
    script.write_text(FRESH)
    done = subprocess.run([sys.executable, str(script), json.dumps(files), str(tmp_path / "report.json")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = {r["task"]: r for r in json.loads((tmp_path / "report.json").read_text())}
    seen = set()
    for task, _, _, module in files:
        r = report[task]
        assert r["code"] == 0, (task, r["stderr"][-3000:])
        count = len(model_official_arrays(_run_model(runs(task))))
        assert f"loaded {count}" in r["stdout"] and "Traceback" not in r["stderr"], (task, r)
        assert r["imported_before"] is (module in seen), (task, module)  # the first file of a module imports it
        seen.add(module)
