"""Online (dynamic) n-gram masking in the ``tf.data`` graph: ``run_pretraining --masked_lm_budget=N``.

The official ``run_pretraining.py`` has a ``--masked_lm_budget`` flag (default 0) that is broken: with a budget
> 0 its input function reads ``token_boundary`` instead of the ``masked_lm_*`` features ("online masking"),
but ``model_fn`` still indexes ``masked_lm_positions``, and the online-masking code was never released
(official ``run_pretraining.py``). This module is what the flag was meant to do: the masks are drawn again every time a
record is read, so every epoch sees other masks (RoBERTa's dynamic masking), with the offline masker's algorithm
(``masking.py``), and the model still receives ``masked_lm_positions`` / ``masked_lm_ids`` / ``masked_lm_weights``.

In the pipeline, :func:`add_random_draws` runs per record (before batching) and :func:`mask_batch` per batch;
:func:`mask_example` does both for one record. Per record:

1. **Original ids.** Records hold ``input_ids`` with the offline masks applied; the ``masked_lm_ids`` are put
   back at the ``masked_lm_positions`` whose weight is > 0 (permutation predictions included), which restores
   the unmasked sequence exactly.
2. **Words.** ``[CLS]`` (position 0), the middle ``[SEP]`` (the last position of segment 0) and the final
   ``[SEP]`` (the last real position) are found from ``input_mask`` and ``segment_ids`` (not from ids, which
   differ between vocabularies) and are never masked, nor is padding. A word starts at every other real
   position whose ``token_boundary`` is 1, and also right after a ``[CLS]``/``[SEP]``, so a word never spans
   one (the offline masker, like the official, lets a piece that continues a word across the middle ``[SEP]``
   join the word before it). Without whole-word masking every token is its own unit.
3. **How many.** ``K = min(N, max_predictions_per_seq, max(1, round(masked_lm_prob * n_real)))``, with
   ``n_real`` the real tokens ``[CLS]``/``[SEP]`` included and ``round`` half-to-even in float64 (Python's
   ``round``; the offline formula with the budget ``N`` added). Exactly ``K`` tokens are masked, except when
   every whole word still unmasked is longer than what is left of ``K`` (then fewer, never more).
4. **Which.** The offline masker's loop: the words in a random order; for each, an n-gram length drawn with
   ``p(n) ∝ 1/n``, ``n <= ngram`` (reversed without ``favor_shorter_ngram``), the n-gram shortened while it would
   overflow ``K`` and skipped if it still does or touches a masked word. The offline masker stops there; this one
   then visits the words once more as 1-grams, so ``K`` is reached whenever a remaining word fits (step 3).
5. **80/10/10**, per token: ``[MASK]`` with probability 0.8, the original id 0.1, a uniform random id in
   ``[0, vocab_size)`` 0.1 (which can be the original, as offline).
6. The predictions in position order, padded with position 0, id 0, weight 0.0 to ``max_predictions_per_seq``.

Randomness: stateless random ops keyed by ``(seed, counter)``, the counter being the element's index in the
pipeline's record stream (training: records read since the start, over every epoch; evaluation: ``-1 - index``
of the record in the evaluation files). The same seed gives the same masks, each read of a record another one,
and because the counter is part of the checkpointed input iterator, an exactly resumed run reproduces the very
masks the uninterrupted run would have drawn. Every evaluation masks the held-out records the same way.
"""

from __future__ import annotations

import dataclasses
import math

import tensorflow as tf

__all__ = [
    "SPM_MASK_ID",
    "OnlineMaskingConfig",
    "add_random_draws",
    "mask_batch",
    "mask_example",
    "masked_token_count",
    "masking_key",
    "original_ids",
]

# The [MASK] id of ALBERT's SentencePiece vocabularies (<pad> 0, <unk> 1, [CLS] 2, [SEP] 3, [MASK] 4).
SPM_MASK_ID = 4


