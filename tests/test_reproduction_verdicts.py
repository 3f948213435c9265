"""The reproduction report's verdicts and its regeneration, checked against the checked-in page.

Every verdict of REPRODUCTION.md is recomputed here from ``reproduction/results.json`` with numpy and the rule as
the page states it (written again here, not imported), and the page and its plots are regenerated from that JSON
(``--render_only``) and compared byte for byte with the checked-in files.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT

from albert_tf.reproduce import stats

PAGE = Path(ROOT) / "REPRODUCTION.md"
ASSETS = Path(ROOT) / "reproduction"


# ----------------------------------------------------------------------------------------------- the rule's parts
def test_estimate_over_seeds_is_the_mean_and_the_standard_error_of_the_mean():
    e = stats.estimate([0.1, 0.2, 0.3])
    assert e.n == 3 and e.mean == pytest.approx(0.2)
    assert e.se == pytest.approx(np.std([0.1, 0.2, 0.3], ddof=1) / math.sqrt(3))
    assert e.text() == "20.0 ± 5.8"
    assert stats.estimate([0.1130, 0.1123]).text() == "11.27 ± 0.04"  # a standard error that rounds to 0 at 0.1


def test_one_run_has_a_binomial_or_an_unknown_standard_error():
    assert stats.estimate([0.6], examples=1000).se == pytest.approx(math.sqrt(0.6 * 0.4 / 1000))
    unknown = stats.estimate([0.6])
    assert math.isnan(unknown.se) and unknown.text() == "60.0"
    assert stats.verdict(0.5, unknown.se) == stats.SAME_DIRECTION  # one run never resolves anything
    with pytest.raises(ValueError):
        stats.estimate([])


@pytest.mark.parametrize("diff, se, expected", [
    (0.3, 0.1, stats.REPRODUCED), (0.2, 0.1, stats.SAME_DIRECTION), (0.05, 0.1, stats.SAME_DIRECTION),
    (0.0, 0.1, stats.OPPOSITE_DIRECTION), (-0.2, 0.1, stats.OPPOSITE_DIRECTION), (-0.21, 0.1, stats.OPPOSITE),
    (1.0, 0.0, stats.REPRODUCED), (-1.0, 0.0, stats.OPPOSITE),
])
def test_verdict_follows_the_two_standard_error_rule(diff, se, expected):
    assert stats.verdict(diff, se) == expected


def test_a_difference_adds_standard_errors_in_quadrature_and_combine_takes_the_worst():
    d, se = stats.difference(stats.Estimate(0.5, 0.03, 3), stats.Estimate(0.4, 0.04, 3))
    assert d == pytest.approx(0.1) and se == pytest.approx(0.05)
    d, se = stats.difference(stats.Estimate(0.5, 0.03, 1), 0.35, margin=0.1)
    assert d == pytest.approx(0.05) and se == 0.03
    assert stats.combine([stats.REPRODUCED, stats.OPPOSITE_DIRECTION, stats.SAME_DIRECTION]) == \
        stats.OPPOSITE_DIRECTION


# ----------------------------------------------------------------------------------------------- the checked-in page
def _results() -> dict:
    return json.loads((ASSETS / "results.json").read_text(encoding="utf-8"))


def _values(part: dict, row: str, key: str) -> list[float]:
    """The row's value of every seed: ``row`` and ``row_seed<k>``."""
    return [m[key] for name, m in part.items() if re.fullmatch(rf"{re.escape(row)}(_seed\d+)?", name)]


def _mean_se(values: list[float], examples: int | None = None) -> tuple[float, float]:
    if len(values) >= 2:
        return float(np.mean(values)), float(np.std(values, ddof=1) / np.sqrt(len(values)))
    p = values[0]
    return p, (math.sqrt(p * (1 - p) / examples) if examples else math.nan)


def _call(diff: float, se: float) -> str:
    """The page's rule: reproduced beyond 2 SE in the paper's direction, opposite beyond 2 SE against it."""
    if not math.isnan(se) and diff > 2 * se:
        return "reproduced"
    if not math.isnan(se) and diff < -2 * se:
        return "opposite"
    direction = "same direction" if diff > 0 else "opposite direction"
    return f"{direction}, not resolved at this scale"


ORDER = ["reproduced", "same direction, not resolved at this scale", "opposite direction, not resolved at this scale",
         "opposite"]


def _worst(calls: list[str]) -> str:
    return max(calls, key=ORDER.index)


