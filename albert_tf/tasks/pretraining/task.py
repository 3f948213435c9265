"""The pretraining job: AlbertPretrainer + MLM/SOP losses (``get_masked_lm_output``, ``get_sentence_order_output``) on
official-format TFRecords.

``masked_lm_budget`` > 0 re-masks the records online, every time one is read
(``albert_tf.data.pretraining.online_masking``: what the official flag was meant to do; officially it is broken).

Evaluation sums the official ``metric_fn`` values per example (``masked_lm_accuracy`` weighted by
``masked_lm_weights``, ``sentence_order_accuracy``, and both losses) over the held-out records; the
best checkpoint is kept by ``masked_lm_accuracy``, as the official ``model.ckpt-best``.
"""

from __future__ import annotations

import math
import secrets
import sys
from typing import Any

import keras
import numpy as np

from albert_tf.config import AlbertConfig
from albert_tf.data.pretraining.dataset import (
    online_masking_config,
    pretraining_dataset,
    validate_pretraining_files,
)
from albert_tf.data.pretraining.online_masking import OnlineMaskingConfig
from albert_tf.data.pretraining.schema import MODEL_INPUTS
from albert_tf.modeling import AlbertPretrainer
from albert_tf.modeling.losses import per_example_pretraining_metrics, pretraining_losses
from albert_tf.tasks.pretraining.inputs import check_inputs
from albert_tf.tasks.pretraining.options import PretrainingOptions
from albert_tf.training.experiment import run_experiment
from albert_tf.training.run_config import ExperimentConfig, validate_options
from albert_tf.training.task import EVAL, TRAIN, Task, TaskError


def run(config: ExperimentConfig, **kwargs: Any) -> dict[str, Any]:
    """Pretrain / evaluate as ``config`` says; returns the run summary."""
    validate_options(config.trainer, config.run)
    task = PretrainingTask.from_options(config.task, config.run, seed=config.trainer.seed)
    return run_experiment(task, config, **kwargs)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class PretrainingTask(Task):
    """MLM + SOP pretraining on the official TFRecord features."""

    name = "pretraining"
    key_metric = "masked_lm_accuracy"

    def __init__(
        self,
        config: AlbertConfig,
        train_files: list[str] | None,
        eval_files: list[str] | None,
        max_seq_length: int,
        max_predictions_per_seq: int,
        *,
        seed: int | None = 12345,
        shuffle_buffer_size: int = 100,
        sharing: str = "all",
        online_masking: OnlineMaskingConfig | None = None,
        sentence_loss_weight: float = 1.0,
        online_masking_eval: bool = True,
    ) -> None:
        self.config = config
        self.train_files = train_files
        self.eval_files = eval_files
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self.seed = seed
        self.shuffle_buffer_size = shuffle_buffer_size
        self.sharing = sharing
        self.online_masking = online_masking
        # False: evaluation reads the records' own masks (a comparison of static and dynamic training masks
        # scores both on the same masked tokens); True: evaluation masks online too, as run_pretraining does
        self.online_masking_eval = online_masking_eval
        if not (math.isfinite(sentence_loss_weight) and sentence_loss_weight >= 0):
            raise TaskError(f"--sentence_loss_weight={sentence_loss_weight} is out of range: it must be >= 0")
        self.sentence_loss_weight = float(sentence_loss_weight)

    @classmethod
    def from_options(cls, options: PretrainingOptions, run: Any, seed: int | None = 12345) -> PretrainingTask:
        """The task of ``run_pretraining``: the options and record globs (``inputs.check_inputs``), then every record
        file checked against the flags and the model config, and whole, before any TF work."""
        train_files, eval_files = check_inputs(options, run, log=_say, records=False)  # checked in full below
        if not options.albert_config_file:
            raise TaskError("--albert_config_file is required")
        config = AlbertConfig.load(options.albert_config_file)
        config.check_max_seq_length(options.max_seq_length)
        online = options.masked_lm_budget > 0
        for files in (train_files, eval_files):
            if files:
                validate_pretraining_files(
                    files, options.max_seq_length, options.max_predictions_per_seq, config.vocab_size,
                    token_boundary=online,
                )
        masking = None
        if online and (train_files or eval_files):
            masking = online_masking_config(
                train_files or eval_files,
                options.masked_lm_budget,
                config.vocab_size,
                options.max_predictions_per_seq,
                seed=seed if seed is not None else secrets.randbits(31),
                masked_lm_prob=options.masked_lm_prob,
            )
            _say(
                f"online masking: at most {masking.budget} masked tokens per sequence, masked_lm_prob "
                f"{masking.masked_lm_prob}, n-grams <= {masking.ngram}, [MASK] id {masking.mask_id}, "
                f"seed {masking.seed}"
            )
        return cls(
            config,
            train_files,
            eval_files,
            options.max_seq_length,
            options.max_predictions_per_seq,
            seed=seed,
            shuffle_buffer_size=options.shuffle_buffer_size,
            sharing=options.sharing,
            online_masking=masking,
            sentence_loss_weight=options.sentence_loss_weight,
        )

    @property
    def albert_config(self) -> AlbertConfig:
        return self.config

    def input_paths(self) -> list[str]:
        return [*(self.train_files or []), *(self.eval_files or [])]

    def build_model(self) -> keras.Model:
        return AlbertPretrainer(self.config, sharing=self.sharing)

    def build_inputs(self, split: str, global_batch_size: int):
        files = self.train_files if split == TRAIN else self.eval_files if split == EVAL else None
        if not files:
            return None
        return pretraining_dataset(
            files,
            global_batch_size,
            self.max_seq_length,
            self.max_predictions_per_seq,
            is_training=split == TRAIN,
            seed=self.seed if split == TRAIN else None,
            vocab_size=self.config.vocab_size,
            shuffle_buffer_size=self.shuffle_buffer_size,
            online_masking=self.online_masking if split == TRAIN or self.online_masking_eval else None,
        )

    @staticmethod
    def _outputs(model, features, training):
        return model({k: features[k] for k in MODEL_INPUTS}, training=training)

    def loss(self, model, features, training: bool):
        losses = pretraining_losses(self._outputs(model, features, training), features, self.sentence_loss_weight)
        logs = {"loss": losses["total_loss"], "mlm_loss": losses["mlm_loss"], "sop_loss": losses["sop_loss"]}
        return losses["total_loss"], logs

    def eval_outputs(self, model, features):
        return per_example_pretraining_metrics(self._outputs(model, features, False), features)

    def aggregate(self, outputs: dict[str, np.ndarray]) -> dict[str, float]:
        """The official ``metric_fn`` values from the per-example sums (weighted by masked_lm_weights)."""
        sums = {k: float(np.sum(v, dtype=np.float64)) for k, v in outputs.items()}
        weight = max(sums["masked_lm_weight"], 1e-12)
        count = max(sums["sentence_order_count"], 1.0)
        out = {
            "masked_lm_accuracy": sums["masked_lm_correct"] / weight,
            "masked_lm_loss": sums["masked_lm_nll_sum"] / weight,
            "sentence_order_accuracy": sums["sentence_order_correct"] / count,
            "sentence_order_loss": sums["sentence_order_nll_sum"] / count,
        }
        out["loss"] = out["masked_lm_loss"] + self.sentence_loss_weight * out["sentence_order_loss"]
        return out
