"""The ``tf.data`` input pipeline over a cached GLUE record file (see ``features``).

The cache (``features``) writes a split's records once per key; this reads them every epoch, for training,
evaluation and prediction alike. It parses with the same :func:`~albert_tf.data.glue.features.feature_spec`
the records were written with, casts ids to int32 and shuffles/repeats only for training.
"""

from __future__ import annotations

from albert_tf.data.glue.features import feature_spec


def load_dataset(
    record_file: str,
    max_seq_length: int,
    is_regression: bool,
    batch_size: int,
    is_training: bool,
    seed: int | None = None,
    drop_remainder: bool = False,
):
    """``tf.data`` of feature dicts (``input_ids``/``input_mask``/``segment_ids`` int32, ``label_ids``,
    ``is_real_example``) from a cached record file.

    Training repeats, shuffles (the official buffer is 100; we use 1000 for better mixing, seeded)
    and drops the remainder. Evaluation/prediction reads in file order, once, keeping the last
    partial batch unless ``drop_remainder``.
    """
    import tensorflow as tf

    spec = feature_spec(max_seq_length, is_regression)

    def parse(record):
        parsed = tf.io.parse_single_example(record, spec)
        feats = {k: tf.cast(parsed[k], tf.int32) for k in ("input_ids", "input_mask", "segment_ids")}
        feats["label_ids"] = parsed["label_ids"] if is_regression else tf.cast(parsed["label_ids"], tf.int32)
        feats["is_real_example"] = tf.cast(parsed["is_real_example"], tf.int32)
        return feats

    ds = tf.data.TFRecordDataset(record_file)
    if is_training:
        ds = ds.shuffle(1000, seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size, drop_remainder=drop_remainder or is_training).prefetch(tf.data.AUTOTUNE)