@dataclasses.dataclass(frozen=True)
class OnlineMaskingConfig:
    """What the online masker needs: the budget ``N``, the record shape, the vocabulary and the masking flags.

    ``masked_lm_prob``, ``ngram``, ``favor_shorter_ngram`` and ``do_whole_word_mask`` mean what they mean for
    ``create_pretraining_data`` (whose JSON sidecar records them); ``seed`` keys every draw.
    """

    budget: int
    vocab_size: int
    max_predictions_per_seq: int
    masked_lm_prob: float = 0.15
    mask_id: int = SPM_MASK_ID
    ngram: int = 3
    favor_shorter_ngram: bool = True
    do_whole_word_mask: bool = True
    seed: int = 12345

    def __post_init__(self) -> None:
        """Refuse values the graph cannot use (the flags are range-checked earlier with friendlier messages)."""
        if self.budget < 1:
            raise ValueError(f"online masking needs a budget >= 1, got {self.budget}")
        if not (math.isfinite(self.masked_lm_prob) and 0 < self.masked_lm_prob <= 1):
            raise ValueError(f"masked_lm_prob must be in (0, 1], got {self.masked_lm_prob}")
        if self.ngram < 1 or self.max_predictions_per_seq < 1 or self.vocab_size < 1:
            raise ValueError("ngram, max_predictions_per_seq and vocab_size must be >= 1")
        if not 0 <= self.mask_id < self.vocab_size:
            raise ValueError(f"mask_id {self.mask_id} is not an id of a {self.vocab_size}-piece vocabulary")

    def ngram_probabilities(self) -> list[float]:
        """``p(n)`` for n = 1..ngram: ``(1/n) / sum_k 1/k``, reversed when not favouring short n-grams."""
        weights = [1.0 / n for n in range(1, self.ngram + 1)]
        total = sum(weights)
        p = [w / total for w in weights]
        return p if self.favor_shorter_ngram else p[::-1]


def masked_token_count(num_real_tokens: int, budget: int, max_predictions_per_seq: int,
                       masked_lm_prob: float) -> int:
    """``K``, how many tokens the online masker masks in a sequence of ``num_real_tokens`` (step 3).

    ``min(budget, max_predictions_per_seq, max(1, round(masked_lm_prob * num_real_tokens)))``: the offline
    ``num_to_predict`` capped by the budget. Python's ``round`` (half to even), as the graph computes it. Fewer
    only when every whole word still unmasked is longer than what is left of ``K``.
    """
    return min(budget, max_predictions_per_seq, max(1, int(round(num_real_tokens * masked_lm_prob))))


def masking_key(seed: int, counter: tf.Tensor) -> tf.Tensor:
    """The stateless-RNG key ``[seed, counter]`` (int64) of one element of the record stream."""
    return tf.stack([tf.constant(seed, tf.int64), tf.cast(counter, tf.int64)])


def original_ids(features: dict[str, tf.Tensor]) -> tf.Tensor:
    """The unmasked ``input_ids`` of one record ``[S]`` or a batch ``[B, S]`` (step 1).

    ``masked_lm_ids`` are put back at the ``masked_lm_positions`` whose ``masked_lm_weights`` is > 0: the offline
    masker writes the original id of every position it changed (or kept) as a prediction, so this undoes its
    ``[MASK]``, random-word and permutation replacements exactly.
    """
    if features["input_ids"].shape.rank == 1:
        return original_ids({name: value[None] for name, value in features.items()})[0]
    ids = features["input_ids"]
    real = features["masked_lm_weights"] > 0
    rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(real))
    positions = tf.cast(features["masked_lm_positions"], tf.int32)
    where = tf.stack([tf.boolean_mask(rows, real), tf.boolean_mask(positions, real)], 1)
    labels = tf.boolean_mask(tf.cast(features["masked_lm_ids"], ids.dtype), real)
    return tf.tensor_scatter_nd_update(ids, where, labels)


# The per-record random draws add_random_draws adds for mask_batch (which removes them again).
_DRAWS = ("online_order_draws", "online_ngram_lengths", "online_action_draws", "online_random_ids")


