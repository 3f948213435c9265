"""TensorBoard scalars without the ``tensorboard`` package.

TF 2.21 no longer depends on tensorboard, and ``tf.summary.scalar`` lives in it. The event files only
need the core ``tf.summary.write`` op plus the scalars-plugin metadata, which TensorBoard reads as usual.
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow.core.framework import summary_pb2


def _scalar_metadata() -> bytes:
    metadata = summary_pb2.SummaryMetadata()
    metadata.plugin_data.plugin_name = "scalars"
    metadata.data_class = summary_pb2.DATA_CLASS_SCALAR
    return metadata.SerializeToString()


_METADATA = _scalar_metadata()


def write_scalars(logdir: str, step: int, values: dict[str, float], writer=None):
    """Write ``values`` as TensorBoard scalars at ``step``; returns the (reusable) writer."""
    writer = writer or tf.summary.create_file_writer(logdir)
    with writer.as_default():
        for tag, value in values.items():
            tf.summary.write(tag, tf.constant(float(value), tf.float32), step=int(step), metadata=_METADATA)
    writer.flush()
    return writer


def read_scalars(logdir: str) -> dict[str, list[tuple[int, float]]]:
    """All scalars in the event files under ``logdir`` (for tests and scripts)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(tf.io.gfile.glob(f"{logdir}/events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                tensor = tf.make_ndarray(value.tensor) if value.HasField("tensor") else value.simple_value
                out.setdefault(value.tag, []).append((int(event.step), float(tensor)))
    return out
