"""Smoke tests of the step, memory and data benchmarks (``pretraining_step.py``, ``encoder_throughput.py``,
``profile_encoder.py``, ``activation_memory.py``, ``scaling.py``, ``pretraining_data.py``, ``pretraining_learning.py``,
the tokenizer and packing scripts), and the check that every benchmark script has a smoke test in one of
``tests/test_benchmark_*.py``. The bfloat16 runs really compute in bfloat16.
"""

from __future__ import annotations

import json
import math

import pytest
from benchmark_smoke import ROOT, command
from benchmark_smoke import machine_ok as _machine_ok
from benchmark_smoke import run as _run


@pytest.mark.slow
def test_pretraining_step_smoke_with_bf16():
    """The float32 and bfloat16 implementations step once each; the headline and the bf16 ratios follow from the
    medians. keras_hub_bf16 is left out: its builder runs in both policies in test_bf16_step_computes_in_bfloat16."""
    names = "albert_tf,albert_tf_full_last_layer,albert_tf_bf16,transformers_torch,transformers_torch_bf16_autocast"
    report = _run("benchmarks/pretraining_step.py", "--smoke", "--bf16", "--steps", "1", "--warmup", "0",
                  "--only", names)
    results = report["results"]
    assert set(results) == set(names.split(","))
    for r in results.values():
        assert len(r["step_times_s"]) == 1 and r["median_step_s"] > 0
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
    assert peer == "transformers_torch_bf16_autocast"
    expected = results["albert_tf_bf16"]["examples_per_s"] / results[peer]["examples_per_s"]
    assert bf16["albert_tf_bf16_over_best_bf16_peer"] == pytest.approx(expected, abs=2e-3)
    assert "last_layer_subset_gain" in report



@pytest.mark.heavy
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
    proc = command("-c", code)
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
    md = command("benchmarks/scaling.py", "--markdown", str(saved)).stdout
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



@pytest.mark.slow
def test_pretraining_data_smoke(shared_data, tmp_path):
    text = tmp_path / "text" / "genesis"
    text.mkdir(parents=True)
    for i, path in enumerate(sorted((shared_data / "text" / "nltk_genesis").iterdir())[:2]):
        (text / f"{i}.txt").write_bytes(path.read_bytes())
    # one official-vs-ours comparison of the three (each official run starts TensorFlow), one run of each
    report = _run("benchmarks/pretraining_data.py", f"--text_dir={tmp_path / 'text'}",
                  f"--spm_model_file={shared_data / 'spm' / '30k-clean.model'}", "--official_mb=0.05", "--repeats=1",
                  "--skip_4x", "--skip_beam", "--shuffle_buffer_size=100", "--speedup_settings=dupe1")
    assert report["setup"]["subset_bytes"] > 0
    assert report["official_subset_dupe1"]["instances"] == report["ours_subset_dupe1_w1"]["instances"] > 0
    assert report["speedup_per_worker_vs_official_dupe1"] > 0 and "official_subset_dupe10" not in report
    assert report["official_subset_x2_dupe1"]["instances"] >= report["official_subset_dupe1"]["instances"]
    assert report["ours_1x_w1"]["instances_per_s"] > 0 and report["ours_1x_w2"]["instances_per_s"] > 0



@pytest.mark.slow
def test_pretraining_learning_smoke(shared_data, tmp_path):
    report = _run("benchmarks/pretraining_learning.py", f"--shared_data={shared_data}", f"--workdir={tmp_path}",
                  "--max_train_mb=0.2", "--num_train_steps=4", "--train_batch_size=4", "--eval_every=2",
                  "--max_eval_steps=1", "--dupe_factor=1")
    assert report["steps_done"] == 4 and [p["step"] for p in report["curve"]][-1] == 4
    assert 0 <= report["final"]["masked_lm_accuracy"] <= 1
    assert report["chance"]["sentence_order_accuracy_balanced"] == 0.5



@pytest.mark.slow  # a TensorFlow start-up and a traced step: out of the fast tier
def test_tokenizer_parity_smoke(shared_data):
    report = _run("benchmarks/tokenizer_parity.py", f"--input_file={shared_data / 'text' / 'nltk_genesis'}",
                  f"--spm_model_file={shared_data / 'spm' / '30k-clean.model'}", "--max_lines=200",
                  "--batch_size=64", "--max_seq_length=64")
    _machine_ok(report)
    assert report["lines"] == 200 and report["pairs"] == 199
    assert report["single_agree"] + sum(report["single_diff_causes"].values()) == 200
    assert report["single_agreement_pct"] == 100.0 and report["pair_agreement_pct"] == 100.0, report["differences"]



@pytest.mark.slow  # a TensorFlow start-up and a traced step: out of the fast tier
def test_tokenizer_throughput_smoke(shared_data):
    report = _run("benchmarks/tokenizer_throughput.py", f"--input_file={shared_data / 'text' / 'nltk_genesis'}",
                  f"--spm_model_file={shared_data / 'spm' / '30k-clean.model'}", "--max_lines=100",
                  "--batch_sizes=32", "--repeats=1")
    _machine_ok(report)
    assert report["lines"] == 100 and report["path"] == "spm"
    assert {"graph_tokenize_b32", "graph_pack_b32"} <= set(report["results"])



