"""The GLUE job behind ``run_classifier`` (official ``classifier_utils.py``): one task on the shared runner skeleton.

What the official runner does, with its user complaints fixed (google-research/albert#230, #132, #123, #269, #224):

* Everything is validated before any long work: task name, config vs ``max_seq_length``, tokenizer vs
  config, every TSV the requested modes read (``GlueDataError`` names file and line), and ``output_dir``
  (``albert_tf.training.run_dir``: a directory holding another job's checkpoints is refused).
* Without ``init_checkpoint`` the job warns loudly that it trains from random initialisation
  (google-research/albert#132).
* ``do_eval`` evaluates **every** saved checkpoint on the whole dev set with the exact task metrics of
  ``albert_tf.evaluation.glue_metrics`` (the loss is the model's own per-example loss) and keeps the
  best by the official key metric (MCC for CoLA, Pearson for STS-B, accuracy otherwise) in ``best/``.
* Outputs: ``eval_results.{json,jsonl,txt}``, ``best_trial.txt``, ``test_results.tsv`` (class
  probabilities / scores), the GLUE submission file ``{Task}.tsv`` and, with ``export_dir``, a SavedModel
  with a raw-text signature (``albert_tf.tasks.glue.export``) in ``export_dir/<global step>``.
* MNLI-mismatched and AX are evaluated/predicted with an MNLI model, results in ``output_dir/<task>/``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf import files as _fs
from albert_tf.config import AlbertConfig
from albert_tf.data import glue
from albert_tf.data.packing import is_packed, merge_slices
from albert_tf.evaluation import glue_metrics
from albert_tf.files import write_text_atomic
from albert_tf.tasks.base import (
    FineTuningTask,
    export_metadata,
    input_buckets,
    load_pretrained_files,
)
from albert_tf.tasks.glue.export import export_classifier
from albert_tf.tasks.glue.inputs import check_inputs, needed_splits
from albert_tf.tasks.glue.model import AlbertClassifier, classification_per_example_loss, classifier_logits
from albert_tf.tasks.glue.options import GlueOptions
from albert_tf.tokenization import AlbertPreprocessor, FullTokenizer
from albert_tf.tokenization.packing import INPUT_NAMES
from albert_tf.training.run_config import RunOptions
from albert_tf.training.task import EVAL, PREDICT, TRAIN, TaskError

# Tasks that share a model: MNLI-mismatched and the AX diagnostic are evaluated/predicted with an MNLI model.
TASK_FAMILY = {"mnli-mm": "mnli", "ax": "mnli"}


class GlueTask(FineTuningTask):
    """One GLUE task: processor, cached features, AlbertClassifier, GLUE metrics, submission files, export."""

    options_type = GlueOptions

    def __init__(
        self,
        processor: glue.GlueProcessor,
        albert_config: AlbertConfig,
        max_seq_length: int,
        options: GlueOptions | None = None,
        run: RunOptions | None = None,
        tokenizer: FullTokenizer | None = None,
        seed: int | None = None,
    ) -> None:
        if options is not None and options.max_seq_length != max_seq_length:
            raise TaskError(f"max_seq_length {max_seq_length} disagrees with the options' {options.max_seq_length}")
        super().__init__(options or GlueOptions(max_seq_length=max_seq_length), run or RunOptions(), tokenizer,
                         albert_config, seed)
        self.processor = processor
        self.name = processor.name
        self.key_metric = glue_metrics.key_metric(processor.name)
        self.splits: dict[str, glue.CachedSplit] = {}
        self.read_reports: dict[str, dict[str, Any]] = {}

    @classmethod
    def from_options(cls, options: GlueOptions, run: RunOptions, seed: int | None = None) -> GlueTask:
        """Every check that needs no TF op: raises TaskError / GlueDataError / ConfigError with one line. The input
        files first (:func:`~albert_tf.tasks.glue.inputs.check_inputs`), then the pretrained model's config and
        tokenizer."""
        processor = check_inputs(options, run)
        tokenizer, albert_config = load_pretrained_files(options, run)
        return cls(processor, albert_config, options.max_seq_length, options, run, tokenizer, seed)

    def _needed_splits(self) -> list[str]:
        return needed_splits(self.run)

    @property
    def max_seq_length(self) -> int:
        """The one copy lives in the options (``--max_seq_length``)."""
        return self.options.max_seq_length

    @property
    def num_labels(self) -> int:
        return self.processor.num_labels

    # ---------------------------------------------------------------- output directory
    def identity(self) -> dict[str, Any]:
        return {
            "task": self.processor.name,
            "num_labels": self.num_labels,
            "max_seq_length": self.max_seq_length,
            "albert_config_file": self.options.albert_config_file,
        }

    def input_paths(self) -> list[str]:
        paths = [self.options.data_dir] if self.options.data_dir else []
        for split in (glue.TRAIN, glue.DEV, glue.TEST):
            with contextlib.suppress(glue.GlueDataError):  # a split the task lacks or the run does not read
                paths.extend(self.processor.source_paths(self.options.data_dir, split))
        return paths

    def results_subdir(self, previous: dict[str, Any], training: bool) -> str:
        """A task of the same family (mnli-mm, ax in an MNLI run) uses the model, results in ``<task>/``."""
        task, old = self.processor.name, previous.get("task")
        if TASK_FAMILY.get(task, task) != TASK_FAMILY.get(old, old) or previous.get("num_labels") != self.num_labels:
            raise TaskError(
                f"--output_dir {self.run.output_dir} holds a {old} run ({previous.get('num_labels')} labels); "
                f"this is {task}: choose another --output_dir"
            )
        if training:
            raise TaskError(f"--output_dir {self.run.output_dir} trains {old}; train {task} elsewhere")
        return task

    # ---------------------------------------------------------------- model and data
    def prepare(self) -> None:
        """Tokenize the needed splits into keyed TFRecord caches (reused when nothing that affects them changed)."""
        cache_dir = self.cache_dir()
        for split in self._needed_splits():
            self.splits[split] = glue.cached_features(
                self.processor, self.options.data_dir, split, self.tokenizer, self.max_seq_length, cache_dir,
                shuffle=split == glue.TRAIN and self.options.shuffle_train_examples,
            )
            report = self.processor.last_report  # what reading the split's TSV counted (skipped short rows)
            if report is not None:
                self.read_reports[split] = dataclasses.asdict(report)

    def data_report(self) -> dict[str, Any]:
        return dict(self.read_reports)

    def build_model(self) -> AlbertClassifier:
        model = AlbertClassifier(
            self.albert_config,
            self.num_labels,
            classifier_dropout=self.options.classifier_dropout,
            sharing=self.options.sharing,
        )
        dummy = np.zeros((1, 2), np.int32)
        model({k: dummy for k in INPUT_NAMES}, training=False)
        return model

    def build_inputs(self, split: str, global_batch_size: int):
        cached = self.splits.get({TRAIN: glue.TRAIN, EVAL: glue.DEV, PREDICT: glue.TEST}[split])
        if cached is None:
            return None
        packed = split == TRAIN and self.packs_training()
        dataset = glue.load_dataset(
            cached.record_files,
            self.max_seq_length,
            self.processor.is_regression,
            global_batch_size,
            is_training=split == TRAIN,
            seed=self.seed,
            bucket_lengths=None if packed else input_buckets(self.options, split),
        )
        return self.packed_batches(dataset, global_batch_size) if packed else dataset

    def _logits(self, model, features, training: bool):
        if is_packed(features):
            return model.packed_logits(merge_slices(features), training=training, unpadded=not self.jit_compile)
        return classifier_logits(model({k: features[k] for k in INPUT_NAMES}, training=training))

    @staticmethod
    def _labels(features):
        labels = features["label_ids"]
        return tf.reshape(labels, [-1]) if is_packed(features) else labels

    def loss(self, model, features, training: bool):
        logits = self._logits(model, features, training)
        labels = self._labels(features)
        per_example = classification_per_example_loss(logits, labels, self.num_labels)
        loss = tf.reduce_mean(per_example)
        logs = {"loss": loss}
        if not self.processor.is_regression:
            hits = tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels)
            logs["accuracy"] = tf.reduce_mean(tf.cast(hits, tf.float32))
        return loss, logs

    # ---------------------------------------------------------------- evaluation and prediction
    def eval_outputs(self, model, features):
        logits = tf.cast(self._logits(model, features, False), tf.float32)
        return {
            "logits": logits,
            "label_ids": features["label_ids"],
            "loss": classification_per_example_loss(logits, features["label_ids"], self.num_labels),
        }

    def aggregate(self, outputs: dict[str, np.ndarray]) -> dict[str, float]:
        """Every GLUE metric of the task, ``eval_loss`` (mean official loss), ``num_examples`` and, for a
        classification, ``predicted_classes`` (how many labels the predictions use)."""
        logits, labels = outputs["logits"], outputs["label_ids"]
        preds = logits.reshape(-1) if self.processor.is_regression else np.argmax(logits, axis=-1)
        metrics = glue_metrics.glue_metrics(self.processor.name, labels, preds)
        if not self.processor.is_regression:  # 1: the scores are those of always answering one label
            metrics["predicted_classes"] = int(len(np.unique(preds)))
        metrics["eval_loss"] = float(np.mean(outputs["loss"], dtype=np.float64))
        metrics["num_examples"] = int(len(labels))
        return metrics

    def predict_outputs(self, model, features):
        return {"logits": tf.cast(self._logits(model, features, False), tf.float32)}

    def write_predictions(self, outputs: dict[str, np.ndarray], results_dir: str) -> dict[str, Any]:
        """``test_results.tsv`` (probabilities, or the score) and the GLUE submission file ``{Task}.tsv``."""
        test = self.splits[glue.TEST]
        logits = outputs["logits"]
        if len(logits) != test.num_examples:
            raise RuntimeError(f"predicted {len(logits)} rows for {test.num_examples} test examples")
        if self.processor.is_regression:
            values = logits.reshape(-1, 1)
        else:
            values = tf.nn.softmax(logits, axis=-1).numpy()
        _fs.makedirs(results_dir)
        results = os.path.join(results_dir, "test_results.tsv")
        write_text_atomic(results, "".join("\t".join(f"{v:.6f}" for v in row) + "\n" for row in values))
        rows = glue.submission_rows(self.processor, test.examples, values)
        submission = os.path.join(results_dir, f"{self.processor.submission_name}.tsv")
        glue.write_submission(submission, rows)
        logging.info("wrote %s (%d rows) and %s", submission, len(rows), results)
        return {"submission": submission, "test_results": results, "num_examples": len(rows)}

    def export(self, model, export_dir: str, step: int, source: str) -> str:
        """SavedModel in ``export_dir/<step>``: raw ``text_a`` [+ ``text_b``] -> probabilities/label (or score)."""
        path = os.path.join(export_dir, str(step))
        layout = self.processor.layouts[next(iter(self.processor.layouts))]
        export_classifier(
            model,
            path,
            labels=self.processor.get_labels(),
            text_pair=layout.text_b is not None,
            preprocessor=AlbertPreprocessor.from_tokenizer(self.tokenizer, self.max_seq_length),
            threshold=self.options.threshold_to_export,
            jit_compile=self.options.export_jit_compile,
            real_tokens=self.options.export_real_tokens,
            bucket_lengths=self.options.bucket_lengths,
            metadata=export_metadata(self.processor.name, self.max_seq_length, self.tokenizer, source, step),
        )
        return path


#: Run the job an ``ExperimentConfig`` describes; returns the run summary.
run = GlueTask.run_trials
