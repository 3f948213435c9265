"""SQuAD post-processing (official ``squad_utils.py: write_predictions``): per-window model outputs -> one answer text
per question.

The official ``accumulate_predictions_v{1,2}`` / ``write_predictions_v{1,2}`` of ``squad_utils.py``, restated on
plain inputs so that the runner, the span-upper-bound diagnostic and the tests share one implementation:

* ``examples``: objects with ``qas_id`` and ``paragraph_text`` (``albert_tf.data.squad.SquadExample``);
* ``features``: objects with ``unique_id``, ``example_index``, ``doc_offset`` (position of the first document token),
  ``tok_start_to_orig_index``, ``tok_end_to_orig_index`` and ``token_is_max_context`` (keyed by position);
* ``outputs``: ``{unique_id: {name: array}}`` with the model's per-window outputs: v1 ``start_logits`` and
  ``end_logits`` [S]; v2 ``start_top_log_probs``/``start_top_index`` [k1], ``end_top_log_probs``/``end_top_index``
  [k1*k2] and ``cls_logits`` (a scalar).

Candidates keep the official filters: the start inside the document part of the window and at a position where the
window has the maximal context, the end inside the document, ``end >= start`` and at most ``max_answer_length``
tokens. The text is cut from the *original* paragraph (``paragraph[tok_start_to_orig[s] : tok_end_to_orig[e] + 1]``,
stripped), so normalisation by the tokenizer never leaks into answers; duplicate texts are dropped and the n-best
list gets softmax probabilities. v1 answers "empty" when no candidate survives (official); v2 then answers "".

v2 null score (official ``squad_utils.py``): the **minimum over the question's windows** of ``cls_logits`` (the
answer-class logit;
high = unanswerable), written as ``null_odds.json``; the answer is the best non-null text when ``score <
threshold`` (or with no threshold), else "". A question whose paragraph failed the alignment has no window: v1
answers "empty", v2 answers "" with the official null score 1e6.

Questions with some windows missing from ``outputs`` (an evaluation cut short by ``--max_eval_steps``) are left
out of the result rather than answered from part of their windows.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from albert_tf.evaluation.squad_metrics import null_threshold_predictions

V1_EMPTY = "empty"  # the official v1 nonce answer when no span survives the filters
V2_NO_WINDOW_NULL_SCORE = 1000000.0  # the official initial ``score_null`` (kept when a question has no window)


@dataclasses.dataclass
class SquadPredictions:
    """The answers of a set of questions, before any no-answer threshold.

    ``best_text``: the best non-null answer of each question (the v1 prediction); ``nbest``: the official
    n-best lists; ``null_scores`` (v2 only): each question's null score (min over windows of ``cls_logits``).
    """

    best_text: dict[str, str]
    nbest: dict[str, list[dict[str, Any]]]
    null_scores: dict[str, float] | None = None

    def answers(self, null_threshold: float | None = None) -> dict[str, str]:
        """``predictions.json``: v2 answers "" where ``null score >= null_threshold`` (None: never)."""
        if self.null_scores is None:
            return dict(self.best_text)
        return dict(null_threshold_predictions(self.best_text, self.null_scores, null_threshold))


def best_indexes(logits: Sequence[float], n_best_size: int) -> list[int]:
    """The official ``_get_best_indexes``: positions of the ``n_best_size`` largest logits (ties: lower index)."""
    order = np.argsort(-np.asarray(logits, dtype=np.float64), kind="stable")
    return [int(i) for i in order[:n_best_size]]


def softmax(scores: Sequence[float]) -> list[float]:
    """The official ``_compute_softmax`` (max-subtracted, plain Python floats)."""
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def _valid(feature: Any, start: int, end: int, max_answer_length: int, start_in_doc: bool) -> bool:
    """The official span filters (v2 adds ``start_in_doc``: v1 relies on ``token_is_max_context`` for it)."""
    offset = feature.doc_offset
    if start - offset >= len(feature.tok_start_to_orig_index) or (start_in_doc and start - offset < 0):
        return False
    if end - offset >= len(feature.tok_end_to_orig_index):
        return False
    if not is_max_context(feature, start):
        return False
    if end < start:
        return False
    return end - start + 1 <= max_answer_length


def is_max_context(feature: Any, position: int) -> bool:
    """Whether ``position`` (in the window's ``input_ids``) has its maximal context in this window."""
    table = feature.token_is_max_context
    value = table.get(position)
    if value is None:  # a table read back from JSON has string keys
        value = table.get(str(position), False)
    return bool(value)


def v1_window_candidates(
    feature: Any, output: Mapping[str, Any], n_best_size: int, max_answer_length: int
) -> list[tuple[int, int, float, float]]:
    """(start, end in document tokens, start logit, end logit) of one window (``accumulate_predictions_v1``)."""
    start_logits, end_logits = output["start_logits"], output["end_logits"]
    out = []
    for start in best_indexes(start_logits, n_best_size):
        for end in best_indexes(end_logits, n_best_size):
            if _valid(feature, start, end, max_answer_length, start_in_doc=False):
                offset = feature.doc_offset
                out.append((start - offset, end - offset, float(start_logits[start]), float(end_logits[end])))
    return out


def v2_window_candidates(
    feature: Any, output: Mapping[str, Any], start_n_top: int, end_n_top: int, max_answer_length: int
) -> list[tuple[int, int, float, float]]:
    """(start, end in document tokens, start log-prob, end log-prob) of one window's beam
    (``accumulate_predictions_v2``: entry ``i * end_n_top + j`` of the end beam belongs to start ``i``)."""
    out = []
    for i in range(start_n_top):
        start = int(output["start_top_index"][i])
        start_log_prob = float(output["start_top_log_probs"][i])
        for j in range(end_n_top):
            k = i * end_n_top + j
            end = int(output["end_top_index"][k])
            if _valid(feature, start, end, max_answer_length, start_in_doc=True):
                offset = feature.doc_offset
                out.append((start - offset, end - offset, start_log_prob, float(output["end_top_log_probs"][k])))
    return out


def _nbest(example: Any, windows: list[tuple[Any, list]], n_best_size: int) -> list[dict[str, Any]]:
    """Merge the windows' candidates (duplicates averaged, official), sort by total score, recover and dedupe texts."""
    prelim = []
    for window_index, (_, candidates) in enumerate(windows):
        grouped: dict[tuple[int, int], list[tuple[float, float]]] = collections.defaultdict(list)
        for start, end, s, e in candidates:
            grouped[(start, end)].append((s, e))
        for (start, end), scores in grouped.items():
            s = sum(x[0] for x in scores) / len(scores)
            e = sum(x[1] for x in scores) / len(scores)
            prelim.append((s + e, window_index, start, end, s, e))
    prelim.sort(key=lambda p: p[0], reverse=True)  # stable: ties keep window and beam order
    seen: set[str] = set()
    nbest = []
    for _, window_index, start, end, s, e in prelim:
        if len(nbest) >= n_best_size:
            break
        feature = windows[window_index][0]
        begin = feature.tok_start_to_orig_index[start]
        finish = feature.tok_end_to_orig_index[end]
        text = example.paragraph_text[begin : finish + 1].strip()
        if text in seen:
            continue
        seen.add(text)
        nbest.append({"text": text, "start_log_prob": s, "end_log_prob": e})
    return nbest


def _with_probabilities(nbest: list[dict[str, Any]]) -> list[dict[str, Any]]:
    probs = softmax([n["start_log_prob"] + n["end_log_prob"] for n in nbest])
    return [
        {"text": n["text"], "probability": p, "start_log_prob": n["start_log_prob"], "end_log_prob": n["end_log_prob"]}
        for n, p in zip(nbest, probs)
    ]


def _windows_by_example(features: Sequence[Any]) -> dict[int, list[Any]]:
    by_example: dict[int, list[Any]] = collections.defaultdict(list)
    for feature in features:
        by_example[feature.example_index].append(feature)
    return by_example


def postprocess(
    examples: Sequence[Any],
    features: Sequence[Any],
    outputs: Mapping[int, Mapping[str, Any]],
    *,
    version_2_with_negative: bool,
    n_best_size: int = 20,
    max_answer_length: int = 30,
    start_n_top: int = 5,
    end_n_top: int = 5,
) -> SquadPredictions:
    """Answers, n-best lists and (v2) null scores of every question whose windows all have outputs."""
    by_example = _windows_by_example(features)
    best_text: dict[str, str] = {}
    nbests: dict[str, list[dict[str, Any]]] = {}
    null_scores: dict[str, float] | None = {} if version_2_with_negative else None
    for index, example in enumerate(examples):
        windows = by_example.get(index, [])
        if any(w.unique_id not in outputs for w in windows):
            continue
        if version_2_with_negative:
            candidates = [
                (w, v2_window_candidates(w, outputs[w.unique_id], start_n_top, end_n_top, max_answer_length))
                for w in windows
            ]
            null = min((float(outputs[w.unique_id]["cls_logits"]) for w in windows), default=V2_NO_WINDOW_NULL_SCORE)
            null_scores[example.qas_id] = min(null, V2_NO_WINDOW_NULL_SCORE)
            fallback = {"text": "", "start_log_prob": -1e6, "end_log_prob": -1e6}
        else:
            candidates = [
                (w, v1_window_candidates(w, outputs[w.unique_id], n_best_size, max_answer_length)) for w in windows
            ]
            fallback = {"text": V1_EMPTY, "start_log_prob": 0.0, "end_log_prob": 0.0}
        nbest = _nbest(example, candidates, n_best_size) or [fallback]
        nbests[example.qas_id] = _with_probabilities(nbest)
        best_text[example.qas_id] = nbest[0]["text"]
    return SquadPredictions(best_text, nbests, null_scores)
