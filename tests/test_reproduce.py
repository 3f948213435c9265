"""The small-scale reproduction (``python -m albert_tf.reproduce``): documents, held-out split, the no-sentence-loss
switch, parameter counts against the hand formula, and the whole command at the tiny budget (slow)."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT, shared_data_dir

from albert_tf.data.documents import cut_documents, is_heldout, prepare_split
from albert_tf.modeling.counting import encoder_parameter_formula
from albert_tf.reproduce import paper
from albert_tf.reproduce.budgets import BUDGETS
from albert_tf.reproduce.experiments import (
    LONG_SOP_RUN,
    MASKING_RUNS,
    TABLE3_RUNS,
    TABLE4_RUNS,
    TABLE5_RUNS,
    model_config,
    parameter_counts,
    pretraining_runs,
    seeded_name,
)
from albert_tf.reproduce.report import MASKING_PLOT, PLOTS


def _paragraph(tag: str, n: int) -> str:
    """One hard-wrapped paragraph of ``n`` unique sentences."""
    return "\n".join(f"Sentence {tag} number {i} is here." for i in range(n))


# ----------------------------------------------------------------------------------------------- documents
def test_paragraph_documents_close_at_paragraph_ends():
    text = "\n\n".join(_paragraph(t, n) for t, n in (("a", 2), ("b", 2), ("c", 5), ("d", 1)))
    docs = cut_documents(text, "paragraphs", document_sentences=4)
    # a+b reach 4 sentences -> one document; c (5) -> one; the remainder d (1 < 4 // 2) joins the last one.
    assert [len(d) for d in docs] == [4, 6]
    assert docs[0][0].startswith("Sentence a number 0") and docs[1][-1].startswith("Sentence d number 0")
    assert cut_documents(text, "file") == [[s for d in docs for s in d]]


def test_file_without_blank_lines_is_one_document():
    speech = "\n".join(f"Line {i} of the address. It goes on." for i in range(30))
    assert len(cut_documents(speech, "paragraphs", document_sentences=5)) == 1


def test_bad_document_options_are_refused():
    with pytest.raises(ValueError, match="document_unit"):
        cut_documents("x", "chapters")
    with pytest.raises(ValueError, match="document_sentences"):
        cut_documents("x", "paragraphs", 0)


def _write_books(folder, names=("one.txt", "two.txt", "three.txt")) -> list[str]:
    paths = []
    for name in names:
        path = folder / name
        path.write_text("\n\n".join(_paragraph(f"{name}-{p}", 3) for p in range(40)), encoding="utf-8")
        paths.append(str(path))
    return paths


def _documents(path) -> list[tuple[str, ...]]:
    text = open(path, encoding="utf-8").read().strip()
    return [tuple(block.split("\n")) for block in text.split("\n\n")]


def test_heldout_documents_never_reach_the_training_text(tmp_path):
    files = _write_books(tmp_path)
    counts = prepare_split(files, str(tmp_path / "train.txt"), str(tmp_path / "held.txt"), document_sentences=6,
                           heldout_fraction=0.2)
    train, held = _documents(tmp_path / "train.txt"), _documents(tmp_path / "held.txt")
    assert len(held) == counts["heldout_documents"] > 0 and len(train) == counts["documents"] > 0
    train_sentences = {s for d in train for s in d}
    assert not train_sentences & {s for d in held for s in d}
    assert len(train) + len(held) == 3 * 20  # 40 paragraphs of 3 sentences -> 20 documents of 6 per file
    # Deterministic and independent of the file order: the same split again, files reversed.
    prepare_split(files[::-1], str(tmp_path / "train2.txt"), str(tmp_path / "held2.txt"), document_sentences=6,
                  heldout_fraction=0.2)
    assert sorted(_documents(tmp_path / "held2.txt")) == sorted(held)
    assert is_heldout("/any/where/one.txt", 3, 0.2) == is_heldout("one.txt", 3, 0.2)


# ----------------------------------------------------------------------------------------------- no sentence loss
def _tiny_batch(vocab: int = 1000, batch: int = 4, seq: int = 16, pred: int = 3) -> dict:
    rng = np.random.default_rng(0)
    return {
        "input_ids": rng.integers(5, vocab, (batch, seq)).astype("int32"),
        "input_mask": np.ones((batch, seq), "int32"),
        "segment_ids": np.concatenate([np.zeros((batch, seq // 2)), np.ones((batch, seq // 2))], 1).astype("int32"),
        "masked_lm_positions": np.tile(np.arange(1, pred + 1), (batch, 1)).astype("int32"),
        "masked_lm_ids": rng.integers(5, vocab, (batch, pred)).astype("int32"),
        "masked_lm_weights": np.ones((batch, pred), "float32"),
        "next_sentence_labels": np.array([[0], [1], [1], [0]], "int32"),
    }


@pytest.mark.parametrize("weight", [0.0, 1.0])
def test_sentence_loss_weight_zero_trains_mlm_only(weight):
    import tensorflow as tf

    from albert_tf.config import AlbertConfig
    from albert_tf.tasks.pretraining.task import PretrainingTask

    config = AlbertConfig.from_name("albert_tiny")
    task = PretrainingTask(config, None, None, 16, 3, sentence_loss_weight=weight)
    model = task.build_model()
    features = _tiny_batch()
    with tf.GradientTape() as tape:
        total, logs = task.loss(model, features, training=True)
    head = [v for v in model.trainable_variables if "seq_relationship" in v.path or "sentence_order" in v.path]
    assert head, [v.path for v in model.trainable_variables]
    grads = tape.gradient(total, head)
    if weight == 0:
        np.testing.assert_equal(float(total), float(logs["mlm_loss"]))
        assert all(g is None or not np.any(g) for g in grads)
        assert float(logs["sop_loss"]) > 0  # still measured, only not trained
    else:
        np.testing.assert_allclose(float(total), float(logs["mlm_loss"] + logs["sop_loss"]), rtol=1e-6)
        assert any(g is not None and np.any(g) for g in grads)


def test_sentence_loss_weight_flag_reaches_the_task():
    from albert_tf.tasks import pretraining
    from albert_tf.tasks.pretraining.task import PretrainingTask
    from albert_tf.training.task import TaskError

    cfg = pretraining.make_config(albert_config_file="albert_tiny", sentence_loss_weight=0.0, output_dir="x")
    assert cfg.task.sentence_loss_weight == 0.0
    assert pretraining.make_config(albert_config_file="albert_tiny").task.sentence_loss_weight == 1.0
    with pytest.raises(TaskError, match="sentence_loss_weight"):
        PretrainingTask(None, None, None, 16, 3, sentence_loss_weight=-1.0)


# ----------------------------------------------------------------------------------------------- budgets, counts
@pytest.mark.heavy
@pytest.mark.parametrize("budget", ["tiny", "small"])
def test_parameter_counts_of_every_run_equal_the_hand_formula(budget):
    b = BUDGETS[budget]
    for run in pretraining_runs(b):
        counts = parameter_counts(model_config(b, run.embedding_size), run.sharing)
        assert counts["encoder_params"] == counts["formula_params"], run


@pytest.mark.parametrize("budget", sorted(BUDGETS))
def test_each_comparison_has_one_step_count_and_model_size(budget):
    b = BUDGETS[budget]
    runs = {r.name: r for r in pretraining_runs(b)}
    assert {runs[n].comparison for n in TABLE5_RUNS.values()} == {"table5"}
    ablation = list(TABLE4_RUNS.values()) + list(TABLE3_RUNS(b).values())
    assert {runs[n].comparison for n in ablation} == {"ablation"}
    assert {runs[n].embedding_size for n in TABLE4_RUNS.values()} == {None}  # the budget's E for every mode
    assert sorted(TABLE3_RUNS(b)) == [64, 128, 256] and b.embedding_size == 128
    # the long SOP run: Table 5's SOP run with only the step count changed, where the budget has one
    assert (LONG_SOP_RUN in runs) == bool(b.long_sop_steps)
    if b.long_sop_steps:
        long, sop = runs[LONG_SOP_RUN], runs[TABLE5_RUNS["sop"]]
        assert long.comparison == "long" and b.steps("long") == b.long_sop_steps > b.table5_steps
        assert dataclasses.replace(long, name=sop.name, comparison=sop.comparison) == sop
    # the masking comparison: Table 4's all-shared run on its own records and steps, once per kind of mask
    masking = list(MASKING_RUNS.values()) if b.masking_steps else []
    for kind, name in MASKING_RUNS.items():
        assert (name in runs) == bool(b.masking_steps)
        if name in runs:
            assert runs[name].masks(b) == kind and runs[name].comparison == "masking"
            assert dataclasses.replace(runs[name], name="all", comparison="ablation", masking=None) == runs["all"]
    # seeds: every row of a comparison has its number of seeds, each the seed-0 run but for its name and seed
    for rows, seeds in ((TABLE5_RUNS.values(), b.table5_seeds), (ablation, b.ablation_seeds),
                        (masking, b.masking_seeds)):
        for row in rows:
            for k in range(seeds):
                seeded = runs[seeded_name(row, k)]
                assert seeded.seed_index == k and seeded.row == row and seeded.seed(b) == b.seed + k
                assert dataclasses.replace(seeded, name=row, seed_index=0) == runs[row]
            assert seeded_name(row, seeds) not in runs
    assert len(runs) == len(pretraining_runs(b))  # no name twice


def test_a_budget_missing_a_later_field_agrees_where_that_field_has_its_default():
    """Results saved before a field existed (the seed counts) stay reusable while the budget keeps its default."""
    from albert_tf.reproduce.budgets import same_fields

    default = dataclasses.replace(BUDGETS["tiny"], evals_per_run=6)  # the field's default
    old = {k: v for k, v in default.fields().items() if k != "evals_per_run"}
    assert same_fields(old, default, "ablation")
    assert not same_fields(old, dataclasses.replace(default, evals_per_run=3), "ablation")
    assert not same_fields({k: v for k, v in old.items() if k != "hidden_size"}, default, "ablation")  # no default


def test_paper_parameter_counts_agree_with_the_formula_for_albert_base():
    from albert_tf.config import AlbertConfig

    base = AlbertConfig.from_name("albert_base_v2")
    for sharing, rows in paper.TABLE3.items():
        for e, row in rows.items():
            n = encoder_parameter_formula(base.replace(embedding_size=e), sharing)
            assert abs(n / 1e6 - float(row["params"][:-1])) <= 1.1, (sharing, e, n)
    for e, rows in paper.TABLE4.items():
        for sharing, row in rows.items():
            n = encoder_parameter_formula(base.replace(embedding_size=e), sharing)
            assert abs(n / 1e6 - float(row["params"][:-1])) <= 1.1, (sharing, e, n)


def test_sop_budget_estimate_extrapolates_the_second_half_of_the_curve():
    from albert_tf.reproduce.report import sop_budget_estimate

    budget = dict(BUDGETS["small"].fields())
    # 50% until step 900, then +1 point per 300 steps: slope 1/30000 per step; at 1800 it is 53%, the target
    # (majority 50% + 10) is 7 points away: 7 * 300 = 2100 more steps -> 3900.
    curve = [{"step": s, "sentence_order_accuracy": 0.5 + max(0, s - 900) / 30000} for s in range(0, 1801, 300)]
    text = sop_budget_estimate(curve, 0.5, budget)
    assert "3,900 steps" in text and "2.2x" in text and "3.33 points per 1,000 steps" in text
    assert "Longer runs of the `small` and `medium` budgets' models" in text and "+10 is where SOP levels off" in text
    flat = [{"step": s, "sentence_order_accuracy": 0.52 - s / 1e6} for s in range(0, 1801, 300)]
    assert "no upward trend" in sop_budget_estimate(flat, 0.5, budget)


def test_long_sop_note_states_both_curves_and_their_late_slopes():
    from albert_tf.reproduce.report import long_sop_note

    # SOP: 50% to step 1500, then +1 point per 500 steps (2 points per 1,000); MLM: +3 points per 1,000 steps
    # throughout; ends at step 3000 with SOP 53% (+2.5 over a 50.5% majority) and MLM 9%.
    curve = [{"step": s, "sentence_order_accuracy": 0.5 + max(0, s - 1500) / 50000, "masked_lm_accuracy": s / 1e5 * 3}
             for s in range(0, 3001, 500)]
    run = {"steps": 3000, "curve": curve, "heldout_sop_accuracy": 0.53, "heldout_nsp_accuracy": 0.511,
           "date": "2026-01-02"}
    text = long_sop_note(run, 0.505)
    assert "for 3000 steps (`sop_long`" in text and "2026-01-02" in text
    assert "50.0, 50.0, 50.0, 50.0, 51.0, 52.0, 53.0 on held-out SOP at steps 0, 500, 1000, 1500, 2000" in text
    assert "+2.5 points over the majority class" in text and "+2.00 points per 1,000 steps" in text
    assert "from 1.5 at step 500 to 9.0, +3.00 points per 1,000 steps" in text and "held-out NSP 51.1" in text
    assert "close to predicting frequent tokens" in text
    learned = long_sop_note({**run, "heldout_sop_accuracy": 0.62}, 0.505)
    assert "+11.5 points" in learned and "SOP is learned clearly" in learned and "frequent tokens" not in learned


def test_reused_minutes_count_pretraining_and_fine_tuning_of_reused_runs_only():
    from albert_tf.reproduce.report import _reused_seconds

    results = {"reused": {"sop": "r.json", "all": "r.json"},
               "pretraining": {"sop": {"seconds": 60}, "all": {"seconds": 30}, "nsp": {"seconds": 1000}},
               "finetuning": {"sop": {"seconds": 6}, "nsp": {"seconds": 1000}}}
    assert _reused_seconds(results) == 96
    assert _reused_seconds({"pretraining": {}, "finetuning": {}}) == 0


def test_render_only_without_saved_results_fails_cleanly(tmp_path, capsys):
    from albert_tf.reproduce.__main__ import main

    assert main(["--render_only", f"--workdir={tmp_path}/w", f"--output={tmp_path}/R.md"]) == 1
    assert "no saved results" in capsys.readouterr().err


@pytest.mark.parametrize("content, expect", [
    (None, "cannot read it"),
    ("{not json", "not a results JSON"),
    ("[1, 2]", "expected the results JSON"),
])
def test_reuse_results_bad_file_is_one_line_before_any_work(tmp_path, content, expect):
    from albert_tf.reproduce.__main__ import main

    (tmp_path / "shared" / "text").mkdir(parents=True)
    bad = tmp_path / "earlier.json"
    if content is not None:
        bad.write_text(content, encoding="utf-8")
    work = tmp_path / "work"
    with pytest.raises(SystemExit) as e:
        main(["--budget=tiny", f"--workdir={work}", f"--output={tmp_path}/R.md", f"--shared_data={tmp_path / 'shared'}",
              f"--reuse_results={bad}"])
    message = str(e.value.code)
    assert message.startswith("error: --reuse_results=") and expect in message and "\n" not in message
    assert not work.exists()  # nothing was prepared


# ----------------------------------------------------------------------------------------------- the whole command
@pytest.mark.slow
def test_tiny_budget_end_to_end_resumes_and_renders(tmp_path, capsys, monkeypatch):
    shared = shared_data_dir()
    if shared is None or not (shared / "text").is_dir() or not (shared / "glue" / "SST-2").is_dir():
        pytest.skip("needs ../shared/data (text, spm, glue/SST-2)")
    from albert_tf.demo import table1
    from albert_tf.reproduce.__main__ import main

    # Table 1 is measured by building every released configuration (albert_tf.demo.table1, its variables shapes
    # only); it is watched here to show that the first invocation measures it once and the second reuses it, and its
    # rows must be the checked-in reproduction's.
    checked_in = json.loads((ROOT / "reproduction" / "results.json").read_text(encoding="utf-8"))["table1"]["rows"]
    measured = []
    measure = table1.run

    def table1_rows(workdir=None, args=None, version="v2"):
        measured.append(workdir)
        return measure(workdir, args, version)

    monkeypatch.setattr(table1, "run", table1_rows)
    work, out = tmp_path / "work", tmp_path / "report" / "REPRODUCTION.md"
    args = ["--budget=tiny", f"--workdir={work}", f"--output={out}", f"--shared_data={shared}"]
    assert main(args) == 0
    assert measured == [None]
    text = out.read_text(encoding="utf-8")
    for heading in ("## Table 1", "## Table 5", "## Table 4", "## Table 3"):
        assert heading in text
    assert f"| {checked_in['albert_xxlarge']['params']:,} |" in text
    assert f"* More steps: the SOP model trained again for {BUDGETS['tiny'].long_sop_steps} steps" in text
    assets = out.parent / "reproduction"
    for plot in (*PLOTS, MASKING_PLOT):
        assert (assets / plot).stat().st_size > 1000, plot
        assert f"reproduction/{plot}" in text
    assert "## Masking: static vs dynamic" in text and "The budgets train with **static** masks" in text
    results = json.loads((assets / "results.json").read_text(encoding="utf-8"))
    assert results["table1"]["rows"] == checked_in  # the counts (and shares) as the checked-in reproduction has them
    assert str(tmp_path) not in json.dumps(results)  # no paths of this machine in the checked-in JSON
    runs = results["pretraining"]
    assert set(runs) == {r.name for r in pretraining_runs(BUDGETS["tiny"])}
    for m in runs.values():
        assert m["complete"] and m["encoder_params"] == m["formula_params"]
    for name in TABLE5_RUNS.values():
        assert 0 <= runs[name]["heldout_nsp_accuracy"] <= 1
        assert 0 <= results["finetuning"][name]["dev_accuracy"] <= 1
    for key in ("heldout_sop", "heldout_nsp"):
        assert 0.5 <= results["data"]["baselines"][key]["majority_accuracy"] <= 1
    # No held-out sentence in the training text.
    train = set((work / "data" / "train.txt").read_text(encoding="utf-8").split("\n")) - {""}
    held = set((work / "data" / "heldout.txt").read_text(encoding="utf-8").split("\n")) - {""}
    assert held and not (train & held)

    # A second invocation repeats no run.
    stamps = {p: os.path.getmtime(p) for p in work.glob("runs/*/metrics.json")}
    capsys.readouterr()
    assert main(args) == 0
    err = capsys.readouterr().err
    assert err.count("complete, skipped") == len(runs) + len(TABLE5_RUNS) + 1  # + fine-tunings + Table 1
    assert measured == [None]
    assert stamps == {p: os.path.getmtime(p) for p in work.glob("runs/*/metrics.json")}

    # The verdicts of the page follow the rule, recomputed from its JSON (as for the checked-in page).
    from test_reproduction_verdicts import check_verdicts

    check_verdicts(text, results)

    # --render_only regenerates the page and the plots from the saved JSON alone: it prepares no data, trains,
    # fine-tunes and measures nothing (each of those steps fails the test if it is called), and never makes the
    # work dir it is given.
    for plot in PLOTS:
        (assets / plot).unlink()
    out.unlink()
    import albert_tf.reproduce.__main__ as command
    from albert_tf.reproduce import data as reproduce_data
    from albert_tf.reproduce import experiments

    def ran(*args, **kwargs):
        raise AssertionError("--render_only ran an experiment step")

    with monkeypatch.context() as patch:
        patch.setattr(command, "run", ran)
        patch.setattr(reproduce_data, "prepare_data", ran)
        for step in ("run_all", "run_pretraining", "run_finetuning", "run_table1", "reuse_results"):
            patch.setattr(experiments, step, ran)
        assert main(["--render_only", f"--output={out}", f"--workdir={tmp_path / 'nowhere'}"]) == 0
    assert not (tmp_path / "nowhere").exists()
    assert out.read_text(encoding="utf-8") == text
    assert all((assets / plot).exists() for plot in PLOTS)

    # A fresh workdir with --reuse_results: every run of the same budget comes from the saved JSON (nothing is
    # pretrained or fine-tuned again), and the page says which runs were reused and from when.
    again = tmp_path / "again" / "REPRODUCTION.md"
    capsys.readouterr()
    assert main([*args[:1], f"--workdir={tmp_path / 'work2'}", f"--output={again}", args[-1],
                 f"--reuse_results={assets / 'results.json'}"]) == 0
    err = capsys.readouterr().err
    assert err.count("reused from results.json") == len(runs)
    assert ": pretraining " not in err and ": fine-tuning " not in err
    page = again.read_text(encoding="utf-8")
    assert "Runs reused from an earlier invocation" in page and all(f"`{name}`" in page for name in runs)

    # The README's command as a user types it, in a clean checkout (this one's files, committed in a fresh
    # repository), with no --workdir or --output: the shipped REPRODUCTION.md, its plots and results.json stay as
    # they are (git status clean); the report goes to reproduce_output/. The runs there are this test's (each
    # "complete, skipped"), so it takes seconds; what is written, and where, is the same as for a first run.
    checkout = clean_checkout(tmp_path / "checkout")
    shutil.copytree(work, checkout / "reproduce_output")
    done = subprocess.run([sys.executable, "-m", "albert_tf.reproduce", "--budget=tiny", f"--shared_data={shared}"],
                          cwd=checkout, capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "PYTHONPATH": str(checkout)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "wrote reproduce_output/REPRODUCTION.md" in done.stderr, done.stderr[-2000:]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=checkout, capture_output=True, text=True)
    assert status.returncode == 0 and status.stdout == "", status.stdout
    assert (checkout / "reproduce_output" / "reproduction" / "results.json").exists()


def clean_checkout(folder: pathlib.Path) -> pathlib.Path:
    """The working tree's files that git tracks or would track (not the ignored ones), committed in a new
    repository at ``folder``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode("utf-8").split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
        elif source.is_symlink():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(source), folder / name)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "checkout"]):
        subprocess.run([*git, *command], cwd=folder, check=True, capture_output=True)
    return folder


