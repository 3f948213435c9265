"""Fine-tuning throughput of ALBERT-base on real MRPC pairs: albert-tf (length bucketing) vs transformers vs keras-hub.

One pass of ``--pairs`` (512) MRPC training pairs (the first rows of ``<shared data>/glue/MRPC/train.tsv``, file
order, no shuffle), batch ``--batch`` (8, so 64 steps), sequences capped at ``--max_seq_length`` (128), float32,
ALBERT-base v2 dimensions, 2 labels, randomly initialised (``--seed``; throughput does not depend on the weights'
values; nothing is downloaded), encoder dropout 0 (the v2 configs) and classifier dropout 0.1 everywhere. Each
implementation is what a user of that library writes to fine-tune, input pipeline included in every timed step:

* ``albert_tf``: the run_classifier pieces: the MRPC processor + SentencePiece ``FullTokenizer`` write the keyed
  feature cache (untimed, as a run does once), ``albert_tf.data.glue.load_dataset`` reads it with the default
  ``--bucket_lengths`` (each batch cut to its longest pair rounded up to the next of 32/48/64/80/96/128),
  ``AlbertClassifier``, the official per-example loss and ``AdamWeightDecay``, one
  ``tf.function(reduce_retracing=True)`` training step.
* ``albert_tf_fixed``: the same with ``--bucket_lengths=none`` (every batch 128 long): what bucketing buys.
* ``transformers_torch``: ``AutoTokenizer`` on the tokenizer files albert-tf exports for the same SentencePiece
  model (pairs tokenized up-front, truncated to 128, no padding, as ``datasets.map`` would),
  ``DataCollatorWithPadding`` per batch (dynamic padding to the batch's longest),
  ``AlbertForSequenceClassification``, ``torch.optim.AdamW``.
* ``keras_hub``: ``AlbertTextClassifier`` with its own ``AlbertTextClassifierPreprocessor`` (``AlbertTokenizer`` on
  the same proto, ``sequence_length`` 128, every batch padded to it), ``train_on_batch`` on batches of raw string
  pairs (keras-hub's pipeline model runs the preprocessor inside it), ``AdamW``.

Every implementation gets ``--threads`` CPU threads (torch ``set_num_threads``; TensorFlow intra- and inter-op
pools), default 2. Each lives in its own worker process (one framework's spinning thread pool cannot steal the cores
of the next). Before timing, each worker traces every batch shape it will meet (one untimed step on the first batch
of each padded length of the pass: albert-tf's buckets, keras-hub's one shape, the dynamic lengths of transformers)
plus ``--warmup`` more, then restarts its pass. The driver then interleaves the workers step by step (the order
rotated each round) so they all see the same machine load; the share of the CPUs that other processes used during
each round is recorded (``foreign_cpu_share_*``: 0 on a quiet machine). ``examples_per_s`` = pairs / the sum of the
pass's step times; the median step is reported beside it.

Prints one JSON object with a top-level ``albert_tf_over_best_peer`` (albert-tf examples/s over the best of
transformers and keras-hub). Smoke run: ``python benchmarks/finetune_throughput.py --pairs 16 --warmup 0``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import ForeignLoad, machine_info, shared_data_dir, versions  # noqa: E402

PRESET = "albert_base_v2"
V, E, H, L, N, I = 30000, 128, 768, 12, 12, 3072  # ALBERT-base v2 (albert_tf/configs/albert_base_v2.json)
NUM_LABELS = 2
LEARNING_RATE = 2e-5
CLASSIFIER_DROPOUT = 0.1
IMPLEMENTATIONS = ("albert_tf", "albert_tf_fixed", "transformers_torch", "keras_hub")
PEERS = ("transformers_torch", "keras_hub")


# ----------------------------------------------------------------------------------------------- inputs
def read_pairs(mrpc_train: str, n: int) -> tuple[list[str], list[list[str]]]:
    """The header and the first ``n`` rows of MRPC ``train.tsv`` (quality, id1, id2, #1 String, #2 String)."""
    with open(mrpc_train, encoding="utf-8-sig", newline="") as f:
        rows = [r for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    header, body = rows[0], [r for r in rows[1:] if len(r) >= 5]
    if len(body) < n:
        raise SystemExit(f"{mrpc_train} holds {len(body)} pairs, fewer than --pairs={n}")
    return header, body[:n]


def write_subset(header: list[str], rows: list[list[str]], data_dir: str) -> None:
    """``data_dir/train.tsv`` holding exactly the benchmark's pairs (what albert-tf's MRPC processor reads)."""
    os.makedirs(data_dir, exist_ok=True)
    with open(os.path.join(data_dir, "train.tsv"), "w", encoding="utf-8", newline="") as f:
        for row in [header, *rows]:
            f.write("\t".join(row) + "\n")


def _set_tf_threads(threads: int) -> None:
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)


# ----------------------------------------------------------------------------------------------- implementations
class Implementation:
    """One library's fine-tuning loop over the pass: ``reset()`` restarts the pass, ``next_batch()`` runs the input
    pipeline for the next batch, ``length(batch)`` is its padded length and ``train(batch)`` one optimizer step on
    it (returns the loss). ``step()`` = both, recording the length: the timed unit."""

    num_steps: int

    def reset(self) -> None:
        raise NotImplementedError

    def next_batch(self):
        raise NotImplementedError

    def length(self, batch) -> int:
        raise NotImplementedError

    def train(self, batch) -> float:
        raise NotImplementedError

    def step(self) -> float:
        batch = self.next_batch()
        self.padded_lengths.append(self.length(batch))
        return self.train(batch)


class DatasetImplementation(Implementation):
    """An implementation whose batches come from a ``tf.data`` pipeline (``make_dataset``), restarted by reset()."""

    make_dataset: Any

    def reset(self) -> None:
        self.iterator = iter(self.make_dataset())
        self.padded_lengths: list[int] = []

    def next_batch(self):
        return next(self.iterator)


class AlbertTf(DatasetImplementation):
    def __init__(self, args: argparse.Namespace, bucketing: bool) -> None:
        _set_tf_threads(args.threads)
        import keras
        import tensorflow as tf

        from albert_tf.config import AlbertConfig
        from albert_tf.data import glue
        from albert_tf.data.batching import DEFAULT_BUCKET_LENGTHS, bucket_boundaries
        from albert_tf.tasks.glue.model import (
            AlbertClassifier,
            classification_per_example_loss,
            classifier_logits,
        )
        from albert_tf.tokenization import FullTokenizer
        from albert_tf.training.optimizers import create_optimizer

        seq = args.max_seq_length
        tokenizer = FullTokenizer(do_lower_case=True, spm_model_file=args.spm_model_file)
        cache = os.path.join(args.work_dir, "albert_tf_cache_" + ("bucketed" if bucketing else "fixed"))
        cached = glue.cached_features(glue.get_processor("mrpc"), args.data_dir, glue.TRAIN, tokenizer, seq, cache)
        buckets = bucket_boundaries(DEFAULT_BUCKET_LENGTHS if bucketing else None, seq)
        self.make_dataset = lambda: glue.load_dataset(
            cached.record_file, seq, False, args.batch, is_training=False, drop_remainder=True, bucket_lengths=buckets
        )
        keras.utils.set_random_seed(args.seed)
        model = AlbertClassifier(AlbertConfig.from_preset(PRESET), NUM_LABELS, classifier_dropout=CLASSIFIER_DROPOUT)
        names = ("input_ids", "input_mask", "segment_ids")
        model({k: tf.zeros((1, 2), tf.int32) for k in names}, training=False)
        optimizer = create_optimizer("adamw", LEARNING_RATE)
        optimizer.build(model.trainable_variables)

        @tf.function(jit_compile=args.jit_compile, reduce_retracing=True)
        def train_step(features):
            with tf.GradientTape() as tape:
                logits = classifier_logits(model({k: features[k] for k in names}, training=True))
                loss = tf.reduce_mean(classification_per_example_loss(logits, features["label_ids"], NUM_LABELS))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply(grads, model.trainable_variables)
            return loss

        self.train_step = train_step
        self.num_steps = args.pairs // args.batch
        self.reset()

    def length(self, batch) -> int:
        return int(batch["input_ids"].shape[1])

    def train(self, batch) -> float:
        return float(self.train_step(batch))


class TransformersTorch(Implementation):
    def __init__(self, args: argparse.Namespace, rows: list[list[str]]) -> None:
        import torch
        import transformers

        torch.set_num_threads(args.threads)
        torch.manual_seed(args.seed)
        # The tokenizer files albert-tf writes for Hugging Face exports (tested id for id against FullTokenizer);
        # transformers 5's AlbertTokenizer(vocab_file=<spm model>) silently maps every word to <unk>.
        from albert_tf.checkpoints.huggingface_tokenizer import save_huggingface_tokenizer

        tokenizer_dir = os.path.join(args.work_dir, "hf_tokenizer")
        save_huggingface_tokenizer(tokenizer_dir, spm_model_file=args.spm_model_file, do_lower_case=True)
        tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer_dir)
        self.features = []
        for row in rows:
            encoded = tokenizer(row[3], row[4], truncation=True, max_length=args.max_seq_length)
            self.features.append({**encoded, "label": int(row[0])})
        self.collator = transformers.DataCollatorWithPadding(tokenizer, return_tensors="pt")
        config = transformers.AlbertConfig(
            vocab_size=V, embedding_size=E, hidden_size=H, num_hidden_layers=L, num_attention_heads=N,
            intermediate_size=I, hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
            classifier_dropout_prob=CLASSIFIER_DROPOUT, max_position_embeddings=512, num_labels=NUM_LABELS,
        )
        self.model = transformers.AlbertForSequenceClassification(config).train()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
        self.batch = args.batch
        self.num_steps = args.pairs // args.batch
        self.reset()

    def reset(self) -> None:
        self.position = 0
        self.padded_lengths: list[int] = []

    def next_batch(self):
        chunk = self.features[self.position : self.position + self.batch]
        self.position += self.batch
        return self.collator(chunk)

    def length(self, batch) -> int:
        return int(batch["input_ids"].shape[1])

    def train(self, batch) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.model(**batch).loss
        loss.backward()
        self.optimizer.step()
        return float(loss.item())


