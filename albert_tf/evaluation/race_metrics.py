"""RACE accuracy, overall and per difficulty level in one pass (the official runner needed one run per level).

The official ``run_race.py`` reports ``eval_accuracy`` over whatever ``--middle_only`` / ``--high_only`` selected,
so the paper's middle/high/all table took three runs. Here one evaluation of the combined dev set gives all three:
``accuracy`` (all questions), ``accuracy_middle`` and ``accuracy_high`` with their question counts. Questions without
a label (the test split as released without answers) are not scored.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LEVELS = ("middle", "high")
LETTERS = "ABCD"


def race_accuracy(logits: np.ndarray, labels: np.ndarray, levels: Sequence[str]) -> dict[str, float | int]:
    """Accuracy of the argmax choice overall and per level; labels < 0 (unlabelled) are left out."""
    logits = np.asarray(logits)
    labels = np.asarray(labels).reshape(-1)
    if len(logits) != len(labels) or len(labels) != len(levels):
        raise ValueError(f"{len(logits)} rows of logits, {len(labels)} labels and {len(levels)} levels")
    levels = np.asarray(levels)
    hits = np.argmax(logits, axis=-1) == labels
    labelled = labels >= 0
    out: dict[str, float | int] = {"num_questions": int(labelled.sum())}
    out["accuracy"] = float(hits[labelled].mean()) if labelled.any() else 0.0
    for level in LEVELS:
        chosen = labelled & (levels == level)
        out[f"num_{level}"] = int(chosen.sum())
        if chosen.any():
            out[f"accuracy_{level}"] = float(hits[chosen].mean())
    return out
