"""TensorBoard scalars without the ``tensorboard`` package.

TF 2.21 no longer depends on tensorboard, and ``tf.summary.scalar`` lives in it. The event files only
need the core ``tf.summary.write`` op plus the scalars-plugin metadata, which TensorBoard reads as usual.
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow.core.framework import summary_pb2
from tensorflow.core.util import event_pb2

from albert_tf import files as _fs
from albert_tf import interrupts


def _scalar_metadata() -> bytes:
    metadata = summary_pb2.SummaryMetadata()
    metadata.plugin_data.plugin_name = "scalars"
    metadata.data_class = summary_pb2.DATA_CLASS_SCALAR
    return metadata.SerializeToString()


_METADATA = _scalar_metadata()


def write_scalars(logdir: str, step: int, values: dict[str, float], writer=None):
    """Write ``values`` as TensorBoard scalars at ``step``; returns the (reusable) writer.

    A Ctrl-C is held until the values are written and flushed (:func:`interrupts.deferred`): a signal never stops
    the writer half-way through creating its file or an event, so the event file ends whole.
    """
    with interrupts.deferred():
        writer = writer or tf.summary.create_file_writer(logdir)
        with writer.as_default():
            for tag, value in values.items():
                tf.summary.write(tag, tf.constant(float(value), tf.float32), step=int(step), metadata=_METADATA)
        writer.flush()
    return writer


def _scalar_events(logdir: str):
    """``(wall_time, step, tag, value)`` of every scalar in the event files under ``logdir``, file by file in name
    order, each file in write order. Read through ``tf.io.gfile`` / ``tf.data``, so ``gs://`` log dirs work."""
    for path in sorted(_fs.match(f"{logdir}/events.out.tfevents.*")):
        for record in tf.data.TFRecordDataset(path):
            event = event_pb2.Event.FromString(record.numpy())
            for value in event.summary.value:
                scalar = tf.make_ndarray(value.tensor) if value.HasField("tensor") else value.simple_value
                yield float(event.wall_time), int(event.step), value.tag, float(scalar)


def read_scalars(logdir: str) -> dict[str, list[tuple[int, float]]]:
    """All scalars in the event files under ``logdir``, every write kept (for tests and scripts)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for _, step, tag, value in _scalar_events(logdir):
        out.setdefault(tag, []).append((step, value))
    return out


def read_scalar_curves(logdir: str, since: float | None = None) -> dict[str, list[tuple[int, float]]]:
    """The scalar curves of the event files under ``logdir``: ``{tag: [(step, value), ...]}``, sorted by step.

    Unlike :func:`read_scalars`, each step appears once: when a step was written more than once (a run killed
    after a checkpoint and resumed from it logs the steps after that checkpoint again), the latest write wins.
    ``since`` (seconds since the epoch, as ``time.time()``) keeps only the values written at or after that time,
    e.g. what a resumed run added. A directory without event files gives ``{}``.
    """
    latest: dict[str, dict[int, tuple[float, int, float]]] = {}
    for order, (wall_time, step, tag, value) in enumerate(_scalar_events(logdir)):
        if since is not None and wall_time < since:
            continue
        steps = latest.setdefault(tag, {})
        # A later write wins; ``order`` breaks wall-time ties (a later event of the same file).
        if step not in steps or (wall_time, order) > steps[step][:2]:
            steps[step] = (wall_time, order, value)
    return {tag: [(step, steps[step][2]) for step in sorted(steps)] for tag, steps in latest.items()}
