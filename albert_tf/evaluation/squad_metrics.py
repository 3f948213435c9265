"""SQuAD v1.1 / v2.0 scoring with the semantics of the official evaluation scripts.

A re-implementation of ``evaluate-v1.1.py`` and ``evaluate-v2.0.py`` (including ``--na-prob-file``,
``--na-prob-thresh``, the HasAns/NoAns breakdown and the no-answer threshold search), and of the way the
official ALBERT ``run_squad_v2.py`` uses them (``evaluate_v2`` in ``albert/squad_utils.py``).
Every number is the one the official scripts print, bit for bit: same normalisation, same token F1, same
summation order, same tie rules.

Normalisation (both versions): lower-case, drop every character of ``string.punctuation`` (ASCII only:
curly quotes, dashes and other Unicode punctuation stay), replace the words ``a``/``an``/``the`` (Unicode
word boundaries) by a space, collapse whitespace (``str.split``).

v1.1 versus v2.0:

* token F1: v1.1 gives 0 when either side has no token (even both empty); v2.0 gives 1 when both are empty
  and 0 when only one is (:func:`f1_score_v1`, :func:`f1_score_v2`). Exact match is the same in both.
* gold answers: v1.1 takes every ``answers[*].text`` as given (a question without answers cannot be scored,
  see :func:`answerable_subset`); v2.0 drops gold texts that normalise to ``""`` and uses ``[""]`` as the only
  gold of a question with none left (an unanswerable question is answered correctly by ``""``).
* missing predictions: v1.1 counts them as 0 over *all* questions (``total`` counts every question); v2.0
  skips them (prints ``Missing prediction for <id>``) and divides by the number of predicted questions only.

Where the official scripts crash, these functions raise an exception with a message instead (same type where
it matters): an empty dataset or no predicted question (``ValueError``; the scripts divide by zero), a v1.1
question without answers (``ValueError``, as ``max()`` of nothing), a scored question without an ``na_probs``
entry (``KeyError``). One documented extension: with missing predictions, ``evaluate-v2.0.py`` raises
``KeyError`` while building the HasAns/NoAns breakdown; :func:`evaluate_v2` instead restricts each breakdown
to the predicted questions of that class (identical output whenever nothing is missing).

The ALBERT flow (:func:`evaluate_v2_albert`): predictions without a null threshold, ``na_probs`` = the answer
class *logits* (``null_odds.json``) with ``na_prob_thresh = 1.0`` applied to those logits, ``best_f1_thresh``
searched on the same dev set, then predictions re-made with ``null_score_diff_threshold = best_f1_thresh`` and
scored again: the reported v2 dev numbers use a threshold tuned on the dev set itself.

Only the standard library is used (the lowest import layer of the package).
"""

from __future__ import annotations

import collections
import copy
import re
import string
import sys
from collections.abc import Callable, Iterator, Mapping

__all__ = [
    "normalize_answer",
    "exact_match_score",
    "f1_score_v1",
    "f1_score_v2",
    "has_answer_map",
    "evaluate_v1",
    "evaluate_v2",
    "find_best_thresh",
    "find_all_best_thresh",
    "apply_no_ans_threshold",
    "make_eval_dict",
    "raw_scores_v2",
    "answerable_subset",
    "null_threshold_predictions",
    "evaluate_v2_albert",
]

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


# ----------------------------------------------------------------------------------------------------------
# Answer normalisation and per-pair scores
# ----------------------------------------------------------------------------------------------------------


def normalize_answer(text: str) -> str:
    """Lower-case, strip ASCII punctuation, replace articles by a space, collapse whitespace (official order)."""
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


def exact_match_score(prediction: str, gold: str) -> float:
    """1.0 when both normalise to the same string, else 0.0 (v1.1 and v2.0 agree)."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _token_f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    """Bag-of-tokens F1; precision over the prediction, as both official scripts compute it."""
    overlap = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    num_same = sum(overlap.values())
    if num_same == 0:
        return 0.0
    precision = 1.0 * num_same / len(pred_tokens)
    recall = 1.0 * num_same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def f1_score_v1(prediction: str, gold: str) -> float:
    """``evaluate-v1.1.py`` ``f1_score``: 0.0 when there is no common token (so also when both are empty)."""
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(gold).split())


def f1_score_v2(prediction: str, gold: str) -> float:
    """``evaluate-v2.0.py`` ``compute_f1``: when either side has no token, 1.0 if both have none, else 0.0."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    return _token_f1(pred_tokens, gold_tokens)


