"""Tokenizer throughput on the real corpus (lines/s), printed as JSON.

Measured side by side in one process, median of ``--repeats`` runs each:

* ``python_full_tokenizer``: ``FullTokenizer.encode`` (preprocess_text + SentencePiece + digit-comma), one line at a
  time, as the pretraining-data code calls it;
* ``python_sentencepiece_raw``: bare ``sentencepiece`` ``encode`` of the same lines (reference: no pre-processing);
* ``graph_tokenize_b<N>``: ``AlbertPreprocessor.tokenize`` in a ``tf.function``, batches of N lines;
* ``graph_pack_b<N>``: the full layer on consecutive-line pairs (ids, mask, segment ids at ``--max_seq_length``);
* ``graph_tf_text_raw_b<N>``: bare ``tensorflow_text.SentencepieceTokenizer`` (reference: no pre-processing).

``--vocab_file`` measures the WordPiece path instead (no raw references).

    python benchmarks/tokenizer_throughput.py --max_lines=20000
"""

from __future__ import annotations

import json
import os
import pathlib
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine_info  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_list("input_file", [str(ROOT.parent / "shared" / "data" / "text")], "Text files or folders of them.")
flags.DEFINE_string("spm_model_file", str(ROOT.parent / "shared" / "data" / "spm" / "30k-clean.model"), "SPM model.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab: measure the WordPiece path (no raw references).")
flags.DEFINE_integer("max_lines", 20000, "Non-empty lines per run.")
flags.DEFINE_list("batch_sizes", ["256", "1024"], "In-graph batch sizes.")
flags.DEFINE_integer("max_seq_length", 128, "Packed length for graph_pack.")
flags.DEFINE_integer("repeats", 3, "Runs per measurement (median reported).")


def _median_rate(fn, n_lines: int, repeats: int) -> dict:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    return {"lines_per_s": round(n_lines / med, 1), "median_s": round(med, 3), "runs_s": [round(t, 3) for t in times]}


def main(argv):
    del argv
    import sentencepiece
    import tensorflow as tf
    import tensorflow_text as tf_text

    from albert_tf.tokenization import AlbertPreprocessor, FullTokenizer
    from albert_tf.tokenization.corpus import iter_lines

    lines = []
    for line in iter_lines(FLAGS.input_file):
        lines.append(line)
        if len(lines) >= FLAGS.max_lines:
            break
    n = len(lines)
    if FLAGS.vocab_file:
        tok = FullTokenizer(vocab_file=FLAGS.vocab_file)
    else:
        tok = FullTokenizer(spm_model_file=FLAGS.spm_model_file)
    layer = AlbertPreprocessor.from_tokenizer(tok, FLAGS.max_seq_length)
    results = {}
    results["python_full_tokenizer"] = _median_rate(lambda: [tok.encode(s) for s in lines], n, FLAGS.repeats)
    spec = tf.TensorSpec([None], tf.string)  # one trace for every batch size
    tokenize = tf.function(layer.tokenize, input_signature=[spec])
    pack = tf.function(lambda a, b: layer({"text_a": a, "text_b": b}), input_signature=[spec, spec])
    raw = None
    if tok.sp_model is not None:
        sp = tok.sp_model
        results["python_sentencepiece_raw"] = _median_rate(lambda: [sp.encode(s) for s in lines], n, FLAGS.repeats)
        raw_tokenizer = tf_text.SentencepieceTokenizer(model=tok.model_bytes, out_type=tf.int32)
        raw = tf.function(raw_tokenizer.tokenize, input_signature=[spec])
    for bs in (int(b) for b in FLAGS.batch_sizes):
        batches = [tf.constant(lines[i : i + bs]) for i in range(0, n, bs)]
        pairs = [(tf.constant(lines[i : i + bs]), tf.constant(lines[i + 1 : i + 1 + bs])) for i in range(0, n - 1, bs)]
        pairs = [(a[: len(b)], b) for a, b in pairs]
        for fn in (tokenize, raw):  # trace / warm up outside the timed runs
            if fn is not None:
                fn(batches[0]).flat_values.numpy()
        pack(*pairs[0])["input_ids"].numpy()

        def run(fn, batches=batches):
            for b in batches:
                fn(b).flat_values.numpy()

        def run_pack(pairs=pairs):
            for a, b in pairs:
                pack(a, b)["input_ids"].numpy()

        results[f"graph_tokenize_b{bs}"] = _median_rate(lambda: run(tokenize), n, FLAGS.repeats)
        results[f"graph_pack_b{bs}"] = _median_rate(run_pack, n - 1, FLAGS.repeats)
        if raw is not None:
            results[f"graph_tf_text_raw_b{bs}"] = _median_rate(lambda: run(raw), n, FLAGS.repeats)
    print(
        json.dumps(
            {
                "path": tok.kind,
                "lines": n,
                "mean_chars_per_line": round(sum(map(len, lines)) / max(n, 1), 1),
                "sentencepiece": sentencepiece.__version__,
                "tensorflow": tf.__version__,
                "machine": machine_info(),
                "load_average": os.getloadavg(),
                "results": results,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    app.run(main)
