"""Fine-tuning throughput of ALBERT-base on real GLUE data (SST-2 single sentences, MRPC pairs): albert-tf with
packed sequences vs transformers and keras-hub at their best settings.

One pass of ``--examples`` (512) training examples (the first rows of ``<shared data>/glue/<TASK>/train.tsv``,
file order, no shuffle), batch ``--batch`` (32, the official GLUE batch), sequences capped at ``--max_seq_length``
(128), float32, ALBERT-base v2 dimensions, randomly initialised (``--seed``; throughput does not depend on the
weights' values; nothing is downloaded), encoder dropout 0 (the v2 configs) and classifier dropout 0.1 everywhere.
Each implementation is what a user of that library writes to fine-tune, input pipeline included in every timed step:

* ``albert_tf``: the run_classifier pieces with their defaults: the task's processor + SentencePiece ``FullTokenizer``
  write the keyed feature cache (untimed, as a run does once), ``albert_tf.data.glue.load_dataset`` reads it and
  ``albert_tf.data.packing.pack_batch`` packs each batch of 32 into rows of 128 (``--packing=first_fit``: first-fit
  decreasing, block-diagonal attention, positions restarting per example, each example's [CLS] gathered),
  ``AlbertClassifier.packed_logits`` (the embeddings, projections and FFN on the real tokens only), the official
  per-example loss and ``AdamWeightDecay``, one ``tf.function(reduce_retracing=True)`` training step.
* ``albert_tf_packed_rows`` (only with ``--only``: a sixth worker does not fit 24 GiB): the same packed rows with
  every position of them through the dense layers (``packed_logits(unpadded=False)``, what ``--jit_compile`` runs):
  what computing only the real tokens adds.
* ``albert_tf_bucketed``: the same with ``--packing=none``: one example per row, each batch cut to its longest
  example rounded up to the next of 32/48/64/80/96/128 (``--bucket_lengths``).
* ``transformers_torch``: ``AutoTokenizer`` on the tokenizer files albert-tf exports for the same SentencePiece
  model (examples tokenized up-front, truncated to 128, no padding, as ``datasets.map`` would),
  ``DataCollatorWithPadding`` per batch (dynamic padding to the batch's longest), ``AlbertForSequenceClassification``,
  ``torch.optim.AdamW``: batches stay random draws of examples, as packing keeps them.
* ``transformers_grouped``: the same with the Trainer's ``group_by_length`` order (``LengthGroupedSampler``: random
  mega-batches of ``min(examples // (4 * batch), 50)`` batches, each sorted by length: 4 x 128 examples here).
  It changes which examples train together, so it is reported beside the others, not as a peer to beat.
* ``keras_hub``: ``AlbertTextClassifier`` with its own ``AlbertTextClassifierPreprocessor`` (``AlbertTokenizer`` on
  the same proto, ``sequence_length`` 128, every batch padded to it: the preprocessor has no dynamic padding),
  ``train_on_batch`` on batches of raw strings (the pipeline model runs the preprocessor inside it), ``AdamW``.

Every implementation gets ``--threads`` CPU threads (torch ``set_num_threads``; TensorFlow intra- and inter-op
pools), default 2. Each lives in its own worker process (one framework's spinning thread pool cannot steal the cores
of the next). Before timing, each worker traces every batch shape it will meet (one untimed step on the first batch
of each padded shape of the pass) plus ``--warmup`` more, then restarts its pass, and measures its framework's float32
matmul speed at the model's FFN shape (``[batch * 64, 768] x [768, 3072]``, median of 7). The driver then interleaves
the workers step by step (the order rotated each round) so they all see the same machine load; the share of the CPUs
that other processes used during each round is recorded (``foreign_cpu_share_*``: 0 on a quiet machine).
``examples_per_s`` = examples / the sum of the pass's step times; ``padding_fraction`` = the share of the computed
token positions (rows x padded length, summed over the pass) that are padding; ``dense_padding_fraction`` the same
for the positions the dense layers compute (0 for packed albert-tf, whose dense layers run on the real tokens only).

Prints one JSON object with ``albert_tf_over_best_peer`` (albert-tf examples/s over the best of transformers with
dynamic padding and keras-hub), ``tf_over_torch_matmul`` (TensorFlow's matmul GFLOP/s over torch's, measured in the
same run), ``albert_tf_over_transformers_per_matmul_speed`` (albert-tf over transformers divided by that: what is
left once kernel speed is taken out) and ``albert_tf_over_keras_hub`` (same TensorFlow kernels). Smoke run (a tiny
model): ``python benchmarks/finetune_throughput.py --smoke``.
"""

