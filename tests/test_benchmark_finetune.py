"""Smoke tests of ``finetune_throughput.py`` on GLUE (single sentences and pairs), SQuAD and RACE: every
implementation builds, traces and takes one timed step on the smoke model, the same tokens reach every side, and the
JSON's ratios follow from the figures it reports. No figure is checked against a time.
"""

from __future__ import annotations

import pytest
from benchmark_smoke import machine_ok as _machine_ok
from benchmark_smoke import run as _run


def _check_ratios(report: dict, ours: float, best_peer: float, transformers: float) -> None:
    """finetune_throughput.py's ratios follow from the figures it reports (examples/s and GFLOP/s, themselves
    rounded), each rounded to 3 decimals as the script rounds it (a relative tolerance failed on a loaded machine,
    where TensorFlow's matmul measured ~100x slower than torch's and 0.0086 was reported as 0.009). The matmul
    speeds: the first TensorFlow and the first torch implementation's, in the order they ran."""
    results = report["results"]
    tf_gflops = next(r["matmul_gflops"] for k, r in results.items() if k.startswith(("albert_tf", "keras")))
    torch_gflops = next(r["matmul_gflops"] for k, r in results.items() if k.startswith("transformers"))
    assert report["albert_tf_over_best_peer"] == pytest.approx(round(ours / best_peer, 3), abs=1e-9)
    assert report["tf_over_torch_matmul"] == pytest.approx(round(tf_gflops / torch_gflops, 3), abs=1e-9)
    per_kernel = round(round(ours / transformers, 3) / report["tf_over_torch_matmul"], 3)
    assert report["albert_tf_over_transformers_per_matmul_speed"] == pytest.approx(per_kernel, abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["sst-2", "mrpc"])
def test_finetune_throughput_smoke_counts_padding_and_kernel_speed(task):
    """One batch of 8 (the smoke batch) through the implementations: each builds, traces and takes one timed step.
    MRPC (pairs) runs all six; SST-2 (single sentences) one of each class (AlbertTf, TransformersTorch, KerasHub):
    albert_tf_packed_rows, albert_tf_bucketed and transformers_grouped are flags of the first two classes, which read
    a task's examples alike whatever the flag, so every class's single-sentence and pair path and every flag run."""
    from conftest import shared_path

    from benchmarks.finetune_throughput import IMPLEMENTATIONS

    shared_path("glue", task.upper(), "train.tsv")
    shared_path("spm", "30k-clean.model")
    names = IMPLEMENTATIONS if task == "mrpc" else ("albert_tf", "transformers_torch", "keras_hub")
    report = _run("benchmarks/finetune_throughput.py", "--smoke", "--task", task, "--examples", "8", "--only",
                  ",".join(names))
    _machine_ok(report)
    assert (report["examples"], report["batch"], report["steps"]) == (8, 8, 1)
    results = report["results"]
    assert set(results) == set(names)
    for name, r in results.items():
        assert r["padding_fraction"] == pytest.approx(1 - r["real_tokens"] / r["computed_tokens"], abs=1e-3), name
        assert r["matmul_gflops"] > 0
    # the same examples: transformers' tokenizer (the exported files of the same SentencePiece model) within 1% of
    # albert-tf's tokens
    assert results["transformers_torch"]["real_tokens"] == pytest.approx(results["albert_tf"]["real_tokens"], rel=0.01)
    if "albert_tf_bucketed" in results:  # packed and bucketed albert-tf hold the same tokens
        assert results["albert_tf"]["real_tokens"] == results["albert_tf_bucketed"]["real_tokens"]
        # packing computes no more positions than one example per row
        assert results["albert_tf"]["computed_tokens"] <= results["albert_tf_bucketed"]["computed_tokens"]
    if "albert_tf_packed_rows" in results:
        assert results["albert_tf_packed_rows"]["computed_tokens"] == results["albert_tf"]["computed_tokens"]
        # the same packed steps, the same weights and seed: real-token dense layers train the same losses to rounding
        assert results["albert_tf_packed_rows"]["first_loss"] == pytest.approx(results["albert_tf"]["first_loss"],
                                                                               abs=1e-3)
    if "transformers_grouped" in results:  # another order of the same examples
        assert results["transformers_grouped"]["real_tokens"] == results["transformers_torch"]["real_tokens"]
    # keras-hub pads every row to 128
    assert results["keras_hub"]["computed_tokens"] == report["examples"] * 128
    # packed albert-tf's dense layers run on the real tokens only; every other method's on all computed positions
    assert results["albert_tf"]["dense_tokens"] == results["albert_tf"]["real_tokens"]
    assert results["albert_tf"]["dense_padding_fraction"] == 0.0
    for name in set(results) - {"albert_tf"}:
        assert results[name]["dense_tokens"] == results[name]["computed_tokens"], name
    speed = {k: v["examples_per_s"] for k, v in results.items()}
    best_peer = max(speed["transformers_torch"], speed["keras_hub"])
    _check_ratios(report, speed["albert_tf"], best_peer, speed["transformers_torch"])


@pytest.mark.slow
@pytest.mark.parametrize("task", ["squad_v2", "race"])
def test_finetune_throughput_reading_tasks_smoke(task):
    """``--task=squad_v2|race`` on the smoke model, one batch (one timed step per implementation), all four
    implementations: the same windows (choices) on every side, albert-tf packs them and runs the dense layers on the
    real tokens only, transformers pads to max_seq_length or to the batch's longest. ``--task=squad_v1`` is left out:
    the same classes and steps with the null answer off, on subset-a's answerable questions (written by
    ``common.answerable_squad_file``, which finetune_parity's SQuAD v1 lockstep runs)."""
    pytest.importorskip("transformers")
    from conftest import shared_path

    from benchmarks.finetune_throughput_reading import IMPLEMENTATIONS

    shared_path("squad", "dev-v2.0-subset-a.json")
    shared_path("race", "RACE", "train")
    names = IMPLEMENTATIONS
    batch = "2" if task == "race" else "4"  # the smoke batch
    report = _run("benchmarks/finetune_throughput.py", "--smoke", "--task", task, "--examples", batch, "--only",
                  ",".join(names))
    _machine_ok(report)
    assert report["steps"] == 1 and report["examples"] == report["batch"] == int(batch)
    results = report["results"]
    assert set(results) == set(names)
    seq = 512 if task == "race" else 384
    assert report["max_seq_length"] == seq and report["example"] == ("questions" if task == "race" else "windows")
    real = {r["real_tokens"] for r in results.values()}
    assert len(real) == 1, results  # the same tokens on every side
    assert results["albert_tf"]["dense_tokens"] == results["albert_tf"]["real_tokens"]
    for name in set(results) - {"albert_tf"}:
        assert results[name]["dense_tokens"] == results[name]["computed_tokens"], name
    assert results["transformers_max_length"]["mean_padded_length"] == seq
    assert results["transformers_torch"]["computed_tokens"] <= results["transformers_max_length"]["computed_tokens"]
    assert results["albert_tf"]["computed_tokens"] <= results["albert_tf_bucketed"]["computed_tokens"]
    # albert-tf's packed real-token step and its bucketed one train the same loss from the same weights
    assert results["albert_tf"]["first_loss"] == pytest.approx(results["albert_tf_bucketed"]["first_loss"], abs=1e-3)
    speed = {k: v["examples_per_s"] for k, v in results.items()}
    best = max(speed["transformers_max_length"], speed["transformers_torch"])
    _check_ratios(report, speed["albert_tf"], best, best)
