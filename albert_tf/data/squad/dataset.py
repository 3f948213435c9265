"""The ``tf.data`` input pipeline over a cached SQuAD record file (see ``cache``).

Parses with the same :func:`~albert_tf.data.squad.cache.feature_spec` the records were written with and casts every
field to int32 (the official ``_decode_record``). Training shuffles (seeded) and repeats; prediction reads in file
order, once, so outputs line up with the side file's features.
"""

from __future__ import annotations

from albert_tf.data.squad.cache import feature_spec

__all__ = ["load_dataset"]


def load_dataset(
    record_file: str,
    max_seq_length: int,
    batch_size: int,
    is_training: bool,
    seed: int | None = None,
    drop_remainder: bool = False,
):
    """``tf.data`` of dicts: ``unique_ids`` [B], ``input_ids``/``input_mask``/``segment_ids``/``p_mask`` [B, S]
    and for training ``start_positions``/``end_positions``/``is_impossible`` [B], all int32.

    Training: shuffle (buffer 1000, ``seed``; the official buffer is 100), repeat, drop the remainder.
    Otherwise file order, once, keeping the last partial batch unless ``drop_remainder``.
    """
    import tensorflow as tf

    spec = feature_spec(max_seq_length, is_training)

    def parse(record):
        parsed = tf.io.parse_single_example(record, spec)
        return {name: tf.cast(value, tf.int32) for name, value in parsed.items()}

    ds = tf.data.TFRecordDataset(record_file)
    if is_training:
        ds = ds.shuffle(1000, seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size, drop_remainder=drop_remainder or is_training).prefetch(tf.data.AUTOTUNE)
