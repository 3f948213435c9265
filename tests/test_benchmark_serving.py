"""Smoke tests of the serving benchmarks (``serving_latency.py``, ``serving_exports.py``, ``serving_batches.py``):
every variant's export, loader or setting answers, and the answers agree.
"""

from __future__ import annotations

import pytest
from benchmark_smoke import machine_ok as _machine_ok
from benchmark_smoke import run as _run


@pytest.mark.slow
def test_serving_latency_default_runs_every_variant():
    """The script's default command (every variant, with the profile and op traces) end to end on its ``--smoke``
    model (the preset's config cut to 2 layers, H 64), with one request per part: a change to the package that breaks
    a variant fails here (the fused-QKV variants that patched a layer broke silently when the layer's signature
    changed). The model's size changes no code path: each variant is still its own export, loader or setting.
    albert_tf_xla_bf16 is left out (an export and a worker fewer): it is the bf16 copy's export with jit_compile,
    the two options albert_tf_bf16 and albert_tf_xla run here one at a time, through the same side code."""
    pytest.importorskip("transformers")
    from benchmarks.serving_latency import SMOKE, VARIANTS

    variants = [v for v in VARIANTS if v != "albert_tf_xla_bf16"]
    assert len(variants) == len(VARIANTS) - 1
    report = _run("benchmarks/serving_latency.py", "--smoke", "--runs", "1", "--warmup", "0", "--profile_runs", "1",
                  "--max_foreign", "1.0", f"--variants={','.join(variants)}")
    _machine_ok(report)
    assert report["benchmark"] == "smoke_serving_latency" and report["settings"]["variants"] == variants
    assert report["albert_tf_latency_over_transformers"] > 0
    assert report["sanity"]["input_ids_identical"] and report["results"]["albert_tf"]["median_ms"] > 0
    assert report["sanity"]["same_model"]  # both sides computed the same probabilities from the same ids
    for name in variants:
        assert report["variants"][name]["median_ms"] > 0, name
    assert {"albert_tf", "transformers"} <= set(report["profile"])
    for side in ("albert_tf", "transformers"):
        assert report["profile"][side]["model_median_ms"] > 0 and report["profile"][side]["matmul_chain_median_ms"] > 0
    # the dense work of the long pair (128 tokens): albert-tf's last FFN runs on [CLS] alone, transformers' on all
    ffn, layers = SMOKE["I"], SMOKE["L"]
    ours = report["profile"]["albert_tf"]["op_breakdown"]["dense_positions"]["by_shape"]
    theirs = report["profile"]["transformers"]["op_breakdown"]["dense_positions"]["by_shape"]
    assert (ours[f"128x{ffn}"], ours[f"1x{ffn}"], theirs[f"128x{ffn}"]) == (layers - 1, 1, layers)


@pytest.mark.slow
def test_serving_exports_smoke_every_task_answers_alike():
    """benchmarks/serving_exports.py on the smoke model: every task's real-token export answers as the
    every-position export does (SQuAD's texts and spans identical, the others within 1e-5). SQuAD v1.1 is left out
    (two exports fewer of eight): it is squad_v2's export_squad, request and comparison path with the null answer
    off (its export: tests/test_export_squad.py)."""
    from conftest import shared_path

    for parts in (("glue", "MRPC", "dev.tsv"), ("squad", "dev-v2.0-subset-a.json"), ("race", "RACE", "dev"),
                  ("ner", "wnut17", "emerging.dev.conll")):
        shared_path(*parts)
    tasks = ("classifier", "squad_v2", "race", "tagging")
    report = _run("benchmarks/serving_exports.py", "--smoke", f"--tasks={','.join(tasks)}")
    _machine_ok(report)
    assert set(report["results"]) == set(tasks)
    for task, r in report["results"].items():
        assert r["answers_identical"], task
        assert r["max_output_difference"] < 1e-5, task
        assert r["mixed_speedup"] == pytest.approx(
            r["median_mixed_request_s"]["every_position"] / r["median_mixed_request_s"]["real_tokens"], rel=0.01)


@pytest.mark.slow
def test_serving_batches_smoke_every_variant_gives_the_bucketed_answers():
    from conftest import shared_path

    shared_path("glue", "MRPC", "dev.tsv")
    shared_path("spm", "30k-clean.model")
    report = _run("benchmarks/serving_batches.py", "--smoke")
    _machine_ok(report)
    assert set(report["median_request_s"]) == {"bucketed", "sorted_split", "real_tokens", "packed"}
    # the same answers in request order: sorting puts them back, real tokens and packing change no output
    for name, difference in report["max_logit_difference_from_bucketed"].items():
        assert difference < 1e-4, name
    assert report["min_length"] < report["mean_length"] < report["max_length"] <= 128  # a mixed-length batch
    for name in ("sorted_split", "real_tokens", "packed"):
        assert report[f"{name}_over_bucketed"] == pytest.approx(
            report["median_request_s"]["bucketed"] / report["median_request_s"][name], rel=0.01)