class KerasHub(DatasetImplementation):
    def __init__(self, args: argparse.Namespace, rows: list[list[str]]) -> None:
        _set_tf_threads(args.threads)
        import keras
        import keras_hub
        import tensorflow as tf

        keras.utils.set_random_seed(args.seed)
        tokenizer = keras_hub.models.AlbertTokenizer(proto=args.spm_model_file)
        preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(
            tokenizer=tokenizer, sequence_length=args.max_seq_length
        )
        backbone = keras_hub.models.AlbertBackbone(
            vocabulary_size=V, num_layers=L, num_heads=N, num_groups=1, num_inner_repetitions=1, embedding_dim=E,
            hidden_dim=H, intermediate_dim=I, dropout=0.0, max_sequence_length=512, num_segments=2,
        )
        self.model = keras_hub.models.AlbertTextClassifier(
            backbone=backbone, num_classes=NUM_LABELS, preprocessor=preprocessor, dropout=CLASSIFIER_DROPOUT
        )
        self.model.compile(
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            optimizer=keras.optimizers.AdamW(LEARNING_RATE, weight_decay=0.01),
            jit_compile=args.jit_compile,
        )
        texts = (tf.constant([r[3] for r in rows]), tf.constant([r[4] for r in rows]))
        labels = tf.constant([int(r[0]) for r in rows], tf.int32)
        self.make_dataset = lambda: tf.data.Dataset.from_tensor_slices((texts, labels)).batch(
            args.batch, drop_remainder=True
        )
        self.sequence_length = args.max_seq_length
        self.num_steps = args.pairs // args.batch
        self.reset()

    def length(self, batch) -> int:
        return self.sequence_length  # the preprocessor pads every batch to sequence_length

    def train(self, batch) -> float:
        logs = self.model.train_on_batch(*batch)  # raw strings: train_on_batch runs the preprocessor
        return float(logs[0] if isinstance(logs, list | tuple) else logs)  # [loss, metrics...] when compiled so


