"""The token tagging job behind ``run_tagging``: one task on the shared runner skeleton.

There is no official ALBERT tagging runner; this follows transformers' ``run_ner`` where a choice is free and fixes
what its users meet (subword labels, long sentences cut, entity scores that differ from CoNLL's):

* The CoNLL column files are read and checked before TensorFlow (``inputs.check_inputs``): IOB1, IOB2 or BIOES,
  converted to IOB2; the labels are the training file's (``O`` first), kept with the model, ``run.json`` and the
  export; a tag the model does not know is refused with its file and line.
* Each word's label goes on its first piece (``--label_all_pieces``: on every piece); a sentence longer than a
  window is split into overlapping windows and every word is scored from the window where it has the most context
  (``albert_tf.data.tagging.features``): no word is dropped, and the run summary says how many sentences needed
  windows.
* ``--do_eval`` scores every saved checkpoint on the dev file with ``conlleval``'s entity precision, recall and F1,
  overall and per type (``scoring``), and keeps the best by F1; ``--do_predict`` writes ``predictions.conll`` (word,
  gold tag, predicted tag: ``conlleval``'s input) and its scores where the file has entities.
* The windows are built in memory each run (WNUT 2017's 3,394 training sentences take seconds), so there is no
  feature cache; training draws them in an order seeded by ``--seed``, every window once per epoch.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
from absl import logging

from albert_tf import files as _fs
from albert_tf.data.tagging import (
    IGNORE,
    OUTSIDE,
    TaggedSentence,
    TaggingWindow,
    sentence_windows,
    split_tag,
    window_arrays,
    word_tags,
)
from albert_tf.files import write_text_atomic
from albert_tf.tasks.base import FineTuningTask, export_metadata, input_buckets, load_pretrained_files
from albert_tf.tasks.tagging import scoring
from albert_tf.tasks.tagging.inputs import FILE_OPTIONS, TaggingInputs, check_inputs
from albert_tf.tasks.tagging.options import TaggingOptions
from albert_tf.tokenization.packing import INPUT_NAMES
from albert_tf.training.run_config import RunOptions
from albert_tf.training.task import EVAL, PREDICT, TRAIN

#: Per-position features, cut with the sequence axis by the length bucketing.
SEQUENCE_FEATURES = (*INPUT_NAMES, "label_ids")


def continuation_ids(labels: tuple[str, ...]) -> list[int]:
    """For each label id, the id a later piece of its word gets with ``--label_all_pieces``: ``I-X`` for ``B-X``,
    the label itself otherwise."""
    index = {label: i for i, label in enumerate(labels)}
    return [index.get(f"I-{split_tag(label)[1]}", i) if label.startswith("B-") else i
            for i, label in enumerate(labels)]


class TaggingTask(FineTuningTask):
    """Token tagging: CoNLL files, windows of pieces, ``AlbertTagger``, ``conlleval``'s entity scores, export."""

    name = "tagging"
    key_metric = "f1"
    options_type = TaggingOptions

    def __init__(self, options: TaggingOptions, run: RunOptions, tokenizer: Any, albert_config: Any,
                 inputs: TaggingInputs, seed: int | None = None) -> None:
        super().__init__(options, run, tokenizer, albert_config, seed)
        self.inputs = inputs
        self.labels = inputs.labels
        self.windows: dict[str, list[list[TaggingWindow]]] = {}  # split -> per sentence, its windows

    @classmethod
    def from_options(cls, options: TaggingOptions, run: RunOptions, seed: int | None = None) -> TaggingTask:
        """Every check that needs no TF op: the flags and every file the run reads (``inputs.check_inputs``), then
        the pretrained model's config and tokenizer."""
        inputs = check_inputs(options, run)
        tokenizer, albert_config = load_pretrained_files(options, run)
        return cls(options, run, tokenizer, albert_config, inputs, seed)

    @classmethod
    def export_checkpoint(cls, checkpoint: str, export_dir: str, **options: Any) -> str:
        """As every task's (``FineTuningTask.export_checkpoint``); without ``labels`` and ``train_file`` the labels
        are those of the run that wrote ``checkpoint`` (its ``run.json``)."""
        from albert_tf.checkpoints.run_meta import find_run_meta

        if not options.get("labels") and not options.get("train_file"):
            found = find_run_meta(checkpoint)
            labels = (found[1].get("labels") if found and found[1].get("task") == cls.name else None) or []
            options["labels"] = ",".join(labels)
        return super().export_checkpoint(checkpoint, export_dir, **options)

    # ---------------------------------------------------------------- output directory
    def identity(self) -> dict[str, Any]:
        return {"task": self.name, "labels": list(self.labels), "max_seq_length": self.options.max_seq_length,
                "albert_config_file": self.options.albert_config_file}

    def input_paths(self) -> list[str]:
        return [p for p in (getattr(self.options, name) for name in FILE_OPTIONS.values()) if p]

    # ---------------------------------------------------------------- model and data
    def prepare(self) -> None:
        """Each needed split's sentences as windows of pieces (in memory; no cache)."""
        o = self.options
        continuation = continuation_ids(self.labels)
        label_id = {label: i for i, label in enumerate(self.labels)}
        for split, sentences in self.inputs.sentences.items():
            self.windows[split] = [
                sentence_windows(self.tokenizer, s.words, [label_id[t] for t in s.tags], o.max_seq_length,
                                 stride=o.window_stride or None, label_all_pieces=o.label_all_pieces,
                                 continuation=continuation)
                for s in sentences]
            report = self._report(split)
            logging.info("tagging %s: %d sentences, %d words, %d windows; %d sentences longer than a window of %d "
                         "pieces were split into overlapping windows (no word dropped)", split,
                         report["sentences"], report["words"], report["windows"], report["sentences_in_windows"],
                         o.max_seq_length)

    def _report(self, split: str) -> dict[str, Any]:
        windows = self.windows[split]
        return {"file": getattr(self.options, FILE_OPTIONS[split]), "sentences": len(windows),
                "words": sum(len(s.words) for s in self.inputs.sentences[split]),
                "windows": sum(len(w) for w in windows),
                "sentences_in_windows": sum(len(w) > 1 for w in windows),
                "i_tags_read_as_entity_start": self.inputs.repairs[split].count}

    def data_report(self) -> dict[str, Any]:
        return {"tag_scheme": self.inputs.scheme, "labels": list(self.labels),
                **{split: self._report(split) for split in self.windows}}

    def build_model(self) -> Any:
        from albert_tf.tasks.tagging.model import AlbertTagger

        model = AlbertTagger(self.albert_config, self.labels, classifier_dropout=self.options.classifier_dropout,
                             sharing=self.options.sharing)
        model({k: np.zeros((1, 2), np.int32) for k in INPUT_NAMES}, training=False)
        return model

    def arrays(self, split: str) -> dict[str, np.ndarray]:
        """The split's windows as padded model inputs, one row each in sentence order (``window_arrays``)."""
        return window_arrays([w for windows in self.windows[split] for w in windows], self.options.max_seq_length)

    def build_inputs(self, split: str, global_batch_size: int):
        import tensorflow as tf

        from albert_tf.data.batching import trim_batch

        if split not in self.windows:
            return None
        ds = tf.data.Dataset.from_tensor_slices(self.arrays(split))
        if split == TRAIN:  # every window once per epoch, in an order drawn from --seed anew each epoch
            ds = ds.shuffle(len(ds), seed=self.seed, reshuffle_each_iteration=True).repeat()
        ds = ds.batch(global_batch_size, drop_remainder=split == TRAIN)
        if split == TRAIN and self.packs_training():
            return self.packed_batches(ds, global_batch_size)
        boundaries = input_buckets(self.options, split)
        if boundaries:
            ds = ds.map(lambda batch: trim_batch(batch, boundaries, sequence_features=SEQUENCE_FEATURES))
        return ds.prefetch(tf.data.AUTOTUNE)

    def _logits(self, model, features, training: bool):
        return model({k: features[k] for k in INPUT_NAMES}, training=training)

    def loss(self, model, features, training: bool):
        import tensorflow as tf

        from albert_tf.data.packing import is_packed, merge_slices
        from albert_tf.tasks.tagging.model import tagging_loss

        if is_packed(features):
            features = merge_slices(features)
            logits = model.packed_logits(features, tf.shape(features["label_ids"])[-1], training=training,
                                         unpadded=not self.jit_compile)
        else:
            logits = self._logits(model, features, training)
        loss, count = tagging_loss(logits, features["label_ids"])
        labelled = tf.not_equal(features["label_ids"], IGNORE)
        hits = tf.logical_and(labelled, tf.equal(tf.argmax(logits, -1, output_type=tf.int32), features["label_ids"]))
        accuracy = tf.reduce_sum(tf.cast(hits, tf.float32)) / tf.maximum(count, 1.0)
        return loss, {"loss": loss, "accuracy": accuracy}

    # ---------------------------------------------------------------- evaluation and prediction
    def eval_outputs(self, model, features):
        """Per window: the predicted label id at each position (padded to ``max_seq_length`` with ``IGNORE``,
        since bucketed batches differ in length), and its summed loss and labelled-position count."""
        import tensorflow as tf

        from albert_tf.tasks.tagging.model import tagging_loss_terms

        logits = self._logits(model, features, False)
        predictions = tf.argmax(logits, -1, output_type=tf.int32)
        pad = self.options.max_seq_length - tf.shape(predictions)[1]
        sums, counts = tagging_loss_terms(logits, features["label_ids"])
        return {"predictions": tf.pad(predictions, [[0, 0], [0, pad]], constant_values=IGNORE),
                "loss_sum": sums, "labelled": counts}

    def predicted_tags(self, split: str, predictions: np.ndarray, whole: bool = True) -> list[list[str]]:
        """Each sentence's predicted tag per word, from the window that scores it (``TaggingWindow.word_index``).
        ``predictions`` holds the split's windows in order, all of them, or with ``whole=False`` the first ones
        (``--max_eval_steps``): then the sentences whose windows they all hold."""
        sentences, windows = self.inputs.sentences[split], self.windows[split]
        rows = sum(len(w) for w in windows)
        if len(predictions) > rows or (whole and len(predictions) != rows):
            raise RuntimeError(f"{len(predictions)} predicted rows for {rows} {split} windows")
        return word_tags(windows, [len(s.words) for s in sentences], predictions, self.labels)

    def _scores(self, sentences: list[TaggedSentence], predicted: list[list[str]]) -> dict[str, Any]:
        result = scoring.score([s.tags for s in sentences], predicted)
        metrics = {k: result[k] for k in ("precision", "recall", "f1", "accuracy")}
        metrics.update(entities=result["entities"], predicted_entities=result["predicted"])
        for kind, values in result["per_type"].items():
            metrics[f"f1_{kind}"] = values["f1"]
        return metrics

    def aggregate(self, outputs: dict[str, np.ndarray]) -> dict[str, float]:
        """``conlleval``'s entity precision, recall and F1 (overall; F1 per type as ``f1_<type>``), token accuracy,
        the entity counts and ``eval_loss`` (the mean loss over labelled positions) on the dev file (its first
        sentences with ``--max_eval_steps``: those whose windows were all evaluated)."""
        predicted = self.predicted_tags(EVAL, outputs["predictions"], whole=False)  # all, unless --max_eval_steps
        metrics = self._scores(self.inputs.sentences[EVAL][:len(predicted)], predicted)
        metrics["eval_loss"] = float(np.sum(outputs["loss_sum"], dtype=np.float64)
                                     / max(float(np.sum(outputs["labelled"])), 1.0))
        return metrics

    def write_predictions(self, outputs: dict[str, np.ndarray], results_dir: str) -> dict[str, Any]:
        """``predictions.conll`` (word, gold, predicted per line, ``conlleval``'s input); with the file's entities,
        its scores in ``predict_results.json``."""
        sentences = self.inputs.sentences[PREDICT]
        predicted = self.predicted_tags(PREDICT, outputs["predictions"])
        lines = scoring.conlleval_lines([s.words for s in sentences], [s.tags for s in sentences], predicted)
        _fs.makedirs(results_dir)
        path = os.path.join(results_dir, "predictions.conll")
        write_text_atomic(path, "\n".join(lines) + "\n")
        summary: dict[str, Any] = {"predictions": path, "num_sentences": len(sentences)}
        if any(tag != OUTSIDE for s in sentences for tag in s.tags):
            summary["scores"] = self._scores(sentences, predicted)
            write_text_atomic(os.path.join(results_dir, "predict_results.json"),
                              json.dumps(summary["scores"], indent=2, sort_keys=True) + "\n")
        logging.info("wrote %s (%d sentences)", path, len(sentences))
        return summary

    def export(self, model, export_dir: str, step: int, source: str) -> str:
        """SavedModel in ``export_dir/<step>``: raw sentences -> entities with character offsets; token ids."""
        from albert_tf.tasks.tagging.export import export_tagger
        from albert_tf.tokenization import AlbertPreprocessor

        o = self.options
        path = os.path.join(export_dir, str(step))
        export_tagger(model, path, preprocessor=AlbertPreprocessor.from_tokenizer(self.tokenizer, o.max_seq_length),
                      window_stride=o.window_stride, real_tokens=o.export_real_tokens,
                      metadata=export_metadata(self.name, o.max_seq_length, self.tokenizer, source, step,
                                               labels=list(self.labels), window_stride=o.window_stride))
        return path


#: Run the job an ``ExperimentConfig`` describes; returns the run summary.
run = TaggingTask.run_trials