def test_prepare_text_command_cuts_paragraph_documents_and_holds_some_out(tmp_path):
    files = _write_books(tmp_path)
    cmd = [sys.executable, "-m", "albert_tf.cli.prepare_text", f"--input_file={tmp_path}/*.txt",
           f"--output_file={tmp_path}/train.txt", "--document_unit=paragraphs", "--document_sentences=6",
           f"--heldout_file={tmp_path}/held.txt", "--heldout_fraction=0.2"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["documents"] + counts["heldout_documents"] == 3 * 20 and counts["heldout_documents"] > 0
    train, held = _documents(tmp_path / "train.txt"), _documents(tmp_path / "held.txt")
    assert not {s for d in train for s in d} & {s for d in held for s in d}
    assert len(files) == 3


def test_a_saved_run_is_reused_only_under_the_same_budget(tmp_path):
    from albert_tf.reproduce.experiments import _read_complete, _write

    tiny = BUDGETS["tiny"]
    path = str(tmp_path / "metrics.json")
    _write(path, {"complete": True, "budget_fields": tiny.fields(), "x": 1})
    assert _read_complete(path, tiny)["x"] == 1
    longer_table5 = dataclasses.replace(tiny, table5_steps=tiny.table5_steps + 1)
    assert _read_complete(path, longer_table5) is None
    # ... but a longer Table 5 does not invalidate the runs of Tables 3 and 4, nor a new estimate anything
    assert _read_complete(path, longer_table5, "ablation")["x"] == 1
    assert _read_complete(path, dataclasses.replace(tiny, ablation_steps=3), "ablation") is None
    assert _read_complete(path, dataclasses.replace(tiny, estimate="other"), "table5")["x"] == 1
    assert _read_complete(path, dataclasses.replace(tiny, learning_rate=1.0), "ablation") is None
    # the long SOP run depends on its own step count only
    assert _read_complete(path, dataclasses.replace(tiny, long_sop_steps=99), "long") is None
    assert _read_complete(path, dataclasses.replace(tiny, long_sop_steps=99), "table5")["x"] == 1
    assert _read_complete(path, longer_table5, "long")["x"] == 1
    _write(path, {"complete": False, "budget_fields": tiny.fields()})
    assert _read_complete(path, tiny) is None


def test_budget_parts_name_real_fields_and_cover_what_changes_a_run():
    from albert_tf.reproduce.budgets import PART_FIELDS

    names = {f.name for f in dataclasses.fields(BUDGETS["tiny"])}
    for part, fields in PART_FIELDS.items():
        assert set(fields) <= names, part
    # every field but the documentation and the lists of runs (Table 3's sizes, the seed counts) decides some result
    assert names - set().union(*PART_FIELDS.values()) == {"name", "estimate", "embedding_sizes", "table5_seeds",
                                                          "ablation_seeds", "masking_seeds"}
    # the comparison of masks names each run's masks itself: the budget's choice does not invalidate it
    assert "masking" in PART_FIELDS["ablation"] and "masking" not in PART_FIELDS["masking"]
    with pytest.raises(ValueError, match="masking"):
        dataclasses.replace(BUDGETS["tiny"], masking="sometimes")
    with pytest.raises(ValueError, match="unknown part"):
        BUDGETS["tiny"].fields("tables")


def test_reuse_results_takes_unchanged_runs_only(tmp_path):
    from albert_tf.reproduce.experiments import _read_complete, pretraining_runs, reuse_results

    tiny = BUDGETS["tiny"]
    fields = tiny.fields()
    earlier = {
        "machine": {"date": "2026-01-01"},
        "pretraining": {r.name: {"complete": True, "budget_fields": fields, "heldout_mlm_accuracy": 0.1}
                        for r in pretraining_runs(tiny)},
        "finetuning": {"sop": {"complete": True, "task": tiny.glue_task, "budget_fields": fields, "dev_accuracy": 0.7}},
    }
    longer = dataclasses.replace(tiny, table5_steps=tiny.table5_steps * 2)
    logs: list[str] = []
    reused = reuse_results(earlier, longer, str(tmp_path), "r.json", log=logs.append)
    ablations = {r.name for r in pretraining_runs(tiny) if r.comparison != "table5"}  # + the long SOP run
    assert LONG_SOP_RUN in ablations
    assert set(reused) == ablations and len(logs) == len(ablations)  # Table 5 changed: its runs are not taken
    saved = _read_complete(str(tmp_path / "runs" / "all" / "metrics.json"), longer, "ablation")
    assert saved["reused_from"] == "r.json" and saved["heldout_mlm_accuracy"] == 0.1
    # the same budget: Table 5's sop run comes with its fine-tuning; nsp and none have none saved, so they run again
    again = reuse_results(earlier, tiny, str(tmp_path / "same"), "r.json", log=logs.append)
    assert "sop" in again and "nsp" not in again and "none" not in again
    assert (tmp_path / "same" / "runs" / "sop" / tiny.glue_task.lower() / "metrics.json").exists()
    # a run already complete in the workdir is kept, not overwritten
    assert reuse_results(earlier, longer, str(tmp_path), "other.json", log=logs.append) == []