def build(name: str, args: argparse.Namespace, rows: list[list[str]]) -> Implementation:
    if name == "albert_tf":
        return AlbertTf(args, bucketing=True)
    if name == "albert_tf_fixed":
        return AlbertTf(args, bucketing=False)
    if name == "transformers_torch":
        return TransformersTorch(args, rows)
    if name == "keras_hub":
        return KerasHub(args, rows)
    raise ValueError(name)


# ----------------------------------------------------------------------------------------------- workers
def _worker(name: str, args: argparse.Namespace, rows: list[list[str]], conn) -> None:
    """Own one implementation. ``warmup``: untimed steps until every shape of the pass was seen once, then
    ``--warmup`` more, then restart the pass; ``step``: one timed step; ``info``: lengths and losses; ``stop``."""
    try:
        t = time.perf_counter()
        impl = build(name, args, rows)
        build_s = time.perf_counter() - t
        losses: list[float] = []
        while True:
            message = conn.recv()
            if message == "stop":
                break
            if message == "warmup":
                t = time.perf_counter()
                seen: set[int] = set()
                for _ in range(impl.num_steps):  # one step on the first batch of every padded length of the pass
                    batch = impl.next_batch()
                    if impl.length(batch) not in seen:
                        seen.add(impl.length(batch))
                        impl.train(batch)
                impl.reset()
                for _ in range(min(args.warmup, impl.num_steps)):
                    impl.step()
                impl.reset()
                conn.send({"build_s": build_s, "warmup_s": time.perf_counter() - t, "shapes": sorted(seen)})
            elif message == "step":
                t = time.perf_counter()
                losses.append(impl.step())
                conn.send(time.perf_counter() - t)
            elif message == "info":
                conn.send({"padded_lengths": impl.padded_lengths, "losses": losses})
    except Exception:  # report, do not hang the driver
        conn.send({"error": traceback.format_exc()})