def _expected_verdicts(r: dict) -> dict[str, str]:
    """Claim (the start of a finding's line) -> its verdict, recomputed from the results JSON."""
    pre, ft, data = r["pretraining"], r["finetuning"], r["data"]
    n_sop, n_nsp = data["baselines"]["heldout_sop"]["records"], data["baselines"]["heldout_nsp"]["records"]
    maj_sop = data["baselines"]["heldout_sop"]["majority_accuracy"]
    maj_nsp = data["baselines"]["heldout_nsp"]["majority_accuracy"]
    n_dev = data.get("glue_dev_rows") or 872

    def mlm(row):
        return _mean_se(_values(pre, row, "heldout_mlm_accuracy"))

    def diff(a, b):
        return a[0] - b[0], math.hypot(a[1], b[1])

    out = {}
    sop_sop = _mean_se(_values(pre, "sop", "heldout_sop_accuracy"), n_sop)
    out["SOP is learned clearly"] = _call(sop_sop[0] - maj_sop - 0.10, sop_sop[1])
    nsp_nsp = _mean_se(_values(pre, "nsp", "heldout_nsp_accuracy"), n_nsp)
    out["NSP is learned clearly"] = _call(nsp_nsp[0] - maj_nsp - 0.10, nsp_nsp[1])
    nsp_sop = _mean_se(_values(pre, "nsp", "heldout_sop_accuracy"), n_sop)
    out["NSP does not solve SOP"] = _call(0.05 - abs(nsp_sop[0] - maj_sop), nsp_sop[1])
    sop_nsp = _mean_se(_values(pre, "sop", "heldout_nsp_accuracy"), n_nsp)
    out["SOP solves NSP to a good extent"] = _call(sop_nsp[0] - maj_nsp - 0.10, sop_nsp[1])
    dev = {k: _mean_se(_values(ft, k, "dev_accuracy"), n_dev) for k in ("sop", "nsp", "none")}
    out["Downstream, SOP helps"] = _worst([_call(*diff(dev["sop"], dev[k])) for k in ("nsp", "none")])

    counts = [pre[r]["encoder_params"] for r in ("all", "share_ffn", "share_attention", "share_none")]
    formula = all(pre[r]["encoder_params"] == pre[r]["formula_params"]
                  for r in ("all", "share_ffn", "share_attention", "share_none"))
    out["Sharing cuts parameters"] = "reproduced" if counts == sorted(set(counts)) and formula else "opposite"
    out["Not sharing gives the best accuracy"] = _call(*diff(mlm("share_none"), mlm("all")))
    out["Sharing the attention costs less"] = _call(*diff(mlm("share_attention"), mlm("share_ffn")))
    e_counts = [pre[r]["encoder_params"] for r in ("e64", "all", "e256")]
    out["Parameters grow with E"] = "reproduced" if e_counts == sorted(set(e_counts)) else "opposite"
    e128 = [_call(*diff(mlm("all"), mlm(r))) for r in ("e64", "e256")]
    out["For the all-shared model E = 128 is best"] = _worst(e128)
    if "mask_static" in pre:
        out["Dynamic masking gives a higher held-out MLM accuracy"] = _call(*diff(mlm("mask_dynamic"),
                                                                                  mlm("mask_static")))
        loss = {k: _mean_se(_values(pre, f"mask_{k}", "heldout_mlm_loss")) for k in ("static", "dynamic")}
        out["Dynamic masking gives a lower held-out MLM loss"] = _call(*diff(loss["static"], loss["dynamic"]))
    return out


def check_verdicts(page: str, results: dict) -> None:
    """Every finding of ``page`` carries the verdict recomputed from ``results``, and there is no other."""
    assert stats.RULE in page  # the rule is stated on the page, above the tables
    found = {}
    for line in page.splitlines():
        verdict = re.search(r": \*\*([^*]+)\*\*\.$", line)
        if line.startswith("* ") and verdict:
            found[line[2:]] = verdict.group(1)
    expected = _expected_verdicts(results)
    for claim, call in expected.items():
        lines = [text for text in found if text.startswith(claim)]
        assert len(lines) == 1, (claim, list(found))
        assert found[lines[0]] == call, (claim, found[lines[0]], call)
    assert len(found) == len(expected)  # no verdict on the page that this test does not recompute


def test_every_verdict_of_the_page_follows_the_rule_from_the_results_json():
    check_verdicts(PAGE.read_text(encoding="utf-8"), _results())


def test_tables_show_mean_and_standard_error_over_the_seeds():
    r = _results()
    page = PAGE.read_text(encoding="utf-8")
    for row, label in (("share_none", "| not-shared |"), ("e64", "| E = 64 |")):
        values = _values(r["pretraining"], row, "heldout_mlm_accuracy")
        mean, se = _mean_se(values)
        digits = 2 if len(values) > 1 and round(100 * se, 1) == 0 else 1
        shown = f"{100 * mean:.1f}" if len(values) == 1 else f"{100 * mean:.{digits}f} ± {100 * se:.{digits}f}"
        line = next(text for text in page.splitlines() if text.startswith(label))
        assert f"| {shown} |" in line, (line, shown)
    seeds = r["budget"].get("ablation_seeds", 1)
    assert len(_values(r["pretraining"], "share_ffn", "heldout_mlm_accuracy")) == seeds
    if "mask_static" in r["pretraining"]:  # the masking table: its mean ± SE over masking_seeds seeds of each kind
        seeds = r["budget"].get("masking_seeds", 1)
        for kind in ("static", "dynamic"):
            values = _values(r["pretraining"], f"mask_{kind}", "heldout_mlm_accuracy")
            assert len(values) == seeds
            mean, se = _mean_se(values)
            line = next(text for text in page.splitlines() if text.startswith(f"| {kind} |"))
            digits = 2 if seeds > 1 and round(100 * se, 1) == 0 else 1
            shown = f"{100 * mean:.1f}" if seeds == 1 else f"{100 * mean:.{digits}f} ± {100 * se:.{digits}f}"
            assert line.startswith(f"| {kind} | {shown} |"), (line, shown)


@pytest.mark.heavy
def test_render_only_regenerates_the_page_and_plots_byte_identically(tmp_path):
    from albert_tf.reproduce.__main__ import main
    from albert_tf.reproduce.report import MASKING_PLOT, PLOTS

    (tmp_path / "reproduction").mkdir()
    shutil.copy(ASSETS / "results.json", tmp_path / "reproduction" / "results.json")
    out = tmp_path / "REPRODUCTION.md"
    assert main(["--render_only", f"--output={out}", f"--workdir={tmp_path / 'nowhere'}"]) == 0
    assert out.read_bytes() == PAGE.read_bytes()
    optional = [MASKING_PLOT] if (ASSETS / MASKING_PLOT).exists() else []
    for name in (*PLOTS, *optional, "results.json"):
        assert (tmp_path / "reproduction" / name).read_bytes() == (ASSETS / name).read_bytes(), name
    assert sorted(p.name for p in (tmp_path / "reproduction").iterdir()) == sorted(p.name for p in ASSETS.iterdir())
