"""SQuAD scoring and prediction files: the official scores of the predicted questions (v1.1 over the answerable
ones, v2.0 with the tuned and the fixed null threshold) and the official output files."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from albert_tf.evaluation import squad_metrics
from albert_tf.evaluation.squad_predictions import SquadPredictions
from albert_tf.files import write_text_atomic


def write_prediction_files(results_dir: str, predictions: SquadPredictions, null_threshold: float) -> list[str]:
    """The official output files (temporary name, then renamed); v2 answers use ``null_threshold``."""
    files = {
        "predictions.json": predictions.answers(null_threshold),
        "nbest_predictions.json": predictions.nbest,
    }
    if predictions.null_scores is not None:
        files["null_odds.json"] = predictions.null_scores
    paths = []
    for name, content in files.items():
        path = os.path.join(results_dir, name)
        write_text_atomic(path, json.dumps(content, indent=4, ensure_ascii=False) + "\n")
        paths.append(path)
    return paths


def restrict_dataset(dataset: list[dict], qids: set[str]) -> list[dict]:
    """A copy of the official ``data`` list holding only the questions in ``qids`` (the scored subset)."""
    out = []
    for article in dataset:
        paragraphs = []
        for paragraph in article.get("paragraphs", []):
            qas = [qa for qa in paragraph.get("qas", []) if qa.get("id") in qids]
            if qas:
                paragraphs.append(dict(paragraph, qas=qas))
        if paragraphs:
            out.append(dict(article, paragraphs=paragraphs))
    return out


def score(
    dataset: list[dict], predictions: SquadPredictions, version_2_with_negative: bool, null_threshold: float
) -> dict[str, Any]:
    """Official scores of the predicted questions.

    v1: ``exact_match``/``f1`` of evaluate-v1.1 over the answerable questions (``unanswerable_skipped`` counts the
    others). v2: ``exact``/``f1`` as ``run_squad_v2`` reports them (second pass with ``best_f1_thresh`` tuned on this
    set, ``na_prob_thresh`` 1.0 on the logits), ``best_*`` of the first pass, the HasAns/NoAns breakdown, and the
    ``fixed_*`` scores of ``predictions.json`` at ``null_threshold`` with ``answer_class_accuracy`` (null score >=
    threshold vs unanswerable) beside ``majority_class_accuracy``.
    """
    dataset = restrict_dataset(dataset, set(predictions.best_text))
    total = sum(len(p["qas"]) for a in dataset for p in a["paragraphs"])
    if not version_2_with_negative:
        answerable = squad_metrics.answerable_subset(dataset)
        n = sum(len(p["qas"]) for a in answerable for p in a["paragraphs"])
        metrics: dict[str, Any] = {"num_questions": total, "unanswerable_skipped": total - n}
        if n:
            result = squad_metrics.evaluate_v1(answerable, predictions.answers())
            metrics.update(exact_match=result["exact_match"], f1=result["f1"], exact=result["exact_match"])
        else:
            metrics.update(exact_match=0.0, f1=0.0, exact=0.0)
        return metrics
    null_scores = predictions.null_scores
    first = squad_metrics.evaluate_v2(dataset, predictions.answers(None), null_scores, 1.0)
    tuned = first["best_f1_thresh"]
    official = squad_metrics.evaluate_v2(dataset, predictions.answers(tuned), null_scores, 1.0)
    fixed = squad_metrics.evaluate_v2(dataset, predictions.answers(null_threshold))
    metrics = {"num_questions": total, "exact": official["exact"], "f1": official["f1"],
               "null_score_diff_threshold": tuned}
    for key in ("HasAns_exact", "HasAns_f1", "HasAns_total", "NoAns_exact", "NoAns_f1", "NoAns_total"):
        if key in official:
            metrics[key] = official[key]
    for key in ("best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"):
        metrics[key] = first[key]
    metrics["fixed_threshold"] = null_threshold
    for key in ("exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1"):
        if key in fixed:
            metrics[f"fixed_{key}"] = fixed[key]
    has_answer = squad_metrics.has_answer_map(dataset)
    hits = [(null_scores[q] >= null_threshold) == (not has) for q, has in has_answer.items()]
    impossible = sum(1 for has in has_answer.values() if not has)
    metrics["answer_class_accuracy"] = float(np.mean(hits)) if hits else 0.0
    metrics["majority_class_accuracy"] = max(impossible, len(has_answer) - impossible) / max(len(has_answer), 1)
    return metrics


# ------------------------------------------------------------------------------------------ span upper bound
