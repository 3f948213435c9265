"""The ``tf.data`` input pipeline over a cached SQuAD file's records (see ``cache``).

Parses with the same :func:`~albert_tf.data.squad.cache.feature_spec` the records were written with and casts every
field to int32 (the official ``_decode_record``). Training shuffles (seeded) and repeats; prediction reads in file
order, once, so outputs line up with the side file's features (the shared
:func:`~albert_tf.data.batching.record_dataset`).
"""

from __future__ import annotations

from collections.abc import Sequence

from albert_tf.data.batching import record_dataset
from albert_tf.data.squad.cache import feature_spec

__all__ = ["load_dataset"]


def load_dataset(
    record_files: str | Sequence[str],
    max_seq_length: int,
    batch_size: int,
    is_training: bool,
    seed: int | None = None,
    drop_remainder: bool = False,
    bucket_lengths: Sequence[int] | None = None,
):
    """``tf.data`` of dicts: ``unique_ids`` [B], ``input_ids``/``input_mask``/``segment_ids``/``p_mask`` [B, S]
    and for training ``start_positions``/``end_positions``/``is_impossible`` [B], all int32.

    Training: a shuffle drawn from ``seed`` (the shard order, then a buffer of 1000; the official buffer is 100),
    repeat, drop the remainder. Otherwise file order, once, keeping the last partial batch unless
    ``drop_remainder``.
    """
    spec = feature_spec(max_seq_length, is_training)
    return record_dataset(
        record_files, spec, batch_size, is_training, seed=seed, drop_remainder=drop_remainder,
        bucket_lengths=bucket_lengths,
    )