def add_random_draws(
    features: dict[str, tf.Tensor], key: tf.Tensor, config: OnlineMaskingConfig
) -> dict[str, tf.Tensor]:
    """Per record, before batching: every random number its masking uses, drawn from ``key`` alone.

    So a record's masks do not depend on the batch it lands in, while :func:`mask_batch` does the rest for a
    whole batch at once (a loop per record costs ~10x more). Per position: the key that orders the words, an
    n-gram length (``p(n)`` of step 4), the 80/10/10 draw and a random id in ``[0, vocab_size)`` (step 5).

    Args:
      features: one parsed record; only the length of ``input_ids`` is used here.
      key: int64 ``[2]`` stateless-RNG key (:func:`masking_key`).
      config: the budget, vocabulary and masking flags.
    """
    length = tf.shape(features["input_ids"])[0]
    order_key, ngram_key, action_key, word_key = tf.unstack(tf.random.experimental.stateless_split(key, 4))
    cdf = tf.constant(_cumulative(config.ngram_probabilities()), tf.float32)
    ngram_draws = tf.random.stateless_uniform([length], ngram_key)
    out = dict(features)
    out["online_order_draws"] = tf.random.stateless_uniform([length], order_key)
    out["online_ngram_lengths"] = tf.minimum(tf.searchsorted(cdf, ngram_draws, side="right") + 1, config.ngram)
    out["online_action_draws"] = tf.random.stateless_uniform([length], action_key)
    out["online_random_ids"] = tf.random.stateless_uniform([length], word_key, 0, config.vocab_size, dtype=tf.int32)
    return out


def _word_layout(batch: dict[str, tf.Tensor], whole_words: bool):
    """(candidate [B, S], word index of each position [B, S], words [B], word offsets [B, S+1], real length [B]).

    Candidates are the real positions other than [CLS] and the two [SEP]s (step 2); word ``k`` of a record covers
    its candidate positions number ``offsets[k] .. offsets[k+1] - 1`` (counted in position order).
    """
    mask = batch["input_mask"] > 0
    rows, length = tf.shape(mask)[0], tf.shape(mask)[1]
    slot = tf.range(length)[None, :]
    n_real = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
    n_first = tf.reduce_sum(tf.cast(mask & tf.equal(batch["segment_ids"], 0), tf.int32), axis=1)
    special = tf.equal(slot, 0) | tf.equal(slot, n_real[:, None] - 1) | tf.equal(slot, n_first[:, None] - 1)
    candidate = mask & ~special
    if whole_words:
        after_non_candidate = tf.concat([tf.ones([rows, 1], tf.bool), ~candidate[:, :-1]], 1)
        start = candidate & ((batch["token_boundary"] > 0) | after_non_candidate)
    else:
        start = candidate
    word = tf.cumsum(tf.cast(start, tf.int32), axis=1) - 1
    n_words = tf.reduce_sum(tf.cast(start, tf.int32), axis=1)
    # Sizes of each record's words 0..n_words-1 (non-candidates fall into a dropped bucket `length`).
    bucket = tf.where(candidate, word, length) + (length + 1) * tf.range(rows)[:, None]
    sizes = tf.math.unsorted_segment_sum(tf.cast(candidate, tf.int32), bucket, rows * (length + 1))
    sizes = tf.reshape(sizes, [rows, length + 1])[:, :length]
    offsets = tf.concat([tf.zeros([rows, 1], tf.int32), tf.cumsum(sizes, axis=1)], 1)
    return candidate, word, n_words, offsets, n_real