from __future__ import annotations

import argparse
import csv
import functools
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import finetune_throughput_reading as reading  # noqa: E402
from benchmarks.common import (  # noqa: E402
    DatasetImplementation,
    ForeignLoad,
    Implementation,
    TorchImplementation,
    Workers,
    emit,
    machine_info,
    run_main,
    set_tf_threads,
    shared_data_dir,
    versions,
)

PRESET = "albert_base_v2"
BASE = dict(V=30000, E=128, H=768, L=12, N=12, I=3072)  # ALBERT-base v2 (albert_tf/configs/albert_base_v2.json)
SMOKE = dict(V=30000, E=16, H=64, L=2, N=4, I=128)
LEARNING_RATE = 2e-5
CLASSIFIER_DROPOUT = 0.1
IMPLEMENTATIONS = ("albert_tf", "albert_tf_packed_rows", "albert_tf_bucketed", "transformers_torch",
                   "transformers_grouped", "keras_hub")
# Run when --only is not given: five ALBERT-base training workers fill ~18 GiB; a sixth ran a 24 GiB machine out of
# memory, so albert_tf_packed_rows is measured in a run of its own beside albert_tf (--only).
DEFAULT_IMPLEMENTATIONS = tuple(n for n in IMPLEMENTATIONS if n != "albert_tf_packed_rows")
PEERS = ("transformers_torch", "keras_hub")
#: GLUE task -> (processor name, columns of text_a / text_b in train.tsv (None: single sentences), label column,
#: number of labels); the header row is skipped.
TASKS = {"mrpc": ("mrpc", 3, 4, 0, 2), "sst-2": ("sst-2", 0, None, 1, 2)}


