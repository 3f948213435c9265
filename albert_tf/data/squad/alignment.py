"""Paragraph characters <-> SentencePiece pieces: the XLNet-style alignment of the official SQuAD code (official
``squad_utils.py``).

The pieces of the pre-processed paragraph are concatenated with "▁" turned into a space (``tok_cat_text``) and
aligned with the *original* paragraph by a banded longest-common-subsequence DP. A paragraph character matches a
piece character when ``preprocess_text(char, lower, remove_space=False) == piece_char``. The band is
``max_dist = |n - m| + 5`` (column ``j`` runs over ``[i - max_dist, i + max_dist)``, cells outside it are 0); if
the score at ``(n-1, m-1)`` is not above ``0.8 n`` the DP runs once more with the band doubled. The backtrack
gives ``orig_to_chartok_index`` / ``chartok_to_orig_index``; no aligned character or a score below ``0.8 n`` is
the official "MISMATCH DETECTED!" (the question gets no features). :func:`convert_index` is the official
``_convert_index`` that fills the gaps of those maps.

Same results as the official ``convert_examples_to_features``, computed differently:

* the official fills a dense ``n x m`` float matrix (at least 1024 x 1024) and a dict of back-pointers per
  *question*; here only the band is stored (one row of scores, one byte of back-pointer per band cell) and each
  distinct paragraph is aligned once (:class:`AlignmentCache`), since all questions of a paragraph share it;
* tie-breaking is the official order: "up" (``f[i-1, j]``, not in row 0), replaced by "left" only when strictly
  greater, replaced by "diagonal" (a match) only when strictly greater;
* the official Python 3 code counts piece lengths in UTF-8 *bytes* for ``chartok_to_tok_index`` and
  ``tok_{start,end}_to_chartok_index`` but aligns *characters*, so in a paragraph with a non-ASCII piece
  ("–", "—", "×", "π" ...) every later token's map drifts by the extra bytes. Here every index counts characters
  (what the algorithm means, and what the official gives on ASCII paragraphs, bit for bit).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from albert_tf.tokenization.sentencepiece_tokenizer import SPIECE_UNDERLINE

__all__ = ["AlignmentCache", "ParagraphAlignment", "align_paragraph", "convert_index", "lcs_align"]

_UNSET, _UP, _LEFT, _DIAG = 3, 0, 1, 2


def convert_index(index: Sequence[int | None], pos: int, m: int | None = None, is_start: bool = True) -> int:
    """The official ``_convert_index``: ``index[pos]``, or for a gap the nearest sensible neighbour.

    Looks for the nearest mapped entry at or after ``pos`` (``rear``, stopping at the last entry) and at or before
    it (``front``, stopping at 0). A start inside a gap maps just after ``front``, an end just before ``rear``;
    ``m`` (the size of the target range) bounds a gap at the end.
    """
    value = index[pos]
    if value is not None:
        return value
    last = len(index) - 1
    rear = next((k for k in range(pos, last + 1) if index[k] is not None), last)
    front = next((k for k in range(pos, -1, -1) if index[k] is not None), 0)
    before, after = index[front], index[rear]
    if before is None and after is None:
        raise ValueError("convert_index: nothing is aligned")
    if before is None:  # a gap at the very start
        return after if after < 1 else (0 if is_start else after - 1)
    if after is None:  # a gap at the very end
        if m is None or before >= m - 1:
            return before
        return before + 1 if is_start else m - 1
    if after > before + 1:  # free targets between the two neighbours
        return before + 1 if is_start else after - 1
    return after if is_start else before


def lcs_align(orig_norm: Sequence[str], tok_text: str, max_dist: int) -> tuple[int, list[bytearray]]:
    """One banded DP pass: ``(f[n-1, m-1], back-pointer rows)``.

    ``orig_norm[i]`` is the pre-processed paragraph character ``i``; row ``i`` of the back-pointers covers
    columns ``[i - max_dist, i + max_dist)`` (``_UNSET`` where the official dict has no entry).
    """
    n, m = len(orig_norm), len(tok_text)
    width = 2 * max_dist
    prev = [0] * (width + 1)  # row i-1, shifted so that prev[k + 1] is f[i-1, j] for k = j - (i - max_dist)
    back: list[bytearray] = []
    cur: list[int] = prev
    for i in range(n):
        lo = i - max_dist
        cur = [0] * (width + 1)
        row = bytearray([_UNSET]) * width
        ch = orig_norm[i]
        for j in range(max(0, lo), min(m, i + max_dist)):
            k = j - lo
            if i > 0:
                best, move = prev[k + 1], _UP
            else:
                best, move = 0, _UNSET
            if j > 0 and k > 0 and cur[k - 1] > best:
                best, move = cur[k - 1], _LEFT
            if ch == tok_text[j]:
                diag = prev[k] if (i > 0 and j > 0) else 0
                if diag + 1 > best:
                    best, move = diag + 1, _DIAG
            cur[k] = best
            row[k] = move
        back.append(row)
        prev = cur
    score = cur[(m - 1) - (n - 1 - max_dist)] if n and m else 0
    return score, back


@dataclasses.dataclass
class ParagraphAlignment:
    """Everything the features of one paragraph need, computed once per (paragraph, lower) pair.

    ``mismatched``: the official "MISMATCH DETECTED!" (no features). ``doubled_band``: the first DP pass scored
    no more than ``0.8 n`` and the band was doubled. The index lists are ``None`` where mismatched.
    """

    pieces: list[str]
    score: int
    doubled_band: bool
    mismatched: bool
    orig_to_chartok_index: list[int | None]
    chartok_to_tok_index: list[int]
    tok_start_to_orig_index: list[int]
    tok_end_to_orig_index: list[int]

    def answer_token_span(self, start_char: int, answer_len: int) -> tuple[int, int] | None:
        """Token span of the answer characters ``[start_char, start_char + answer_len - 1]``, or None when those
        characters are outside the paragraph (the official would raise IndexError)."""
        end_char = start_char + answer_len - 1
        n = len(self.orig_to_chartok_index)
        if not (0 <= start_char < n and 0 <= end_char < n):
            return None
        start_chartok = convert_index(self.orig_to_chartok_index, start_char, is_start=True)
        end_chartok = convert_index(self.orig_to_chartok_index, end_char, is_start=False)
        return self.chartok_to_tok_index[start_chartok], self.chartok_to_tok_index[end_chartok]


def align_paragraph(paragraph: str, pieces: list[str], normalize_char: Callable[[str], str]) -> ParagraphAlignment:
    """Align ``paragraph`` with its ``pieces`` (see the module docstring); ``normalize_char`` is the match
    normaliser, ``preprocess_text(char, lower=..., remove_space=False)``."""
    chartok_to_tok_index: list[int] = []
    tok_start_to_chartok: list[int] = []
    tok_end_to_chartok: list[int] = []
    char_cnt = 0
    for t, piece in enumerate(pieces):
        chartok_to_tok_index.extend([t] * len(piece))
        tok_start_to_chartok.append(char_cnt)
        char_cnt += len(piece)
        tok_end_to_chartok.append(char_cnt - 1)
    tok_text = "".join(pieces).replace(SPIECE_UNDERLINE, " ")
    n, m = len(paragraph), len(tok_text)
    memo: dict[str, str] = {}
    orig_norm = [memo[c] if c in memo else memo.setdefault(c, normalize_char(c)) for c in paragraph]

    max_dist = abs(n - m) + 5
    score, back = lcs_align(orig_norm, tok_text, max_dist)
    doubled = not score > 0.8 * n
    if doubled:
        max_dist *= 2
        score, back = lcs_align(orig_norm, tok_text, max_dist)

    orig_to_chartok: list[int | None] = [None] * n
    chartok_to_orig: list[int | None] = [None] * m
    i, j = n - 1, m - 1
    while i >= 0 and j >= 0:
        k = j - (i - max_dist)
        move = back[i][k] if 0 <= k < 2 * max_dist else _UNSET
        if move == _UNSET:
            break
        if move == _DIAG:
            orig_to_chartok[i] = j
            chartok_to_orig[j] = i
            i, j = i - 1, j - 1
        elif move == _LEFT:
            j -= 1
        else:
            i -= 1

    if n == 0 or m == 0 or all(v is None for v in orig_to_chartok) or score < 0.8 * n:
        return ParagraphAlignment(pieces, score, doubled, True, orig_to_chartok, chartok_to_tok_index, [], [])
    tok_start_to_orig = [convert_index(chartok_to_orig, s, n, is_start=True) for s in tok_start_to_chartok]
    tok_end_to_orig = [convert_index(chartok_to_orig, e, n, is_start=False) for e in tok_end_to_chartok]
    return ParagraphAlignment(
        pieces, score, doubled, False, orig_to_chartok, chartok_to_tok_index, tok_start_to_orig, tok_end_to_orig
    )


class AlignmentCache:
    """Alignments keyed by (paragraph text, lower): the questions of one paragraph share one DP."""

    def __init__(self, encode: Callable[[str], list[str]], normalize_char: Callable[[str], str]):
        self._encode = encode
        self._normalize_char = normalize_char
        self._cache: dict[str, ParagraphAlignment] = {}

    def get(self, paragraph: str) -> ParagraphAlignment:
        hit = self._cache.get(paragraph)
        if hit is None:
            hit = self._cache[paragraph] = align_paragraph(paragraph, self._encode(paragraph), self._normalize_char)
        return hit
