"""The notebooks in ``notebooks/``: committed clean, and executed end to end on CPU with tiny parameters.

* Fast: every notebook is valid nbformat v4, has no outputs and no execution counts, and has one cell tagged
  ``parameters`` (papermill's convention); the device cell maps TPU/GPU/CPU to the runners' strategy flags and
  refuses a TPU without a ``gs://`` bucket; ``read_scalar_curves`` (what notebook 01 plots from) reads back what
  the runners' writer wrote.
* Slow (CI): each notebook runs once, top to bottom, in a fresh ``python3`` kernel of this interpreter (nbclient),
  its parameters overridden papermill-style by a cell inserted after the ``parameters`` cell, on ``../shared/data``
  where present or the built-in sample data; the kernel is shut down when the notebook ends, passed or failed. A
  failing cell fails the test with its traceback. The run goes into a folder that already holds what an earlier run
  of the notebook left there (:func:`leave_an_earlier_run`: its run folders with a stale file in each, a stale
  export), as when a user runs a notebook again: each notebook's run starts fresh, so none of it may remain. The
  released checkpoint of notebooks 02 and 03 is a tiny, randomly initialised model written in the official TF1
  layout (02) and as a Hugging Face directory (03), with the tokenizer beside it as in the real releases.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import re
import shutil
import sys
import time
from datetime import datetime

import pytest
from conftest import ROOT, shared_data_dir, shared_path

NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = ("01_pretraining_from_scratch.ipynb", "02_finetune_and_serve.ipynb", "03_squad_v2.ipynb")
# Every notebook's parameters cell defines these (device selection, the TPU bucket, the install source).
COMMON_PARAMETERS = {"ALBERT_TF_SOURCE", "DEVICE", "TPU_ADDRESS", "GCS_BUCKET", "PRECISION", "SEED", "WORK_DIR"}
CELL_TIMEOUT_S = 900
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def read_notebook(path: pathlib.Path):
    import nbformat

    return nbformat.read(str(path), as_version=nbformat.NO_CONVERT)


def parameters_index(nb) -> int:
    tagged = [i for i, cell in enumerate(nb.cells) if "parameters" in cell.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"expected one cell tagged 'parameters', found {len(tagged)}"
    return tagged[0]


def parameter_names(source: str) -> set[str]:
    """Names assigned at the top level of a parameters cell."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


# ------------------------------------------------------------------------------------------------ fast checks
def test_every_expected_notebook_is_there():
    assert [p.name for p in NOTEBOOKS] == list(EXPECTED)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_clean(path):
    import nbformat

    nb = read_notebook(path)
    assert nb.nbformat == 4, f"{path.name}: nbformat {nb.nbformat}, expected 4"
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name} cell {i} has outputs: clear them before committing"
            assert cell.execution_count is None, f"{path.name} cell {i} has an execution count"
    index = parameters_index(nb)
    cell = nb.cells[index]
    assert cell.cell_type == "code"
    assert COMMON_PARAMETERS <= parameter_names(cell.source), COMMON_PARAMETERS - parameter_names(cell.source)
    assert nb.cells[0].cell_type == "markdown"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    # Clean JSON as nbformat writes it, so that a re-save does not show up as a diff.
    assert path.read_text(encoding="utf-8").rstrip("\n") == nbformat.writes(nb).rstrip("\n"), (
        f"{path.name} is not in nbformat's own JSON layout: re-save it with "
        "python -c 'import nbformat as n, sys; n.write(n.read(sys.argv[1], 4), sys.argv[1])' <file>"
    )


def test_read_scalar_curves_sorted_deduplicated_and_since(tmp_path):
    """What notebook 01 plots: the runner's writer, then a 'resumed' writer re-logging steps after a checkpoint."""
    from albert_tf.training.summaries import read_scalar_curves, read_scalars, write_scalars

    logdir = str(tmp_path / "train")
    assert read_scalar_curves(logdir) == {}
    writer = None
    for step in (1, 2, 3):
        writer = write_scalars(logdir, step, {"loss": 10.0 - step, "mlm_loss": 5.0}, writer)
    writer.close()
    time.sleep(0.05)
    resumed_at = time.time()
    time.sleep(0.05)
    again = None
    for step in (3, 4):  # a run resumed from the checkpoint at step 2 logs step 3 again
        again = write_scalars(logdir, step, {"loss": 100.0 + step}, again)
    again.close()

    curves = read_scalar_curves(logdir)
    assert curves["loss"] == [(1, 9.0), (2, 8.0), (3, 103.0), (4, 104.0)]
    assert curves["mlm_loss"] == [(1, 5.0), (2, 5.0), (3, 5.0)]
    assert read_scalar_curves(logdir, since=resumed_at) == {"loss": [(3, 103.0), (4, 104.0)]}
    assert len(read_scalars(logdir)["loss"]) == 5  # the raw reader keeps every write


