"""A tagged sentence as the model sees it: its words' pieces in windows of ``max_seq_length``, no word dropped.

Each word is tokenized on its own (SentencePiece marks it as a word start, as in running text), so each piece
belongs to one word. A word's label goes on its first piece; the other pieces get ``IGNORE`` (no loss, no
prediction), or with ``label_all_pieces`` the label continued (``B-X`` -> ``I-X``). A word that tokenizes to no piece
(a character the normalisation removes) gets the unknown piece, so it keeps a position and a prediction.

A window is ``[CLS] pieces [SEP]``, at most ``max_seq_length`` long. A sentence whose pieces do not fit is split into
overlapping windows that start ``stride`` pieces apart (the last one ends with the sentence), so every piece stands
in at least one window. A word standing in several windows is scored from the one where it has the most context
(the official SQuAD ``_check_is_max_context`` score, ``min(left, right) + 0.01 * window length``, earlier window on a
tie); training learns every first piece of every window. :func:`window_arrays` pads windows into model inputs and
:func:`word_tags` maps the predictions of windows back to their sentences' words. Plain Python and numpy: no
TensorFlow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

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


def window_stride(max_seq_length: int, stride: int | None) -> int:
    """Pieces between the starts of a long sentence's windows: ``stride``, or half a window when it is 0 / None,
    within ``[1, max_seq_length - 2]`` (the pieces a window holds beside ``[CLS]`` and ``[SEP]``)."""
    capacity = max_seq_length - 2
    return max(1, min(stride or capacity // 2 or 1, capacity))


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
    stride = window_stride(max_seq_length, stride)
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


def window_arrays(windows: Sequence[TaggingWindow], max_seq_length: int) -> dict[str, np.ndarray]:
    """``windows`` as model inputs, one row each, padded to ``max_seq_length``: int32 ``input_ids``, ``input_mask``,
    ``segment_ids`` (all 0: one segment) and ``label_ids`` (``IGNORE`` where there is no label, padding included)."""
    shape = (len(windows), max_seq_length)
    out = {name: np.zeros(shape, np.int32) for name in ("input_ids", "input_mask", "segment_ids")}
    out["label_ids"] = np.full(shape, IGNORE, np.int32)
    for row, window in enumerate(windows):
        n = len(window.input_ids)
        out["input_ids"][row, :n] = window.input_ids
        out["input_mask"][row, :n] = 1
        if window.label_ids is not None:
            out["label_ids"][row, :n] = window.label_ids
    return out


def word_tags(windows: Sequence[Sequence[TaggingWindow]], lengths: Sequence[int], predictions: Any,
              labels: Sequence[str]) -> list[list[str]]:
    """Each sentence's tag per word from the label ids ``predictions`` [rows, positions] of its windows: ``windows``
    holds each sentence's windows and ``lengths`` its word count, the rows follow the windows in that order, and each
    word takes the label at the position that scores it (``TaggingWindow.word_index``). With fewer rows than
    windows, the sentences whose windows they all hold. A word no window scores is a ``RuntimeError``."""
    out: list[list[str]] = []
    row = 0
    for number, (sentence, length) in enumerate(zip(windows, lengths)):
        if row + len(sentence) > len(predictions):
            break
        tags: list[str | None] = [None] * length
        for window in sentence:
            for position, word in enumerate(window.word_index):
                if word >= 0:
                    tags[word] = labels[int(predictions[row][position])]
            row += 1
        if None in tags:
            raise RuntimeError(f"sentence {number}: word {tags.index(None)} has no prediction")
        out.append(tags)
    return out