def _ask(conn, proc, message: str, timeout: float = 3600.0):
    conn.send(message)
    if not conn.poll(timeout):
        raise RuntimeError(f"worker {proc.pid} gave no answer to {message!r} in {timeout:.0f} s")
    answer = conn.recv()
    if isinstance(answer, dict) and "error" in answer:
        raise RuntimeError(answer["error"])
    return answer


# ----------------------------------------------------------------------------------------------- main
def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=512, help="MRPC training pairs in the pass (first rows)")
    parser.add_argument("--batch", type=int, default=8, help="batch size (pairs / batch steps)")
    parser.add_argument("--max_seq_length", type=int, default=128, help="sequence cap of every implementation")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of every implementation")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps after every shape was traced")
    parser.add_argument("--jit_compile", action="store_true", help="XLA for albert-tf and keras-hub (default off)")
    parser.add_argument("--only", default="", help=f"comma list of implementations: {','.join(IMPLEMENTATIONS)}")
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    parser.add_argument("--spm_model_file", default=None, help="SentencePiece model (default: <shared data>/spm/"
                        "30k-clean.model; shared data = $ALBERT_TF_SHARED_DATA or ../shared/data)")
    parser.add_argument("--mrpc_file", default=None, help="MRPC train.tsv (default: <shared data>/glue/MRPC/train.tsv)")
    args = parser.parse_args(argv)
    if args.pairs < args.batch or args.batch < 1 or args.threads < 1 or args.warmup < 0:
        parser.error("need --pairs >= --batch >= 1, --threads >= 1, --warmup >= 0")
    args.pairs -= args.pairs % args.batch  # whole batches only (512 / 8 = 64 steps)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(IMPLEMENTATIONS)
    unknown = sorted(set(names) - set(IMPLEMENTATIONS))
    if unknown:
        parser.error(f"unknown implementation(s) {', '.join(unknown)}; choose from {', '.join(IMPLEMENTATIONS)}")
    args.names = names
    shared = shared_data_dir()
    args.spm_model_file = args.spm_model_file or str(shared / "spm" / "30k-clean.model")
    args.mrpc_file = args.mrpc_file or str(shared / "glue" / "MRPC" / "train.tsv")
    for flag in ("spm_model_file", "mrpc_file"):
        if not os.path.isfile(getattr(args, flag)):
            parser.error(f"--{flag} {getattr(args, flag)} does not exist")
    return args


