"""Distribution: 2 MultiWorkerMirrored worker processes and a 2-logical-CPU MirroredStrategy run reproduce the
single-process loss trajectory of the same global batch (real subprocesses, TF_CONFIG on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
from test_run_pretraining import ROOT, base_args, make_records, run_cli

from albert_tf.training.summaries import read_scalars

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return make_records(tmp_path_factory.mktemp("pretrain_records"))

STEPS = 5


def free_ports(n: int) -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def trajectory(output_dir) -> np.ndarray:
    scalars = read_scalars(os.path.join(str(output_dir), "train"))
    steps = [s for s, _ in scalars["loss"]]
    assert steps == list(range(1, STEPS + 1)), steps
    return np.array([v for _, v in scalars["loss"]])


def single_process(records, tmp_path):
    result = run_cli(base_args(records["train"], tmp_path / "single", steps=STEPS, batch=16))
    assert result.returncode == 0, result.stderr[-3000:]
    return trajectory(tmp_path / "single")


def test_multi_worker_mirrored_two_processes_match_single_process(tmp_path, records):
    reference = single_process(records, tmp_path)
    ports = free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    args = base_args(records["train"], tmp_path / "mw", steps=STEPS, batch=16) + ["--strategy=multi_worker_mirrored"]
    procs = []
    for index in range(2):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        procs.append(
            subprocess.Popen(
                [sys.executable, os.path.join(ROOT, "run_pretraining.py"), *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd=ROOT,
            )
        )
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outputs):
        assert p.returncode == 0, err[-3000:]
    assert "step 5/5" in outputs[0][0]  # the chief reports progress
    multi = trajectory(tmp_path / "mw")
    diff = float(np.max(np.abs(multi - reference)))
    print(json.dumps({"single": reference.tolist(), "multi_worker": multi.tolist(), "max_abs_diff": diff}))
    assert diff <= 1e-4
    assert not (tmp_path / "mw" / ".worker_1_tmp").exists()  # the non-chief's scratch checkpoint is removed


def test_mirrored_two_logical_cpus_match_single_device(tmp_path, records):
    reference = single_process(records, tmp_path)
    result = run_cli(
        base_args(records["train"], tmp_path / "mirrored", steps=STEPS, batch=16)
        + ["--strategy=mirrored", "--num_cpu_devices=2"]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "MirroredStrategy with 2 replicas" in result.stderr
    mirrored = trajectory(tmp_path / "mirrored")
    diff = float(np.max(np.abs(mirrored - reference)))
    print(json.dumps({"single": reference.tolist(), "mirrored": mirrored.tolist(), "max_abs_diff": diff}))
    assert diff <= 1e-4


def test_lamb_alone_under_mirrored_strategy_sums_replicas_then_clips():
    """Without the trainer (optimizer does the all-reduce itself): update = NumPy spec on the summed gradient."""
    code = """
import numpy as np, tensorflow as tf, keras
from albert_tf.training.strategy import ensure_logical_cpus
ensure_logical_cpus(2)
from albert_tf.training.optimizers import LAMB
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    w = keras.Variable(np.array([1.0, -2.0, 0.5], np.float32), name="kernel")
    opt = LAMB(0.1, clip_norm=1.0)
    opt.build([w])
@tf.function
def step():
    def replica_fn():
        rid = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
        opt.apply([tf.constant([1.0, 2.0, 3.0]) * (rid + 1.0)], [w])
    strategy.run(replica_fn)
step()
print("W", *w.numpy().tolist())
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    got = np.array([float(x) for x in result.stdout.split("W", 1)[1].split()])
    # Spec 3.4 by hand: g = sum over replicas = 3*[1,2,3]; clip to norm 1; m, v from zero; u = m/(sqrt(v)+eps)
    # + 0.01 w; r = |w|/|u|; w - r*lr*u.
    w = np.array([1.0, -2.0, 0.5])
    g = 3.0 * np.array([1.0, 2.0, 3.0])
    g = g / max(np.linalg.norm(g), 1.0)
    m, v = 0.1 * g, 0.001 * g**2
    u = m / (np.sqrt(v) + 1e-6) + 0.01 * w
    expected = w - np.linalg.norm(w) / np.linalg.norm(u) * 0.1 * u
    assert float(np.max(np.abs(got - expected))) <= 1e-6
