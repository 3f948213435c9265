"""Where the time of an ALBERT train step goes, by TensorFlow op type.

Builds the same train step as ``encoder_throughput.py`` (ALBERT-base, batch 8, seq 128,
float32, AdamW) as a graph, runs it in a session with full tracing and sums the traced
op durations per op type (and the share spent in matmuls). Prints JSON.

Example: ``python benchmarks/profile_encoder.py --runs 3``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import machine_info  # noqa: E402

MATMUL_OPS = {"MatMul", "BatchMatMulV2", "BatchMatMulV3", "_MklMatMul", "_MklFusedMatMul", "_FusedMatMul",
              "_MklBatchMatMulV2", "Einsum", "_MklEinsum", "_MklNativeFusedMatMul", "_MklNativeBatchMatMulV2"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="albert_base_v2")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3, help="traced runs (after 2 untraced warm-up runs)")
    args = parser.parse_args()


    from albert_tf.config import AlbertConfig
    from albert_tf.modeling import AlbertEncoder

    tf.compat.v1.disable_eager_execution()
    cfg = AlbertConfig.from_name(args.config)
    model = AlbertEncoder(cfg)
    rng = np.random.default_rng(0)
    ids = tf.constant(rng.integers(5, cfg.vocab_size, (args.batch, args.seq)).astype("int32"))
    mask = tf.ones((args.batch, args.seq), tf.int32)
    seg = tf.zeros((args.batch, args.seq), tf.int32)
    out = model({"input_ids": ids, "input_mask": mask, "segment_ids": seg}, training=True)
    loss = tf.reduce_mean(tf.square(out["sequence_output"])) + tf.reduce_mean(tf.square(out["pooled_output"]))
    opt = tf.compat.v1.train.AdamOptimizer(1e-5)
    train_op = opt.minimize(loss, var_list=[v.value for v in model.trainable_variables])
    totals: collections.Counter = collections.Counter()
    wall = []
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for _ in range(2):
            sess.run(train_op)
        for _ in range(args.runs):
            meta = tf.compat.v1.RunMetadata()
            opts = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
            sess.run(train_op, options=opts, run_metadata=meta)
            starts, ends = [], []
            for dev in meta.step_stats.dev_stats:
                for node in dev.node_stats:
                    op = node.timeline_label.split("(")[0].split("=")[-1].strip() or node.node_name
                    op_type = op.split(" ")[-1] if " " in op else op
                    dur = (node.all_end_rel_micros or node.op_end_rel_micros) / 1e6
                    totals[op_type] += dur / args.runs
                    starts.append(node.all_start_micros)
                    ends.append(node.all_start_micros + node.all_end_rel_micros)
            wall.append((max(ends) - min(starts)) / 1e6)
    traced = sum(totals.values())
    matmul = sum(v for k, v in totals.items() if k in MATMUL_OPS or "MatMul" in k or "Einsum" in k)
    top = totals.most_common(25)
    print(json.dumps({
        "config": args.config, "batch": args.batch, "seq": args.seq,
        "traced_step_wall_s": round(float(np.median(wall)), 3),
        "sum_of_op_times_s": round(traced, 3),
        "matmul_share_of_op_time": round(matmul / traced, 3),
        "by_op_type_s": {k: round(v, 4) for k, v in top},
        "machine": machine_info(),
    }, indent=2))


if __name__ == "__main__":
    main()