def device_cell(nb) -> str:
    """The source of the cell that picks TPU, GPU or CPU."""
    cells = [c.source for c in nb.cells if c.cell_type == "code" and "def find_tpu(" in c.source]
    assert len(cells) == 1, "expected one device-selection cell (def find_tpu)"
    return cells[0]


def run_device_cell(source: str, **parameters) -> dict:
    namespace = {"TPU_ADDRESS": "", "GCS_BUCKET": "", "PRECISION": "auto", **parameters}
    exec(compile(source, "<device cell>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_device_cell_maps_the_device_to_runner_flags_and_checks_the_bucket(path, monkeypatch):
    """CPU -> one_device; a TPU (here a grpc:// address, which resolves without contacting it) -> --strategy=tpu
    --tpu=<address> with bfloat16, and only with a gs:// GCS_BUCKET."""
    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)
    monkeypatch.delenv("TPU_NAME", raising=False)
    source = device_cell(read_notebook(path))
    cpu = run_device_cell(source, DEVICE="cpu")
    assert cpu["DEVICE_KIND"] == "cpu" and not cpu["ON_TPU"]
    assert cpu["STRATEGY_OPTIONS"] == {"strategy": "one_device", "mixed_precision": "float32"}
    auto = run_device_cell(source, DEVICE="auto")  # no TPU here: a GPU where TensorFlow lists one, else the CPU
    assert auto["DEVICE_KIND"] in ("gpu", "cpu") and auto["STRATEGY_OPTIONS"]["strategy"] == "one_device"
    with pytest.raises(RuntimeError, match="no TPU resolves"):
        run_device_cell(source, DEVICE="tpu")
    address = "grpc://10.0.0.2:8470"
    for bucket in ("", "/content/out", "my-bucket/albert"):
        with pytest.raises(ValueError, match="GCS_BUCKET.*gs://"):
            run_device_cell(source, DEVICE="tpu", TPU_ADDRESS=address, GCS_BUCKET=bucket)
    tpu = run_device_cell(source, DEVICE="auto", TPU_ADDRESS=address, GCS_BUCKET="gs://my-bucket/albert")
    assert tpu["ON_TPU"] and tpu["STRATEGY_OPTIONS"] == {
        "strategy": "tpu", "tpu": address, "mixed_precision": "mixed_bfloat16"}
    with pytest.raises(ValueError, match="DEVICE must be"):
        run_device_cell(source, DEVICE="TPU")


# ------------------------------------------------------------------------------------------------ execution
def kernel_manager(kernel_dir: pathlib.Path):
    """An nbclient kernel manager whose ``python3`` kernel is this interpreter (not whatever ``python`` is on PATH)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    spec_dir = kernel_dir / "python3"
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (albert-tf tests)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    specs = KernelSpecManager(kernel_dirs=[str(kernel_dir)], ensure_native_kernel=False)
    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=specs)


def execute_notebook(name: str, parameters: dict, workdir: pathlib.Path) -> dict:
    """Run ``notebooks/<name>`` with ``parameters`` in ``workdir``; fail with the failing cell's traceback.

    Returns ``{"seconds": total, "cells": [(index, seconds, first line), ...], "notebook": the executed notebook}``
    and prints the timings (``pytest -s``); the executed notebook is also saved as ``workdir/<name>``. The kernel is
    shut down before this returns, whether the notebook passed or failed (nbclient leaves a kernel it was given
    running: without this, each notebook's kernel, TensorFlow and all, would outlive its test).
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbclient.util import run_sync
    from nbformat.v4 import new_code_cell

    nb = read_notebook(NOTEBOOK_DIR / name)
    index = parameters_index(nb)
    unknown = set(parameters) - parameter_names(nb.cells[index].source)
    assert not unknown, f"{name}: parameters not defined in its parameters cell: {sorted(unknown)}"
    lines = ["# Parameters injected by tests/test_notebooks.py", "import os as _os", "import sys as _sys", ""]
    lines += [f"{key} = {value!r}" for key, value in parameters.items()]
    lines += [
        "",
        f"assert _os.path.realpath(_sys.executable) == {os.path.realpath(sys.executable)!r}, _sys.executable",
        "assert _os.environ.get('MPLBACKEND') == 'Agg', _os.environ.get('MPLBACKEND')",
    ]
    injected = new_code_cell("\n".join(lines))
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(index + 1, injected)

    env = dict(os.environ, MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
    env.pop("COLAB_TPU_ADDR", None)
    env.pop("TPU_NAME", None)
    km = kernel_manager(workdir / ".kernels")
    kernels = []  # the kernel process, seen when the notebook starts
    client = NotebookClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(workdir)}},
        on_notebook_start=lambda notebook: kernels.append(km.provisioner.process),
    )
    start = time.time()
    try:
        # cleanup_kc: shut the kernel down at the end, as nbclient does only with a kernel manager of its own
        client.execute(env=env, cleanup_kc=True)
    except CellExecutionError as error:
        pytest.fail(f"{name}: a cell failed (executed copy: {workdir / name}):\n{ANSI.sub('', str(error))}",
                    pytrace=False)
    finally:
        nbformat.write(nb, str(workdir / name))
        if km.has_kernel:  # a failure before nbclient's own clean-up could run
            run_sync(km.shutdown_kernel)(now=True)
    # The kernel has ended and been reaped: its process object has an exit status.
    assert kernels and all(k.poll() is not None for k in kernels), f"{name}: the kernel is still running"
    seconds = time.time() - start
    cells = []
    for i, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        began, ended = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
        if cell.cell_type == "code" and began and ended:
            took = (datetime.fromisoformat(ended.rstrip("Z")) - datetime.fromisoformat(began.rstrip("Z")))
            cells.append((i, round(took.total_seconds(), 1), cell.source.splitlines()[0][:60] if cell.source else ""))
    print(f"\n{name}: executed in {seconds:.0f}s")
    for i, took, first in cells:
        print(f"  cell {i:2d} {took:6.1f}s  {first}")
    return {"seconds": seconds, "cells": cells, "notebook": nb}


