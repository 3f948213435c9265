"""Serving batches of mixed lengths: does packing, or length sorting, inside the raw-text signature pay?

A request is a batch of ``--batch`` (32) consecutive MRPC dev pairs as raw strings (``<shared data>/glue/MRPC/
dev.tsv``; their lengths mix as real traffic's do), tokenized in the graph by the export's own preprocessor
(``AlbertPreprocessor``, ``max_seq_length`` 128) and answered by an ALBERT-base ``AlbertClassifier`` (random
weights, ``--seed``: time does not depend on their values), float32, 2 threads. Four forwards of the same
preprocessed batch, each one ``tf.function`` over raw strings, as a signature is:

* ``bucketed``: what ``export_classifier`` serves (its default): the batch cut to its longest sequence rounded up
  to the next bucket length (``trim_batch``), one example per row;
* ``sorted_split``: the batch sorted by length and cut into ``--chunks`` (4) equal parts, each cut to its own
  longest (bucketed) and run on its own, the answers put back in request order;
* ``real_tokens`` (what ``export_classifier(real_tokens=True)`` serves): one example per row, only the real tokens
  through the embeddings, projections and FFN (``AlbertEncoder.call_packed`` on the batch as rows of one example
  each, ``data.packing.one_example_per_row``; attention per row);
* ``packed``: the examples packed first-fit into rows of 128 (``pack_batch``, as fine-tuning packs), the dense
  layers on the real tokens only (``call_packed``): attention over fewer, fuller rows.

All four must give the bucketed answers (the largest logit difference is reported). The driver interleaves the
variants request by request (the order rotated each round) over ``--rounds`` rounds of the ``--requests``
different batches, after ``--warmup`` untimed rounds (every shape traced); each variant's latency is the median
per request, ``*_over_bucketed`` the speed-up over the stock path. Records the share of the CPUs other processes
used (``foreign_cpu_share_*``). Prints one JSON object; ``--smoke``: a 2-layer H 64 model, batch 8.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import ForeignLoad, emit, machine_info, shared_data_dir, versions  # noqa: E402

VARIANTS = ("bucketed", "sorted_split", "real_tokens", "packed")


def build_variants(args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    import keras
    import tensorflow as tf

    from albert_tf.config import AlbertConfig
    from albert_tf.data.batching import DEFAULT_BUCKET_LENGTHS, bucket_boundaries, trim_batch
    from albert_tf.data.packing import merge_slices, one_example_per_row, pack_batch
    from albert_tf.export.savedmodel import make_preprocessor, preprocess
    from albert_tf.tasks.glue.model import AlbertClassifier, classifier_logits

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    keras.utils.set_random_seed(args.seed)
    config = AlbertConfig.from_name("albert_base_v2")
    if args.smoke:
        config = config.replace(hidden_size=64, num_attention_heads=2, intermediate_size=128, num_hidden_layers=2)
    model = AlbertClassifier(config, 2, classifier_dropout=0.0)
    seq = args.max_seq_length
    preprocessor = make_preprocessor(args.spm_model_file, seq)
    boundaries = bucket_boundaries(DEFAULT_BUCKET_LENGTHS, seq)
    string = tf.TensorSpec([None], tf.string)

    def features(text_a, text_b):
        return trim_batch(preprocess(preprocessor, text_a, text_b), boundaries)

    def unpacked(f):
        return classifier_logits(model(f, training=False))

    @tf.function(input_signature=[string, string])
    def bucketed(text_a, text_b):
        return unpacked(features(text_a, text_b))

    @tf.function(input_signature=[string, string])
    def sorted_split(text_a, text_b):
        f = preprocess(preprocessor, text_a, text_b)
        order = tf.argsort(tf.reduce_sum(f["input_mask"], axis=1))
        parts = []
        for chunk in tf.split(order, args.chunks):  # B must be a multiple of --chunks
            parts.append(unpacked(trim_batch({k: tf.gather(v, chunk) for k, v in f.items()}, boundaries)))
        return tf.scatter_nd(order[:, None], tf.concat(parts, axis=0), tf.shape(parts[0]) * [args.chunks, 1])

    @tf.function(input_signature=[string, string])
    def real_tokens(text_a, text_b):
        return model.packed_logits(one_example_per_row(features(text_a, text_b)))

    @tf.function(input_signature=[string, string])
    def packed(text_a, text_b):
        return model.packed_logits(merge_slices(pack_batch(features(text_a, text_b), seq, 1, boundaries)))

    found = {"bucketed": bucketed, "sorted_split": sorted_split, "real_tokens": real_tokens, "packed": packed}
    return found, preprocessor


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32, help="pairs per request")
    parser.add_argument("--requests", type=int, default=8, help="different batches (consecutive dev pairs)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds over the requests")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (traces every shape)")
    parser.add_argument("--chunks", type=int, default=4, help="sorted_split: parts of a sorted batch")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="a 2-layer H 64 model, batch 8, 2 requests, 1 round")
    parser.add_argument("--spm_model_file", default=None, help="default: <shared data>/spm/30k-clean.model")
    parser.add_argument("--mrpc_file", default=None, help="default: <shared data>/glue/MRPC/dev.tsv")
    parser.add_argument("--output", default="", help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.batch, args.requests, args.rounds, args.chunks = 8, 2, 1, 2
    if args.batch % args.chunks:
        parser.error(f"--batch {args.batch} is not a multiple of --chunks {args.chunks}")
    shared = shared_data_dir()
    args.spm_model_file = args.spm_model_file or str(shared / "spm" / "30k-clean.model")
    args.mrpc_file = args.mrpc_file or str(shared / "glue" / "MRPC" / "dev.tsv")
    for path in (args.spm_model_file, args.mrpc_file):
        if not os.path.isfile(path):
            parser.error(f"{path}: no such file (set ALBERT_TF_SHARED_DATA or pass the flag)")
    from albert_tf.data import glue

    examples = glue.get_processor("mrpc").read_examples(args.mrpc_file, glue.DEV)  # the runners' own reader
    pairs = [(e.text_a, e.text_b) for e in examples]
    if len(pairs) < args.batch * args.requests:
        parser.error(f"{args.mrpc_file}: {len(pairs)} pairs, fewer than --batch x --requests")

    import numpy as np
    import tensorflow as tf

    variants, preprocessor = build_variants(args)
    requests = []
    for k in range(args.requests):
        chunk = pairs[k * args.batch:(k + 1) * args.batch]
        requests.append((tf.constant([a for a, _ in chunk]), tf.constant([b for _, b in chunk])))
    lengths = [int(v) for a, b in requests
               for v in tf.reduce_sum(preprocessor({"text_a": a, "text_b": b})["input_mask"], axis=1)]

    reference = [variants["bucketed"](*r).numpy() for r in requests]
    differences = {name: max(float(np.abs(fn(*r).numpy() - ref).max()) for r, ref in zip(requests, reference))
                   for name, fn in variants.items()}
    for _ in range(args.warmup):
        for r in requests:
            for fn in variants.values():
                fn(*r)
    times: dict[str, list[float]] = {name: [] for name in variants}
    meter, foreign, names = ForeignLoad([os.getpid()]), [], list(variants)
    for round_index in range(args.rounds):
        for i, r in enumerate(requests):
            meter.start()
            turn = (round_index * len(requests) + i) % len(names)
            for name in names[turn:] + names[:turn]:
                t = time.perf_counter()
                variants[name](*r)[0].numpy()
                times[name].append(time.perf_counter() - t)
            foreign.append(meter.stop())
    median = {name: statistics.median(ts) for name, ts in times.items()}
    quiet = [f for f in foreign if f is not None]
    summary = {
        "benchmark": "albert_serving_mixed_batches",
        "model": "smoke" if args.smoke else "albert_base_v2",
        "batch": args.batch, "requests": args.requests, "rounds": args.rounds, "chunks": args.chunks,
        "max_seq_length": args.max_seq_length, "dtype": "float32", "threads": args.threads,
        "mean_length": round(statistics.mean(lengths), 1), "max_length": max(lengths), "min_length": min(lengths),
        "foreign_cpu_share_median": round(statistics.median(quiet), 3) if quiet else None,
        "foreign_cpu_share_max": max(quiet) if quiet else None,
        "machine": machine_info(), "versions": versions(),
        # 4 significant digits: a smoke run's millisecond medians keep the precision their ratios are checked to
        "median_request_s": {k: float(f"{v:.4g}") for k, v in median.items()},
        "max_logit_difference_from_bucketed": {k: float(f"{v:.3g}") for k, v in differences.items()},
        "request_times_s": {k: [float(f"{t:.4g}") for t in ts] for k, ts in times.items()},
    }
    for name in VARIANTS[1:]:
        summary[f"{name}_over_bucketed"] = round(median["bucketed"] / median[name], 3)
    return emit(summary, args.output)


if __name__ == "__main__":
    main()
