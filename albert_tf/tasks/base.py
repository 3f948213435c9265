"""The task layer: what one job (pretraining, a GLUE task, SQuAD, RACE) adds to the shared runner.

A :class:`Task` knows its data, model, loss, metrics, prediction files and export; it knows nothing of
strategies, checkpoints or output-directory bookkeeping, which the runner skeleton
(``albert_tf.training.experiment``) and the ``Trainer`` own. Adding a job = one subclass in
``albert_tf/tasks/`` (reader in ``data/``, head in ``modeling/``, scoring in ``evaluation/``).

Hooks, in the order the runner calls them:

* construction (``from_options``): every cheap check (configs, tokenizer, input files) before TensorFlow
  starts work.
* ``identity()``: what must agree for a run to continue in an output directory (``run.json``).
* ``prepare()`` once the strategy exists; ``build_model()`` (inside the strategy scope);
  ``build_inputs(split, global_batch_size)``.
* ``loss(model, features, training)`` -> ``(scalar loss, {name: scalar to log})`` for one replica's batch.
* ``eval_outputs(model, features)`` -> ``{name: per-example tensor [B, ...]}``; the runner gathers them over the
  whole evaluation set (padded rows removed) and ``aggregate(outputs)`` turns them into metrics, so metrics that
  need the whole set (MCC, F1, Pearson) are exact. ``key_metric`` picks the best checkpoint.
* ``predict_outputs`` (default: ``eval_outputs``) and ``write_predictions(outputs, results_dir)``.
* ``export(model, export_dir, step, source)``: a SavedModel for serving.
"""

from __future__ import annotations

import abc
import dataclasses
import os
from typing import Any

import numpy as np
from absl import logging

from albert_tf.config import AlbertConfig, ConfigError
from albert_tf.data.batching import DEFAULT_BUCKET_LENGTHS, bucket_boundaries
from albert_tf.tokenization import FullTokenizer
from albert_tf.training.run_config import RunError

TRAIN, EVAL, PREDICT = "train", "eval", "predict"
SPLITS = (TRAIN, EVAL, PREDICT)


class TaskError(RunError):
    """A task cannot run with these options or inputs; the message is one line naming the flag or file."""


@dataclasses.dataclass
class FineTuningOptions:
    """The options every fine-tuning task shares (``cli.flags.define_fine_tuning_flags`` defines their flags);
    each task's options dataclass adds its own fields and its own ``max_seq_length`` default."""

    albert_config_file: str = ""
    spm_model_file: str | None = None
    vocab_file: str | None = None
    do_lower_case: bool = True
    max_seq_length: int = 512
    sharing: str = "all"
    cached_dir: str | None = None
    #: Length buckets of the input batches (``data.batching``); ``none`` pads every batch to ``max_seq_length``.
    bucket_lengths: str = DEFAULT_BUCKET_LENGTHS

    def __post_init__(self) -> None:
        try:  # a bad --bucket_lengths is an option error, found before any work
            bucket_boundaries(self.bucket_lengths, max(self.max_seq_length, 1))
        except ValueError as e:
            raise TaskError(str(e)) from None


class Task(abc.ABC):
    """Base class of every job; see the module docstring for the hooks."""

    #: Short name used in messages and in ``run.json``.
    name: str = "task"
    #: The metric that selects the best checkpoint (higher is better).
    key_metric: str = "accuracy"

    #: The AlbertConfig of the model (written beside the checkpoints of a training run).
    albert_config: Any = None

    # ---------------------------------------------------------------- before any TF work
    def identity(self) -> dict[str, Any]:
        """What a continuing run in the same output directory must share (compared to ``run.json``)."""
        return {"task": self.name}

    def run_record(self) -> dict[str, Any]:
        """What ``run.json`` records beside :meth:`identity`, for later tools rather than for comparison (a
        fine-tuning run's tokenizer, which ``export_savedmodel`` and ``convert_checkpoint`` check or use)."""
        return {}

    def results_subdir(self, previous: dict[str, Any], training: bool) -> str | None:
        """Where results go when ``run.json`` holds ``previous``, an identity different from :meth:`identity`.

        Return a sub-directory name for a compatible job using that model (e.g. MNLI-mismatched in an MNLI run),
        or raise :class:`TaskError`. The default refuses.
        """
        raise TaskError(f"holds a {previous.get('task')} run; this is {self.name}: choose another --output_dir")

    def warn_without_init_checkpoint(self) -> None:
        """Called when training starts from random initialisation (no ``--init_checkpoint``, nothing to resume)."""
        return None

    def data_report(self) -> dict[str, Any]:
        """What reading the task's data counted (skipped rows, failed alignments, truncations), for
        ``run_summary.json``; called after :meth:`prepare`. Nothing is dropped without being counted here."""
        return {}

    # ---------------------------------------------------------------- model and data
    def prepare(self) -> None:
        """Work done once the strategy exists and before the model is built (e.g. feature caches)."""
        return None

    @abc.abstractmethod
    def build_model(self) -> Any:
        """A built (variables created) keras model; called inside the strategy scope."""

    @abc.abstractmethod
    def build_inputs(self, split: str, global_batch_size: int) -> Any:
        """``tf.data`` of feature dicts: ``train`` repeats (same stream on every worker); ``eval``/``predict``
        read once in order (or None when the task has no such data)."""

    @abc.abstractmethod
    def loss(self, model: Any, features: dict, training: bool) -> tuple[Any, dict]:
        """(scalar loss to minimise, dict of scalar values to log) for one replica's batch."""

    # ---------------------------------------------------------------- evaluation and prediction
    @abc.abstractmethod
    def eval_outputs(self, model: Any, features: dict) -> dict:
        """Per-example tensors (leading dimension = batch) for :meth:`aggregate`."""

    @abc.abstractmethod
    def aggregate(self, outputs: dict[str, np.ndarray]) -> dict[str, float]:
        """Metrics of a whole evaluation set from the concatenated :meth:`eval_outputs`."""

    def predict_outputs(self, model: Any, features: dict) -> dict:
        """Per-example tensors for :meth:`write_predictions` (default: the evaluation outputs)."""
        return self.eval_outputs(model, features)

    def write_predictions(self, outputs: dict[str, np.ndarray], results_dir: str) -> dict[str, Any]:
        """Write prediction files (temporary name, then renamed); returns a summary for ``run_summary.json``."""
        raise TaskError(f"{self.name}: --do_predict is not supported")

    def export(self, model: Any, export_dir: str, step: int, source: str) -> str:
        """Write a SavedModel of ``model`` under ``export_dir``; returns its path."""
        raise TaskError(f"{self.name}: --export_dir is not supported")


