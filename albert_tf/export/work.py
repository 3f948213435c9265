"""What one request to an export computes: each op TensorFlow ran for it, with its time and output shapes.

A request is traced as TF Serving runs it (the TF1 session loader, after TensorFlow's graph rewrites, so the fused
oneDNN kernels appear as they run) with a full trace. :func:`dense_work` reads the dense layers' work off it: every
matrix multiply with a 2-D output (the model's projections, FFN, pooler and head: :func:`~albert_tf.modeling.attention.
project` runs each as one; attention's score and context products are batched, of rank 4) and the positions it
computed, so a test can check that a short request is not padded (a 40-token pair computes 40 positions per dense
layer, not 128) without timing anything, and ``benchmarks/serving_latency.py`` reports where a request's time goes.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

from albert_tf.export.savedmodel import TEXT_SIGNATURE, load_in_session

#: Op types that multiply matrices, as they appear in a trace (oneDNN's rewrites included).
MATMUL_OPS = frozenset({
    "MatMul", "BatchMatMulV2", "BatchMatMulV3", "_MklMatMul", "_MklFusedMatMul", "_FusedMatMul",
    "_MklBatchMatMulV2", "_MklNativeFusedMatMul", "_MklNativeBatchMatMulV2", "_MklFusedBatchMatMulV2",
    "_MklNativeFusedBatchMatMulV2", "Einsum", "_MklEinsum",
})


@dataclasses.dataclass(frozen=True)
class TracedOp:
    """One op of a traced request: its type, node name, milliseconds and the shapes of its outputs (oneDNN's
    metadata outputs, of rank 1 and uint8, included as TensorFlow reports them)."""

    op_type: str
    name: str
    ms: float
    output_shapes: tuple[tuple[int, ...], ...]


@dataclasses.dataclass(frozen=True)
class RequestTrace:
    """The ops of ``runs`` traced requests (one list per request) and their wall times in seconds."""

    ops: tuple[tuple[TracedOp, ...], ...]
    walls: tuple[float, ...]

    def time_per_op_type(self) -> dict[str, float]:
        """Milliseconds per op type, the mean over the traced requests, largest first."""
        totals: collections.Counter = collections.Counter()
        for request in self.ops:
            for op in request:
                totals[op.op_type] += op.ms / len(self.ops)
        return dict(totals.most_common())


def trace_request(export_dir: str, feeds: Mapping[str, Any], signature: str = TEXT_SIGNATURE, output: str | None = None,
                  runs: int = 1, warmup: int = 2) -> RequestTrace:
    """Run ``signature`` of ``export_dir`` on ``feeds`` (input name -> array; strings as ``str``) in a TF1 session
    (TF Serving's loader) ``warmup`` times, then ``runs`` times with a full trace. ``output``: the output fetched
    (default: every output of the signature)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SentencePiece ops of a raw-text signature)

    graph = tf.Graph()
    requests, walls = [], []
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as sess:
        sig, feed = load_in_session(sess, export_dir, signature, feeds)
        fetch = [sig.outputs[k].name for k in ([output] if output else sorted(sig.outputs))]
        for _ in range(warmup):
            sess.run(fetch, feed)
        for _ in range(runs):
            md = tf.compat.v1.RunMetadata()
            options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
            start = time.perf_counter()
            sess.run(fetch, feed, options=options, run_metadata=md)
            walls.append(time.perf_counter() - start)
            requests.append(tuple(_ops_of(md)))
    return RequestTrace(tuple(requests), tuple(walls))


def _ops_of(run_metadata: Any) -> list[TracedOp]:
    out = []
    for device in run_metadata.step_stats.dev_stats:
        for node in device.node_stats:
            label = node.timeline_label
            op_type = label.split(" = ", 1)[1].split("(", 1)[0].strip() if " = " in label else node.node_name
            shapes = tuple(tuple(int(d.size) for d in o.tensor_description.shape.dim) for o in node.output)
            out.append(TracedOp(op_type, node.node_name, (node.op_end_rel_micros - node.op_start_rel_micros) / 1e3,
                                shapes))
    return out


def dense_work(trace: RequestTrace | Sequence[TracedOp]) -> list[tuple[int, int]]:
    """``(positions, width)`` of every dense matrix multiply of one traced request (the first, for a
    :class:`RequestTrace`), in the order TensorFlow ran them: matmul ops whose output is 2-D, ``positions`` its rows
    (the tokens, or examples for the pooler and head, it computed) and ``width`` its columns."""
    ops = trace.ops[0] if isinstance(trace, RequestTrace) else trace
    return [op.output_shapes[0] for op in ops
            if op.op_type in MATMUL_OPS and op.output_shapes and len(op.output_shapes[0]) == 2]
