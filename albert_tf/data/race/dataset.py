"""The ``tf.data`` input pipeline over a cached RACE split's record files (see ``cache``).

Parses with the same :func:`~albert_tf.data.race.cache.feature_spec` the records were written with, reshapes the
flat ``[4 * L]`` id arrays to ``[4, L]`` (one row per choice; the official model reshapes to ``[B * 4, L]``
itself) and casts everything to int32, through the shared :func:`~albert_tf.data.batching.record_dataset`.
"""

from __future__ import annotations

from collections.abc import Sequence

from albert_tf.data.batching import record_dataset
from albert_tf.data.race.cache import feature_spec
from albert_tf.data.race.reader import NUM_CHOICES
from albert_tf.tokenization.packing import INPUT_NAMES


def load_dataset(
    record_files: str | Sequence[str],
    max_seq_length: int,
    batch_size: int,
    is_training: bool,
    seed: int | None = None,
    drop_remainder: bool = False,
    bucket_lengths: Sequence[int] | None = None,
):
    """``tf.data`` of dicts: ``input_ids``/``input_mask``/``segment_ids`` int32 [B, 4, L], ``label_ids`` and
    ``is_real_example`` int32 [B], from one record file or several (a training cache's shards).

    Training: a shuffle drawn from ``seed`` (the shard order, then a buffer of 1000; the official buffer is 100),
    repeat, drop the remainder. Otherwise file
    order, once (outputs line up with ``CachedRace.examples``), keeping the last partial batch unless
    ``drop_remainder``.
    """
    shape = (NUM_CHOICES, max_seq_length)
    return record_dataset(
        record_files,
        feature_spec(max_seq_length),
        batch_size,
        is_training,
        seed=seed,
        drop_remainder=drop_remainder,
        shapes=dict.fromkeys(INPUT_NAMES, shape),
        bucket_lengths=bucket_lengths,
    )