class FineTuningTask(Task):
    """A fine-tuning job built from its options: keeps the options, run options, tokenizer, model config and input
    seed, and warns loudly when training starts from random weights. SQuAD and RACE extend it."""

    def __init__(self, options: FineTuningOptions, run: Any, tokenizer: FullTokenizer, albert_config: AlbertConfig,
                 seed: int | None = None) -> None:
        self.options = options
        self.run = run
        self.tokenizer = tokenizer
        self.albert_config = albert_config
        self.seed = seed  # of the training input shuffle

    def warn_without_init_checkpoint(self) -> None:
        warn_random_initialisation()

    def run_record(self) -> dict[str, Any]:
        return tokenizer_run_record(self.options, self.tokenizer)

    def cache_dir(self, official_file: str | None = None) -> str:
        """Where feature caches go: ``--cached_dir``, else the directory of the official cache-file flag
        (``train_feature_file``, ``eval_file``, ...; our file names are keyed), else ``--output_dir``."""
        if self.options.cached_dir:
            return self.options.cached_dir
        if official_file:
            return os.path.dirname(official_file) or "."
        return self.run.output_dir


def tokenizer_run_record(options: Any, tokenizer: FullTokenizer | None) -> dict[str, Any]:
    """``run.json``'s record of the tokenizer a fine-tuning run trains with (``run_dir.tokenizer_record``), from
    its ``--spm_model_file`` / ``--vocab_file``; empty without a tokenizer."""
    from albert_tf.training.run_dir import tokenizer_record

    if tokenizer is None:
        return {}
    flag = "spm_model_file" if options.spm_model_file else "vocab_file"
    return {"tokenizer": tokenizer_record(flag, getattr(options, flag), tokenizer)}


def export_metadata(task: str, max_seq_length: int, tokenizer: FullTokenizer, checkpoint: str, step: int,
                    **extra: Any) -> dict[str, Any]:
    """What every task's SavedModel records about itself (``albert_export.json``): task, lengths, tokenizer identity
    and the checkpoint the weights came from."""
    return {"task": task, "max_seq_length": max_seq_length, **extra, "tokenizer": tokenizer.identity(),
            "checkpoint": checkpoint, "global_step": step}


def input_buckets(options: FineTuningOptions, split: str, exact_in_training: bool = True) -> tuple[int, ...] | None:
    """The bucket lengths ``build_inputs`` passes to the task's ``load_dataset`` for ``split`` (None: fixed padding).

    Bucketing is on wherever it is exact: evaluation and prediction always (their outputs must not depend on the
    padding), training unless the task's loss sees padding positions (``exact_in_training=False``: the official
    SQuAD v1 loss softmaxes over every position, padding included) or the host has TPUs (the inner training loop is
    one TPU program over ``steps_per_loop`` batches, and a TPU program has one static shape; evaluation runs one
    program per batch shape, so it buckets there too).
    """
    if split == TRAIN and (not exact_in_training or _has_tpu()):
        return None
    return bucket_boundaries(options.bucket_lengths, options.max_seq_length)


def _has_tpu() -> bool:
    import tensorflow as tf

    return bool(tf.config.list_logical_devices("TPU"))


def load_tokenizer(options: FineTuningOptions) -> FullTokenizer:
    """``--spm_model_file`` (SentencePiece), else ``--vocab_file`` (WordPiece), with ``--do_lower_case``."""
    if options.spm_model_file:
        return FullTokenizer(do_lower_case=options.do_lower_case, spm_model_file=options.spm_model_file)
    if options.vocab_file:
        return FullTokenizer(vocab_file=options.vocab_file, do_lower_case=options.do_lower_case)
    raise TaskError("give --spm_model_file (SentencePiece) or --vocab_file (WordPiece, with --spm_model_file='')")


def load_albert_config(albert_config_file: str, max_seq_length: int, vocab_size: int) -> AlbertConfig:
    """The fine-tuning model's config, checked against ``--max_seq_length`` and the tokenizer's vocabulary size
    (one line, as a :class:`TaskError`, naming the flag that disagrees)."""
    config = AlbertConfig.load(albert_config_file)
    config.check_max_seq_length(max_seq_length)
    try:
        config.check_vocab_size(vocab_size)
    except ConfigError as e:  # a run option error: same exit path as the other option checks
        raise TaskError(str(e)) from None
    return config


def warn_random_initialisation() -> None:
    """The loud warning of a fine-tuning run without ``--init_checkpoint`` (google-research/albert#132)."""
    banner = "!" * 100
    logging.warning(
        f"\n{banner}\n!! WARNING: no --init_checkpoint: fine-tuning starts from RANDOM initialisation.\n"
        "!! Scores will be near chance (google-research/albert#132). Pass --init_checkpoint=<pretrained ALBERT: "
        f"official TF1, albert-tf or Hugging Face checkpoint>.\n{banner}"
    )