# ----------------------------------------------------------------------------------------------- inputs
def read_examples(train_file: str, task: str, n: int) -> tuple[list[str], list[list[str]]]:
    """The header and the first ``n`` well-formed rows of ``train_file``."""
    _, a, b, label, _ = TASKS[task]
    need = max(c for c in (a, b, label) if c is not None) + 1
    with open(train_file, encoding="utf-8-sig", newline="") as f:
        rows = [r for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    header, body = rows[0], [r for r in rows[1:] if len(r) >= need]
    if len(body) < n:
        raise SystemExit(f"{train_file} holds {len(body)} examples, fewer than --examples={n}")
    return header, body[:n]


def texts(rows: list[list[str]], task: str) -> tuple[list[str], list[str] | None, list[int]]:
    """text_a, text_b (None for single sentences) and the integer labels of ``rows``."""
    _, a, b, label, _ = TASKS[task]
    return ([r[a] for r in rows], None if b is None else [r[b] for r in rows], [int(r[label]) for r in rows])


def write_subset(header: list[str], rows: list[list[str]], data_dir: str) -> None:
    """``data_dir/train.tsv`` holding exactly the benchmark's examples (what albert-tf's processor reads)."""
    os.makedirs(data_dir, exist_ok=True)
    with open(os.path.join(data_dir, "train.tsv"), "w", encoding="utf-8", newline="") as f:
        for row in [header, *rows]:
            f.write("\t".join(row) + "\n")


def matmul_gflops(framework: str, rows: int, dims: dict, repeats: int = 7) -> float:
    """Float32 GFLOP/s of ``framework``'s matmul at the FFN shape ``[rows, H] x [H, I]`` (median of ``repeats``)."""
    h, i = dims["H"], dims["I"]
    if framework == "torch":
        import torch

        a, w = torch.randn(rows, h), torch.randn(h, i)

        def run():
            return float((a @ w)[0, 0])
    else:
        import tensorflow as tf

        a, w = tf.random.normal((rows, h)), tf.random.normal((h, i))
        matmul = tf.function(lambda: tf.matmul(a, w)[0, 0])

        def run():
            return float(matmul())
    run()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return 2.0 * rows * h * i / statistics.median(times) / 1e9


# ----------------------------------------------------------------------------------------------- implementations
class AlbertTf(DatasetImplementation):
    def __init__(self, args: argparse.Namespace, packing: bool, unpadded: bool = True) -> None:
        set_tf_threads(args.threads)
        import keras
        import tensorflow as tf

        from albert_tf.config import AlbertConfig
        from albert_tf.data import glue
        from albert_tf.data.batching import DEFAULT_BUCKET_LENGTHS, bucket_boundaries
        from albert_tf.data.packing import merge_slices, pack_dataset
        from albert_tf.tasks.glue.model import AlbertClassifier, classification_per_example_loss
        from albert_tf.tokenization import FullTokenizer
        from albert_tf.training.optimizers import create_optimizer

        seq, d = args.max_seq_length, args.dims
        tokenizer = FullTokenizer(do_lower_case=True, spm_model_file=args.spm_model_file)
        processor = glue.get_processor(TASKS[args.task][0])
        # one cache per worker: two workers writing one cache at once corrupt it
        cache = os.path.join(args.work_dir, "albert_tf_cache_" + ("bucketed" if not packing else
                                                                  "packed" if unpadded else "packed_rows"))
        cached = glue.cached_features(processor, args.data_dir, glue.TRAIN, tokenizer, seq, cache)
        buckets = bucket_boundaries(DEFAULT_BUCKET_LENGTHS, seq)

        def make_dataset():
            dataset = glue.load_dataset(cached.record_files, seq, False, args.batch, is_training=False,
                                        drop_remainder=True, bucket_lengths=None if packing else buckets)
            # what GlueTask.build_inputs does for --packing=first_fit on one replica
            return pack_dataset(dataset, seq, args.batch, 1, buckets) if packing else dataset

        self.make_dataset = make_dataset
        keras.utils.set_random_seed(args.seed)
        config = AlbertConfig.from_name(PRESET).replace(
            vocab_size=d["V"], embedding_size=d["E"], hidden_size=d["H"], num_hidden_layers=d["L"],
            num_attention_heads=d["N"], intermediate_size=d["I"])
        model = AlbertClassifier(config, args.num_labels, classifier_dropout=CLASSIFIER_DROPOUT)
        names = ("input_ids", "input_mask", "segment_ids")
        model({k: tf.zeros((1, 2), tf.int32) for k in names}, training=False)
        optimizer = create_optimizer("adamw", LEARNING_RATE)
        optimizer.build(model.trainable_variables)

        # AlbertEncoder.call_packed(unpadded=True); XLA takes the rows path, as GlueTask does under --jit_compile
        self.dense_on_real_tokens = packing and unpadded and not args.jit_compile

        @tf.function(jit_compile=args.jit_compile, reduce_retracing=True)
        def train_step(features):
            with tf.GradientTape() as tape:
                if packing:
                    merged = merge_slices(features)
                    logits = model.packed_logits(merged, training=True, unpadded=self.dense_on_real_tokens)
                    labels = merged["label_ids"]
                else:
                    logits, labels = model({k: features[k] for k in names}, training=True), features["label_ids"]
                loss = tf.reduce_mean(classification_per_example_loss(logits, labels, args.num_labels))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply(grads, model.trainable_variables)
            return loss

        self.train_step = train_step
        self.packing = packing
        self.num_steps = args.examples // args.batch
        self.reset()

    def shape(self, batch) -> tuple[int, int]:
        shape = batch["input_ids"].shape
        return (int(shape[-3] * shape[-2]), int(shape[-1])) if self.packing else (int(shape[0]), int(shape[1]))

    def real_tokens(self, batch) -> int:
        return int(count_nonzero(batch["input_mask"]))

    def train(self, batch) -> float:
        return float(self.train_step(batch))


def count_nonzero(mask) -> int:
    import numpy as np

    return int(np.count_nonzero(np.asarray(mask)))


class TransformersTorch(TorchImplementation):
    def __init__(self, args: argparse.Namespace, rows: list[list[str]], group_by_length: bool) -> None:
        import torch
        import transformers
        from transformers.trainer_pt_utils import LengthGroupedSampler

        torch.set_num_threads(args.threads)
        torch.manual_seed(args.seed)
        # The tokenizer files albert-tf writes for Hugging Face exports (tested id for id against FullTokenizer);
        # transformers 5's AlbertTokenizer(vocab_file=<spm model>) silently maps every word to <unk>.
        from albert_tf.checkpoints.huggingface_tokenizer import save_huggingface_tokenizer

        tokenizer_dir = os.path.join(args.work_dir, "hf_tokenizer")
        save_huggingface_tokenizer(tokenizer_dir, spm_model_file=args.spm_model_file, do_lower_case=True)
        tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer_dir)
        text_a, text_b, labels = texts(rows, args.task)
        self.features = []
        for i, a in enumerate(text_a):
            encoded = tokenizer(a, None if text_b is None else text_b[i], truncation=True,
                                max_length=args.max_seq_length)
            self.features.append({**encoded, "label": labels[i]})
        self.order = list(range(len(self.features)))
        if group_by_length:  # the Trainer's --group_by_length sampler, seeded
            sampler = LengthGroupedSampler(args.batch, lengths=[len(f["input_ids"]) for f in self.features],
                                           generator=torch.Generator().manual_seed(args.seed))
            self.order = list(sampler)
        self.collator = transformers.DataCollatorWithPadding(tokenizer, return_tensors="pt")
        d = args.dims
        config = transformers.AlbertConfig(
            vocab_size=d["V"], embedding_size=d["E"], hidden_size=d["H"], num_hidden_layers=d["L"],
            num_attention_heads=d["N"], intermediate_size=d["I"], hidden_act="gelu_new", hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, classifier_dropout_prob=CLASSIFIER_DROPOUT, max_position_embeddings=512,
            num_labels=args.num_labels,
        )
        self.model = transformers.AlbertForSequenceClassification(config).train()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
        self.batch = args.batch
        self.num_steps = args.examples // args.batch
        self.reset()

    def next_batch(self):
        chunk = [self.features[i] for i in self.order[self.position : self.position + self.batch]]
        self.position += self.batch
        return self.collator(chunk)

    def shape(self, batch) -> tuple[int, int]:
        return tuple(int(v) for v in batch["input_ids"].shape)


