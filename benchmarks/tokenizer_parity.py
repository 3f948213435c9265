"""Python FullTokenizer vs in-graph AlbertPreprocessor: id agreement on a real corpus, printed as JSON.

Singles: the full ragged ids of every non-empty line (no truncation). Pairs: consecutive non-empty lines packed as
``[CLS] a [SEP] b [SEP]`` at ``--max_seq_length`` (Python reference: ``packing.pack_inputs``). Every difference is
listed with its cause: ``preprocess`` (the pre-processed strings differ), ``score_tie`` (same pre-processed text,
different segmentation with an equal sum of piece scores, i.e. a Viterbi tie broken differently) or ``other``.

    python benchmarks/tokenizer_parity.py --max_lines=60000
"""

from __future__ import annotations

import json
import os
import pathlib
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
flags.DEFINE_string("vocab_file", None, "WordPiece vocab: measure the WordPiece path instead of SentencePiece.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case (both paths).")
flags.DEFINE_integer("max_lines", 60000, "Non-empty lines to compare (0 = all).")
flags.DEFINE_integer("max_seq_length", 512, "Packed length for the pair comparison.")
flags.DEFINE_integer("batch_size", 2048, "Lines per in-graph batch.")
flags.DEFINE_integer("max_listed", 200, "Differences listed in full (all are counted).")


def _score(sp, ids: list[int]) -> float:
    return sum(sp.GetScore(i) for i in ids)


def main(argv):
    del argv
    import sentencepiece
    import tensorflow as tf

    from albert_tf.tokenization import AlbertPreprocessor, FullTokenizer
    from albert_tf.tokenization.corpus import iter_lines
    from albert_tf.tokenization.packing import pack_inputs

    lines = []
    for line in iter_lines(FLAGS.input_file):
        lines.append(line)
        if FLAGS.max_lines and len(lines) >= FLAGS.max_lines:
            break
    if FLAGS.vocab_file:
        tok = FullTokenizer(vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    else:
        tok = FullTokenizer(spm_model_file=FLAGS.spm_model_file, do_lower_case=FLAGS.do_lower_case)
    layer = AlbertPreprocessor.from_tokenizer(tok, FLAGS.max_seq_length)
    wordpiece = tok.sp_model is None

    t0 = time.time()
    # WordPiece has no separate pre-processing step (the BasicTokenizer runs inside tokenize)
    py_pre = lines if wordpiece else [tok.preprocess(s) for s in lines]
    py_ids = [tok.convert_tokens_to_ids(tok.tokenize(p, preprocessed=True)) for p in py_pre]
    py_time = time.time() - t0

    spec = tf.TensorSpec([None], tf.string)
    if wordpiece:
        tokenize = tf.function(lambda x: (x, layer.tokenize(x)), input_signature=[spec])
    else:
        tokenize = tf.function(lambda x: (layer.preprocess(x), layer.tokenize(x)), input_signature=[spec])
    pack = tf.function(lambda a, b: layer({"text_a": a, "text_b": b}), input_signature=[spec, spec])
    g_pre, g_ids, g_pairs = [], [], {k: [] for k in ("input_ids", "input_mask", "segment_ids")}
    t0 = time.time()
    for start in range(0, len(lines), FLAGS.batch_size):
        batch = tf.constant(lines[start : start + FLAGS.batch_size])
        pre, ids = tokenize(batch)
        g_pre.extend(p.decode("utf-8") for p in pre.numpy())
        g_ids.extend(ids.to_list())
    graph_time = time.time() - t0
    for start in range(0, len(lines) - 1, FLAGS.batch_size):
        end = min(start + FLAGS.batch_size, len(lines) - 1)
        out = pack(tf.constant(lines[start:end]), tf.constant(lines[start + 1 : end + 1]))
        for k in g_pairs:
            g_pairs[k].extend(out[k].numpy().tolist())

    sp = tok.sp_model
    diffs, causes = [], {"preprocess": 0, "score_tie": 0, "other": 0}
    for i, (a, b) in enumerate(zip(py_ids, g_ids)):
        if a == b:
            continue
        if py_pre[i] != g_pre[i]:
            cause = "preprocess"
        elif not wordpiece and abs(_score(sp, a) - _score(sp, b)) < 1e-4:
            cause = "score_tie"
        else:
            cause = "other"
        causes[cause] += 1
        if len(diffs) < FLAGS.max_listed:
            first = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            lo = max(0, first - 3)
            diffs.append(
                {
                    "line": i,
                    "cause": cause,
                    "text": lines[i][:200],
                    "python_pre": py_pre[i][:200] if cause == "preprocess" else None,
                    "graph_pre": g_pre[i][:200] if cause == "preprocess" else None,
                    "first_difference_at_piece": first,
                    "python": tok.convert_ids_to_tokens(a[lo : first + 8]),
                    "graph": tok.convert_ids_to_tokens(b[lo : first + 8]),
                }
            )
    pair_mismatch = []
    for i in range(len(lines) - 1):
        ref = pack_inputs(py_ids[i], py_ids[i + 1], FLAGS.max_seq_length, tok.cls_id, tok.sep_id)
        if any(ref[k] != g_pairs[k][i] for k in ref):
            pair_mismatch.append(i)
    n = len(lines)
    single_ok = n - sum(causes.values())
    print(
        json.dumps(
            {
                "path": "wordpiece" if wordpiece else "sentencepiece",
                "sentencepiece": sentencepiece.__version__,
                "tensorflow": tf.__version__,
                "lines": n,
                "do_lower_case": FLAGS.do_lower_case,
                "single_agree": single_ok,
                "single_agreement_pct": round(100.0 * single_ok / max(n, 1), 4),
                "single_diff_causes": causes,
                "pairs": n - 1,
                "pair_agree": n - 1 - len(pair_mismatch),
                "pair_agreement_pct": round(100.0 * (n - 1 - len(pair_mismatch)) / max(n - 1, 1), 4),
                "pair_mismatch_lines": pair_mismatch[: FLAGS.max_listed],
                "python_seconds": round(py_time, 2),
                "graph_seconds": round(graph_time, 2),
                "differences": diffs,
                "machine": machine_info(),
            },
            ensure_ascii=False,
            indent=1,
        )
    )


if __name__ == "__main__":
    app.run(main)
