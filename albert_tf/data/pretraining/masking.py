"""N-gram masked-LM predictions, official ``create_pretraining_data.py: create_masked_lm_predictions``, made
reproducible.

What the official does and this module reproduces draw for draw:

* candidates: every non-``[CLS]``/``[SEP]`` position; with whole-word masking a non-start piece joins the previous
  candidate (also across the middle ``[SEP]``, as in the official), otherwise it starts one;
  ``token_boundary`` is 1 at ``[CLS]``/``[SEP]`` and at start pieces;
* ``num_to_predict = min(max_predictions_per_seq, max(1, round(len(tokens) * masked_lm_prob)))``;
* one option list per candidate ``[cand[i:i+1], cand[i:i+2], ..., cand[i:i+ngram]]`` (short at the end), the lists
  shuffled with ``rng``; for each list until the budget is met: draw ``n`` with ``p(n) ∝ 1/n`` (reversed when
  ``favor_shorter_ngram`` is False), shorten ``n`` while the n-gram overflows the budget, skip it if it still
  overflows or touches a covered position; then per *token* ``rng.random() < 0.8`` -> ``[MASK]``, else
  ``rng.random() < 0.5`` -> keep, else a random vocabulary entry ``rng.randint(0, V - 1)``;
* the option lists are shuffled a second time (always, as in the official), and with ``do_permutation`` up to
  ``num_to_predict`` further uncovered positions are chosen the same n-gram way and permuted among themselves.

The one change: the official draws ``n`` from numpy's *global, never seeded* RNG (``np.random.choice``), so its
output cannot be reproduced. :class:`NgramSampler` draws the same way (``searchsorted`` of a ``RandomState``
uniform over the same cdf, exactly what ``RandomState.choice(p=...)`` does) from a generator seeded per chunk.
Seeding numpy's global RNG with the same seed makes the official code produce identical instances (tested).

Positions are handled as plain Python ints and lists: sequences are at most a few hundred tokens, where list
operations beat numpy's per-call overhead, and the per-token work is table look-ups instead of the official
per-piece string tests.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence

import numpy as np

__all__ = [
    "MaskingConfig",
    "MaskedLmResult",
    "NgramSampler",
    "create_masked_lm_predictions",
    "ngram_pvals",
    "shuffle",
]

_STOCK_RANDBELOW = random.Random._randbelow_with_getrandbits
_BIT_LENGTH = [n.bit_length() for n in range(4097)]


def shuffle(x: list, rng: random.Random, consume_only: bool = False) -> None:
    """``rng.shuffle(x)`` -- the same permutation and the same draws -- without a Python call per element.

    CPython's ``Random.shuffle`` is Fisher-Yates over ``_randbelow(i + 1)``, which is rejection sampling on
    ``getrandbits(bit_length)``; this is that loop inlined (checked against ``rng.shuffle`` in the tests).
    ``consume_only`` makes the draws without permuting (the official's second shuffle, whose result is unused
    without ``do_permutation``). Falls back to ``rng.shuffle`` for RNGs with another ``_randbelow``.
    """
    if type(rng)._randbelow is not _STOCK_RANDBELOW:
        if not consume_only:
            rng.shuffle(x)
        else:
            rng.shuffle(list(x))
        return
    getrandbits = rng.getrandbits
    size = len(x)
    bits = _BIT_LENGTH if size < len(_BIT_LENGTH) else [n.bit_length() for n in range(size + 1)]
    if consume_only:
        for n in range(size, 1, -1):
            k = bits[n]
            while getrandbits(k) >= n:
                pass
        return
    for i in range(size - 1, 0, -1):
        n = i + 1
        k = bits[n]
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        x[i], x[j] = x[j], x[i]


def ngram_pvals(ngram: int, favor_shorter_ngram: bool = True) -> np.ndarray:
    """Official n-gram length probabilities ``(1/n) / sum_k 1/k`` for n = 1..ngram (reversed if not favouring short)."""
    pvals = 1.0 / np.arange(1, ngram + 1)
    pvals /= pvals.sum(keepdims=True)
    if not favor_shorter_ngram:
        pvals = pvals[::-1]
    return pvals


class NgramSampler:
    """Draws n-gram lengths like ``np.random.choice(ngrams[:k], p=pvals[:k] / pvals[:k].sum())``, from a seeded stream.

    ``RandomState.choice(a, p=p)`` computes ``cdf = p.cumsum(); cdf /= cdf[-1]`` and returns
    ``a[cdf.searchsorted(random_sample(), side="right")]``; uniforms are drawn in batches (the MT19937 stream is the
    same whether drawn one by one or in blocks), so ``NgramSampler(np.random.RandomState(s))`` yields exactly what
    the official code yields after ``np.random.seed(s)``.
    """

    _BATCH = 4096

    def __init__(self, state: np.random.RandomState, ngram: int, favor_shorter_ngram: bool = True):
        self._state = state
        self._buf: list[float] = []
        self._pos = 0
        pvals = ngram_pvals(ngram, favor_shorter_ngram)
        # The official always passes all `ngram` options (its option lists always have `ngram` entries).
        p = pvals[:ngram] / pvals[:ngram].sum(keepdims=True)
        cdf = p.cumsum()
        cdf /= cdf[-1]
        self._cdf = cdf.tolist()
        self.ngram = ngram

    def draw(self) -> int:
        """One n-gram length in 1..ngram."""
        if self._pos >= len(self._buf):
            self._buf = self._state.random_sample(self._BATCH).tolist()
            self._pos = 0
        u = self._buf[self._pos]
        self._pos += 1
        return bisect.bisect_right(self._cdf, u) + 1


class MaskingConfig:
    """The masking flags plus the vocabulary tables the masker needs (plain lists for fast indexing)."""

    def __init__(
        self,
        *,
        start_table: Sequence[int],
        mask_id: int,
        random_word_ids: Sequence[int],
        masked_lm_prob: float = 0.15,
        max_predictions_per_seq: int = 20,
        do_whole_word_mask: bool = True,
        do_permutation: bool = False,
    ):
        self.start_table = start_table  # id -> 1 if the piece starts a word (official start-piece rule)
        self.mask_id = int(mask_id)
        self.random_word_ids = list(random_word_ids)  # ids of list(tokenizer.vocab.keys()) in order
        self.masked_lm_prob = float(masked_lm_prob)
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self.do_whole_word_mask = bool(do_whole_word_mask)
        self.do_permutation = bool(do_permutation)


class MaskedLmResult:
    """Output of :func:`create_masked_lm_predictions` (ids, not pieces)."""

    __slots__ = ("output_ids", "positions", "labels", "token_boundary")

    def __init__(self, output_ids: list[int], positions: list[int], labels: list[int], token_boundary: list[int]):
        self.output_ids = output_ids
        self.positions = positions
        self.labels = labels
        self.token_boundary = token_boundary


def _fit_ngram(idx: int, n: int, cs, n_cand: int, used: int, budget: int) -> tuple[int, int] | None:
    """Piece span [lo, hi) of the n words starting at candidate ``idx``, shortened as the official.

    ``cs`` holds cumulative piece offsets of the candidate words. While the span would push the
    ``used`` predictions over ``budget``, one word is dropped (down to one); None when even one
    word does not fit.
    """
    lo = cs[idx]
    hi = cs[min(idx + n, n_cand)]
    n -= 1
    while used + hi - lo > budget:
        if n == 0:
            break
        hi = cs[min(idx + n, n_cand)]
        n -= 1
    if used + hi - lo > budget:
        return None
    return lo, hi


def create_masked_lm_predictions(
    ids: list[int],
    special_positions: Sequence[int],
    cfg: MaskingConfig,
    rng: random.Random,
    sampler: NgramSampler,
) -> MaskedLmResult:
    """Mask ``ids`` (a full ``[CLS] A [SEP] B [SEP]`` sequence) the official way; see the module docstring.

    Args:
      ids: token ids of the whole sequence.
      special_positions: sorted positions of ``[CLS]``/``[SEP]`` (never candidates, boundary 1).
      cfg: masking flags and vocabulary tables.
      rng: the Python RNG of the official code (shuffles, 80/10/10, random words).
      sampler: the n-gram length stream.
    """
    n_tokens = len(ids)
    start_table = cfg.start_table
    token_boundary = [start_table[t] for t in ids]
    special = set(special_positions)
    for p in special_positions:
        token_boundary[p] = 1
    # Non-special positions in order; candidate k covers cand_pos[cs[k]:cs[k+1]].
    cand_pos = [p for p in range(n_tokens) if p not in special]
    if cfg.do_whole_word_mask:
        cs = [j for j, p in enumerate(cand_pos) if j == 0 or token_boundary[p]]
    else:
        cs = list(range(len(cand_pos)))
    n_cand = len(cs)
    cs.append(len(cand_pos))

    output_ids = list(ids)
    if cfg.masked_lm_prob == 0:
        return MaskedLmResult(output_ids, [], [], token_boundary)

    num_to_predict = min(cfg.max_predictions_per_seq, max(1, int(round(n_tokens * cfg.masked_lm_prob))))
    order = list(range(n_cand))
    shuffle(order, rng)

    covered = bytearray(len(cand_pos))  # in cand_pos index space
    masked: list[tuple[int, int]] = []
    n_masked = 0
    mask_id = cfg.mask_id
    random_word_ids = cfg.random_word_ids
    v_last = len(random_word_ids) - 1
    rand = rng.random
    for idx in order:
        if n_masked >= num_to_predict:
            break
        span = _fit_ngram(idx, sampler.draw(), cs, n_cand, n_masked, num_to_predict)
        if span is None:
            continue
        lo, hi = span
        if 1 in covered[lo:hi]:
            continue
        for j in range(lo, hi):
            covered[j] = 1
            p = cand_pos[j]
            if rand() < 0.8:
                output_ids[p] = mask_id
            elif rand() < 0.5:
                pass
            else:
                output_ids[p] = random_word_ids[rng.randint(0, v_last)]
            masked.append((p, ids[p]))
        n_masked = len(masked)

    # The official shuffles the option lists again whether or not it permutes.
    shuffle(order, rng, consume_only=not cfg.do_permutation)

    if cfg.do_permutation:
        selected = bytearray(len(cand_pos))
        n_sel = 0
        for idx in order:
            if n_sel >= num_to_predict:
                break
            span = _fit_ngram(idx, sampler.draw(), cs, n_cand, n_sel, num_to_predict)
            if span is None:
                continue
            lo, hi = span
            if 1 in covered[lo:hi] or 1 in selected[lo:hi]:
                continue
            for j in range(lo, hi):
                selected[j] = 1
            n_sel += hi - lo
        select_positions = [cand_pos[j] for j in range(len(cand_pos)) if selected[j]]  # sorted
        permuted = list(select_positions)
        shuffle(permuted, rng)
        before = list(output_ids)
        for src, tgt in zip(select_positions, permuted, strict=True):
            output_ids[src] = before[tgt]
            masked.append((src, before[src]))

    masked.sort(key=lambda m: m[0])
    return MaskedLmResult(output_ids, [m[0] for m in masked], [m[1] for m in masked], token_boundary)
