"""The reading-comprehension tasks of ``finetune_throughput.py``: SQuAD v1.1 / v2.0 windows and RACE questions,
albert-tf's ``run_squad`` / ``run_race`` training step against transformers' ``AlbertForQuestionAnswering`` /
``AlbertForMultipleChoice`` as its ``run_qa`` / ``run_swag`` examples feed them.

Inputs, the same on every side (albert-tf's feature converters, the official windows):

* ``squad_v1`` / ``squad_v2``: the training windows of ``<shared data>/squad/dev-v2.0-subset-a.json`` (its answerable
  questions for v1, every question for v2) at ``max_seq_length`` 384, ``doc_stride`` 128, ``max_query_length`` 64,
  file order; the first ``--examples`` windows.
* ``race``: the questions of ``<shared data>/race/RACE/train`` (middle and high), four choices of ``max_seq_length``
  512 each, file order; the first ``--examples`` questions.

Implementations (each in its own worker, as for GLUE):

* ``albert_tf``: ``SquadTask`` / ``RaceTask`` with their defaults: the task's feature cache (untimed), its records
  read in file order, ``FineTuningTask.packed_batches`` (``--packing=first_fit``: windows or choices first-fit into rows
  of ``max_seq_length``, row lengths rounded to ``--bucket_lengths``) and ``task.loss`` (``AlbertSquad.packed_outputs``
  / ``AlbertMultipleChoice.packed_logits``: the dense layers on the real tokens only), ``AdamWeightDecay``.
* ``albert_tf_bucketed`` (with ``--only``): the same task with ``--packing=none``: one window (choice) per row, each
  batch cut to its longest rounded up to ``--bucket_lengths``.
* ``transformers_max_length``: every window (choice) padded to ``max_seq_length``: what ``run_qa.py`` /
  ``run_swag.py`` do by default (``--pad_to_max_length``), stacked per batch.
* ``transformers_torch``: dynamic padding to the longest window (choice) of the batch (``--pad_to_max_length False``:
  ``DataCollatorWithPadding`` / the multiple-choice collator).

Both transformers sides train the span head with its own loss (cross-entropy over every position: for v2 an
unanswerable window points at ``[CLS]``, as ``run_qa`` labels it) or the multiple-choice head, ``torch.optim.AdamW``.
keras-hub has no ALBERT question-answering or multiple-choice model, so it has no side here.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from benchmarks.common import DatasetImplementation, TorchImplementation, answerable_squad_file, set_tf_threads

#: task -> (max_seq_length, default examples (windows / questions), default batch, what an example is)
TASKS = {
    "squad_v1": (384, 192, 16, "windows"),
    "squad_v2": (384, 192, 16, "windows"),
    "race": (512, 20, 2, "questions"),
}
IMPLEMENTATIONS = ("albert_tf", "albert_tf_bucketed", "transformers_max_length", "transformers_torch")
DEFAULT_IMPLEMENTATIONS = ("albert_tf", "transformers_max_length", "transformers_torch")
PEERS = ("transformers_max_length", "transformers_torch")
SQUAD_WINDOW = dict(doc_stride=128, max_query_length=64)
RACE_MAX_QA_LENGTH = 128
NUM_CHOICES = 4


def squad_file(args: argparse.Namespace) -> str:
    """The SQuAD file the pass reads: subset-a for v2, its answerable questions (written to the work folder) for v1."""
    path = str(args.shared / "squad" / "dev-v2.0-subset-a.json")
    if args.task == "squad_v2":
        return path
    return answerable_squad_file(args.shared, args.work_dir)


def examples_in_file(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The pass's examples as plain lists (what the transformers sides collate): SQuAD windows with their labels, or
    RACE questions with each choice's real tokens."""
    from albert_tf.tokenization import FullTokenizer

    tokenizer = FullTokenizer(do_lower_case=True, spm_model_file=args.spm_model_file)
    if args.task == "race":
        from albert_tf.data.race.features import convert_examples
        from albert_tf.data.race.reader import read_race_examples

        questions = read_race_examples(str(args.shared / "race"), "train")[: args.examples]
        out = []
        for f in convert_examples(questions, tokenizer, args.max_seq_length, RACE_MAX_QA_LENGTH):
            choices = {k: [getattr(f, k)[c * args.max_seq_length:(c + 1) * args.max_seq_length]
                           for c in range(NUM_CHOICES)] for k in ("input_ids", "input_mask", "segment_ids")}
            real = [sum(m) for m in choices["input_mask"]]
            out.append({"input_ids": [ids[:n] for ids, n in zip(choices["input_ids"], real)],
                        "token_type_ids": [s[:n] for s, n in zip(choices["segment_ids"], real)],
                        "labels": f.label})
        return out
    from albert_tf.data.squad.features import convert_examples_to_features
    from albert_tf.data.squad.reader import read_squad_examples

    examples = read_squad_examples(squad_file(args), is_training=True,
                                   version_2_with_negative=args.task == "squad_v2")
    features, _ = convert_examples_to_features(examples, tokenizer, args.max_seq_length, is_training=True,
                                               **SQUAD_WINDOW)
    if len(features) < args.examples:
        raise SystemExit(f"{len(features)} windows in the SQuAD file, fewer than --examples={args.examples}")
    out = []
    for f in features[: args.examples]:
        n = sum(f.input_mask)
        out.append({"input_ids": f.input_ids[:n], "token_type_ids": f.segment_ids[:n],
                    "start_positions": f.start_position, "end_positions": f.end_position})
    return out