STALE = "left-by-an-earlier-run.txt"


def leave_an_earlier_run(work: pathlib.Path, run_folders: tuple[str, ...]) -> list[pathlib.Path]:
    """What an earlier run of a notebook leaves in ``work`` that the next run must not keep: each of its run folders
    (which the notebook removes before it trains: "this notebook's run starts fresh") holding a stale file, a stale
    export among them. Returns the stale files; the test checks that none is left."""
    stale = []
    for folder in run_folders:
        path = work / folder / STALE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("an earlier run's file\n", encoding="utf-8")
        stale.append(path)
    return stale


def outputs_text(nb) -> str:
    """Every stream and text/plain output of an executed notebook, joined."""
    parts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                parts.append(output.get("text", ""))
            elif "data" in output:
                parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


TINY_TRAINING = {
    "DEVICE": "cpu",
    "PRECISION": "float32",
    "SEED": 12345,
}


@pytest.fixture(scope="module")
def released_checkpoint(tmp_path_factory, spm_model):
    """A tiny 'released' ALBERT, random weights: the official tarball layout (``model.ckpt-best.*``,
    ``albert_config.json``, the SentencePiece model) and the same weights as a Hugging Face directory
    (``config.json``, ``model.safetensors``, ``spiece.model``)."""
    import keras
    import sentencepiece as spm

    from albert_tf import AlbertConfig
    from albert_tf.checkpoints.huggingface import save_huggingface
    from albert_tf.checkpoints.official import save_official_checkpoint
    from albert_tf.modeling import AlbertPretrainer

    root = tmp_path_factory.mktemp("released")
    vocab = spm.SentencePieceProcessor(model_file=str(spm_model)).get_piece_size()
    config = AlbertConfig.from_name("albert_tiny").replace(vocab_size=vocab)
    keras.utils.set_random_seed(0)
    model = AlbertPretrainer(config)
    official = root / "albert_tiny"
    official.mkdir()
    prefix = save_official_checkpoint(model, str(official / "model.ckpt-best"))
    config.to_json_file(str(official / "albert_config.json"))
    shutil.copy(spm_model, official / spm_model.name)
    hf = root / "albert-tiny-hf"
    save_huggingface(model, str(hf), config, spm_model_file=str(spm_model))
    return {"official": prefix, "official_dir": str(official), "huggingface": str(hf), "vocab_size": vocab}


