"""A tagged sentence as the model sees it: its words' pieces in windows of ``max_seq_length``, no word dropped.

Each word is tokenized on its own (SentencePiece marks it as a word start, as in running text), so each piece
belongs to one word. A word's label goes on its first piece; the other pieces get ``IGNORE`` (no loss, no
prediction), or with ``label_all_pieces`` the label continued (``B-X`` -> ``I-X``). A word that tokenizes to no piece
(a character the normalisation removes) gets the unknown piece, so it keeps a position and a prediction.

A window is ``[CLS] pieces [SEP]``, at most ``max_seq_length`` long. A sentence whose pieces do not fit is split into
overlapping windows that start ``stride`` pieces apart (the last one ends with the sentence), so every piece stands
in at least one window. A word standing in several windows is scored from the one where it has the most context
(the official SQuAD ``_check_is_max_context`` score, ``min(left, right) + 0.01 * window length``, earlier window on a
tie); training learns every first piece of every window. Plain Python: no TensorFlow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

#: The label id of a position that has no label: padding, [CLS], [SEP], a word's later pieces.
IGNORE = -1


@dataclasses.dataclass(frozen=True)
class TaggingWindow:
    """One model row of a sentence.

    * ``input_ids``: ``[CLS] pieces [SEP]`` (no padding);
    * ``label_ids``: the label of each position (``IGNORE`` where none; None for a sentence without tags);
    * ``word_index``: for each position, the word (index in the sentence) scored from it here, else -1: each word
      of the sentence appears in exactly one window of the sentence;
    * ``start``: the window's first piece, as an index among the sentence's pieces.
    """

    input_ids: tuple[int, ...]
    label_ids: tuple[int, ...] | None
    word_index: tuple[int, ...]
    start: int


def word_pieces(tokenizer: Any, words: Sequence[str]) -> list[list[str]]:
    """The pieces of each word (at least one: the unknown piece for a word that tokenizes to none)."""
    unknown = tokenizer.special_tokens["unk"]
    return [tokenizer.tokenize(word) or [unknown] for word in words]


def _max_context(starts: Sequence[int], length: int, position: int) -> int:
    """The window (by start) where piece ``position`` has the most context; windows hold ``length`` pieces."""
    best, best_score = -1, -1.0
    for index, start in enumerate(starts):
        if start <= position < start + length:
            score = min(position - start, start + length - 1 - position) + 0.01 * length
            if score > best_score:
                best, best_score = index, score
    return best


def sentence_windows(tokenizer: Any, words: Sequence[str], labels: Sequence[int] | None, max_seq_length: int,
                     stride: int | None = None, label_all_pieces: bool = False,
                     continuation: Sequence[int] | None = None) -> list[TaggingWindow]:
    """The windows of one sentence (module docstring). ``labels``: one label id per word (None at prediction);
    ``stride``: pieces between window starts (default: half a window); ``continuation``: with ``label_all_pieces``,
    the label id a later piece of a word labelled ``i`` gets (``I-X`` for ``B-X``; default the same id)."""
    capacity = max_seq_length - 2
    if capacity < 1:
        raise ValueError(f"max_seq_length {max_seq_length} leaves no room for a word beside [CLS] and [SEP]")
    stride = max(1, min(stride or capacity // 2 or 1, capacity))
    pieces: list[str] = []
    owner: list[int] = []  # the word of each piece
    first: list[bool] = []
    for index, word in enumerate(word_pieces(tokenizer, words)):
        pieces.extend(word)
        owner.extend([index] * len(word))
        first.extend([True] + [False] * (len(word) - 1))
    ids = tokenizer.convert_tokens_to_ids(pieces)
    starts = list(range(0, max(len(pieces) - capacity, 0), stride)) + [max(len(pieces) - capacity, 0)]
    length = min(capacity, len(pieces))
    scored = {p: _max_context(starts, length, p) for p in range(len(pieces)) if first[p]}
    windows = []
    for number, start in enumerate(starts):
        span = range(start, start + length)
        label_ids = None
        if labels is not None:
            label_ids = [IGNORE]
            for p in span:
                if first[p]:
                    label_ids.append(labels[owner[p]])
                elif label_all_pieces:
                    label = labels[owner[p]]
                    label_ids.append(continuation[label] if continuation is not None and label >= 0 else label)
                else:
                    label_ids.append(IGNORE)
            label_ids = tuple([*label_ids, IGNORE])
        word_index = (-1, *(owner[p] if first[p] and scored[p] == number else -1 for p in span), -1)
        windows.append(TaggingWindow((tokenizer.cls_id, *ids[start:start + length], tokenizer.sep_id), label_ids,
                                     word_index, start))
    return windows