# ----------------------------------------------------------------------------------------------------------
# Dataset helpers
# ----------------------------------------------------------------------------------------------------------


def _questions(dataset: list[dict]) -> Iterator[dict]:
    """Every ``qa`` dict of the official ``data`` list, in file order."""
    for article in dataset:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def has_answer_map(dataset: list[dict]) -> dict[str, bool]:
    """``make_qid_to_has_ans``: question id -> whether its ``answers`` list is non-empty (file order)."""
    return {qa["id"]: bool(qa["answers"]) for qa in _questions(dataset)}


def answerable_subset(dataset: list[dict]) -> list[dict]:
    """A deep copy of ``dataset`` keeping only the questions with a non-empty ``answers`` list.

    For v1.1-style scoring (:func:`evaluate_v1`) of a v2.0 file. Articles and paragraphs are all kept (a
    paragraph may end with an empty ``qas`` list).
    """
    subset = []
    for article in dataset:
        new_article = {k: copy.deepcopy(v) for k, v in article.items() if k != "paragraphs"}
        new_article["paragraphs"] = []
        for paragraph in article["paragraphs"]:
            new_paragraph = {k: copy.deepcopy(v) for k, v in paragraph.items() if k != "qas"}
            new_paragraph["qas"] = [copy.deepcopy(qa) for qa in paragraph["qas"] if qa["answers"]]
            new_article["paragraphs"].append(new_paragraph)
        subset.append(new_article)
    return subset


# ----------------------------------------------------------------------------------------------------------
# SQuAD v1.1
# ----------------------------------------------------------------------------------------------------------


def evaluate_v1(dataset: list[dict], predictions: Mapping[str, str]) -> dict:
    """``evaluate-v1.1.py`` ``evaluate``: ``exact_match`` and ``f1`` in percent, max over the gold answers.

    A question without a prediction scores 0 and still counts in ``total`` (the script prints
    ``Unanswered question <id> will receive score 0.`` to stderr; so does this). Also returns ``total``
    (questions, duplicates included, as the script counts them) and ``missing`` (unpredicted ones).
    """
    exact_sum = f1_sum = 0.0
    total = missing = 0
    for qa in _questions(dataset):
        total += 1
        qid = qa["id"]
        if qid not in predictions:
            print(f"Unanswered question {qid} will receive score 0.", file=sys.stderr)
            missing += 1
            continue
        golds = [answer["text"] for answer in qa["answers"]]
        if not golds:
            raise ValueError(
                f"question {qid!r} has no gold answer; SQuAD v1.1 scoring needs one "
                "(score a v2.0 file with evaluate_v2, or its answerable_subset with evaluate_v1)"
            )
        prediction = predictions[qid]
        exact_sum += max(exact_match_score(prediction, gold) for gold in golds)
        f1_sum += max(f1_score_v1(prediction, gold) for gold in golds)
    if total == 0:
        raise ValueError("the dataset has no question to evaluate")
    return {
        "exact_match": 100.0 * exact_sum / total,
        "f1": 100.0 * f1_sum / total,
        "total": total,
        "missing": missing,
    }


# ----------------------------------------------------------------------------------------------------------
# SQuAD v2.0
# ----------------------------------------------------------------------------------------------------------


def raw_scores_v2(dataset: list[dict], predictions: Mapping[str, str]) -> tuple[dict[str, float], dict[str, float]]:
    """``get_raw_scores``: per-question exact and F1 (0/1 and [0, 1]), max over the v2.0 gold answers.

    Gold texts that normalise to ``""`` are dropped; a question left without gold has ``[""]``. Questions
    without a prediction are skipped (``Missing prediction for <id>`` on stdout, as the script).
    """
    exact_scores: dict[str, float] = {}
    f1_scores: dict[str, float] = {}
    for qa in _questions(dataset):
        qid = qa["id"]
        golds = [answer["text"] for answer in qa["answers"] if normalize_answer(answer["text"])]
        if not golds:
            golds = [""]
        if qid not in predictions:
            print(f"Missing prediction for {qid}")
            continue
        prediction = predictions[qid]
        exact_scores[qid] = max(exact_match_score(prediction, gold) for gold in golds)
        f1_scores[qid] = max(f1_score_v2(prediction, gold) for gold in golds)
    return exact_scores, f1_scores