@pytest.mark.slow
def test_01_pretraining_from_scratch(tmp_path):
    base = shared_data_dir()
    inaugural = base / "text" / "nltk_inaugural" if base is not None else None
    real_text = inaugural is not None and inaugural.is_dir()
    parameters = {
        "TEXT_FILES": str(inaugural / "*.txt") if real_text else "",
        "SAMPLE_DOCUMENTS": 600,
        "VOCAB_SIZE": 1000 if real_text else 250,
        "MAX_SEQ_LENGTH": 64,
        "MAX_PREDICTIONS_PER_SEQ": 10,
        "DUPE_FACTOR": 1,
        "MODEL_CONFIG": "albert_tiny",
        "TRAIN_BATCH_SIZE": 16,
        "LEARNING_RATE": 5e-3,
        "NUM_TRAIN_STEPS": 20,
        "RESUME_TRAIN_STEPS": 40,
        "NUM_WARMUP_STEPS": 2,
        "SAVE_CHECKPOINTS_STEPS": 10,
        "STEPS_PER_LOOP": 5,
        "EVAL_BATCH_SIZE": 32,
        "MAX_EVAL_STEPS": 4,
        "WORK_DIR": "work",
        **TINY_TRAINING,
    }
    work = tmp_path / "work"
    stale = leave_an_earlier_run(work, ("pretrain",))
    result = execute_notebook("01_pretraining_from_scratch.ipynb", parameters, tmp_path)
    assert not [p for p in stale if p.exists()]
    assert (work / "curves.png").is_file() and (work / "curves_resumed.png").is_file()
    assert (work / "pretrain" / "ckpt-40.index").is_file()
    text = outputs_text(result["notebook"])
    assert "removing the previous run's" in text, text[-3000:]
    assert "resumed: the rerun continued from step 20 (its first loop ended at step 25)" in text, text[-3000:]
    history = [json.loads(line) for line in (work / "pretrain" / "eval_results.jsonl").read_text().splitlines()]
    assert [h["global_step"] for h in history] == [0, 10, 20, 30, 40]


@pytest.mark.slow
def test_02_finetune_and_serve(tmp_path, released_checkpoint):
    base = shared_data_dir()
    mrpc = base is not None and (base / "glue" / "MRPC" / "train.tsv").is_file()
    parameters = {
        "INIT_CHECKPOINT": released_checkpoint["official"],
        "GLUE_DIR": str(base / "glue") if mrpc else "",
        "TASK_NAME": "MRPC" if mrpc else "SST-2",
        "MAX_SEQ_LENGTH": 64,
        "TRAIN_BATCH_SIZE": 16,
        "EVAL_BATCH_SIZE": 64,
        "LEARNING_RATE": 1e-3,
        "NUM_TRAIN_STEPS": 20,
        "NUM_WARMUP_STEPS": 2,
        "SAVE_CHECKPOINTS_STEPS": 10,
        "STEPS_PER_LOOP": 10,
        "WORK_DIR": "work",
        **TINY_TRAINING,
    }
    work = tmp_path / "work"
    stale = leave_an_earlier_run(work, ("finetune", "export/1"))
    result = execute_notebook("02_finetune_and_serve.ipynb", parameters, tmp_path)
    assert not [p for p in stale if p.exists()]
    results = json.loads((work / "finetune" / "eval_results.json").read_text())
    assert [c["global_step"] for c in results["checkpoints"]] == [10, 20]
    exports = list((work / "export").iterdir())
    assert len(exports) == 1 and (exports[0] / "saved_model.pb").is_file()
    text = outputs_text(result["notebook"])
    assert "removing the previous run's" in text, text[-3000:]
    assert "format: official" in text and "answered by the reloaded SavedModel" in text, text[-3000:]


@pytest.mark.slow
def test_03_squad_v2(tmp_path, released_checkpoint):
    squad = shared_path("squad", "dev-v2.0-subset-a.json")
    shared_path("spm", "30k-clean.model")  # the tiny model's vocabulary is the real one (spm_model fixture)
    parameters = {
        "INIT_CHECKPOINT": released_checkpoint["huggingface"],
        "SQUAD_TRAIN_FILE": str(squad),
        "SQUAD_PREDICT_FILE": "",
        "PREDICT_EVERY": 5,
        "MAX_TRAIN_QUESTIONS": 0,
        "MAX_SEQ_LENGTH": 128,
        "DOC_STRIDE": 64,
        "MAX_QUERY_LENGTH": 32,
        "TRAIN_BATCH_SIZE": 16,
        "PREDICT_BATCH_SIZE": 64,
        "LEARNING_RATE": 1e-3,
        "NUM_TRAIN_STEPS": 20,
        "NUM_WARMUP_STEPS": 2,
        "STEPS_PER_LOOP": 10,
        "NUM_EXAMPLES_SHOWN": 4,
        "WORK_DIR": "work",
        **TINY_TRAINING,
    }
    work = tmp_path / "work"
    stale = leave_an_earlier_run(work, ("squad",))
    result = execute_notebook("03_squad_v2.ipynb", parameters, tmp_path)
    assert not [p for p in stale if p.exists()]
    predictions = json.loads((work / "squad" / "predictions.json").read_text())
    held_out = json.loads((work / "data" / "predict.json").read_text())["data"]
    questions = {qa["id"] for a in held_out for p in a["paragraphs"] for qa in p["qas"]}
    assert set(predictions) == questions and len(questions) > 50
    text = outputs_text(result["notebook"])
    assert "removing the previous run's" in text, text[-3000:]
    assert "format: huggingface" in text and "HasAns_f1" in text and "gold answers" in text, text[-3000:]
