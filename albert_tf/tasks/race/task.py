"""The RACE job behind ``run_race`` (official ``race_utils.py``): one task on the shared runner skeleton.

Reader and features: ``albert_tf.data.race``; model and loss: ``albert_tf.tasks.race.model``; scoring:
``albert_tf.evaluation.race_metrics``. What the official ``run_race.py`` does, with its problems fixed:

* ``--data_dir`` holds ``RACE/{train,dev,test}/{middle,high}/``, in the official ``all.txt`` layout (one JSON object
  per line) or the original release layout (one JSON object per ``.txt`` file: the official needed them
  concatenated first). ``--middle_only`` / ``--high_only`` select a level.
* One evaluation reports ``accuracy`` and, in the same run, ``accuracy_middle`` and ``accuracy_high`` (the official
  needed a run per level); ``--do_eval`` evaluates every checkpoint on dev and keeps the best by accuracy.
* ``--export_dir`` writes a SavedModel of the best (or ``--predict_checkpoint``) weights to ``<export_dir>/<step>``
  that answers raw ``article`` / ``question`` / ``options`` [B, 4] (``albert_tf.tasks.race.export``).
* ``--do_predict`` writes ``predictions.tsv`` (question id, predicted letter, the four probabilities) for the test
  split and, where the file has answers, its accuracies; the official predict (``estimator.evaluate`` with an
  undefined ``predict_steps`` off TPU and an undefined ``best_perf`` without ``do_eval``) crashed.
* The official defaults: ``do_train`` and ``do_eval`` on, ``max_seq_length`` 512, ``max_qa_length`` 128, learning
  rate 1e-5, ``train_step`` 12000, ``warmup_step`` 1000, ``save_checkpoints_steps`` 100.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
from absl import logging

from albert_tf import files as _fs
from albert_tf.data import race as race_data
from albert_tf.evaluation.race_metrics import LETTERS, race_accuracy
from albert_tf.files import write_text_atomic
from albert_tf.tasks.base import (
    FineTuningTask,
    export_metadata,
    input_buckets,
    load_pretrained_files,
    needed_splits,
)
from albert_tf.tasks.race.inputs import SPLITS, check_inputs
from albert_tf.tasks.race.options import RaceOptions
from albert_tf.tokenization.packing import INPUT_NAMES
from albert_tf.training.run_config import RunOptions
from albert_tf.training.task import EVAL, PREDICT, TRAIN

NUM_CHOICES = 4


class RaceTask(FineTuningTask):
    """RACE: four options per question, the pooled output of each scored by one shared head, softmax over four."""

    key_metric = "accuracy"
    options_type = RaceOptions

    def __init__(self, options: RaceOptions, run: RunOptions, tokenizer: Any, albert_config: Any,
                 seed: int | None = None) -> None:
        super().__init__(options, run, tokenizer, albert_config, seed)
        self.name = options.task_name.lower() or "race"
        self.cached: dict[str, race_data.CachedRace] = {}

    @classmethod
    def from_options(cls, options: RaceOptions, run: RunOptions, seed: int | None = None) -> RaceTask:
        """Every check that needs no TF op, one line each: the flags and every RACE file the run reads
        (:func:`~albert_tf.tasks.race.inputs.check_inputs`), then the pretrained model's config and tokenizer."""
        check_inputs(options, run)
        tokenizer, albert_config = load_pretrained_files(options, run)
        return cls(options, run, tokenizer, albert_config, seed)

    def _needed_splits(self) -> list[str]:
        return needed_splits(self.run)

    # ---------------------------------------------------------------- output directory
    def identity(self) -> dict[str, Any]:
        return {
            "task": self.name,
            "max_seq_length": self.options.max_seq_length,
            "albert_config_file": self.options.albert_config_file,
        }

    def input_paths(self) -> list[str]:
        o = self.options
        return [p for p in (o.data_dir, o.train_file, o.eval_file, o.predict_file) if p]

    # ---------------------------------------------------------------- model and data
    def prepare(self) -> None:
        """Tokenize the needed splits into keyed TFRecord caches (reused when nothing that affects them changed)."""
        o = self.options
        official_files = {TRAIN: o.train_file, EVAL: o.eval_file, PREDICT: o.predict_file}
        for split in self._needed_splits():
            self.cached[split] = race_data.cached_features(
                o.data_dir, SPLITS[split], self.tokenizer, o.max_seq_length, o.max_qa_length,
                self.cache_dir(official_files[split]),
                middle_only=o.middle_only, high_only=o.high_only,
                shuffle=split == TRAIN and o.shuffle_train_examples,
            )
            logging.info("RACE %s: %d questions (%s)", SPLITS[split], self.cached[split].num_examples,
                         "reused cache" if self.cached[split].reused else "tokenized")

    def data_report(self) -> dict[str, Any]:
        report = {}
        for split, cached in self.cached.items():
            levels = [e.level for e in cached.examples]
            report[SPLITS[split]] = {"num_questions": cached.num_examples,
                                     **{f"num_{level}": levels.count(level) for level in ("middle", "high")}}
        return report

    def build_model(self) -> Any:
        from albert_tf.tasks.race.model import AlbertMultipleChoice

        model = AlbertMultipleChoice(
            self.albert_config, num_choices=NUM_CHOICES, dropout_prob=self.options.dropout_prob,
            sharing=self.options.sharing,
        )
        model({k: np.zeros((1, NUM_CHOICES, 2), np.int32) for k in INPUT_NAMES}, training=False)
        return model

    def build_inputs(self, split: str, global_batch_size: int):
        cached = self.cached.get(split)
        if cached is None:
            return None
        packed = split == TRAIN and self.packs_training()
        dataset = race_data.load_dataset(
            cached.record_files, self.options.max_seq_length, global_batch_size, is_training=split == TRAIN,
            seed=self.seed, bucket_lengths=None if packed else input_buckets(self.options, split),
        )
        return self.packed_batches(dataset, global_batch_size) if packed else dataset

    def packed_batches(self, dataset: Any, global_batch_size: int) -> Any:
        """Batches of ``global_batch_size`` questions packed with every choice one example ([B, 4, L] -> [B * 4, L],
        a question's choices consecutive; ``label_ids`` stays one per question)."""
        from albert_tf.tasks.race.model import flat_choices

        def flatten(batch):
            return {**batch, **{k: flat_choices(batch[k]) for k in INPUT_NAMES}}

        return super().packed_batches(dataset.map(flatten), global_batch_size * NUM_CHOICES)

    def _logits(self, model, features, training: bool):
        """[B, 4] float32. Packed training rows (slices merged) and, without XLA, evaluation batches (one choice per
        row) take ``AlbertMultipleChoice.packed_logits``: the dense layers on the real tokens only. Under XLA
        (``--jit_compile``) packed rows keep every position and evaluation batches take the plain call."""
        import tensorflow as tf

        from albert_tf.data.packing import is_packed, one_example_per_row

        if is_packed(features):
            return model.packed_logits(features, training=training, unpadded=not self.jit_compile)
        if self.jit_compile:
            return tf.cast(model({k: features[k] for k in INPUT_NAMES}, training=training), tf.float32)
        from albert_tf.tasks.race.model import flat_choices

        flat = one_example_per_row({k: flat_choices(features[k]) for k in INPUT_NAMES})
        return model.packed_logits(flat, training=training)

    def loss(self, model, features, training: bool):
        import tensorflow as tf

        from albert_tf.data.packing import is_packed, merge_slices
        from albert_tf.tasks.race.model import multiple_choice_per_example_loss

        if is_packed(features):
            features = merge_slices(features)
        logits = self._logits(model, features, training)
        loss = tf.reduce_mean(multiple_choice_per_example_loss(logits, features["label_ids"]))
        hits = tf.equal(tf.argmax(logits, -1, output_type=tf.int32), features["label_ids"])
        return loss, {"loss": loss, "accuracy": tf.reduce_mean(tf.cast(hits, tf.float32))}

    # ---------------------------------------------------------------- evaluation and prediction
    def eval_outputs(self, model, features):
        from albert_tf.tasks.race.model import multiple_choice_per_example_loss

        logits = self._logits(model, features, False)
        labels = features["label_ids"]  # every dev question has an answer (checked in from_options)
        return {"logits": logits, "label_ids": labels, "loss": multiple_choice_per_example_loss(logits, labels)}

    def _levels(self, split: str, rows: int) -> list[str]:
        examples = self.cached[split].examples
        if rows > len(examples):
            raise RuntimeError(f"{rows} rows for {len(examples)} RACE questions")
        return [e.level for e in examples[:rows]]  # rows come back in file order, padding removed

    def aggregate(self, outputs: dict[str, np.ndarray]) -> dict[str, float]:
        """Accuracy overall and per level, and the mean official loss, over the evaluated dev questions."""
        logits, labels = outputs["logits"], outputs["label_ids"]
        metrics: dict[str, Any] = race_accuracy(logits, labels, self._levels(EVAL, len(labels)))
        metrics["eval_loss"] = float(np.mean(outputs["loss"], dtype=np.float64))
        return metrics

    def predict_outputs(self, model, features):
        return {"logits": self._logits(model, features, False), "label_ids": features["label_ids"]}

    def write_predictions(self, outputs: dict[str, np.ndarray], results_dir: str) -> dict[str, Any]:
        """``predictions.tsv``: id, predicted letter, probabilities of A-D; accuracies when the split has answers."""
        import tensorflow as tf

        examples = self.cached[PREDICT].examples
        logits, labels = outputs["logits"], outputs["label_ids"]
        if len(logits) != len(examples):
            raise RuntimeError(f"predicted {len(logits)} rows for {len(examples)} test questions")
        probabilities = tf.nn.softmax(logits, axis=-1).numpy()
        rows = ["id\tprediction\t" + "\t".join(f"probability_{c}" for c in LETTERS[:NUM_CHOICES])]
        for example, p in zip(examples, probabilities):
            rows.append(f"{example.example_id}\t{LETTERS[int(np.argmax(p))]}\t" + "\t".join(f"{v:.6f}" for v in p))
        _fs.makedirs(results_dir)
        path = os.path.join(results_dir, "predictions.tsv")
        write_text_atomic(path, "\n".join(rows) + "\n")
        summary: dict[str, Any] = {"predictions": path, "num_questions": len(examples)}
        if (labels >= 0).any():
            summary["scores"] = race_accuracy(logits, labels, [e.level for e in examples])
            write_text_atomic(os.path.join(results_dir, "predict_results.json"),
                              json.dumps(summary["scores"], indent=2, sort_keys=True) + "\n")
        logging.info("wrote %s (%d questions)", path, len(examples))
        return summary

    def export(self, model, export_dir: str, step: int, source: str) -> str:
        """SavedModel in ``export_dir/<step>``: raw article, question, options [B, 4] -> probabilities, answer."""
        from albert_tf.tasks.race.export import export_multiple_choice
        from albert_tf.tokenization import AlbertPreprocessor

        o = self.options
        path = os.path.join(export_dir, str(step))
        export_multiple_choice(
            model,
            path,
            max_qa_length=o.max_qa_length,
            preprocessor=AlbertPreprocessor.from_tokenizer(self.tokenizer, o.max_seq_length),
            metadata=export_metadata(self.name, o.max_seq_length, self.tokenizer, source, step,
                                     max_qa_length=o.max_qa_length),
            real_tokens=o.export_real_tokens,
        )
        return path


#: Run the job an ``ExperimentConfig`` describes; returns the run summary.
run = RaceTask.run_trials