def _na_prob(na_probs: Mapping[str, float], qid: str) -> float:
    try:
        return na_probs[qid]
    except KeyError:
        raise KeyError(f"no na_prob for question {qid!r}") from None


def apply_no_ans_threshold(
    scores: Mapping[str, float],
    na_probs: Mapping[str, float],
    has_ans: Mapping[str, bool],
    na_prob_thresh: float,
) -> dict[str, float]:
    """Questions with ``na_prob > na_prob_thresh`` (strict) are predicted unanswerable: their score becomes
    1.0 for a question without answer and 0.0 for one with; the others keep their score (same order)."""
    new_scores: dict[str, float] = {}
    for qid, score in scores.items():
        if _na_prob(na_probs, qid) > na_prob_thresh:
            new_scores[qid] = float(not has_ans[qid])
        else:
            new_scores[qid] = score
    return new_scores


def make_eval_dict(
    exact_scores: Mapping[str, float], f1_scores: Mapping[str, float], qid_list: list[str] | None = None
) -> dict:
    """``make_eval_dict``: ``exact``/``f1`` in percent and ``total``, over ``qid_list`` or (when it is
    ``None`` or empty, as the script) over every scored question."""
    if not qid_list:
        total = len(exact_scores)
        if total == 0:
            raise ValueError("no scored question (no prediction for any question of the dataset)")
        return {
            "exact": 100.0 * sum(exact_scores.values()) / total,
            "f1": 100.0 * sum(f1_scores.values()) / total,
            "total": total,
        }
    total = len(qid_list)
    return {
        "exact": 100.0 * sum(exact_scores[k] for k in qid_list) / total,
        "f1": 100.0 * sum(f1_scores[k] for k in qid_list) / total,
        "total": total,
    }


def find_best_thresh(
    predictions: Mapping[str, str],
    scores: Mapping[str, float],
    na_probs: Mapping[str, float],
    has_ans: Mapping[str, bool],
) -> tuple[float, float]:
    """The official threshold search: ``(best score in percent, best threshold)``.

    Starts from the score of predicting "no answer" everywhere (the number of unanswerable questions of
    ``has_ans``), walks the questions by increasing ``na_prob`` (``sorted``: stable, ties keep the order of
    ``na_probs``), skipping ids without a score, and adds the score for an answerable question, -1 for a
    non-empty prediction on an unanswerable one, 0 otherwise. Only a strict improvement moves the best, so
    of equal best scores the first (lowest) threshold is kept; the initial threshold is 0.0. The percentage
    is over ``len(scores)``.
    """
    if not scores:
        raise ValueError("no scored question for the threshold search")
    cur_score = sum(1 for qid in has_ans if not has_ans[qid])
    best_score = cur_score
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_ans[qid]:
            diff = scores[qid]
        elif predictions[qid]:
            diff = -1
        else:
            diff = 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def find_all_best_thresh(
    main_eval: dict,
    predictions: Mapping[str, str],
    exact_raw: Mapping[str, float],
    f1_raw: Mapping[str, float],
    na_probs: Mapping[str, float],
    has_ans: Mapping[str, bool],
) -> dict:
    """Adds ``best_exact``, ``best_exact_thresh``, ``best_f1``, ``best_f1_thresh`` to ``main_eval`` (returned)."""
    best_exact, exact_thresh = find_best_thresh(predictions, exact_raw, na_probs, has_ans)
    best_f1, f1_thresh = find_best_thresh(predictions, f1_raw, na_probs, has_ans)
    main_eval["best_exact"] = best_exact
    main_eval["best_exact_thresh"] = exact_thresh
    main_eval["best_f1"] = best_f1
    main_eval["best_f1_thresh"] = f1_thresh
    return main_eval


