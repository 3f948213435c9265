"""Exact resume, and one run per output folder: a run stopped after a checkpoint and killed with SIGKILL, then
restarted with the same command, ends with weights (and optimizer slots) identical to an uninterrupted run: max abs
diff 0 on CPU. While the first run is alive (stopped with SIGSTOP), a second run on its ``--output_dir`` is refused,
naming its pid; once it is killed, its lock is stale, and the restart takes it over."""

from __future__ import annotations

import json
import os
import signal

import commands
import numpy as np
import pytest
import tensorflow as tf
from test_run_pretraining import ROOT, base_args, make_records, run_cli

from albert_tf.config import AlbertConfig

pytestmark = pytest.mark.slow
#: Bounds every wait on the run; only a hang reaches it.
TIMEOUT = 600


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return make_records(tmp_path_factory.mktemp("pretrain_records"))

#: Three passes over the 256 records at batch 8: the resumed run goes on into the next ones (the repeated file
#: list's next shuffled orders), all from the restored input iterator; and 88 steps are left when the first run is
#: stopped, so that it cannot end before the stop lands.
STEPS = 96


def checkpoint_arrays(prefix: str) -> dict[str, np.ndarray]:
    reader = tf.train.load_checkpoint(prefix)
    keys = reader.get_variable_to_shape_map()
    # The iterator state is a variant tensor (not numpy-readable); its effect shows in the weights.
    return {k: reader.get_tensor(k) for k in keys if "OBJECT_GRAPH" not in k and "ITERATOR_STATE" not in k}


def process_state(pid: int) -> str | None:
    """The state in ``/proc/<pid>/stat``: R, S, D, T (stopped), Z (a zombie); None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_sigkill_then_restart_equals_uninterrupted(tmp_path, records):
    # Dropout on, so the dropout RNG state must be restored too.
    config = str(tmp_path / "albert_config.json")
    dropout = AlbertConfig.from_name("albert_tiny").replace(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    dropout.to_json_file(config)
    common = dict(steps=STEPS, batch=8, steps_per_loop=2, save_checkpoints_steps=4, albert_config_file=config)
    full = run_cli(base_args(records["train"], tmp_path / "full", **common))
    assert full.returncode == 0, full.stderr[-3000:]

    out = tmp_path / "killed"
    args = base_args(records["train"], out, **common)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
    first = commands.Command([os.path.join(ROOT, "run_pretraining.py"), *args], env=env, cwd=ROOT)
    try:
        # The moment: the second checkpoint's files appear (the state file still names the first, or this one by
        # now). The run is stopped there, so it is alive for sure while a second run on its folder is checked.
        assert first.wait_for(out / "ckpt-8.index", TIMEOUT), "the run ended before its second checkpoint"
        first.send_signal(signal.SIGSTOP)
        assert first.wait_for(lambda: process_state(first.pid) == "T", TIMEOUT), "the run ended before it stopped"
        second = run_cli(args)
        assert process_state(first.pid) == "T", "the first run was not stopped while the second one was checked"
        assert second.returncode != 0
        errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "in use by a live run" in errors[0] and str(first.pid) in errors[0], second.stderr
        assert "step " not in second.stdout  # it trained nothing
        first.kill()
        assert first.wait(TIMEOUT) == -signal.SIGKILL
    finally:
        first.close()
    killed_at = tf.train.latest_checkpoint(str(out))
    assert killed_at is not None and not killed_at.endswith(f"ckpt-{STEPS}"), killed_at

    resumed = run_cli(args)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"taking over the stale lock {out / 'run.lock'} of pid {first.pid}" in resumed.stderr
    assert "resumed from" in resumed.stderr
    assert not (out / "run.lock").exists()  # released at the end
    first_step = int(resumed.stdout.split("step ", 1)[1].split("/", 1)[0])
    # It did not start over: it continued after the last checkpoint the killed run had recorded (ckpt-8's files can
    # exist a moment before the `checkpoint` state file names it, so that may be ckpt-4).
    killed_step = int(killed_at.rsplit("-", 1)[1])
    assert killed_step >= 4 and first_step > killed_step, (killed_at, first_step)

    a = checkpoint_arrays(str(tmp_path / "full" / f"ckpt-{STEPS}"))
    b = checkpoint_arrays(str(out / f"ckpt-{STEPS}"))
    assert set(a) == set(b)
    weights = [k for k in a if k.startswith("model_weights/")]
    slots = [k for k in a if "adam_" in k or k.startswith("optimizer/_variables")]
    assert weights and slots
    diffs = {k: float(np.max(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64)))) for k in a if a[k].size}
    diff = max(diffs.values())
    print(json.dumps({"killed_at": os.path.basename(killed_at), "variables": len(a), "max_abs_diff": diff}))
    print({k: v for k, v in diffs.items() if v})
    assert diff == 0.0
