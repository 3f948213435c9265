"""GLUE submission files: test-set predictions as the ``<TASK>.tsv`` files the GLUE server takes.

A header, then one ``index\\tprediction`` row per test example in file order (the index is the example's
guid); classification predictions as label strings, STS-B scores clipped to [0, 5]. Written atomically
(temporary name, then rename) through ``tf.io.gfile``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from albert_tf import files as _fs
from albert_tf.data.glue.tsv import GlueProcessor, InputExample


def submission_rows(
    processor: GlueProcessor, examples: Sequence[InputExample], predictions: np.ndarray
) -> list[tuple[str, str]]:
    """(index, prediction) rows of a GLUE submission file.

    Classification: ``predictions`` are class probabilities/logits [N, C] or class ids [N];
    written as label strings. Regression (STS-B): scores clipped to [0, 5], ``%.3f``.
    """
    preds = np.asarray(predictions)
    if len(preds) != len(examples):
        raise ValueError(f"{len(preds)} predictions for {len(examples)} examples")
    rows = []
    for ex, p in zip(examples, preds, strict=True):
        if processor.is_regression:
            value = float(np.clip(np.reshape(p, -1)[0], 0.0, 5.0))
            rows.append((ex.guid, f"{value:.3f}"))
        else:
            cls = int(np.argmax(p)) if np.ndim(p) > 0 else int(p)
            rows.append((ex.guid, processor.labels[cls]))
    return rows


def write_submission(path: str, rows: Sequence[tuple[str, str]]) -> None:
    """``index\\tprediction`` header, then one row per test example.

    UTF-8, ``\\n`` line ends; written to ``path + '.tmp'`` and renamed when complete (``tf.io.gfile``, so
    ``path`` may be ``gs://...``).
    """
    lines = ["index\tprediction", *(f"{guid}\t{pred}" for guid, pred in rows)]
    _fs.write_text_atomic(path, "\n".join(lines) + "\n")
