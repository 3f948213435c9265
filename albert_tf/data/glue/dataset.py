"""The ``tf.data`` input pipeline over a cached GLUE split's record files (see ``features``).

The cache (``features``) writes a split's records once per key; this reads them every epoch, for training,
evaluation and prediction alike. It parses with the same :func:`~albert_tf.data.glue.features.feature_spec`
the records were written with, casts ids to int32 and shuffles/repeats only for training (the shared
:func:`~albert_tf.data.batching.record_dataset`).
"""

from __future__ import annotations

from collections.abc import Sequence

from albert_tf.data.batching import record_dataset
from albert_tf.data.glue.features import feature_spec


def load_dataset(
    record_files: str | Sequence[str],
    max_seq_length: int,
    is_regression: bool,
    batch_size: int,
    is_training: bool,
    seed: int | None = None,
    drop_remainder: bool = False,
    bucket_lengths: Sequence[int] | None = None,
):
    """``tf.data`` of feature dicts (``input_ids``/``input_mask``/``segment_ids`` int32, ``label_ids``,
    ``is_real_example``) from a cached split's record files.

    Training repeats, shuffles (the shard order drawn from ``seed``, then a buffer of 1000; the official buffer is
    100) and drops the remainder. Evaluation/prediction reads in file order, once, keeping the last
    partial batch unless ``drop_remainder``.
    """
    spec = feature_spec(max_seq_length, is_regression)
    return record_dataset(
        record_files, spec, batch_size, is_training, seed=seed, drop_remainder=drop_remainder,
        bucket_lengths=bucket_lengths,
    )
