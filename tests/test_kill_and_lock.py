"""Faults: ``kill -9`` at random moments leaves no partial file under a final name and a rerun of the same command
gives the uninterrupted result; a second run on a live run's ``--output_dir`` is refused, a stale lock taken over.
"""

from __future__ import annotations

import glob
import json
import os
import random
import signal
import time

import commands
import numpy as np
import pytest
import tensorflow as tf
from bad_inputs import fixtures
from test_run_pretraining import ROOT, base_args, make_records, run_cli
from test_run_pretraining_resume import checkpoint_arrays

pytestmark = pytest.mark.slow
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
PARTIAL_MARKS = (".partial", ".tmp", "-tmp", "_temp")


def _start(script, args):
    return commands.Command([os.path.join(ROOT, script), *args], env=ENV, cwd=ROOT)


def _finish(script, args):
    result = commands.run([os.path.join(ROOT, script), *args], env=ENV, cwd=ROOT, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _kill_after(script, args, seconds):
    proc = _start(script, args)
    time.sleep(seconds)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.close()


def _final_files(folder):
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not any(m in d for m in PARTIAL_MARKS)]
        out += [os.path.join(dirpath, f) for f in filenames
                if not f.startswith(".") and not any(m in f for m in PARTIAL_MARKS)]
    return sorted(out)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return fixtures.build(tmp_path_factory.mktemp("kill_inputs"))


def test_create_pretraining_data_killed_at_ten_moments(tmp_path, inputs):
    def args(out):
        return [f"--input_file={inputs['corpus']}", f"--output_file={out}/train.tfrecord@3",
                f"--spm_model_file={inputs['spm']}", "--max_seq_length=64", "--max_predictions_per_seq=10",
                "--dupe_factor=3", "--num_workers=2", "--chunk_size_mb=0.02"]

    start = time.time()
    _finish("create_pretraining_data.py", args(tmp_path / "ref"))
    duration = time.time() - start
    reference = {os.path.basename(p): open(p, "rb").read() for p in _final_files(tmp_path / "ref")}
    assert len(reference) == 4  # 3 shards + the sidecar
    rng = random.Random(0)
    out = tmp_path / "out"
    for _ in range(10):
        _kill_after("create_pretraining_data.py", args(out), rng.uniform(0.5, duration))
        for path in _final_files(out):  # every file under a final name is a whole one of the reference
            assert open(path, "rb").read() == reference[os.path.basename(path)], path
        _finish("create_pretraining_data.py", args(out))
        assert {os.path.basename(p): open(p, "rb").read() for p in _final_files(out)} == reference


def test_run_classifier_killed_at_ten_moments_resumes_to_the_same_weights(tmp_path, inputs):
    def args(out):
        return [f"--data_dir={inputs['glue']}", "--task_name=SST-2", f"--output_dir={out}",
                f"--albert_config_file={inputs['config']}", f"--spm_model_file={inputs['spm']}",
                "--max_seq_length=24", "--do_train", "--do_eval", "--train_step=48", "--save_checkpoints_steps=4",
                "--iterations_per_loop=2", "--train_batch_size=8", "--eval_batch_size=16", "--learning_rate=1e-3",
                "--classifier_dropout=0.1"]

    start = time.time()
    _finish("run_classifier.py", args(tmp_path / "ref"))
    duration = time.time() - start
    rng = random.Random(1)
    out = tmp_path / "out"
    for _ in range(10):
        _kill_after("run_classifier.py", args(out), rng.uniform(2.0, duration))
        for path in _final_files(out):
            if path.endswith(".json"):
                json.loads(open(path, encoding="utf-8").read())  # whole JSON
        for prefix in glob.glob(str(out / "ckpt-*.index")) + glob.glob(str(out / "best" / "*.index")):
            tf.train.load_checkpoint(prefix[: -len(".index")])  # readable
        assert not os.path.exists(out / "run.lock") or _lock_pid_is_dead(out / "run.lock")
    _finish("run_classifier.py", args(out))
    a = checkpoint_arrays(str(tmp_path / "ref" / "ckpt-48"))
    b = checkpoint_arrays(str(out / "ckpt-48"))
    assert set(a) == set(b)
    assert max(float(np.max(np.abs(a[k] - b[k]))) for k in a if a[k].size and a[k].dtype.kind == "f") == 0.0
    ref = json.loads((tmp_path / "ref" / "eval_results.json").read_text())
    got = json.loads((out / "eval_results.json").read_text())
    assert [h["global_step"] for h in got["checkpoints"]] == [h["global_step"] for h in ref["checkpoints"]]
    assert got["best"]["global_step"] == ref["best"]["global_step"]


def _lock_pid_is_dead(path):
    pid = json.loads(open(path, encoding="utf-8").read())["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


def test_second_trainer_is_refused_and_a_stale_lock_is_taken_over(tmp_path):
    (tmp_path / "records").mkdir()
    records = make_records(tmp_path / "records")
    common = dict(steps=3000, batch=8, steps_per_loop=50, save_checkpoints_steps=100)
    args = base_args(records["train"], tmp_path / "run", **common)
    first = _start("run_pretraining.py", args)
    deadline = time.time() + 300
    while not (tmp_path / "run" / "ckpt-100.index").exists():
        assert first.poll() is None and time.time() < deadline
        time.sleep(0.05)
    second = run_cli(args)
    assert first.poll() is None, "the first run ended before the second one was checked"
    assert second.returncode != 0
    errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "in use by a live run" in errors[0] and str(first.pid) in errors[0], second.stderr
    assert "step " not in second.stdout  # it trained nothing
    first.send_signal(signal.SIGKILL)
    first.wait()
    third = run_cli(args)
    assert third.returncode == 0, third.stderr[-3000:]
    assert f"taking over the stale lock {tmp_path / 'run' / 'run.lock'} of pid {first.pid}" in third.stderr
    assert "resumed from" in third.stderr
    assert not (tmp_path / "run" / "run.lock").exists()  # released at the end
    full = run_cli(base_args(records["train"], tmp_path / "full", **common))
    assert full.returncode == 0, full.stderr[-3000:]
    a = checkpoint_arrays(str(tmp_path / "full" / "ckpt-3000"))
    b = checkpoint_arrays(str(tmp_path / "run" / "ckpt-3000"))
    assert max(float(np.max(np.abs(a[k] - b[k]))) for k in a if a[k].size and a[k].dtype.kind == "f") == 0.0