class KerasHub(DatasetImplementation):
    def __init__(self, args: argparse.Namespace, rows: list[list[str]]) -> None:
        set_tf_threads(args.threads)
        import keras
        import keras_hub
        import tensorflow as tf

        keras.utils.set_random_seed(args.seed)
        tokenizer = keras_hub.models.AlbertTokenizer(proto=args.spm_model_file)
        self.preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(
            tokenizer=tokenizer, sequence_length=args.max_seq_length
        )
        d = args.dims
        backbone = keras_hub.models.AlbertBackbone(
            vocabulary_size=d["V"], num_layers=d["L"], num_heads=d["N"], num_groups=1, num_inner_repetitions=1,
            embedding_dim=d["E"], hidden_dim=d["H"], intermediate_dim=d["I"], dropout=0.0, max_sequence_length=512,
            num_segments=2,
        )
        self.model = keras_hub.models.AlbertTextClassifier(
            backbone=backbone, num_classes=args.num_labels, preprocessor=self.preprocessor, dropout=CLASSIFIER_DROPOUT
        )
        self.model.compile(
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            optimizer=keras.optimizers.AdamW(LEARNING_RATE, weight_decay=0.01),
            jit_compile=args.jit_compile,
        )
        text_a, text_b, labels = texts(rows, args.task)
        inputs = tf.constant(text_a) if text_b is None else (tf.constant(text_a), tf.constant(text_b))
        self.make_dataset = lambda: tf.data.Dataset.from_tensor_slices((inputs, tf.constant(labels, tf.int32))).batch(
            args.batch, drop_remainder=True
        )
        self.sequence_length = args.max_seq_length
        self.num_steps = args.examples // args.batch
        self.reset()

    def shape(self, batch) -> tuple[int, int]:
        return (int(batch[1].shape[0]), self.sequence_length)  # the preprocessor pads every batch to its length

    def real_tokens(self, batch) -> int:
        x = self.preprocessor(batch[0])
        x = x[0] if isinstance(x, tuple) else x
        return count_nonzero(x["padding_mask"])

    def train(self, batch) -> float:
        logs = self.model.train_on_batch(*batch)  # raw strings: train_on_batch runs the preprocessor
        return float(logs[0] if isinstance(logs, list | tuple) else logs)  # [loss, metrics...] when compiled so


