"""The benchmark scripts run end to end (their --smoke modes) and print the JSON the README's tables are read from.

No figure is checked against a time: the smoke shapes measure nothing. What is checked: every implementation
answered, the derived fields follow from the measured ones (per-token time = step time / tokens, ratios of the
medians), every JSON records the machine's CPU flags, and the bfloat16 runs really compute in bfloat16.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _run(*args: str, timeout: int = 600) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _machine_ok(report: dict) -> None:
    flags = report["machine"]["cpu_flags"]
    assert {"avx512_bf16", "amx_bf16", "avx2"} <= set(flags)
    assert all(isinstance(v, bool) for v in flags.values())
    assert report["machine"]["date_utc"]


@pytest.mark.slow
def test_pretraining_step_smoke_with_bf16():
    names = ("albert_tf,albert_tf_full_last_layer,albert_tf_bf16,transformers_torch,transformers_torch_bf16_autocast,"
             "keras_hub_bf16")
    report = _run("benchmarks/pretraining_step.py", "--smoke", "--bf16", "--steps", "2", "--warmup", "0",
                  "--only", names)
    results = report["results"]
    assert set(results) == set(names.split(","))
    for r in results.values():
        assert len(r["step_times_s"]) == 2 and r["median_step_s"] > 0
    _machine_ok(report)
    # float32 headline only from float32 runs; bf16 ratios from the medians
    assert report["best_albert_tf"] in ("albert_tf", "albert_tf_full_last_layer")
    assert report["best_peer"] == "transformers_torch"
    bf16 = report["bf16"]
    expected = results["albert_tf"]["median_step_s"] / results["albert_tf_bf16"]["median_step_s"]
    assert bf16["albert_tf_bf16_speedup"] == pytest.approx(expected, abs=2e-3)
    expected = results["transformers_torch"]["median_step_s"] / \
        results["transformers_torch_bf16_autocast"]["median_step_s"]
    assert bf16["torch_autocast_speedup"] == pytest.approx(expected, abs=2e-3)
    assert bf16["best_albert_tf_bf16"] == "albert_tf_bf16"
    peer = bf16["best_bf16_peer"]
    assert peer in ("transformers_torch_bf16_autocast", "keras_hub_bf16")
    expected = results["albert_tf_bf16"]["examples_per_s"] / results[peer]["examples_per_s"]
    assert bf16["albert_tf_bf16_over_best_bf16_peer"] == pytest.approx(expected, abs=2e-3)
    assert "last_layer_subset_gain" in report


def test_bf16_step_computes_in_bfloat16():
    """The benchmark's albert_tf_bf16 and keras_hub_bf16 workers set mixed_bfloat16 before building: the encoder's
    matmuls then run in bfloat16 with float32 variables, and the loss stays float32 and close to the float32
    model's."""
    code = """
import sys, json
sys.path.insert(0, '.')
import keras, tensorflow as tf
from benchmarks import pretraining_step as ps
d = dict(ps.SMOKE)
losses, hub = {}, {}
for policy in ("float32", "mixed_bfloat16"):
    losses[policy] = ps.albert_tf_step(d, True, False, policy)()
    hub[policy] = ps.keras_hub_step(d, False, policy)()
print(json.dumps({"policy": keras.mixed_precision.global_policy().name, "losses": losses, "hub": hub}))
"""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", KERAS_BACKEND="tensorflow")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["policy"] == "mixed_bfloat16"
    for key in ("losses", "hub"):
        f32, bf16 = out[key]["float32"], out[key]["mixed_bfloat16"]
        assert f32 != bf16, key  # another compute dtype gives another rounding
        assert bf16 == pytest.approx(f32, rel=2e-2), key  # same seed, same weights: the same loss to bf16 precision


@pytest.mark.slow
def test_scaling_smoke_and_markdown(tmp_path):
    report = _run("benchmarks/scaling.py", "--smoke", "--skip_data", "--plot", str(tmp_path / "s.png"))
    _machine_ok(report)
    rows = report["train"]
    assert [(r["seq"], r["batch"]) for r in rows] == [(32, 2), (64, 2)]
    for r in rows:
        assert r["predictions"] == {32: 5, 64: 10}[r["seq"]]  # ceil(0.15 * seq)
        a = r["albert_tf"]
        tokens = r["seq"] * r["batch"]  # median_step_s is rounded to 0.1 ms: that much slack, per token
        assert a["us_per_token"] == pytest.approx(a["median_step_s"] / tokens * 1e6, abs=0.5e-4 / tokens * 1e6 + 0.01)
    assert (tmp_path / "s.png").stat().st_size > 10_000
    saved = tmp_path / "s.json"
    saved.write_text(json.dumps(report))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    md = subprocess.run([sys.executable, "benchmarks/scaling.py", "--markdown", str(saved)], capture_output=True,
                        text=True, cwd=ROOT, env=env, timeout=120).stdout
    assert md.count("| tiny |") == 2 and "µs/token" in md


@pytest.mark.slow
def test_scaling_data_rows_on_paragraph_documents():
    from conftest import shared_data_dir

    shared = shared_data_dir()
    if shared is None or not (shared / "text").is_dir():
        pytest.skip("needs ../shared/data/text")
    report = _run("benchmarks/scaling.py", "--smoke", "--skip_train", "--corpus_documents=paragraphs",
                  f"--shared_data={shared}")
    data = report["data"]
    assert data["setup"]["corpus_documents"] == "paragraphs" and data["setup"]["short_seq_scope"] == "document"
    # paragraph documents: many more than the 141 files, each a few kB
    assert data["setup"]["corpus_1x_documents"] > 1000
    (row,) = data["rows"]
    assert row["corpus_multiple"] == 1 and row["instances"] > 10_000 and row["peak_pss_mb"] > 0
    assert row["pss_over_1x"] == 1.0
