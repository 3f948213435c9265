"""Sequence packing for fine-tuning batches, without cross-contamination (Krell et al. 2021, "Efficient Sequence
Packing without Cross-contamination", section 3).

A GLUE batch padded to its longest example is still mostly padding when one long example sits among short ones.
:func:`pack_batch` turns a batch of ``B`` examples (features ``[B, S]``, each example's real tokens a prefix of its
row, as the official ``convert_single_example`` writes them) into rows of at most ``max_seq_length`` tokens that
hold several examples each:

* Examples are placed first-fit decreasing (longest first, each into the first row with room), in the graph, so the
  pipeline stays ``tf.data`` and the batch keeps its random draw of examples: every step still sees exactly the
  ``B`` examples it would see unpacked, in the same order, so labels and per-example outputs keep their order.
* ``input_mask`` of a packed row holds, for every token, the number (1, 2, ...) of the example it belongs to, 0 for
  padding: attention is allowed only between tokens of the same example
  (``modeling.attention.attention_bias_from_example_ids``), so an example sees only its own tokens.
* ``position_ids`` restart at 0 for each example; ``segment_ids`` are the example's own.
* ``example_positions`` [b] holds each example's ``[CLS]`` as a flat index ``row * L + offset`` into its slice's
  rows, where the model gathers the pooled output (``AlbertEncoder.call_packed``); ``example_lengths`` [b] its
  number of tokens (heads that read every position of an example, SQuAD's span and tagging, mask the rest).

Slices: the trainer cuts a global batch along axis 0 into ``slices`` equal parts (replicas x accumulation
micro-batches). Rows are not examples, so every output gets a leading axis of size ``slices``: slice ``k`` packs
examples ``k * b ... (k + 1) * b - 1`` (``b = B / slices``, the same examples the unpacked slice holds) into
``[R, L]`` rows, ``R`` and ``L`` shared by the slices of a batch; :func:`merge_slices` undoes the leading axis
inside the step. ``R`` is rounded up to a multiple of ``row_multiple`` and ``L`` to the next of ``boundaries``, so
``jit_compile`` sees few shapes. Exact: with keys of other examples at an additive -10000 (``exp`` underflows to
exactly 0), each real token's outputs equal the unpacked ones up to float summation order (tests/test_packing.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from albert_tf.data.batching import bucket_length

__all__ = ["PACKING_MODES", "is_packed", "merge_slices", "one_example_per_row", "pack_batch", "pack_dataset",
           "packed_rows", "padding_fraction", "row_multiple"]

#: ``--packing`` values: ``first_fit`` packs training batches (first-fit decreasing), ``none``: one example a row.
PACKING_MODES = ("first_fit", "none")
_TOKEN_FEATURES = ("input_ids", "segment_ids")


def is_packed(features: Mapping[str, Any]) -> bool:
    """Whether ``features`` is a packed batch (it has the ``example_positions`` :func:`pack_batch` adds)."""
    return "example_positions" in features


def row_multiple(examples: int) -> int:
    """What the row count of a pack of ``examples`` examples is rounded up to: ``examples / 16``, so that a slice
    has at most ~16 row counts (few ``jit_compile`` shapes)."""
    return max(1, examples // 16)


def pack_dataset(dataset, max_seq_length: int, batch_size: int, slices: int = 1,
                 boundaries: Sequence[int] | None = None):
    """``dataset`` (of padded batches of ``batch_size`` examples) with every batch packed by :func:`pack_batch` in
    ``slices`` parts, rows rounded by :func:`row_multiple`, row lengths to ``boundaries``."""
    import tensorflow as tf

    multiple = row_multiple(batch_size // slices)
    return dataset.map(lambda batch: pack_batch(batch, max_seq_length, slices, boundaries, multiple),
                       num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def pack_batch(batch: Mapping[str, Any], max_seq_length: int, slices: int = 1,
               boundaries: Sequence[int] | None = None, row_multiple: int = 1) -> dict[str, Any]:
    """A padded batch (``input_ids``/``input_mask``/``segment_ids`` [B, S] int32, per-example features [B, ...])
    packed into rows (module docstring). Returns token features ``[slices, R, L]`` (``input_mask``: example numbers,
    ``position_ids`` added), ``example_positions`` and ``example_lengths`` ``[slices, b]`` and every per-example
    feature ``[slices, b, ...]``.

    ``B`` must be a multiple of ``slices``. A feature of a group of examples (RACE's ``label_ids`` [B / 4]: the four
    choices of a question are four consecutive examples) keeps its own leading size, cut into ``slices`` parts as
    the examples are. An example with no real token (an all-padding row) still takes one
    position, so that every example has a ``[CLS]`` to gather.
    """
    import tensorflow as tf

    mask = tf.convert_to_tensor(batch["input_mask"])
    B, S = tf.shape(mask)[0], tf.shape(mask)[1]
    b = B // slices
    lengths = tf.maximum(tf.reduce_sum(tf.cast(tf.not_equal(mask, 0), tf.int32), axis=-1), 1)
    lengths = tf.minimum(lengths, max_seq_length)
    per_slice = tf.reshape(lengths, [slices, b])
    order = tf.argsort(per_slice, axis=-1, direction="DESCENDING", stable=True)
    longest_first = tf.gather(per_slice, order, batch_dims=1)

    def place(state, n):  # n [slices]: the next example of every slice, into the first row with room
        fill = state[0]
        fits = fill + n[:, None] <= max_seq_length
        row = tf.argmax(tf.cast(fits, tf.int32), axis=-1, output_type=tf.int32)
        offset = tf.gather(fill, row, batch_dims=1)
        # the new fill keeps the old one's static shape (one_hot's depth is a tensor: its width is unknown to
        # shape inference, which tf.scan refuses when the batch size is static)
        fill = tf.ensure_shape(fill + tf.one_hot(row, b, dtype=tf.int32) * n[:, None], state[0].shape)
        return fill, row, offset

    start = (tf.zeros([slices, b], tf.int32), tf.zeros([slices], tf.int32), tf.zeros([slices], tf.int32))
    _, rows, offsets = tf.scan(place, tf.transpose(longest_first), initializer=start)
    inverse = tf.argsort(order, axis=-1)  # back to the examples' own order
    rows = tf.gather(tf.transpose(rows), inverse, batch_dims=1)  # [slices, b]
    offsets = tf.gather(tf.transpose(offsets), inverse, batch_dims=1)

    num_rows = tf.reduce_max(rows) + 1
    num_rows = (num_rows + row_multiple - 1) // row_multiple * row_multiple
    longest = tf.reduce_max(offsets + per_slice)
    if boundaries:
        row_length = tf.maximum(bucket_length(longest, boundaries), longest)
    else:
        row_length = tf.constant(max_seq_length, tf.int32)

    token = tf.range(S, dtype=tf.int32)[None, None, :]
    real = token < per_slice[..., None]  # [slices, b, S]
    grid = tf.shape(real)
    slice_index = tf.broadcast_to(tf.range(slices, dtype=tf.int32)[:, None, None], grid)
    example_number = tf.broadcast_to(tf.range(1, b + 1, dtype=tf.int32)[None, :, None], grid)
    target = tf.stack([slice_index, tf.broadcast_to(rows[..., None], grid), offsets[..., None] + token], axis=-1)
    target = tf.boolean_mask(target, real)
    shape = tf.stack([slices, num_rows, row_length])

    def scatter(values):
        return tf.scatter_nd(target, tf.boolean_mask(values, real), shape)

    out = {name: scatter(tf.reshape(batch[name], [slices, b, S])) for name in _TOKEN_FEATURES}
    out["input_mask"] = scatter(example_number)
    out["position_ids"] = scatter(tf.broadcast_to(token, grid))
    out["example_positions"] = rows * row_length + offsets
    out["example_lengths"] = per_slice
    for name, value in batch.items():
        if name not in out and name != "input_mask":
            value = tf.convert_to_tensor(value)
            out[name] = tf.reshape(value, tf.concat([[slices, -1], tf.shape(value)[1:]], axis=0))
    return out


def merge_slices(features: Mapping[str, Any]) -> dict[str, Any]:
    """A packed batch's features with the leading slice axis merged away: token features ``[slices * R, L]``,
    ``example_positions`` ``[slices * b]`` as flat indices into those rows, per-example features ``[slices * b, ...]``.
    Call it on the part of a packed batch one step computes (after the trainer's slicing)."""
    import tensorflow as tf

    ids = features["input_ids"]
    slices, rows, length = tf.shape(ids)[0], tf.shape(ids)[1], tf.shape(ids)[2]
    out = {}
    for name, value in features.items():
        if name == "example_positions":
            value = value + (tf.range(slices, dtype=value.dtype) * rows * length)[:, None]
        out[name] = tf.reshape(value, tf.concat([[-1], tf.shape(value)[2:]], axis=0))
    return out


def packed_rows(lengths: Sequence[int], max_seq_length: int) -> list[int]:
    """The fill of every row first-fit decreasing makes of ``lengths`` (numpy, for padding accounting): the same
    placement as :func:`pack_batch`."""
    fills: list[int] = []
    for n in sorted((max(1, min(int(v), max_seq_length)) for v in lengths), reverse=True):
        for i, f in enumerate(fills):
            if f + n <= max_seq_length:
                fills[i] += n
                break
        else:
            fills.append(n)
    return fills


def padding_fraction(real_tokens: int, computed_tokens: int) -> float:
    """The share of ``computed_tokens`` (rows x row length summed over batches) that is padding, ``real_tokens`` not."""
    return 1.0 - real_tokens / computed_tokens if computed_tokens else 0.0


def one_example_per_row(features: Mapping[str, Any], trim: bool = False, min_length: int = 1) -> dict[str, Any]:
    """A padded batch [B, S] in the packed layout with one example per row, for ``call_packed``'s real-token path
    without packing (evaluation, serving: the outputs stay in input order): example number 1 on every real token of
    its row (rows never attend to each other), positions 0..S-1, each ``[CLS]`` at ``row * S``, ``example_lengths``
    its real tokens. Other features pass through unchanged. ``trim``: the token features are first cut to the
    batch's longest example (a fixed-length request batch then computes attention over no more columns than it
    needs; every column cut is padding), and to no fewer than ``min_length`` columns (where there are as many: a
    head that takes the top k positions needs k; an empty batch keeps one)."""
    import tensorflow as tf

    if trim:
        longest = tf.reduce_max(tf.reduce_sum(tf.cast(features["input_mask"] > 0, tf.int32), axis=1))
        # reduce_max of an empty batch is the lowest int32
        longest = tf.minimum(tf.maximum(longest, max(min_length, 1)), tf.shape(features["input_ids"])[1])
        features = {**features, **{k: features[k][:, :longest] for k in ("input_ids", "input_mask", "segment_ids")}}
    b, s = tf.shape(features["input_ids"])[0], tf.shape(features["input_ids"])[1]
    real = tf.cast(features["input_mask"] > 0, features["input_ids"].dtype)
    return {**features, "input_mask": real, "position_ids": tf.tile(tf.range(s)[None, :], [b, 1]),
            "example_positions": tf.range(b) * s, "example_lengths": tf.reduce_sum(real, axis=1)}
