"""Statistics of written pretraining records, computed from the records alone (not from generator counters).

Used by the statistical tests and ``python -m albert_tf.data.pretraining.stats --records ... --mask_id 4``.

* ``mask_shares``: among real masked positions, the share whose input id is ``[MASK]``, the original id
  (``masked_lm_ids``) or something else (random word);
* ``label_1_share``: share of ``next_sentence_labels == 1``;
* ``short_share``: share of records with fewer than ``max_seq_length`` real tokens;
* ``run_lengths``: words are a ``token_boundary == 1`` position plus the following 0 positions; a word is fully
  masked when all of its pieces are masked positions; maximal runs of consecutive fully masked words, by length
  1 / 2 / 3 / >=4, as shares of all runs;
* ``budget``: how often the number of predictions equals / is below
  ``min(max_predictions_per_seq, max(1, round(n_real * masked_lm_prob)))``, and any excess (must be 0).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

import numpy as np

from albert_tf.data.tfrecord import TFRecordError, count_records

__all__ = ["majority_baselines", "record_shapes", "record_statistics"]


def record_statistics(paths: Sequence[str], mask_id: int, max_predictions_per_seq: int = 20,
                      masked_lm_prob: float = 0.15, limit: int | None = None) -> dict:
    from albert_tf.data.pretraining.records import parse_examples

    n = 0
    mask = orig = rand = 0
    label1 = 0
    short = 0
    runs = np.zeros(5, dtype=np.int64)  # index 1..3, 4 = >=4
    budget_equal = budget_below = budget_over = 0
    seq_len = None
    for ex in parse_examples(paths, limit):
        n += 1
        ids = np.asarray(ex["input_ids"])
        seq_len = len(ids)
        n_real = int(np.sum(ex["input_mask"]))
        if n_real < seq_len:
            short += 1
        label1 += int(ex["next_sentence_labels"][0])
        w = np.asarray(ex["masked_lm_weights"]) > 0
        pos = np.asarray(ex["masked_lm_positions"])[w]
        lab = np.asarray(ex["masked_lm_ids"])[w]
        cur = ids[pos]
        is_mask = cur == mask_id
        is_orig = (~is_mask) & (cur == lab)
        mask += int(is_mask.sum())
        orig += int(is_orig.sum())
        rand += int(len(pos) - is_mask.sum() - is_orig.sum())
        budget = min(max_predictions_per_seq, max(1, int(round(n_real * masked_lm_prob))))
        k = len(pos)
        budget_equal += k == budget
        budget_below += k < budget
        budget_over += k > budget
        # whole-word runs
        boundary = np.asarray(ex["token_boundary"])[:n_real]
        masked = np.zeros(n_real, dtype=bool)
        masked[pos] = True
        starts = np.flatnonzero(boundary == 1)
        if len(starts) == 0 or starts[0] != 0:
            starts = np.concatenate([[0], starts])
        word_id = np.cumsum(np.isin(np.arange(n_real), starts)) - 1
        n_words = len(starts)
        unmasked_count = np.bincount(word_id, weights=~masked, minlength=n_words)
        full = unmasked_count == 0
        run = 0
        for f in full.tolist() + [False]:
            if f:
                run += 1
            elif run:
                runs[min(run, 4)] += 1
                run = 0
    total_masked = max(mask + orig + rand, 1)
    total_runs = max(int(runs[1:].sum()), 1)
    return {
        "records": n,
        "max_seq_length": seq_len,
        "masked_positions": mask + orig + rand,
        "mask_shares": {"mask": mask / total_masked, "original": orig / total_masked, "random": rand / total_masked},
        "label_1_share": label1 / max(n, 1),
        "short_share": short / max(n, 1),
        "run_lengths": {"1": float(runs[1] / total_runs), "2": float(runs[2] / total_runs),
                        "3": float(runs[3] / total_runs), ">=4": float(runs[4] / total_runs),
                        "runs": int(runs[1:].sum())},
        "budget": {"equal": budget_equal, "below": budget_below, "over": budget_over},
    }


def record_shapes(path: str) -> tuple[int, int]:
    """(max_seq_length, max_predictions_per_seq) of the first record of a pretraining TFRecord file."""
    from albert_tf.data.pretraining.records import parse_examples

    first = next(iter(parse_examples([path], 1)))
    return len(first["input_ids"]), len(first["masked_lm_positions"])


def majority_baselines(train_files: list[str], eval_files: list[str], limit: int = 20000) -> dict:
    """Held-out accuracy of always predicting the training records' most frequent masked token / SOP label.

    The official data's random-document negatives make label 1 more frequent than label 0 when a corpus
    has few, long documents, so SOP "chance" is this majority rate, not 0.5.
    """
    import collections

    from albert_tf.data.pretraining.records import parse_examples

    def masked(ex):
        return [i for i, w in zip(ex["masked_lm_ids"], ex["masked_lm_weights"]) if w > 0]

    train_ids, train_labels = collections.Counter(), collections.Counter()
    for ex in parse_examples(train_files, limit):
        train_ids.update(masked(ex))
        train_labels[ex["next_sentence_labels"][0]] += 1
    top_id, top_label = train_ids.most_common(1)[0][0], train_labels.most_common(1)[0][0]
    hits = total = label_hits = count = 0
    for ex in parse_examples(eval_files):
        ids = masked(ex)
        hits += sum(1 for i in ids if i == top_id)
        total += len(ids)
        label_hits += int(ex["next_sentence_labels"][0] == top_label)
        count += 1
    return {
        "masked_lm_accuracy_majority_token": round(hits / max(1, total), 4),
        "sentence_order_accuracy_majority_label": round(label_hits / max(1, count), 4),
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", required=True, help="comma-separated TFRecord files")
    p.add_argument("--mask_id", type=int, default=4)
    p.add_argument("--max_predictions_per_seq", type=int, default=20)
    p.add_argument("--masked_lm_prob", type=float, default=0.15)
    p.add_argument("--limit", type=int, default=None)
    a = p.parse_args(argv)
    files = [f for f in a.records.split(",") if f]
    try:  # every file whole before TensorFlow reads any: a missing, cut or foreign file is one line, exit 2
        for path in files:
            if not os.path.isfile(path):
                raise TFRecordError(f"{path}: no such file")
            if count_records(path) == 0:
                raise TFRecordError(f"{path}: holds no records")
    except (TFRecordError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    stats = record_statistics(files, a.mask_id, a.max_predictions_per_seq, a.masked_lm_prob, a.limit)
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()

