"""The one ``tf.data`` pipeline over a task's cached record files (GLUE, SQuAD, RACE ``load_dataset``).

Each task writes its features once per cache key as ``tf.train.Example`` records; this reads them every epoch, for
training, evaluation and prediction alike, with the task's ``FixedLenFeature`` spec. Integer features come back
as int32 (the official ``_decode_record``: TPUs take no int64), float features unchanged; ``shapes`` reshapes
named features (RACE's flat ``[4 * L]`` ids -> ``[4, L]``). Shared so that the three tasks batch, shuffle and
repeat the same way with one implementation. TensorFlow is imported on first use.

Training order: a training cache in several files (``data.cache.record_paths``: consecutive parts of one seeded
permutation) is read as the official pretraining input reads its files: the file list shuffled by the run's seed,
anew each epoch, :data:`INTERLEAVE_FILES` files read in turn, then a :data:`SHUFFLE_BUFFER` shuffle. Each seed of
``--num_trials`` so starts from other examples, and each epoch visits them in another order; one file (the file's
order, ``--noshuffle_train_examples``) is read through the buffer alone. Either way the stream repeats after the
shuffle, so every record comes exactly once per epoch. (The official fine-tuning input repeats first, then
shuffles through 100 records: its epochs blend at the edges. Repeating before a buffer larger than the training set
blends its epochs, so some examples are seen far more often than others: the SQuAD v1 parity run in
benchmarks/README.md.)
The files' order, the interleave and the buffer are all seeded and checkpointed with the iterator, so a resumed
run reads exactly the records an uninterrupted one would.

Length bucketing (``--bucket_lengths``): records are written padded to ``max_seq_length``, but most GLUE pairs
are far shorter, and self-attention costs grow with the padded length. After batching, :func:`trim_batch` cuts the
sequence axis of every per-token feature to the batch's longest real sequence (the last 1 of ``input_mask``)
rounded up to the smallest bucket boundary that holds it (32, 48, 64, 80, 96, 128, 192, 256, 384, 512 by default,
capped at ``max_seq_length``: fine steps where sentence pairs fall, MRPC's batches of 8 mostly end between 50 and
70 tokens, so 64 -> 128 alone would waste half the work), so ``jit_compile`` and TPUs see a handful of shapes,
not one per batch. Batches keep their
examples and their order (no regrouping by length): a trimmed batch is the fixed-padding batch minus columns that
are padding in every row, and the attention mask (keys only, additive -10000: ``exp`` underflows to exactly 0)
already makes those columns inert, so every real position's output equals the fixed-padding one up to float
summation order (tests/test_bucketing.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_BUCKET_LENGTHS",
    "INTERLEAVE_FILES",
    "SEQUENCE_FEATURES",
    "SHUFFLE_BUFFER",
    "bucket_boundaries",
    "bucket_length",
    "record_dataset",
    "trim_batch",
]

# The official task input_fns shuffle with a buffer of 100; 1000 mixes better and still fits any host.
SHUFFLE_BUFFER = 1000
#: Training files read in turn (the official run_pretraining.py input_fn's ``cycle_length=min(4, len(files))``).
INTERLEAVE_FILES = 4
#: ``--bucket_lengths`` default: multiples that keep XLA/TPU shapes few and tile well (``none`` turns bucketing off).
DEFAULT_BUCKET_LENGTHS = "32,48,64,80,96,128,192,256,384,512"
_OFF = ("", "none", "off", "0", "false")
#: Per-token features (last axis = sequence) that :func:`trim_batch` cuts; everything else is per-example.
SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids", "p_mask")


def bucket_boundaries(bucket_lengths: str | Sequence[int] | None, max_seq_length: int) -> tuple[int, ...] | None:
    """The sorted bucket lengths of ``--bucket_lengths`` for ``max_seq_length``: those below it, then
    ``max_seq_length`` itself (so every batch fits the last bucket). None when bucketing is off (``none``, ``off``,
    ``''``, ``0``). Raises ``ValueError`` naming the bad entry."""
    if bucket_lengths is None:
        return None
    if isinstance(bucket_lengths, str):
        text = bucket_lengths.strip()
        if text.lower() in _OFF:
            return None
        try:
            values = [int(part) for part in text.split(",") if part.strip()]
        except ValueError:
            raise ValueError(
                f"--bucket_lengths={bucket_lengths!r}: expected comma-separated positive integers or 'none'"
            ) from None
    else:
        values = [int(v) for v in bucket_lengths]
    if not values:
        return None
    bad = [v for v in values if v < 1]
    if bad:
        raise ValueError(f"--bucket_lengths={bucket_lengths!r}: {bad[0]} is not a positive length")
    return tuple(sorted({v for v in values if v < max_seq_length} | {max_seq_length}))


def trim_batch(batch: Mapping[str, Any], boundaries: Sequence[int], mask_feature: str = "input_mask",
               sequence_features: Sequence[str] = SEQUENCE_FEATURES) -> dict[str, Any]:
    """``batch`` with the last axis of every feature in ``sequence_features`` cut to the bucket length of its
    longest real sequence.

    The real length of a row is one past its last non-zero ``mask_feature`` entry (over every axis but the first:
    RACE's ``[B, 4, S]`` counts its four choices); the cut length is the smallest of ``boundaries`` (sorted, the last
    one the full length) that holds the batch's longest. Rows stay in order, per-example features are untouched.
    """
    import tensorflow as tf

    mask = batch[mask_feature]
    length = tf.shape(mask)[-1]
    positions = tf.range(1, length + 1, dtype=tf.int32)
    ends = tf.where(tf.not_equal(mask, 0), positions, tf.zeros_like(positions))  # broadcasts over leading axes
    cut = tf.minimum(bucket_length(tf.reduce_max(ends), boundaries), length)
    return {name: value[..., :cut] if name in sequence_features else value for name, value in batch.items()}


def bucket_length(longest, boundaries: Sequence[int]):
    """In the graph: the first of ``boundaries`` (sorted) that is >= ``longest`` (an int32 scalar), the last one
    when none is."""
    import tensorflow as tf

    bounds = tf.constant(list(boundaries), tf.int32)
    # The count of boundaries below it (searchsorted's LowerBound op has no TFLite builtin nor Flex kernel, and the
    # exported raw-text signature must still convert with SELECT_TF_OPS).
    below = tf.reduce_sum(tf.cast(bounds < longest, tf.int32))
    return bounds[tf.minimum(below, len(boundaries) - 1)]


def record_dataset(
    record_files: str | Sequence[str],
    spec: Mapping[str, Any],
    batch_size: int,
    is_training: bool,
    seed: int | None = None,
    drop_remainder: bool = False,
    shapes: Mapping[str, Sequence[int]] | None = None,
    bucket_lengths: Sequence[int] | None = None,
):
    """``tf.data`` of feature dicts parsed from ``record_files`` with ``spec`` (int64 -> int32, reshaped by
    ``shapes``), batched by ``batch_size``.

    Training: with several files, their order drawn from ``seed`` each epoch and :data:`INTERLEAVE_FILES` read in
    turn; then a shuffle (buffer :data:`SHUFFLE_BUFFER`, ``seed``, reshuffled each epoch), repeat, drop the
    remainder. Otherwise the files in order, once, keeping the last partial batch unless ``drop_remainder``. With
    ``bucket_lengths`` (from :func:`bucket_boundaries`) each batch is cut by :func:`trim_batch` (its sequence axis
    becomes ``None`` in the element spec); without, every batch keeps the full padded length.
    """
    import tensorflow as tf

    shapes = dict(shapes or {})

    def parse(record):
        parsed = tf.io.parse_single_example(record, dict(spec))
        out = {}
        for name, value in parsed.items():
            value = tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
            out[name] = tf.reshape(value, list(shapes[name])) if name in shapes else value
        return out

    files = [record_files] if isinstance(record_files, str) else list(record_files)
    if is_training and len(files) > 1:  # one epoch: the files in a seeded order, read in turn
        ds = tf.data.Dataset.from_tensor_slices(files)
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
        ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(INTERLEAVE_FILES, len(files)), block_length=1,
                           num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    else:
        ds = tf.data.TFRecordDataset(files)
    if is_training:
        # Repeated after the buffer, so every record comes once per epoch (a buffer filled across epochs would draw
        # a small set unevenly).
        ds = ds.shuffle(SHUFFLE_BUFFER, seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(batch_size, drop_remainder=drop_remainder or is_training)
    if bucket_lengths:
        boundaries = tuple(bucket_lengths)
        ds = ds.map(lambda batch: trim_batch(batch, boundaries), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)