class AlbertTfReading(DatasetImplementation):
    """``run_squad`` / ``run_race``'s task on the pass (module docstring); the ``Implementation`` interface of
    ``finetune_throughput.py``."""

    def __init__(self, args: argparse.Namespace, packing: bool) -> None:
        set_tf_threads(args.threads)
        import keras
        import tensorflow as tf

        from albert_tf.config import AlbertConfig
        from albert_tf.tokenization import FullTokenizer
        from albert_tf.training.optimizers import create_optimizer
        from albert_tf.training.run_config import RunOptions

        keras.utils.set_random_seed(args.seed)
        d = args.dims
        config = AlbertConfig.from_name("albert_base_v2").replace(
            vocab_size=d["V"], embedding_size=d["E"], hidden_size=d["H"], num_hidden_layers=d["L"],
            num_attention_heads=d["N"], intermediate_size=d["I"])
        tokenizer = FullTokenizer(do_lower_case=True, spm_model_file=args.spm_model_file)
        cache = os.path.join(args.work_dir, "albert_tf_cache_" + ("packed" if packing else "bucketed"))
        common = dict(spm_model_file=args.spm_model_file, max_seq_length=args.max_seq_length, cached_dir=cache,
                      packing="first_fit" if packing else "none", shuffle_train_examples=False)
        run = RunOptions(output_dir=cache, do_train=True)
        batches = args.examples // args.batch
        if args.task == "race":
            from albert_tf.data import race as race_data
            from albert_tf.tasks.race.options import RaceOptions
            from albert_tf.tasks.race.task import RaceTask
            from albert_tf.training.task import TRAIN

            task = RaceTask(RaceOptions(data_dir=str(args.shared / "race"), max_qa_length=RACE_MAX_QA_LENGTH,
                                        **common), run, tokenizer, config, seed=args.seed)
            task.prepare()
            files = task.cached[TRAIN].record_files

            def records():  # file order, once (the task's training input shuffles and repeats)
                return race_data.load_dataset(files, args.max_seq_length, args.batch, is_training=False,
                                              drop_remainder=True, bucket_lengths=None if packing else task_buckets())
        else:
            from albert_tf.data.batching import record_dataset
            from albert_tf.data.squad.cache import feature_spec
            from albert_tf.data.squad.reader import read_squad_examples
            from albert_tf.tasks.squad.options import SquadOptions
            from albert_tf.tasks.squad.task import SquadTask
            from albert_tf.training.task import TRAIN

            v2 = args.task == "squad_v2"
            options = SquadOptions(train_file=squad_file(args), version_2_with_negative=v2, **SQUAD_WINDOW, **common)
            task = SquadTask(options, run, tokenizer, config, seed=args.seed)
            task.train_examples = read_squad_examples(options.train_file, True, v2)
            task.prepare()
            files = task.cached[TRAIN].record_files

            def records():  # file order, once, with the training labels
                return record_dataset(files, feature_spec(args.max_seq_length, True), args.batch, False,
                                      drop_remainder=True, bucket_lengths=None if packing else task_buckets())

        def task_buckets():
            from albert_tf.tasks.base import input_buckets

            return input_buckets(task.options, TRAIN)

        def make_dataset():
            dataset = records().take(batches)
            return task.packed_batches(dataset, args.batch) if packing else dataset

        self.make_dataset = make_dataset
        task.jit_compile = args.jit_compile
        model = task.build_model()
        optimizer = create_optimizer("adamw", args.learning_rate)
        optimizer.build(model.trainable_variables)

        @tf.function(jit_compile=args.jit_compile, reduce_retracing=True)
        def train_step(features):
            with tf.GradientTape() as tape:
                loss, _ = task.loss(model, features, True)
            optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
            return loss

        self.train_step = train_step
        self.packing = packing
        self.dense_on_real_tokens = packing and not args.jit_compile
        self.num_steps = batches
        self.reset()

    def shape(self, batch) -> tuple[int, int]:
        shape = batch["input_ids"].shape  # packed [slices, R, L]; SQuAD [B, L]; RACE [B, 4, L]
        rows = 1
        for n in shape[:-1]:
            rows *= int(n)
        return rows, int(shape[-1])

    def real_tokens(self, batch) -> int:
        import numpy as np

        return int(np.count_nonzero(np.asarray(batch["input_mask"])))

    def train(self, batch) -> float:
        return float(self.train_step(batch))


