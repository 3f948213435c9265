"""Entity-level scores as the CoNLL evaluation script ``conlleval`` computes them, and its input layout.

An entity counts as found only with the exact words and type of a gold entity (:func:`~albert_tf.data.tagging.
entity_spans` reads the entities of both sequences the way ``conlleval`` reads chunks). Precision is found / predicted
entities, recall found / gold entities, F1 their harmonic mean, overall and per type; token accuracy is the share of
words whose predicted tag equals the gold tag (``conlleval``'s "accuracy"). Scores are fractions (``conlleval``
prints percentages).
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

from albert_tf.data.tagging import entity_spans


def _prf(found: int, predicted: int, gold: int) -> dict[str, float]:
    precision = found / predicted if predicted else 0.0
    recall = found / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def score(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict[str, Any]:
    """``{"precision", "recall", "f1", "accuracy", "entities": gold count, "predicted": count, "per_type": {type:
    {"precision", "recall", "f1", "entities", "predicted"}}}`` of the predicted tag sequences against the gold ones
    (one sequence per sentence, the same lengths)."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences, {len(predicted)} predicted")
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    words = correct = 0
    for index, (gold_tags, predicted_tags) in enumerate(zip(gold, predicted)):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(f"sentence {index}: {len(gold_tags)} gold tags, {len(predicted_tags)} predicted")
        words += len(gold_tags)
        correct += sum(g == p for g, p in zip(gold_tags, predicted_tags))
        gold_spans = set(entity_spans(gold_tags))
        predicted_spans = set(entity_spans(predicted_tags))
        for kind, _, _ in gold_spans:
            counts[kind]["gold"] += 1
        for span in predicted_spans:
            counts[span[0]]["predicted"] += 1
            counts[span[0]]["found"] += span in gold_spans
    total = collections.Counter()
    for counter in counts.values():
        total.update(counter)
    return {
        **_prf(total["found"], total["predicted"], total["gold"]),
        "accuracy": correct / words if words else 0.0,
        "entities": total["gold"],
        "predicted": total["predicted"],
        "per_type": {kind: {**_prf(c["found"], c["predicted"], c["gold"]), "entities": c["gold"],
                            "predicted": c["predicted"]} for kind, c in sorted(counts.items())},
    }


def conlleval_lines(words: Sequence[Sequence[str]], gold: Sequence[Sequence[str]],
                    predicted: Sequence[Sequence[str]]) -> list[str]:
    """The ``conlleval`` input: one ``word gold predicted`` line per word (white space inside a word replaced by
    ``_``, since the script splits columns on it), an empty line after each sentence."""
    lines: list[str] = []
    for sentence_words, gold_tags, predicted_tags in zip(words, gold, predicted):
        for word, g, p in zip(sentence_words, gold_tags, predicted_tags):
            lines.append(f"{'_'.join(word.split()) or '_'} {g} {p}")
        lines.append("")
    return lines
