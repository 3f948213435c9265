"""Learning is real: pretrain a small ALBERT on real English text and print held-out MLM / SOP accuracy.

Data: ``../shared/data/text`` (Project Gutenberg books + State of the Union addresses for training; the
inaugural addresses, whole documents never seen in training, held out), tokenised with the official
30k-clean SentencePiece model and turned into official n-gram MLM + SOP TFRecords by this project's
``create_pretraining_data`` (seq 128, 20 predictions). Model: E 128, H 256, 4 layers, 4 heads, vocab 30000,
LAMB with the official schedule. Training stops at ``--budget_minutes`` (checked at every evaluation).

Prints one JSON object: the curve (step, seconds, held-out MLM/SOP accuracy and loss) and the chance
levels next to it: MLM uniform 1/30000 and the majority-token baseline (always predicting the most frequent
masked token of the training records); SOP 0.5 and the majority-label baseline (the official data's
random-document negatives make label 1 more frequent than label 0 in corpora of few, long documents).

    .venv/bin/python benchmarks/pretraining_learning.py --budget_minutes=45
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import machine_info  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shared_data", default=os.path.join(os.path.dirname(ROOT), "shared", "data"))
    p.add_argument(
        "--workdir",
        default=os.path.join(tempfile.gettempdir(), "albert_tf_pretraining_learning"),
        help="records (cached between runs) and checkpoints",
    )
    p.add_argument("--budget_minutes", type=float, default=45.0, help="training time budget (<= 45 here)")
    p.add_argument("--num_train_steps", type=int, default=1500, help="schedule length (decay to 0 at this step)")
    p.add_argument("--train_batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=4e-3)
    p.add_argument("--eval_every", type=int, default=200)
    p.add_argument("--max_eval_steps", type=int, default=16, help="held-out batches of 64 per evaluation")
    p.add_argument("--dupe_factor", type=int, default=2)
    p.add_argument("--max_train_mb", type=float, default=6.0, help="cap on training text (MB), whole files")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument(
        "--sentence_order", default="official", choices=["official", "pure"],
        help="SOP negatives of the records: official (swaps + random-document B) or pure (swaps only)",
    )
    return p.parse_args(argv)


def make_records(args) -> tuple[str, str]:
    """Prepared text -> official TFRecords (cached in --workdir)."""
    from albert_tf.data.prepare_text import prepare_files
    from albert_tf.data.pretraining.pipeline import PretrainingDataConfig, create_pretraining_data
    from albert_tf.data.pretraining.vocabulary import TokenizerSpec

    text = os.path.join(args.shared_data, "text")
    spm_model = os.path.join(args.shared_data, "spm", "30k-clean.model")
    os.makedirs(args.workdir, exist_ok=True)
    candidates = sorted(glob.glob(os.path.join(text, "gutenberg_hobil", "*.txt"))) + sorted(
        glob.glob(os.path.join(text, "nltk_state_union", "*"))
    )
    train_files, total = [], 0
    for path in candidates:  # whole files until the cap, so the held-out documents stay unseen
        size = os.path.getsize(path)
        if total + size > args.max_train_mb * 1e6 and train_files:
            continue
        train_files.append(path)
        total += size
    held_files = sorted(glob.glob(os.path.join(text, "nltk_inaugural", "*")))
    spec = TokenizerSpec(spm_model_file=spm_model)
    out = {}
    for name, files, dupe in (("train", train_files, args.dupe_factor), ("heldout", held_files, 1)):
        record = os.path.join(args.workdir, f"{name}.tfrecord")
        if not os.path.exists(record):
            corpus = os.path.join(args.workdir, f"{name}_corpus.txt")
            prepare_files(files, corpus, encodings=("utf-8", "iso-8859-1"))
            cfg = PretrainingDataConfig(
                max_seq_length=128, max_predictions_per_seq=20, dupe_factor=dupe, random_seed=args.seed,
                shuffle_buffer_size=100_000, sentence_order=args.sentence_order,
            )
            create_pretraining_data(corpus, record, spec, cfg, log=None)
        out[name] = record
    return out["train"], out["heldout"]


def main(argv=None) -> None:
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if not os.path.isdir(os.path.join(args.shared_data, "text")):
        print(json.dumps({"skipped": f"no shared data at {args.shared_data}"}))
        return
    t0 = time.time()
    train, heldout = make_records(args)
    data_seconds = time.time() - t0

    from albert_tf.data.pretraining.stats import majority_baselines
    from albert_tf.tasks.pretraining.curve import pretrain_with_curve, small_albert_config

    SOP_CHANCE = 0.5  # SOP is a balanced binary task in the official data

    config = small_albert_config(30000)
    result = pretrain_with_curve(
        config,
        train,
        heldout,
        os.path.join(args.workdir, f"model_{int(time.time())}"),
        num_train_steps=args.num_train_steps,
        train_batch_size=args.train_batch_size,
        learning_rate=args.learning_rate,
        eval_every=args.eval_every,
        max_eval_steps=args.max_eval_steps,
        seed=args.seed,
        time_budget_s=args.budget_minutes * 60,
        log=lambda line: print(line, file=sys.stderr, flush=True),
        progress_log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    last = result["curve"][-1]
    print(
        json.dumps(
            {
                "benchmark": "pretraining_learning",
                "machine": machine_info(),
                "model": "ALBERT E128 H256 L4 A4, vocab 30000 (30k-clean), seq 128, 20 predictions",
                "params": result["params"],
                "optimizer": f"lamb lr {args.learning_rate} batch {args.train_batch_size}",
                "sentence_order": args.sentence_order,
                "data_seconds": round(data_seconds, 1),
                "train_seconds": result["seconds"],
                "steps_done": result["steps_done"],
                "stopped_by_time_budget": result["stopped_by_time_budget"],
                "final": last,
                "chance": {
                    "sentence_order_accuracy_balanced": SOP_CHANCE,
                    "masked_lm_accuracy_uniform": round(1 / 30000, 6),
                    **majority_baselines([train], [heldout]),
                },
                "curve": result["curve"],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
