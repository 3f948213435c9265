"""What the fine-tuning tasks share on top of the task contract (:mod:`albert_tf.training.task`): their common
options, the tokenizer and config loading with its checks, the input buckets, the run record and the SavedModel
metadata. Each task lives in its own module beside this one.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

from absl import logging

from albert_tf.config import SHARING_MODES, AlbertConfig, ConfigError
from albert_tf.data.batching import DEFAULT_BUCKET_LENGTHS, bucket_boundaries
from albert_tf.data.packing import PACKING_MODES
from albert_tf.tokenization import FullTokenizer
from albert_tf.training.run_config import ExperimentConfig, option, validate_options
from albert_tf.training.task import EVAL, PREDICT, TRAIN, Task, TaskError


@dataclasses.dataclass
class FineTuningOptions:
    """The options every fine-tuning task shares; each task's options dataclass adds its own fields and its own
    ``max_seq_length`` (default and help). Each field declared with :func:`~albert_tf.training.run_config.option`
    is its own flag (``run_config.define_option_flags``)."""

    albert_config_file: str = option(
        "", "albert_config.json of the pretrained model, or a model config name (albert_base_v2, albert_tiny, ...).")
    spm_model_file: str | None = option(
        None, "SentencePiece model (30k-clean.model). '' selects WordPiece (--vocab_file).")
    vocab_file: str | None = option(None, "WordPiece vocab (Chinese models); unused with --spm_model_file.")
    do_lower_case: bool = option(True, "Lower-case the text (preprocess_text).")
    max_seq_length: int = option(512, "Tokens per example; <= max_position_embeddings.")
    sharing: str = option("all", "Cross-layer sharing (paper Table 4).", choices=SHARING_MODES)
    cached_dir: str | None = option(None, "Where feature TFRecords are cached (default: --output_dir).")
    bucket_lengths: str = option(
        DEFAULT_BUCKET_LENGTHS,
        "Length bucketing (albert_tf.data.batching): each batch, and each request to an export's raw-text "
        "signature, is cut to its longest real sequence rounded up to the next of these lengths (capped at "
        "--max_seq_length), so XLA/TPUs see few shapes; results equal fixed padding up to float rounding (training "
        "on TPUs, and a loss that reads padding positions, keep the full length; an export's serve_token_ids runs "
        "at the length sent). 'none': pad every batch and request to --max_seq_length.")
    export_real_tokens: bool = option(
        True, "With --export_dir (and export_savedmodel): the raw-text signatures send only each request's real "
        "tokens through the embeddings, projections and FFN, one example (window, choice) per row, so the padding "
        "of a mixed-length batch costs no dense-layer work; the same answers up to float rounding. Off: every "
        "position of the (bucketed) batch, as before. The token-id signature (TFLite, ONNX) keeps fixed shapes; "
        "with --export_jit_compile (XLA compiles no data-dependent token count) every position is computed.")
    shuffle_train_examples: bool = option(
        True,
        "Write the training features in one seeded permutation (random.Random(12345), as the official run_squad "
        "does), split into up to 128 files; training reads the files in an order drawn from --seed anew each "
        "epoch, then through a 1,000-record shuffle buffer, every example once per epoch, so each seed (and trial) "
        "starts from other examples. --noshuffle_train_examples writes one file in the training file's order, read "
        "through the buffer alone, as the official run_classifier.py and run_race.py do: a sorted file (STS-B's is "
        "sorted by genre) then trains on one part of it at a time.")

    def __post_init__(self) -> None:
        try:  # a bad --bucket_lengths is an option error, found before any work
            bucket_boundaries(self.bucket_lengths, max(self.max_seq_length, 1))
        except ValueError as e:
            raise TaskError(str(e)) from None


@dataclasses.dataclass
class PackedTrainingOptions(FineTuningOptions):
    """The options of a task whose training batches can be packed (``albert_tf.data.packing``);
    ``FineTuningTask.packs_training`` reads ``packing``."""

    packing: str = option(
        "first_fit", "Training batches as packed rows: several examples (or windows) share a row of --max_seq_length "
        "tokens, each attending only to its own tokens, with its own positions and [CLS] (sequence packing without "
        "cross-contamination; exact: same losses and gradients up to float rounding, less padding computed). "
        "'none': one example per row (then --bucket_lengths trims). Evaluation and prediction are not packed; TPU "
        "training is never packed.", choices=PACKING_MODES)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.packing not in PACKING_MODES:  # the Python API has no flag to check it
            raise TaskError(f"--packing={self.packing!r}: expected one of {', '.join(PACKING_MODES)}")


class FineTuningTask(Task):
    """A fine-tuning job built from its options: keeps the options, run options, tokenizer, model config and input
    seed, and warns loudly when training starts from random weights. Every fine-tuning task extends it.

    The shared ends of every task are written here once: :meth:`from_config` (the checked task of an experiment,
    one per trial), :meth:`run_trials` (what ``run_classifier`` / ``run_squad`` / ``run_race`` call) and
    :meth:`export_checkpoint` (what ``export_savedmodel --task=...`` calls). A task names its options dataclass
    (``options_type``) and implements ``from_options``; its package exports these as ``run`` and
    ``export_checkpoint``.
    """

    options_type: type[FineTuningOptions] = FineTuningOptions

    @classmethod
    def from_options(cls, options: Any, run: Any, seed: int | None = None) -> FineTuningTask:
        """Every check that needs no TF op (raises one-line errors), then the task."""
        raise NotImplementedError

    @classmethod
    def from_config(cls, config: ExperimentConfig) -> tuple[FineTuningTask, ExperimentConfig]:
        """The task of ``config``, checked, and the config it runs with (``experiment.run_trials`` builds one per
        trial; a task whose schedule follows from its data returns the config with that schedule)."""
        validate_options(config.trainer, config.run)
        return cls.from_options(config.task, config.run, seed=config.trainer.seed), config

    @classmethod
    def run_trials(cls, config: ExperimentConfig) -> dict[str, Any]:
        """Train / evaluate / predict / export as ``config`` says (``--num_trials`` times); the run summary."""
        from albert_tf.training import experiment  # TensorFlow: this module stays importable without it

        return experiment.run_trials(config, cls.from_config)

    @classmethod
    def export_checkpoint(cls, checkpoint: str, export_dir: str, **options: Any) -> str:
        """A fine-tuned checkpoint -> the task's SavedModel in ``export_dir/<step>``. ``options`` are the task's
        flat options (``albert_config_file``, ``spm_model_file``, ``max_seq_length``, ...); nothing is trained,
        evaluated or predicted."""
        from albert_tf.training import experiment

        options = {"do_train": False, "do_eval": False, "do_predict": False, **options,
                   "output_dir": export_dir, "export_dir": export_dir, "predict_checkpoint": checkpoint}
        config = ExperimentConfig.from_flat(cls.options_type, options)
        return experiment.export_checkpoint(cls.from_options(config.task, config.run), checkpoint, export_dir)

    def __init__(self, options: FineTuningOptions, run: Any, tokenizer: FullTokenizer, albert_config: AlbertConfig,
                 seed: int | None = None) -> None:
        self.options = options
        self.run = run
        self.tokenizer = tokenizer
        self.albert_config = albert_config
        self.seed = seed  # of the training input shuffle

    def warn_without_init_checkpoint(self) -> None:
        warn_random_initialisation()

    def packs_training(self) -> bool:
        """Whether training batches are packed: the task's options ask for it (``PackedTrainingOptions.packing``)
        and the host has no TPU (a TPU program has one static shape; there training keeps the full padded length,
        as with ``--bucket_lengths``)."""
        return getattr(self.options, "packing", "none") != "none" and not has_tpu()

    def packed_batches(self, dataset: Any, global_batch_size: int) -> Any:
        """``dataset`` (training batches of ``global_batch_size`` rows padded to ``max_seq_length``) packed in
        ``input_slices`` parts (``albert_tf.data.packing.pack_dataset``), row lengths rounded to
        ``--bucket_lengths``; a :class:`TaskError` when the batch does not split into equal parts."""
        from albert_tf.data.packing import pack_dataset

        slices, length = self.input_slices, self.options.max_seq_length
        if global_batch_size % slices:
            raise TaskError(f"a batch of {global_batch_size} examples does not split into {slices} equal parts")
        return pack_dataset(dataset, length, global_batch_size, slices,
                            bucket_boundaries(self.options.bucket_lengths, length))

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


def needed_splits(run: Any) -> list[str]:
    """The splits a run reads: ``train`` for ``--do_train``, ``eval`` for ``--do_eval``, ``predict`` for
    ``--do_predict``."""
    return [s for s, on in ((TRAIN, run.do_train), (EVAL, run.do_eval), (PREDICT, run.do_predict)) if on]


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
    if split == TRAIN and (not exact_in_training or has_tpu()):
        return None
    return bucket_boundaries(options.bucket_lengths, options.max_seq_length)


def has_tpu() -> bool:
    """Whether this host has TPU devices (training there keeps one static shape)."""
    import tensorflow as tf

    return bool(tf.config.list_logical_devices("TPU"))


def load_tokenizer(options: FineTuningOptions) -> FullTokenizer:
    """``--spm_model_file`` (SentencePiece), else ``--vocab_file`` (WordPiece), with ``--do_lower_case``."""
    if options.spm_model_file:
        return FullTokenizer(do_lower_case=options.do_lower_case, spm_model_file=options.spm_model_file)
    if options.vocab_file:
        return FullTokenizer(vocab_file=options.vocab_file, do_lower_case=options.do_lower_case)
    raise TaskError("give --spm_model_file (SentencePiece) or --vocab_file (WordPiece, with --spm_model_file='')")


def check_model_files(options: FineTuningOptions) -> None:
    """That ``--albert_config_file`` and the tokenizer file (``--spm_model_file`` or ``--vocab_file``) each read as
    what they should be; a command runs this before TensorFlow starts. How they agree with each other and with the
    task is :func:`load_pretrained_files`'s, in the task's own terms."""
    if options.albert_config_file:
        AlbertConfig.load(options.albert_config_file)
    if options.spm_model_file or options.vocab_file:
        load_tokenizer(options)


def load_pretrained_files(
    options: FineTuningOptions, run: Any, load: Callable[[Any], FullTokenizer] = load_tokenizer
) -> tuple[FullTokenizer, AlbertConfig]:
    """The tokenizer (``load(options)``; a task with its own tokenizer rules passes its loader) and the model config a
    fine-tuning run starts from: ``--albert_config_file`` required, and checked against ``--max_seq_length`` and
    the tokenizer's vocabulary size; with ``--export_dir``, a SentencePiece model for the export's in-graph
    tokenizer. Each as one line, a :class:`TaskError` naming the flag that is missing or disagrees."""
    if run.export_dir and not options.spm_model_file:
        raise TaskError("--export_dir writes an in-graph SentencePiece tokenizer: it needs --spm_model_file")
    if not options.albert_config_file:
        raise TaskError("--albert_config_file is required")
    tokenizer = load(options)
    config = AlbertConfig.load(options.albert_config_file)
    config.check_max_seq_length(options.max_seq_length)
    try:
        config.check_vocab_size(tokenizer.vocab_size)
    except ConfigError as e:  # a run option error: same exit path as the other option checks
        raise TaskError(f"{getattr(tokenizer, 'source', 'the tokenizer')}: {e}") from None
    return tokenizer, config


def warn_random_initialisation() -> None:
    """The loud warning of a fine-tuning run without ``--init_checkpoint`` (google-research/albert#132)."""
    banner = "!" * 100
    logging.warning(
        f"\n{banner}\n!! WARNING: no --init_checkpoint: fine-tuning starts from RANDOM initialisation.\n"
        "!! Scores will be near chance (google-research/albert#132). Pass --init_checkpoint=<pretrained ALBERT: "
        f"official TF1, albert-tf or Hugging Face checkpoint>.\n{banner}"
    )