def evaluate_v2(
    dataset: list[dict],
    predictions: Mapping[str, str],
    na_probs: Mapping[str, float] | None = None,
    na_prob_thresh: float = 1.0,
) -> dict:
    """``evaluate-v2.0.py`` (``--na-prob-file`` = ``na_probs``, ``--na-prob-thresh`` = ``na_prob_thresh``).

    Keys, in the script's order: ``exact``, ``f1``, ``total``; ``HasAns_exact``/``_f1``/``_total`` when the
    dataset has answerable questions; ``NoAns_*`` when it has unanswerable ones; and, only when ``na_probs``
    is given, ``best_exact``, ``best_exact_thresh``, ``best_f1``, ``best_f1_thresh`` (searched on the raw,
    unthresholded scores). Without ``na_probs`` every prediction gets na_prob 0.0 (so a negative
    ``na_prob_thresh`` turns every answer into "no answer", as in the script). Percentages are over the
    predicted questions; see the module docstring for missing predictions.
    """
    has_ans = has_answer_map(dataset)
    probs = {qid: 0.0 for qid in predictions} if na_probs is None else na_probs
    exact_raw, f1_raw = raw_scores_v2(dataset, predictions)
    exact_thresh = apply_no_ans_threshold(exact_raw, probs, has_ans, na_prob_thresh)
    f1_thresh = apply_no_ans_threshold(f1_raw, probs, has_ans, na_prob_thresh)
    out_eval = make_eval_dict(exact_thresh, f1_thresh)
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [qid for qid, answerable in has_ans.items() if answerable == wanted and qid in exact_thresh]
        if qids:
            for key, value in make_eval_dict(exact_thresh, f1_thresh, qid_list=qids).items():
                out_eval[f"{prefix}_{key}"] = value
    if na_probs is not None:
        find_all_best_thresh(out_eval, predictions, exact_raw, f1_raw, na_probs, has_ans)
    return out_eval


# ----------------------------------------------------------------------------------------------------------
# The official ALBERT run_squad_v2.py flow
# ----------------------------------------------------------------------------------------------------------


def null_threshold_predictions(
    best_non_null: Mapping[str, str], null_odds: Mapping[str, float], threshold: float | None
) -> dict[str, str]:
    """ALBERT ``write_predictions_v2``'s final choice: the best non-null text when ``threshold is None`` or
    ``null_odds[qid] < threshold`` (strict), else ``""``."""
    return {qid: text if threshold is None or null_odds[qid] < threshold else "" for qid, text in best_non_null.items()}


def evaluate_v2_albert(
    dataset: list[dict],
    predict: Callable[[float | None], Mapping[str, str]],
    null_odds: Mapping[str, float],
    na_prob_thresh: float = 1.0,
) -> dict:
    """ALBERT ``squad_utils.evaluate_v2``: score, tune the null threshold on the same set, re-predict, re-score.

    ``predict(threshold)`` returns the predictions for a null-score threshold (``None``: never ``""``), e.g.
    ``lambda t: null_threshold_predictions(best_texts, null_odds, t)``; ``null_odds`` holds the answer-class
    logits (``null_odds.json``), used as ``na_probs`` with ``na_prob_thresh`` (1.0, applied to logits).
    Returns ``exact``, ``f1``, ``total`` of the second pass and ``null_score_diff_threshold`` (the first
    pass's ``best_f1_thresh``), as the official code reports them (no HasAns/NoAns breakdown).
    """
    has_ans = has_answer_map(dataset)
    first_preds = predict(None)
    exact_raw, f1_raw = raw_scores_v2(dataset, first_preds)
    first_eval = make_eval_dict(
        apply_no_ans_threshold(exact_raw, null_odds, has_ans, na_prob_thresh),
        apply_no_ans_threshold(f1_raw, null_odds, has_ans, na_prob_thresh),
    )
    find_all_best_thresh(first_eval, first_preds, exact_raw, f1_raw, null_odds, has_ans)
    threshold = first_eval["best_f1_thresh"]

    second_preds = predict(threshold)
    exact_raw, f1_raw = raw_scores_v2(dataset, second_preds)
    out_eval = make_eval_dict(
        apply_no_ans_threshold(exact_raw, null_odds, has_ans, na_prob_thresh),
        apply_no_ans_threshold(f1_raw, null_odds, has_ans, na_prob_thresh),
    )
    out_eval["null_score_diff_threshold"] = threshold
    return out_eval
