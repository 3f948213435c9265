"""Faults: ``kill -9`` at moments that are events of the command, drawn at random (a progress line, an evaluation,
a checkpoint's files or state file; the lock taken; a child process; the records' bytes written), leaves no partial
file under a final name (but for a checkpoint newer than the one the state file names: the save being written), and
a rerun of the same command gives the uninterrupted result. (A second run on a live run's ``--output_dir`` refused
and a stale lock taken over: with the exact resume after SIGKILL, in ``test_run_pretraining_resume.py``.)

Every wait is for an event of the command (a line on its stdout, a file, a child process, its state in ``/proc``),
bounded by a timeout that only a hang reaches; the commands run through the fork server (``tests/commands.py``).
"""

from __future__ import annotations

import glob
import json
import os
import random
import re

import commands
import numpy as np
import pytest
import tensorflow as tf
from bad_inputs import fixtures
from test_interrupts import (
    TIMEOUT,
    command_env,
    holds_lock,
    records_event,
    start_script,
    training_events,
)
from test_run_pretraining import ROOT
from test_run_pretraining_resume import checkpoint_arrays, process_state

pytestmark = pytest.mark.slow
PARTIAL_MARKS = (".partial", ".tmp", "-tmp", "_temp")


def _finish(script, args):
    result = commands.run([os.path.join(ROOT, script), *args], env=command_env(), cwd=ROOT, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _kill_when(script, args, happened):
    """Start the command (through the fork server), SIGKILL it once ``happened(command)`` is true (at its end if
    that comes first), and wait for it to be gone. Returns whether the event happened while it ran."""
    command = start_script(script, args)
    try:
        event = happened(command)
        found = command.wait_for(event, TIMEOUT)
        command.kill()
        command.wait(TIMEOUT)
    finally:
        command.close()
    return bool(found)


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


def test_create_pretraining_data_killed_at_six_moments(tmp_path, inputs):
    def args(out):
        return [f"--input_file={inputs['corpus']}", f"--output_file={out}/train.tfrecord@3",
                f"--spm_model_file={inputs['spm']}", "--max_seq_length=64", "--max_predictions_per_seq=10",
                "--dupe_factor=3", "--num_workers=2", "--chunk_size_mb=0.02"]

    script = "create_pretraining_data.py"
    _finish(script, args(tmp_path / "ref"))
    reference = {os.path.basename(p): open(p, "rb").read() for p in _final_files(tmp_path / "ref")}
    assert len(reference) == 4  # 3 shards + the sidecar
    size = sum(len(data) for name, data in reference.items() if not name.endswith(".json"))
    rng = random.Random(0)
    out = tmp_path / "out"
    # Three kills on a new folder, one after the other (each run starts from what the last one left: hidden partial
    # shards, or shards it published), then the same command to the end; then three kills of a run that rewrites
    # that whole set, and again to the end. The moments, one per state: as the pool's workers run (nothing written
    # yet), as the records' bytes are written (a size drawn below the whole), as it publishes.
    for _ in range(2):
        for kind, detail in (("workers", 0), ("bytes", rng.randrange(1, size)), ("published", 0)):
            found = _kill_when(script, args(out), lambda c: records_event(c.pid, str(out), kind, detail))  # noqa: B023
            assert found or kind == "bytes", kind  # the bytes can all be written between two looks
            for path in _final_files(out):  # every file under a final name is a whole one of the reference
                assert open(path, "rb").read() == reference[os.path.basename(path)], (kind, detail, path)
        _finish(script, args(out))
        assert {os.path.basename(p): open(p, "rb").read() for p in _final_files(out)} == reference


_EVAL = re.compile(r"^eval step (\d+):", re.MULTILINE)


def _classifier_events(command, folder, before):
    """A fine-tuning run's events so far, as keys in the order they come at each step N: its progress line (N, 0),
    the evaluation of that step's weights (N, 1), then its checkpoint ckpt-N.index (N, 2)."""
    stdout = command.output()[0]
    keys = [(n, 2 * kind) for n, kind in training_events(stdout, folder, before)]
    return keys + [(int(n), 1) for n in _EVAL.findall(stdout)]


def _recorded(folder):
    """The step of the checkpoint that ``folder``'s state file names (None: no state file)."""
    latest = tf.train.latest_checkpoint(str(folder))
    return None if latest is None else int(latest.rsplit("-", 1)[1])


def test_run_classifier_killed_at_seven_moments_resumes_to_the_same_weights(tmp_path, inputs):
    def args(out):
        return [f"--data_dir={inputs['glue']}", "--task_name=SST-2", f"--output_dir={out}",
                f"--albert_config_file={inputs['config']}", f"--spm_model_file={inputs['spm']}",
                "--max_seq_length=24", "--do_train", "--do_eval", "--train_step=24", "--save_checkpoints_steps=4",
                "--iterations_per_loop=2", "--train_batch_size=8", "--eval_batch_size=16", "--learning_rate=1e-3",
                "--classifier_dropout=0.1"]

    script = "run_classifier.py"
    ref = _finish(script, args(tmp_path / "ref"))
    steps = [int(n) for n in re.findall(r"^step (\d+)/", ref.stdout, re.MULTILINE)]
    evals = [int(n) for n in _EVAL.findall(ref.stdout)]
    saves = [int(n) for n in re.findall(r"saved checkpoint \S*ckpt-(\d+)$", ref.stderr, re.MULTILINE)]
    assert saves == evals == list(range(4, 25, 4)) and steps == list(range(2, 25, 2)), (steps, evals, saves)
    # One kill in each state a run passes through, the steps drawn at random: at once; once it holds the folder's
    # lock (it caches its features, restores, builds next); during training between two saves (after the line of
    # a step that saves nothing); during an evaluation (after the line of a step that saves); after that evaluation
    # is recorded, before its save; as a save's files appear; and once the state file names the last checkpoint
    # (the run ends next). Each run resumes from what the last one left. No moment is drawn at or before the first
    # save: a kill between the first checkpoint's files and the state file that names it (TensorFlow's
    # CheckpointManager writes that file after them) leaves ckpt-4 without a state file, which the rerun refuses
    # ("the checkpoint state file is missing"): a defect of the package (checkpoints/paths.py resume_point), left
    # to a package change.
    rng = random.Random(1)
    later = saves[1:-1]
    between = [n for n in steps if saves[0] < n < saves[-1] and n not in saves]
    moments = sorted([(rng.choice(between), 0), (rng.choice(later), 0), (rng.choice(later), 1),
                      (rng.choice(later), 2)])
    for early in ("start", "lock"):
        moments.insert(rng.randrange(len(moments) + 1), early)
    moments.append("done")
    out = tmp_path / "out"

    def moment(target):
        def happened(command):
            if target == "start":
                return lambda: True
            if target == "lock":
                return lambda: holds_lock(command.pid, str(out))
            if target == "done":
                return lambda: _recorded(out) == saves[-1]
            before = set(glob.glob(str(out / "ckpt-*.index")))
            return lambda: any(key >= target for key in _classifier_events(command, str(out), before))
        return happened

    for target in moments:
        assert _kill_when(script, args(out), moment(target)), target
        for path in _final_files(out):
            if path.endswith(".json"):
                json.loads(open(path, encoding="utf-8").read())  # whole JSON
        # The checkpoint the state file names and every older one are whole (the rerun resumes from the first);
        # only a newer one can be cut short: the save that was being written (TensorFlow writes ckpt-N.index in
        # place), which the rerun writes again.
        recorded = _recorded(out)
        written = glob.glob(str(out / "ckpt-*.index"))
        assert recorded is not None or not written, (target, written)
        for prefix in [p[: -len(".index")] for p in written]:
            if int(prefix.rsplit("-", 1)[1]) < recorded:
                tf.train.load_checkpoint(prefix)  # readable
        if recorded is not None:
            checkpoint_arrays(str(out / f"ckpt-{recorded}"))  # every tensor readable
        for prefix in glob.glob(str(out / "best" / "*.index")):
            tf.train.load_checkpoint(prefix[: -len(".index")])  # readable
        assert not os.path.exists(out / "run.lock") or _lock_pid_is_dead(out / "run.lock")
    final = _finish(script, args(out))
    assert "nothing left to train" in final.stdout + final.stderr  # killed after its last save: nothing trained
    a = checkpoint_arrays(str(tmp_path / "ref" / "ckpt-24"))
    b = checkpoint_arrays(str(out / "ckpt-24"))
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
    return process_state(pid) == "Z"