def build(name: str, args: argparse.Namespace, rows: list[list[str]]) -> Implementation:
    if args.task in reading.TASKS:
        return reading.build(name, args)
    if name in ("albert_tf", "albert_tf_packed_rows", "albert_tf_bucketed"):
        return AlbertTf(args, packing=name != "albert_tf_bucketed", unpadded=name == "albert_tf")
    if name in ("transformers_torch", "transformers_grouped"):
        return TransformersTorch(args, rows, group_by_length=name == "transformers_grouped")
    if name == "keras_hub":
        return KerasHub(args, rows)
    raise ValueError(name)


# ----------------------------------------------------------------------------------------------- workers
class _Worker:
    """One implementation in its worker. ``warmup``: untimed steps until every shape of the pass was seen once, then
    ``--warmup`` more, then restart the pass, then the framework's matmul speed; ``step``: one timed step;
    ``info``: shapes, tokens and losses."""

    def __init__(self, name: str, args: argparse.Namespace, rows: list[list[str]]) -> None:
        t = time.perf_counter()
        self.impl = build(name, args, rows)
        self.build_s = time.perf_counter() - t
        self.args = args
        self.losses: list[float] = []

    def __call__(self, message: str):
        impl, args = self.impl, self.args
        if message == "warmup":
            t = time.perf_counter()
            seen: set[tuple[int, int]] = set()
            for _ in range(impl.num_steps):  # one step on the first batch of every padded shape of the pass
                batch = impl.next_batch()
                if impl.shape(batch) not in seen:
                    seen.add(impl.shape(batch))
                    impl.train(batch)
            impl.reset()
            for _ in range(min(args.warmup, impl.num_steps)):
                impl.step()
            impl.reset()
            warmup_s = time.perf_counter() - t
            gflops = matmul_gflops(impl.framework, args.matmul_rows, args.dims)
            return {"build_s": self.build_s, "warmup_s": warmup_s, "shapes": len(seen), "matmul_gflops": gflops}
        if message == "step":
            t = time.perf_counter()
            self.losses.append(impl.step())
            elapsed = time.perf_counter() - t
            impl.record()
            return elapsed
        if message == "info":
            return {"shapes": impl.shapes, "tokens": impl.tokens, "losses": self.losses,
                    "dense_on_real_tokens": bool(getattr(impl, "dense_on_real_tokens", False))}
        raise ValueError(f"unknown message {message!r}")