@pytest.mark.heavy
def test_packing_padding_counts_follow_from_the_methods():
    from conftest import shared_path

    shared_path("glue", "SST-2", "train.tsv")
    shared_path("race")
    report = _run("benchmarks/packing_padding.py", "--examples", "256")
    for name, row in report["tasks"].items():
        if "skipped" in row:
            continue
        positions = {m: row[m]["computed_positions"] for m in ("fixed", "bucketed", "dynamic", "grouped", "packed")}
        # every method computes at least the real tokens; a bucket is never shorter than the batch's longest
        assert positions["fixed"] >= positions["bucketed"] >= positions["dynamic"], name
        for method, count in positions.items():
            assert 0 <= row[method]["padding_fraction"] < 1, (name, method)
            assert count >= row["max_length"], (name, method)
        assert row["packed_over_bucketed"] == pytest.approx(positions["bucketed"] / positions["packed"], abs=1e-3)
    assert {"sst-2", "mrpc", "wnut17"} <= set(report["tasks"])



@pytest.mark.slow
def test_encoder_throughput_smoke_every_implementation():
    """Every implementation's worker builds, traces and steps (one timed step each, the smallest ceiling matmul);
    the JSON's figures follow from the step times. keras_hub_xla is left out: it is keras_hub's builder with the
    jit_compile flag that albert_tf_xla runs through the same keras_train_step."""
    names = ("albert_tf", "albert_tf_xla", "keras_hub", "transformers_torch")
    report = _run("benchmarks/encoder_throughput.py", "--smoke", "--steps", "1", "--warmup", "0",
                  "--ceiling_size", "64", "--only", ",".join(names))
    _machine_ok(report)
    assert report["benchmark"] == "smoke_train_step" and (report["batch"], report["seq_len"]) == (2, 16)
    assert report["matmul_ceiling_size"] == 64 and report["matmul_ceiling_gflops"] > 0
    assert set(report["results"]) == set(names)
    for r in report["results"].values():
        assert len(r["step_times_s"]) == 1 and r["ratio_to_matmul_ceiling"] >= 0
        # both figures are rounded (median_step_s to 0.1 ms, examples_per_s to 3 decimals): 2 / examples_per_s is the
        # median within the first rounding plus the second's effect, 2 * 0.0005 / examples_per_s ** 2 (a step of
        # 0.65 s on a loaded machine gave 3.075 examples/s, 9e-5 s away from its rounded median)
        eps = r["examples_per_s"]
        assert abs(2 / eps - r["median_step_s"]) <= 5e-5 + 1.01e-3 / eps**2 + 1e-9
    best_ours = max(r["examples_per_s"] for k, r in report["results"].items() if k.startswith("albert_tf"))
    best_peer = max(r["examples_per_s"] for k, r in report["results"].items() if not k.startswith("albert_tf"))
    assert report["best_albert_tf_over_best_peer"] == pytest.approx(round(best_ours / best_peer, 3), abs=1e-9)


@pytest.mark.slow  # a TensorFlow start-up and a traced step: out of the fast tier
def test_profile_encoder_smoke():
    report = _run("benchmarks/profile_encoder.py", "--config", "albert_tiny", "--batch", "2", "--seq", "16",
                  "--runs", "1")
    assert (report["config"], report["batch"], report["seq"]) == ("albert_tiny", 2, 16)
    assert report["by_op_type_s"] and 0 < report["matmul_share_of_op_time"] <= 1
    assert report["sum_of_op_times_s"] >= max(report["by_op_type_s"].values())


@pytest.mark.heavy
def test_activation_memory_smoke():
    """benchmarks/activation_memory.py on the tiny config: its processes run, the JSON has the two ratios the
    README reads and each process's floor, peak and step times."""
    out = _run("benchmarks/activation_memory.py", "--model=albert_tiny", "--seq=32", "--batch=2",
               "--steps=1", "--repeats=1", "--check_largest=0")
    assert {"activation_memory_ratio", "step_time_ratio", "largest_batch"} <= set(out)
    assert out["step_time_ratio"] > 0
    for mode in ("without", "with"):
        (run,) = out["runs"][mode]
        assert run["recompute_activations"] == (mode == "with") and run["blocks"] == 1
        assert run["peak_bytes"] >= run["floor_bytes"] > run["weight_bytes"] > 0 and len(run["step_seconds"]) == 1
        assert len(run["losses"]) == 2 and all(math.isfinite(x) for x in run["losses"])


def test_every_benchmark_script_has_a_smoke_test_here():
    """A benchmark without a test breaks unseen when the package changes under it (serving_latency.py did):
    every script in benchmarks/ (a file with a ``__main__`` block; the others are the scripts' helpers, run through
    them) is run by a test of one of the tests/test_benchmark_*.py files."""
    text = "".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "tests").glob("test_benchmark_*.py")))
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")
                     if '__name__ == "__main__"' in p.read_text(encoding="utf-8"))
    assert len(scripts) >= 17
    assert [s for s in scripts if f'"benchmarks/{s}"' not in text] == []
