"""The SQuAD job end to end: the span upper bound on real data, learning on 200 real questions, and ``run_squad``.

* Span upper bound (``python -m albert_tf.tasks.squad span_upper_bound``): perfect logits through the real
  features, windows and post-processing, scored by the official scripts' logic, on the 626 questions of
  ``dev-v2.0-subset-a.json``. Every miss is listed with its reason, so a regression names the questions it breaks.
* Learning: a small model fine-tuned from scratch on 200 questions of subset-a must answer those same questions
  (F1 >= 80) and tell answerable from unanswerable better than the majority class: the v2 head, the teacher-forced
  loss, the beam and the post-processing fit together.
* ``run_squad`` (the console script's module) trains v1, evaluates every checkpoint keeping the best by F1,
  predicts; then predicts again without ``--train_file`` from ``--predict_checkpoint`` (the official v1 crashed in
  predict-only mode).
"""

from __future__ import annotations

import json
import os

import commands
import pytest
from conftest import ROOT, shared_path, write_small_config

from albert_tf.evaluation import squad_metrics
from albert_tf.tasks import squad
from albert_tf.tasks.squad.diagnostics import span_upper_bound
from albert_tf.tasks.squad.scoring import score
from albert_tf.tasks.squad.task import run as run_squad

WINDOWS = [(384, 128), (128, 64)]


def _subset_a() -> str:
    return str(shared_path("squad", "dev-v2.0-subset-a.json"))


def _spm() -> str:
    return str(shared_path("spm", "30k-clean.model"))


@pytest.mark.heavy
@pytest.mark.parametrize("version_2", [True, False], ids=["v2", "v1"])
@pytest.mark.parametrize("max_seq_length,doc_stride", WINDOWS)
def test_span_upper_bound_on_subset_a(version_2, max_seq_length, doc_stride, tmp_path):
    out = tmp_path / "predictions.json"
    result = span_upper_bound(
        _subset_a(), _spm(), version_2_with_negative=version_2, max_seq_length=max_seq_length,
        doc_stride=doc_stride, output_file=str(out),
    )
    scores, misses = result["scores"], result["misses"]
    exact = scores["exact"] if version_2 else scores["exact_match"]
    print(json.dumps({"scores": scores, "misses": misses, "num_features": result["num_features"]}, indent=1))
    assert exact >= 99.0 and scores["f1"] >= 99.5, misses
    # The list of misses is exactly the questions that are not an exact match.
    scored = 626 if version_2 else 293
    assert len(misses) == round(scored * (100 - exact) / 100)
    assert result["num_questions"] == 626 and not result["report"]["mismatched"]
    if max_seq_length == 128:
        assert result["num_features"] > 626  # windows matter at this length
    # The written file is what was scored: re-scoring it gives the same numbers.
    answers = json.loads(out.read_text())
    data = json.load(open(_subset_a()))["data"]
    again = squad_metrics.evaluate_v2(data, answers) if version_2 else squad_metrics.evaluate_v1(
        squad_metrics.answerable_subset(data), answers)
    assert again == scores


def test_span_upper_bound_names_the_reason_of_each_miss():
    """A negative control: answers longer than --max_answer_length cannot be produced, and are listed as such."""
    result = span_upper_bound(_subset_a(), _spm(), version_2_with_negative=True, max_seq_length=128,
                                    doc_stride=64, max_answer_length=3)
    misses = result["misses"]
    assert misses and result["scores"]["HasAns_exact"] < 90
    assert all("longer than --max_answer_length=3" in m["reason"] for m in misses), misses[:3]
    assert result["scores"]["NoAns_exact"] == 100.0


def _run(args, cwd, timeout=600):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONHASHSEED": "0"}
    return commands.run(args, cwd=cwd, env=env, timeout=timeout)