# ----------------------------------------------------------------------------------------------- main
def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="mrpc", choices=sorted(TASKS) + list(reading.TASKS),
                        help="GLUE task whose train.tsv is read, or a reading task (squad_v1, squad_v2, race: "
                        "benchmarks/finetune_throughput_reading.py)")
    parser.add_argument("--examples", type=int, default=None, help="training examples in the pass (the first ones; "
                        "SQuAD: windows, RACE: questions); default 512 (GLUE), 192 (SQuAD), 20 (RACE)")
    parser.add_argument("--batch", type=int, default=None, help="batch size (examples / batch steps); default 32 "
                        "(GLUE), 16 (SQuAD windows), 2 (RACE questions: 8 choice sequences of 512)")
    parser.add_argument("--max_seq_length", type=int, default=None,
                        help="sequence cap of every implementation; default 128 (GLUE), 384 (SQuAD), 512 (RACE)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of every implementation")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps after every shape was traced")
    parser.add_argument("--jit_compile", action="store_true", help="XLA for albert-tf and keras-hub (default off)")
    parser.add_argument("--only", default="", help=f"comma list of implementations: {','.join(IMPLEMENTATIONS)} "
                        f"(default: all but albert_tf_packed_rows); reading tasks: {','.join(reading.IMPLEMENTATIONS)} "
                        f"(default: all but albert_tf_bucketed)")
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation and length-grouping seed")
    parser.add_argument("--smoke", action="store_true", help="a 2-layer H 64 model, a few batches (GLUE: 32 "
                        "examples of 8, SQuAD: 8 windows of 4, RACE: 4 questions of 2), no warmup")
    parser.add_argument("--spm_model_file", default=None, help="SentencePiece model (default: <shared data>/spm/"
                        "30k-clean.model; shared data = $ALBERT_TF_SHARED_DATA or ../shared/data)")
    parser.add_argument("--train_file", default=None,
                        help="the task's train.tsv (default: <shared data>/glue/<MRPC|SST-2>/train.tsv)")
    parser.add_argument("--output", default="", help="also write the JSON here")
    args = parser.parse_args(argv)
    is_reading = args.task in reading.TASKS
    length, examples, batch, _ = reading.TASKS[args.task] if is_reading else (128, 512, 32, "examples")
    if args.smoke:
        examples, batch, args.warmup = ((4, 2) if args.task == "race" else (8, 4) if is_reading else (32, 8)) + (0,)
    args.examples = examples if args.examples is None else args.examples
    args.batch = batch if args.batch is None else args.batch
    args.max_seq_length = length if args.max_seq_length is None else args.max_seq_length
    if args.examples < args.batch or args.batch < 1 or args.threads < 1 or args.warmup < 0:
        parser.error("need --examples >= --batch >= 1, --threads >= 1, --warmup >= 0")
    args.examples -= args.examples % args.batch  # whole batches only (512 / 32 = 16 steps)
    args.dims = SMOKE if args.smoke else BASE
    args.learning_rate = LEARNING_RATE
    args.matmul_rows = 2048 if is_reading else args.batch * 64
    known = reading.IMPLEMENTATIONS if is_reading else IMPLEMENTATIONS
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(
        reading.DEFAULT_IMPLEMENTATIONS if is_reading else DEFAULT_IMPLEMENTATIONS)
    unknown = sorted(set(names) - set(known))
    if unknown:
        parser.error(f"unknown implementation(s) {', '.join(unknown)} for --task={args.task}; choose from "
                     f"{', '.join(known)}")
    args.names = names
    shared = args.shared = shared_data_dir()
    args.spm_model_file = args.spm_model_file or str(shared / "spm" / "30k-clean.model")
    if is_reading:
        if args.train_file:
            parser.error("--train_file is for GLUE tasks; the reading tasks read their shared data files")
        args.train_file = str(shared / ("race/RACE/train" if args.task == "race" else "squad/dev-v2.0-subset-a.json"))
    else:
        args.num_labels = TASKS[args.task][4]
        args.train_file = args.train_file or str(shared / "glue" / args.task.upper() / "train.tsv")
    for flag in ("spm_model_file", "train_file"):
        if not os.path.exists(getattr(args, flag)):
            parser.error(f"--{flag} {getattr(args, flag)} does not exist")
    return args


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.work_dir = tempfile.mkdtemp(prefix="finetune_throughput_")
    rows: list[list[str]] = []
    if args.task not in reading.TASKS:
        header, rows = read_examples(args.train_file, args.task, args.examples)
        args.data_dir = os.path.join(args.work_dir, args.task.upper())
        write_subset(header, rows, args.data_dir)
    try:
        with Workers() as workers:
            for name in args.names:
                workers.start(name, functools.partial(_Worker, name, args, rows))
            setup = {name: workers.ask(name, "warmup") for name in args.names}  # one at a time
            num_steps = args.examples // args.batch
            times: dict[str, list[float]] = {name: [] for name in args.names}
            meter = ForeignLoad([os.getpid()] + workers.pids())
            foreign: list[float | None] = []
            order = list(args.names)
            for step in range(num_steps):  # interleaved rounds, the order rotated each round
                meter.start()
                for name in order[step % len(order):] + order[: step % len(order)]:
                    times[name].append(workers.ask(name, "step"))
                foreign.append(meter.stop())
            info = {name: workers.ask(name, "info") for name in args.names}
    finally:
        shutil.rmtree(args.work_dir, ignore_errors=True)

    from albert_tf.data.packing import padding_fraction

    results = {}
    for name, ts in times.items():
        shapes, tokens = info[name]["shapes"], info[name]["tokens"]
        computed = sum(r * n for r, n in shapes)
        padding = round(padding_fraction(sum(tokens), computed), 3)
        results[name] = {
            "examples_per_s": round(args.examples / sum(ts), 3),
            "pass_s": round(sum(ts), 2),
            "median_step_s": round(statistics.median(ts), 4),
            "computed_tokens": computed,
            "real_tokens": sum(tokens),
            "padding_fraction": padding,
            # The positions the dense layers (projections, FFN: nearly all of a step's work) compute.
            "dense_tokens": sum(tokens) if info[name]["dense_on_real_tokens"] else computed,
            "dense_padding_fraction": 0.0 if info[name]["dense_on_real_tokens"] else padding,
            "mean_rows": round(statistics.mean(r for r, _ in shapes), 2),
            "mean_padded_length": round(statistics.mean(n for _, n in shapes), 1),
            "shapes_traced": setup[name]["shapes"],
            "matmul_gflops": round(setup[name]["matmul_gflops"], 1),
            "first_loss": round(info[name]["losses"][0], 4),
            "last_loss": round(info[name]["losses"][-1], 4),
            "build_s": round(setup[name]["build_s"], 1),
            "warmup_s": round(setup[name]["warmup_s"], 1),
            "step_times_s": [round(t, 3) for t in ts],
        }
    quiet = [f for f in foreign if f is not None]
    summary: dict[str, Any] = {
        "benchmark": f"albert_finetune_{args.task}_pass",
        "task": args.task,
        "model": "smoke" if args.smoke else PRESET,
        "examples": args.examples,
        "batch": args.batch,
        "steps": num_steps,
        "max_seq_length": args.max_seq_length,
        "dtype": "float32",
        "threads": args.threads,
        "jit_compile": args.jit_compile,
        "train_file": (os.path.relpath(args.train_file, args.shared) if args.task in reading.TASKS
                       else os.path.basename(os.path.dirname(args.train_file)) + "/train.tsv"),
        "foreign_cpu_share_median": round(statistics.median(quiet), 3) if quiet else None,
        "foreign_cpu_share_max": max(quiet) if quiet else None,
        "machine": machine_info(),
        "versions": versions(extra=("keras-hub",)),
        "results": results,
    }
    if args.task in reading.TASKS:
        summary["example"] = reading.TASKS[args.task][3]
        summary["keras_hub"] = "no ALBERT question-answering or multiple-choice model in keras-hub"
    speed = {k: v["examples_per_s"] for k, v in results.items()}
    peers = [speed[k] for k in (reading.PEERS if args.task in reading.TASKS else PEERS) if k in speed]
    if "albert_tf" in speed and peers:
        summary["albert_tf_over_best_peer"] = round(speed["albert_tf"] / max(peers), 3)
    tf_gflops = next((v["matmul_gflops"] for k, v in results.items() if k.startswith(("albert_tf", "keras"))), None)
    torch_gflops = next((v["matmul_gflops"] for k, v in results.items() if k.startswith("transformers")), None)
    summary["tf_over_torch_matmul"] = _ratio(tf_gflops, torch_gflops)
    # the faster transformers side (GLUE: dynamic padding, the only one that is a peer there)
    transformers_speed = max((speed[k] for k in ("transformers_torch", "transformers_max_length") if k in speed),
                             default=None)
    over_transformers = _ratio(speed.get("albert_tf"), transformers_speed)
    summary["albert_tf_over_transformers"] = over_transformers
    summary["albert_tf_over_transformers_per_matmul_speed"] = _ratio(over_transformers, summary["tf_over_torch_matmul"])
    summary["albert_tf_over_keras_hub"] = _ratio(speed.get("albert_tf"), speed.get("keras_hub"))
    summary["packing_over_bucketing"] = _ratio(speed.get("albert_tf"), speed.get("albert_tf_bucketed"))
    summary["real_tokens_over_packed_rows"] = _ratio(speed.get("albert_tf"), speed.get("albert_tf_packed_rows"))
    summary["transformers_grouped_over_dynamic"] = _ratio(speed.get("transformers_grouped"),
                                                          speed.get("transformers_torch"))
    return emit(summary, args.output)


if __name__ == "__main__":
    run_main(main)
