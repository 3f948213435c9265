"""The SQuAD 1.1 / 2.0 job behind ``run_squad`` (official ``squad_utils.py``): one task on the shared runner skeleton.

Reader and features: ``albert_tf.data.squad``; model and loss: ``albert_tf.tasks.squad.model``; post-processing:
``albert_tf.evaluation.squad_predictions``; scoring: ``albert_tf.evaluation.squad_metrics``. This module only
wires them to the hooks of the task contract (``training/task.py``):

* One window of a question is one row of the input pipeline; the evaluation outputs of every window (with its
  ``unique_ids``) are gathered over the whole file and :meth:`SquadTask.aggregate` maps them back to questions,
  so answers that need several windows are exact.
* ``--version_2_with_negative`` selects the XLNet-style v2 head (beam + answer class) and v2 scoring; without it the
  v1 span head and v1.1 scoring (over the answerable questions when the file has unanswerable ones).
* v2 metrics are reported both ways: ``exact``/``f1`` as the official runner does (with the null-score threshold
  tuned on this same file, ``null_score_diff_threshold``; the official numbers, optimistic) and ``fixed_exact`` /
  ``fixed_f1`` with the threshold of ``--null_score_diff_threshold`` (honest numbers: nothing tuned on the answers).
  ``predictions.json`` uses the fixed threshold; ``null_odds.json`` holds every question's null score, so any other
  threshold can be applied afterwards.
* ``--do_eval`` evaluates every checkpoint on ``--predict_file`` and keeps the best by ``f1`` (the official predict
  loop); ``--do_predict`` writes ``predictions.json``, ``nbest_predictions.json`` and (v2) ``null_odds.json`` with
  the best (or ``--predict_checkpoint``) weights, and scores them when the file has gold answers. Predict-only works
  (the official v1 crashes there) and never needs ``--train_file``.
* Training packs windows (``--packing=first_fit``, ``albert_tf.data.packing``): several short windows share a row,
  and only real tokens go through the embeddings, projections and FFN (``AlbertSquad.packed_outputs``). Exact: the
  v2 loss masks padding through ``p_mask``, and the v1 softmaxes run over the window's tokens. ``--loss_over_padding``
  keeps the official v1 loss, whose softmaxes also cover the padding of the ``--max_seq_length`` window: then v1
  trains on whole unpacked windows. Evaluation and prediction run one window per row, dense layers on the real tokens
  only (``data.packing.one_example_per_row``; under ``--jit_compile`` (XLA) or ``--loss_over_padding`` every position
  of the bucketed batch).
* Length bucketing (``--bucket_lengths``, ``albert_tf.data.batching``) trims every evaluation/prediction batch and
  unpacked training batch (but the official v1 loss's). v1 evaluation outputs go back to ``max_seq_length`` columns
  with padding positions at -1e30, so the n-best depends on real tokens only and the answers equal fixed padding's.
  The official post-processing takes its n-best over padding positions too (one can take a slot, then be
  discarded): ``--nbest_over_padding`` with ``--bucket_lengths=none`` does that.
* Without ``--num_train_steps`` the step count is the official ``int(len(train examples) / train_batch_size *
  num_train_epochs)`` and, without ``--num_warmup_steps``, the warmup ``int(steps * warmup_proportion)``.

* ``--export_dir`` writes a SavedModel of the best (or ``--predict_checkpoint``) weights to ``<export_dir>/<step>``
  that answers raw ``question`` / ``context`` strings, windows and post-processing in the graph
  (``albert_tf.tasks.squad.export``); ``export_savedmodel --task=squad`` does the same from a checkpoint.

Scoring and prediction files: :mod:`albert_tf.tasks.squad.scoring`; the span-upper-bound diagnostic
(``python -m albert_tf.tasks.squad span_upper_bound ...``): :mod:`albert_tf.tasks.squad.diagnostics`.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
from absl import logging

from albert_tf import files as _fs
from albert_tf.data import squad as squad_data
from albert_tf.evaluation.squad_predictions import SquadPredictions, postprocess
from albert_tf.tasks.base import FineTuningTask, export_metadata, input_buckets, load_pretrained_files
from albert_tf.tasks.squad.inputs import check_inputs
from albert_tf.tasks.squad.options import SquadOptions
from albert_tf.tasks.squad.scoring import score, write_prediction_files
from albert_tf.tokenization import FullTokenizer
from albert_tf.tokenization.packing import INPUT_NAMES
from albert_tf.training.run_config import ExperimentConfig, RunOptions, validate_options
from albert_tf.training.task import PREDICT, TRAIN, TaskError


def load_tokenizer(options: SquadOptions) -> FullTokenizer:
    """SQuAD is SentencePiece only (official ``squad_utils.py``): the character alignment works on SentencePiece
    pieces."""
    if not options.spm_model_file:
        which = (f" (--vocab_file={options.vocab_file} is WordPiece: not supported for SQuAD)"
                 if options.vocab_file else "")
        raise TaskError(f"--spm_model_file is required: SQuAD features are SentencePiece only{which}")
    return FullTokenizer(do_lower_case=options.do_lower_case, spm_model_file=options.spm_model_file)


class SquadTask(FineTuningTask):
    """SQuAD v1.1 (span head) or v2.0 (beam + answer class): features, model, post-processing, official scoring."""

    name = "squad"
    key_metric = "f1"
    options_type = SquadOptions

    def __init__(self, options: SquadOptions, run: RunOptions, tokenizer: FullTokenizer, albert_config: Any,
                 seed: int | None = None) -> None:
        super().__init__(options, run, tokenizer, albert_config, seed)
        self.name = "squad_v2" if options.version_2_with_negative else "squad_v1"
        self.train_examples: list[squad_data.SquadExample] = []
        self.predict_examples: list[squad_data.SquadExample] = []
        self.predict_dataset: list[dict] = []
        self.cached: dict[str, squad_data.CachedSquad] = {}

    @classmethod
    def from_config(cls, config: ExperimentConfig) -> tuple[SquadTask, ExperimentConfig]:
        """The task of ``config`` and the config with the schedule its training data gives."""
        task = cls.from_options(config.task, config.run, seed=config.trainer.seed)
        config = dataclasses.replace(config, trainer=task.training_schedule(config.trainer))
        validate_options(config.trainer, config.run)
        return task, config

    @classmethod
    def from_options(cls, options: SquadOptions, run: RunOptions, seed: int | None = None) -> SquadTask:
        """Every check that needs no TF op, one line each: the flags and both JSON files
        (:func:`~albert_tf.tasks.squad.inputs.check_inputs`, whose questions the task keeps), then the pretrained
        model's config and tokenizer."""
        inputs = check_inputs(options, run)
        tokenizer, albert_config = load_pretrained_files(options, run, load_tokenizer)
        task = cls(options, run, tokenizer, albert_config, seed)
        task.train_examples = inputs.train_examples
        task.predict_dataset = inputs.predict_dataset
        task.predict_examples = inputs.predict_examples
        return task

    def training_schedule(self, trainer: Any) -> Any:
        """The official step counts when ``--num_train_steps`` / ``--num_warmup_steps`` are not given (<= 0 / < 0)."""
        steps = trainer.num_train_steps
        if not self.run.do_train:
            # No training: the optimizer the trainer still builds only needs a valid schedule.
            return dataclasses.replace(
                trainer, num_train_steps=max(1, steps), num_warmup_steps=max(0, trainer.num_warmup_steps)
            )
        if steps <= 0:
            steps = int(len(self.train_examples) / trainer.train_batch_size * self.options.num_train_epochs)
            if steps < 1:
                raise TaskError(
                    f"{len(self.train_examples)} training questions / --train_batch_size={trainer.train_batch_size} "
                    f"x --num_train_epochs={self.options.num_train_epochs} is less than one step"
                )
        warmup = trainer.num_warmup_steps
        if warmup < 0:
            warmup = int(steps * self.options.warmup_proportion)
        return dataclasses.replace(trainer, num_train_steps=steps, num_warmup_steps=warmup)

    @property
    def version_2(self) -> bool:
        return self.options.version_2_with_negative

    # ---------------------------------------------------------------- output directory
    def identity(self) -> dict[str, Any]:
        return {
            "task": self.name,
            "max_seq_length": self.options.max_seq_length,
            "albert_config_file": self.options.albert_config_file,
        }

    def input_paths(self) -> list[str]:
        return [p for p in (self.options.train_file, self.options.predict_file) if p]

    # ---------------------------------------------------------------- model and data
    def prepare(self) -> None:
        """Tokenize and window the needed files into keyed TFRecord + JSON caches (reused when nothing changed)."""
        o = self.options
        common = dict(
            tokenizer=self.tokenizer,
            max_seq_length=o.max_seq_length,
            doc_stride=o.doc_stride,
            max_query_length=o.max_query_length,
            version_2_with_negative=o.version_2_with_negative,
            do_lower_case=o.do_lower_case,
        )
        if self.run.do_train:
            self.cached[TRAIN] = squad_data.cached_features(
                o.train_file, is_training=True, cache_dir=self.cache_dir(o.train_feature_file),
                examples=self.train_examples, shuffle=o.shuffle_train_examples, **common
            )
            if not self.cached[TRAIN].num_features:
                raise TaskError(f"--train_file {o.train_file}: no question gave a feature (see the alignment report)")
        if self.run.do_eval or self.run.do_predict:
            self.cached[PREDICT] = squad_data.cached_features(
                o.predict_file, is_training=False, cache_dir=self.cache_dir(o.predict_feature_file),
                examples=self.predict_examples, **common
            )
        for split, path in ((TRAIN, o.train_file), (PREDICT, o.predict_file)):
            if split in self.cached:  # every counted problem, one line each naming the file and question
                summary, *problems = self.cached[split].report.log_lines(path)
                logging.info(summary)
                for line in problems:
                    (logging.info if "doubled band" in line else logging.warning)(line)

    def data_report(self) -> dict[str, Any]:
        files = {TRAIN: self.options.train_file, PREDICT: self.options.predict_file}
        return {
            split: dict(cached.report.to_json(), file=files[split], num_features=cached.num_features)
            for split, cached in self.cached.items()
        }

    def build_model(self) -> Any:
        from albert_tf.tasks.squad.model import AlbertSquad

        o = self.options
        model = AlbertSquad(
            self.albert_config,
            version_2_with_negative=o.version_2_with_negative,
            start_n_top=o.start_n_top,
            end_n_top=o.end_n_top,
            dropout_prob=o.dropout_prob,
            sharing=o.sharing,
        )
        length = max(2, o.start_n_top, o.end_n_top)  # the beam's top-k needs that many positions
        dummy = {k: np.zeros((1, length), np.int32) for k in (*INPUT_NAMES, "p_mask")}
        model(dummy, training=False)
        return model

    @property
    def _official_v1_loss(self) -> bool:
        """The v1 loss over every position of the window, padding included (``--loss_over_padding``)."""
        return not self.version_2 and self.options.loss_over_padding

    def packs_training(self) -> bool:
        return super().packs_training() and not self._official_v1_loss

    def build_inputs(self, split: str, global_batch_size: int):
        cached = self.cached.get(TRAIN if split == TRAIN else PREDICT)
        if cached is None:
            return None
        packed = split == TRAIN and self.packs_training()
        dataset = squad_data.load_dataset(
            cached.record_files,
            self.options.max_seq_length,
            global_batch_size,
            is_training=split == TRAIN,
            seed=self.seed,
            # The official v1 loss softmaxes over every position, padding included: it trains at full length.
            bucket_lengths=None if packed else input_buckets(self.options, split,
                                                             exact_in_training=not self._official_v1_loss),
        )
        return self.packed_batches(dataset, global_batch_size) if packed else dataset

    def _inputs(self, features: dict, training: bool) -> dict:
        names = list(INPUT_NAMES)
        if self.version_2:
            names.append("p_mask")
            if training:
                names.append("start_positions")
        return {k: features[k] for k in names}

    def _outputs(self, model, features, training: bool):
        """The model's outputs and the v1 loss's window mask (None: every position, ``--loss_over_padding``).

        Packed training batches (slices merged) and, without XLA, evaluation batches (one window per row) go through
        ``AlbertSquad.packed_outputs``: the dense layers on the real tokens only. Under XLA (``--jit_compile``) packed
        rows keep every position (``unpadded=False``: XLA compiles no data-dependent token count) and evaluation
        batches take the plain call, as every batch does with ``--loss_over_padding`` (its loss reads the padding
        positions' logits)."""
        import tensorflow as tf

        from albert_tf.data.packing import is_packed, one_example_per_row
        from albert_tf.tasks.squad.model import window_mask

        packed = is_packed(features)
        if not packed and (self.jit_compile or self._official_v1_loss):
            outputs = model(self._inputs(features, training), training=training)
            return outputs, None if self._official_v1_loss else tf.not_equal(features["input_mask"], 0)
        if packed:  # the rows' length under XLA (one shape), else the batch's longest window
            length = (tf.shape(features["input_ids"])[1] if self.jit_compile
                      else tf.reduce_max(features["example_lengths"]))
        else:
            features = one_example_per_row(features)
            length = tf.shape(features["input_ids"])[1]
        outputs = model.packed_outputs(features, length, training=training, unpadded=not self.jit_compile)
        return outputs, window_mask(features["example_lengths"], length)

    def loss(self, model, features, training: bool):
        import tensorflow as tf

        from albert_tf.data.packing import is_packed, merge_slices
        from albert_tf.tasks.squad.model import squad_per_example_loss

        if is_packed(features):
            features = merge_slices(features)
        outputs, mask = self._outputs(model, features, training)
        loss = tf.reduce_mean(squad_per_example_loss(outputs, features, self.version_2, mask))
        return loss, {"loss": loss}

    # ---------------------------------------------------------------- evaluation and prediction
    def eval_outputs(self, model, features):
        import tensorflow as tf

        outputs, _ = self._outputs(model, features, False)
        out = {k: tf.cast(v, tf.float32) if v.dtype.is_floating else v for k, v in outputs.items()}
        if not self.version_2:
            out = {k: self._full_length(v, features["input_mask"]) for k, v in out.items()}
        out["unique_ids"] = features["unique_ids"]
        return out

    def _full_length(self, logits, input_mask):
        """v1 per-position logits [B, S'] -> [B, max_seq_length], padding positions at ``-MASK_VALUE``.

        A bucketed batch is S' <= max_seq_length positions long; padding back gives every batch the one width the
        trainer concatenates. Padding positions get the masked value whatever the batch length, so the
        post-processing's n-best (the official ``_get_best_indexes`` over every position, where a padding position
        could take one of the ``n_best_size`` slots and is then discarded as outside the window) depends on the
        real tokens only, and bucketed and fixed-padding runs give the same answers. ``--nbest_over_padding``
        (with fixed padding) keeps the padding logits as the model gave them: the official n-best.
        """
        import tensorflow as tf

        from albert_tf.tasks.squad.model import MASK_VALUE

        if self.options.nbest_over_padding:
            return tf.ensure_shape(logits, [None, self.options.max_seq_length])

        masked = tf.where(tf.not_equal(input_mask, 0), logits, tf.fill(tf.shape(logits), -MASK_VALUE))
        width = self.options.max_seq_length - tf.shape(masked)[1]
        full = tf.pad(masked, [[0, 0], [0, width]], constant_values=-MASK_VALUE)
        return tf.ensure_shape(full, [None, self.options.max_seq_length])

    def _predictions(self, outputs: dict[str, np.ndarray]) -> SquadPredictions:
        """Answers of every question whose windows are all in ``outputs`` (rows keyed by ``unique_ids``)."""
        ids = outputs["unique_ids"]
        rows = {int(uid): {k: v[i] for k, v in outputs.items() if k != "unique_ids"} for i, uid in enumerate(ids)}
        cached = self.cached[PREDICT]
        o = self.options
        return postprocess(
            cached.examples,
            cached.features,
            rows,
            version_2_with_negative=self.version_2,
            n_best_size=o.n_best_size,
            max_answer_length=o.max_answer_length,
            start_n_top=o.start_n_top,
            end_n_top=o.end_n_top,
        )

    def aggregate(self, outputs: dict[str, np.ndarray]) -> dict[str, float]:
        """Official SQuAD scores of the answered questions (v2: tuned and fixed threshold, see module docstring)."""
        predictions = self._predictions(outputs)
        metrics = score(
            self.predict_dataset, predictions, self.version_2, self.options.null_score_diff_threshold
        )
        metrics["num_features"] = int(len(outputs["unique_ids"]))
        return metrics

    def write_predictions(self, outputs: dict[str, np.ndarray], results_dir: str) -> dict[str, Any]:
        """``predictions.json``, ``nbest_predictions.json`` and (v2) ``null_odds.json``; scores when gold exists."""

        predictions = self._predictions(outputs)
        _fs.makedirs(results_dir)
        files = write_prediction_files(results_dir, predictions, self.options.null_score_diff_threshold)
        summary: dict[str, Any] = {"files": files, "num_questions": len(predictions.best_text)}
        if any(e.answers or e.is_impossible for e in self.predict_examples):
            summary["scores"] = score(
                self.predict_dataset, predictions, self.version_2, self.options.null_score_diff_threshold
            )
        return summary

    def export(self, model, export_dir: str, step: int, source: str) -> str:
        """SavedModel in ``export_dir/<step>``: raw question and context -> answer, character offsets, score."""
        from albert_tf.tasks.squad.export import export_squad
        from albert_tf.tokenization import AlbertPreprocessor

        o = self.options
        path = os.path.join(export_dir, str(step))
        export_squad(
            model,
            path,
            preprocessor=AlbertPreprocessor.from_tokenizer(self.tokenizer, o.max_seq_length),
            doc_stride=o.doc_stride,
            max_query_length=o.max_query_length,
            max_answer_length=o.max_answer_length,
            n_best_size=o.n_best_size,
            null_score_diff_threshold=o.null_score_diff_threshold,
            metadata=export_metadata(self.name, o.max_seq_length, self.tokenizer, source, step),
            real_tokens=o.export_real_tokens,
        )
        return path


#: Run the job an ``ExperimentConfig`` describes; returns the run summary.
run = SquadTask.run_trials