class TransformersReading(TorchImplementation):
    """transformers' SQuAD / RACE training step on the pass, windows (choices) padded to ``max_seq_length`` or to
    the batch's longest (module docstring)."""

    def __init__(self, args: argparse.Namespace, max_length: bool) -> None:
        import torch
        import transformers

        torch.set_num_threads(args.threads)
        torch.manual_seed(args.seed)
        self.examples = examples_in_file(args)
        d = args.dims
        config = transformers.AlbertConfig(
            vocab_size=d["V"], embedding_size=d["E"], hidden_size=d["H"], num_hidden_layers=d["L"],
            num_attention_heads=d["N"], intermediate_size=d["I"], hidden_act="gelu_new", hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.1, max_position_embeddings=512,
        )
        model_class = (transformers.AlbertForMultipleChoice if args.task == "race"
                       else transformers.AlbertForQuestionAnswering)
        self.model = model_class(config).train()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.learning_rate, weight_decay=0.01)
        self.max_length = max_length
        self.max_seq_length = args.max_seq_length
        self.batch = args.batch
        self.num_steps = args.examples // args.batch
        self.reset()

    def next_batch(self) -> dict[str, Any]:
        """The collator's work: pad each window (choice) with zeros to the batch's length, stack into tensors."""
        import torch

        chunk = self.examples[self.position : self.position + self.batch]
        self.position += self.batch
        sequences = ([s for e in chunk for s in zip(e["input_ids"], e["token_type_ids"])] if "labels" in chunk[0]
                     else [(e["input_ids"], e["token_type_ids"]) for e in chunk])
        length = self.max_seq_length if self.max_length else max(len(ids) for ids, _ in sequences)
        ids = torch.zeros((len(sequences), length), dtype=torch.long)
        types = torch.zeros_like(ids)
        mask = torch.zeros_like(ids)
        for i, (a, t) in enumerate(sequences):
            ids[i, : len(a)] = torch.tensor(a)
            types[i, : len(t)] = torch.tensor(t)
            mask[i, : len(a)] = 1
        batch = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}
        if "labels" in chunk[0]:  # [B * 4, L] -> [B, 4, L]
            batch = {k: v.view(len(chunk), NUM_CHOICES, length) for k, v in batch.items()}
            batch["labels"] = torch.tensor([e["labels"] for e in chunk])
        else:
            batch["start_positions"] = torch.tensor([e["start_positions"] for e in chunk])
            batch["end_positions"] = torch.tensor([e["end_positions"] for e in chunk])
        return batch

    def shape(self, batch) -> tuple[int, int]:
        shape = batch["input_ids"].shape
        rows = 1
        for n in shape[:-1]:
            rows *= int(n)
        return rows, int(shape[-1])



def build(name: str, args: argparse.Namespace):
    if name in ("albert_tf", "albert_tf_bucketed"):
        return AlbertTfReading(args, packing=name == "albert_tf")
    if name in ("transformers_max_length", "transformers_torch"):
        return TransformersReading(args, max_length=name == "transformers_max_length")
    raise ValueError(name)