@pytest.mark.heavy
def test_span_upper_bound_command_line(tmp_path):
    small = str(shared_path("squad", "dev-v2.0-small.json"))
    out = tmp_path / "p.json"
    result = _run(["-m", "albert_tf.tasks.squad", "span_upper_bound", f"--predict_file={small}",
                   f"--spm_model_file={_spm()}", "--version_2_with_negative", "--max_seq_length=128",
                   "--doc_stride=64", f"--output_file={out}"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["scores"]["exact"] == 100.0 and report["num_questions"] == 14
    assert set(json.loads(out.read_text())) == {q for q in _question_ids(small)}
    usage = _run(["-m", "albert_tf.tasks.squad"], cwd=tmp_path)
    assert usage.returncode == 2 and "span_upper_bound" in usage.stderr
    bad = _run(["-m", "albert_tf.tasks.squad", "span_upper_bound", f"--predict_file={tmp_path / 'none.json'}",
                f"--spm_model_file={_spm()}"], cwd=tmp_path)
    assert bad.returncode == 2 and "none.json" in bad.stderr and "Traceback" not in bad.stderr


def _question_ids(path: str) -> list[str]:
    data = json.load(open(path))["data"]
    return [qa["id"] for a in data for p in a["paragraphs"] for qa in p["qas"]]


def _first_questions(n: int, path: str) -> dict:
    """The first ``n`` questions of a SQuAD file, in the official layout."""
    data, kept, out = json.load(open(path))["data"], 0, []
    for article in data:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = paragraph["qas"][: max(0, n - kept)]
            kept += len(qas)
            if qas:
                paragraphs.append(dict(paragraph, qas=qas))
        if paragraphs:
            out.append(dict(article, paragraphs=paragraphs))
    return {"version": "v2.0", "data": out}


@pytest.mark.heavy
def test_v2_fine_tuning_learns_200_questions(tmp_path):
    train = tmp_path / "train.json"
    train.write_text(json.dumps(_first_questions(200, _subset_a())))
    summary = run_squad(squad.make_config(
        train_file=str(train), predict_file=str(train), albert_config_file=write_small_config(tmp_path / "c.json", 256),
        spm_model_file=_spm(), max_seq_length=256, doc_stride=128, max_query_length=64,
        version_2_with_negative=True, output_dir=str(tmp_path / "run"), do_train=True, do_predict=True,
        num_train_steps=300, num_warmup_steps=30, learning_rate=1e-3, train_batch_size=16, predict_batch_size=32,
        steps_per_loop=100, save_checkpoints_steps=300, dropout_prob=0.0,
    ))
    scores = summary["predict"]["scores"]
    print(json.dumps(scores, indent=1))
    assert scores["num_questions"] == 200
    assert scores["fixed_f1"] >= 80 and scores["f1"] >= 80, scores
    assert scores["answer_class_accuracy"] > scores["majority_class_accuracy"], scores
    files = {os.path.basename(f) for f in summary["predict"]["files"]}
    assert files == {"predictions.json", "nbest_predictions.json", "null_odds.json"}
    assert summary["data"]["train"]["num_examples"] == 200 and summary["data"]["train"]["mismatched"] == []
    answers = json.loads((tmp_path / "run" / "predictions.json").read_text())
    assert squad_metrics.evaluate_v2(json.loads(train.read_text())["data"], answers)["f1"] == scores["fixed_f1"]
    # v2 predict-only: no --train_file, weights from --predict_checkpoint, the same answers.
    again = run_squad(squad.make_config(
        predict_file=str(train), albert_config_file=str(tmp_path / "c.json"), spm_model_file=_spm(),
        max_seq_length=256, doc_stride=128, max_query_length=64, version_2_with_negative=True,
        output_dir=str(tmp_path / "predict"), do_predict=True, predict_batch_size=32,
        predict_checkpoint=str(tmp_path / "run" / "ckpt-300"),
    ))
    assert again["predict"]["scores"]["fixed_f1"] == scores["fixed_f1"]
    assert json.loads((tmp_path / "predict" / "predictions.json").read_text()) == answers


def test_official_and_fixed_v2_scores_are_labelled_and_consistent():
    """``score``'s official pass equals ALBERT's two-pass ``evaluate_v2`` restated in squad_metrics."""
    from albert_tf.evaluation.squad_predictions import SquadPredictions

    data = json.load(open(str(shared_path("squad", "dev-v2.0-small.json"))))["data"]
    ids = _question_ids(str(shared_path("squad", "dev-v2.0-small.json")))
    gold = {qa["id"]: (qa["answers"][0]["text"] if qa["answers"] else "") for a in data for p in a["paragraphs"]
            for qa in p["qas"]}
    best = {q: gold[q] or "something wrong" for q in ids}
    null = {q: (0.5 if i % 3 else -0.5) + 0.01 * i for i, q in enumerate(ids)}
    predictions = SquadPredictions(best, {q: [] for q in ids}, null)
    metrics = score(data, predictions, True, null_threshold=0.0)
    official = squad_metrics.evaluate_v2_albert(data, predictions.answers, null)
    assert metrics["exact"] == official["exact"] and metrics["f1"] == official["f1"]
    assert metrics["null_score_diff_threshold"] == official["null_score_diff_threshold"]
    fixed = squad_metrics.evaluate_v2(data, predictions.answers(0.0))
    assert metrics["fixed_exact"] == fixed["exact"] and metrics["fixed_f1"] == fixed["f1"]


@pytest.mark.slow
def test_run_squad_v1_train_eval_predict_then_predict_only(tmp_path):
    small = _first_questions(60, _subset_a())
    for paragraph in (p for a in small["data"] for p in a["paragraphs"]):
        paragraph["qas"] = [qa for qa in paragraph["qas"] if qa["answers"]]  # a v1.1 file: answerable only
    train = tmp_path / "train-v1.json"
    train.write_text(json.dumps(small))
    config = write_small_config(tmp_path / "c.json", 128)
    common = [f"--predict_file={train}", f"--albert_config_file={config}", f"--spm_model_file={_spm()}",
              "--max_seq_length=128", "--doc_stride=64", "--max_query_length=32"]
    run = _run([str(ROOT / "run_squad.py"), *common, f"--train_file={train}", "--output_dir=run", "--do_train",
                "--do_eval", "--do_predict", "--train_step=40", "--save_checkpoints_steps=20", "--steps_per_loop=20",
                "--learning_rate=1e-3", "--train_batch_size=16"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "best f1 = " in run.stdout
    results = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert results["key_metric"] == "f1" and [c["global_step"] for c in results["checkpoints"]] == [20, 40]
    assert {"exact_match", "f1", "num_questions"} <= set(results["checkpoints"][0])
    assert os.path.isdir(tmp_path / "run" / "best")
    for name in ("predictions.json", "nbest_predictions.json"):
        assert (tmp_path / "run" / name).is_file()
    assert not (tmp_path / "run" / "null_odds.json").exists()
    # Predict-only, without --train_file, from the best checkpoint: the same answers.
    prefix = os.path.join(tmp_path, "run", "best", "ckpt-best")
    again = _run([str(ROOT / "run_squad.py"), *common, "--output_dir=predict", "--do_predict",
                  f"--predict_checkpoint={prefix}"], cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    first = json.loads((tmp_path / "run" / "predictions.json").read_text())
    second = json.loads((tmp_path / "predict" / "predictions.json").read_text())
    assert first == second and len(first) == sum(len(p["qas"]) for a in small["data"] for p in a["paragraphs"])
