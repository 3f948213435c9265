"""The one ``tf.data`` pipeline over a task's cached record file (GLUE, SQuAD, RACE ``load_dataset``).

Each task writes its features once per cache key as ``tf.train.Example`` records; this reads them every epoch, for
training, evaluation and prediction alike, with the task's ``FixedLenFeature`` spec. Integer features come back
as int32 (the official ``_decode_record``: TPUs take no int64), float features unchanged; ``shapes`` reshapes
named features (RACE's flat ``[4 * L]`` ids -> ``[4, L]``). Shared so that the three tasks batch, shuffle and
repeat the same way with one implementation. TensorFlow is imported on first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SHUFFLE_BUFFER", "record_dataset"]

# The official task input_fns shuffle with a buffer of 100; 1000 mixes better and still fits any host.
SHUFFLE_BUFFER = 1000


def record_dataset(
    record_file: str | Sequence[str],
    spec: Mapping[str, Any],
    batch_size: int,
    is_training: bool,
    seed: int | None = None,
    drop_remainder: bool = False,
    shapes: Mapping[str, Sequence[int]] | None = None,
):
    """``tf.data`` of feature dicts parsed from ``record_file`` with ``spec`` (int64 -> int32, reshaped by
    ``shapes``), batched by ``batch_size``.

    Training: shuffle (buffer :data:`SHUFFLE_BUFFER`, ``seed``, reshuffled each epoch), repeat, drop the remainder.
    Otherwise file order, once, keeping the last partial batch unless ``drop_remainder``.
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

    ds = tf.data.TFRecordDataset(record_file)
    if is_training:
        ds = ds.shuffle(SHUFFLE_BUFFER, seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size, drop_remainder=drop_remainder or is_training).prefetch(tf.data.AUTOTUNE)