def mask_batch(batch: dict[str, tf.Tensor], config: OnlineMaskingConfig) -> dict[str, tf.Tensor]:
    """Mask a batch of records that carry their :func:`add_random_draws`; returns the training features.

    Steps 1-3 and 5 are element-wise. Step 4 is one loop over visits for the whole batch: visit ``i`` of a record
    is its ``i``-th word in the random order (first pass, drawn n-gram length) or its ``(i - n_words)``-th (second
    pass, one word). A record stops when ``K`` tokens are masked or no unmasked word fits what is left of ``K``;
    the loop stops when every record has.

    Returns ``input_ids``, ``input_mask``, ``segment_ids``, ``next_sentence_labels`` and ``masked_lm_positions`` /
    ``masked_lm_ids`` / ``masked_lm_weights`` (``[B, max_predictions_per_seq]``, predictions in position order,
    zero-padded): what the records would give the model (``token_boundary`` is dropped).
    """
    ids = original_ids(batch)
    seq_len = ids.shape[-1]
    max_pred = config.max_predictions_per_seq
    candidate, word, n_words, offsets, n_real = _word_layout(batch, config.do_whole_word_mask)
    wanted = tf.cast(tf.round(tf.cast(n_real, tf.float64) * config.masked_lm_prob), tf.int32)
    target = tf.minimum(min(config.budget, max_pred), tf.maximum(1, wanted))

    slot = tf.range(tf.shape(ids)[1])[None, :]
    is_word = slot < n_words[:, None]
    # A uniformly random visiting order of each record's words (the offline shuffle of the option lists).
    order = tf.argsort(tf.where(is_word, batch["online_order_draws"], 2.0), axis=1, stable=True)
    lengths = batch["online_ngram_lengths"]
    m = tf.range(1, config.ngram + 1)[None, :]
    word_sizes = offsets[:, 1:] - offsets[:, :-1]

    def active(i, count, covered):
        remaining = target - count
        fits = is_word & ~covered & (word_sizes <= remaining[:, None])
        return (i < 2 * n_words) & (remaining > 0) & tf.reduce_any(fits, axis=1)

    def visit(i, count, covered):
        live = active(i, count, covered)
        j = tf.math.floormod(i, tf.maximum(n_words, 1))[:, None]
        start = tf.gather(order, j, batch_dims=1)
        n = tf.where(i < n_words, tf.gather(lengths, j, batch_dims=1)[:, 0], 1)
        ends = tf.minimum(start + m, n_words[:, None])
        first = tf.gather(offsets, start, batch_dims=1)
        sizes = tf.gather(offsets, ends, batch_dims=1) - first
        n_fit = tf.reduce_sum(tf.cast((m <= n[:, None]) & (sizes <= (target - count)[:, None]), tf.int32), axis=1)
        end = tf.minimum(start[:, 0] + n_fit, n_words)
        span = (slot >= start) & (slot < end[:, None])
        take = live & (n_fit > 0) & ~tf.reduce_any(covered & span, axis=1)
        covered = covered | (span & take[:, None])
        size = tf.gather(offsets, end[:, None], batch_dims=1)[:, 0] - first[:, 0]
        return i + 1, count + tf.where(take, size, 0), covered

    _, _, covered_words = tf.while_loop(
        lambda i, count, covered: tf.reduce_any(active(i, count, covered)),
        visit,
        (tf.constant(0), tf.zeros_like(target), tf.zeros_like(candidate)),
    )
    masked = candidate & tf.gather(covered_words, tf.maximum(word, 0), batch_dims=1)

    action = batch["online_action_draws"]
    random_ids = tf.cast(batch["online_random_ids"], ids.dtype)
    replaced = tf.where(action < 0.8, tf.cast(config.mask_id, ids.dtype), tf.where(action < 0.9, ids, random_ids))
    # Masked positions first, in position order: sort (position if masked else seq_len).
    keys = tf.sort(tf.where(masked, slot, seq_len), axis=1)
    keys = tf.pad(keys, [[0, 0], [0, max(0, max_pred - seq_len)]], constant_values=seq_len)[:, :max_pred]
    real = keys < seq_len
    positions = tf.where(real, keys, 0)
    out = {name: value for name, value in batch.items() if name not in _DRAWS and name != "token_boundary"}
    out["input_ids"] = tf.where(masked, replaced, ids)
    out["masked_lm_positions"] = positions
    out["masked_lm_ids"] = tf.where(real, tf.gather(ids, positions, batch_dims=1), 0)
    out["masked_lm_weights"] = tf.cast(real, tf.float32)
    return out


def mask_example(
    features: dict[str, tf.Tensor], key: tf.Tensor, config: OnlineMaskingConfig
) -> dict[str, tf.Tensor]:
    """One record masked afresh: :func:`add_random_draws` then :func:`mask_batch` on a batch of one."""
    drawn = add_random_draws(features, key, config)
    batch = {name: value[None] for name, value in drawn.items()}
    return {name: value[0] for name, value in mask_batch(batch, config).items()}


def _cumulative(p: list[float]) -> list[float]:
    """Cumulative sums of ``p`` with the last forced to 1.0 (so a uniform draw never falls past it)."""
    total = 0.0
    out = []
    for value in p:
        total += value
        out.append(total)
    out[-1] = 1.0
    return out
