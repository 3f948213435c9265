"""GLUE metrics over a whole evaluation set (numpy; no scikit-learn/scipy at run time).

Every function takes label and prediction arrays of the same length and returns a Python float.
Degenerate inputs have a defined value instead of a NaN or a warning, because the runner
compares these numbers to pick the best checkpoint and writes them to JSON:

* empty input: every metric raises ``ValueError`` (there is nothing to evaluate).
* ``matthews_corrcoef``: 0.0 when the denominator is 0, i.e. when the labels or the
  predictions contain only one class (scikit-learn returns 0.0 too).
* ``f1``: 0.0 when precision + recall is 0 or undefined (no predicted and no true positives),
  scikit-learn's ``zero_division=0``.
* ``pearson`` / ``spearman``: 0.0 when either side is constant (the correlation is undefined;
  scipy returns NaN). A model that predicts one constant score has no measurable association.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# The official best-checkpoint keys (official ``classifier_utils.py``): MCC for CoLA, Pearson for STS-B, accuracy
# otherwise.
KEY_METRICS = {"cola": "matthews_corr", "sts-b": "pearson"}


def _pair(labels: Sequence, preds: Sequence) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(labels).reshape(-1)
    p = np.asarray(preds).reshape(-1)
    if y.shape != p.shape:
        raise ValueError(f"{y.size} labels but {p.size} predictions")
    if y.size == 0:
        raise ValueError("no examples to evaluate")
    return y, p


def accuracy(labels: Sequence, preds: Sequence) -> float:
    """Fraction of exact matches."""
    y, p = _pair(labels, preds)
    return float(np.mean(y == p))


def matthews_corrcoef(labels: Sequence, preds: Sequence) -> float:
    """Matthews correlation (Gorodkin's multi-class form; the binary phi coefficient for 2 classes)."""
    y, p = _pair(labels, preds)
    classes, inv = np.unique(np.concatenate([y, p]), return_inverse=True)
    yi, pi = inv[: y.size], inv[y.size :]
    k = classes.size
    confusion = np.zeros((k, k), dtype=np.float64)
    np.add.at(confusion, (yi, pi), 1.0)
    t = confusion.sum(axis=1)  # true count per class
    q = confusion.sum(axis=0)  # predicted count per class
    c = np.trace(confusion)
    s = confusion.sum()
    cov_yp = c * s - np.dot(t, q)
    cov_yy = s * s - np.dot(t, t)
    cov_pp = s * s - np.dot(q, q)
    denom = np.sqrt(cov_yy * cov_pp)
    return 0.0 if denom == 0 else float(cov_yp / denom)


def f1(labels: Sequence, preds: Sequence, positive: int | str = 1) -> float:
    """Binary F1 of the ``positive`` class."""
    y, p = _pair(labels, preds)
    tp = float(np.sum((y == positive) & (p == positive)))
    fp = float(np.sum((y != positive) & (p == positive)))
    fn = float(np.sum((y == positive) & (p != positive)))
    denom = 2 * tp + fp + fn
    return 0.0 if denom == 0 else 2 * tp / denom


def pearson(labels: Sequence, preds: Sequence) -> float:
    """Pearson correlation coefficient (float64)."""
    y, p = _pair(labels, preds)
    y = y.astype(np.float64) - y.mean(dtype=np.float64)
    p = p.astype(np.float64) - p.mean(dtype=np.float64)
    denom = np.sqrt(np.dot(y, y) * np.dot(p, p))
    return 0.0 if denom == 0 else float(np.clip(np.dot(y, p) / denom, -1.0, 1.0))


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing their average rank (scipy's rankdata 'average')."""
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    boundaries = np.concatenate([[True], sorted_x[1:] != sorted_x[:-1], [True]])
    starts = np.flatnonzero(boundaries)
    ranks_sorted = np.empty(x.size, dtype=np.float64)
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        ranks_sorted[a:b] = (a + 1 + b) / 2.0
    ranks = np.empty_like(ranks_sorted)
    ranks[order] = ranks_sorted
    return ranks


def spearman(labels: Sequence, preds: Sequence) -> float:
    """Spearman rank correlation: Pearson of average ranks."""
    y, p = _pair(labels, preds)
    return pearson(_average_ranks(y.astype(np.float64)), _average_ranks(p.astype(np.float64)))


def mse(labels: Sequence, preds: Sequence) -> float:
    y, p = _pair(labels, preds)
    return float(np.mean((y.astype(np.float64) - p.astype(np.float64)) ** 2))


def key_metric(task_name: str) -> str:
    """The metric the official runner keeps the best checkpoint by."""
    return KEY_METRICS.get(task_name.lower(), "accuracy")


def glue_metrics(task_name: str, labels: Sequence, predictions: Sequence) -> dict[str, float]:
    """Every metric reported for ``task_name``.

    ``predictions`` are class ids for classification (argmax of the logits) and scores for
    STS-B. Classification tasks report accuracy (the official number); CoLA adds MCC; MRPC
    and QQP add F1 of class "1" (GLUE's leaderboard reports F1/accuracy; the official ALBERT
    runner reported accuracy only). STS-B reports Pearson, Spearman and MSE.
    """
    task = task_name.lower()
    if task == "sts-b":
        return {
            "pearson": pearson(labels, predictions),
            "spearman": spearman(labels, predictions),
            "mse": mse(labels, predictions),
        }
    out = {"accuracy": accuracy(labels, predictions)}
    if task == "cola":
        out["matthews_corr"] = matthews_corrcoef(labels, predictions)
    if task in ("mrpc", "qqp"):
        out["f1"] = f1(labels, predictions, positive=1)
    return out