def main(argv=None) -> None:
    import multiprocessing as mp

    args = parse_args(argv)
    header, rows = read_pairs(args.mrpc_file, args.pairs)
    args.work_dir = tempfile.mkdtemp(prefix="finetune_throughput_")
    args.data_dir = os.path.join(args.work_dir, "MRPC")
    write_subset(header, rows, args.data_dir)
    ctx = mp.get_context("spawn")
    workers = {}
    try:
        for name in args.names:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(name, args, rows, child), daemon=True)
            proc.start()
            workers[name] = (proc, parent)
        setup = {name: _ask(conn, proc, "warmup") for name, (proc, conn) in workers.items()}  # one at a time
        num_steps = args.pairs // args.batch
        times: dict[str, list[float]] = {name: [] for name in workers}
        meter = ForeignLoad([os.getpid()] + [proc.pid for proc, _ in workers.values()])
        foreign: list[float | None] = []
        order = list(workers)
        for step in range(num_steps):  # interleaved rounds, the order rotated each round
            meter.start()
            for name in order[step % len(order):] + order[: step % len(order)]:
                proc, conn = workers[name]
                times[name].append(_ask(conn, proc, "step"))
            foreign.append(meter.stop())
        info = {name: _ask(conn, proc, "info") for name, (proc, conn) in workers.items()}
        for proc, conn in workers.values():
            conn.send("stop")
            proc.join(timeout=60)
    finally:
        for proc, _ in workers.values():
            if proc.is_alive():
                proc.terminate()
        shutil.rmtree(args.work_dir, ignore_errors=True)

    results = {}
    for name, ts in times.items():
        lengths = info[name]["padded_lengths"]
        results[name] = {
            "examples_per_s": round(args.pairs / sum(ts), 3),
            "pass_s": round(sum(ts), 2),
            "median_step_s": round(statistics.median(ts), 4),
            "median_step_examples_per_s": round(args.batch / statistics.median(ts), 3),
            "mean_padded_length": round(statistics.mean(lengths), 1),
            "padded_lengths": {str(k): lengths.count(k) for k in sorted(set(lengths))},
            "first_loss": round(info[name]["losses"][0], 4),
            "last_loss": round(info[name]["losses"][-1], 4),
            "build_s": round(setup[name]["build_s"], 1),
            "warmup_s": round(setup[name]["warmup_s"], 1),
            "step_times_s": [round(t, 3) for t in ts],
        }
    quiet = [f for f in foreign if f is not None]
    summary = {
        "benchmark": "albert_base_finetune_mrpc_pass",
        "pairs": args.pairs,
        "batch": args.batch,
        "steps": num_steps,
        "max_seq_length": args.max_seq_length,
        "dtype": "float32",
        "threads": args.threads,
        "jit_compile": args.jit_compile,
        "mrpc_file": args.mrpc_file,
        "foreign_cpu_share_median": round(statistics.median(quiet), 3) if quiet else None,
        "foreign_cpu_share_max": max(quiet) if quiet else None,
        "machine": machine_info(),
        "versions": versions(extra=("keras-hub",)),
        "results": results,
    }
    peers = [results[k]["examples_per_s"] for k in PEERS if k in results]
    if "albert_tf" in results and peers:
        summary["albert_tf_over_best_peer"] = round(results["albert_tf"]["examples_per_s"] / max(peers), 3)
    if "albert_tf" in results and "albert_tf_fixed" in results:
        summary["bucketing_speedup"] = round(
            results["albert_tf"]["examples_per_s"] / results["albert_tf_fixed"]["examples_per_s"], 3
        )
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
