"""The pretraining job for the trainer: AlbertPretrainer + MLM/SOP losses (spec 3.3) on official TFRecords."""

from __future__ import annotations

import keras
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.modeling import AlbertPretrainer
from albert_tf.modeling.losses import pretraining_losses, pretraining_metrics
from albert_tf.training.pretraining_data import pretraining_dataset

MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")
EVAL_SUMS = (
    "masked_lm_correct",
    "masked_lm_weight",
    "masked_lm_nll_sum",
    "sentence_order_correct",
    "sentence_order_count",
    "sentence_order_nll_sum",
)


class PretrainingTask:
    """MLM + SOP pretraining on the official TFRecord features."""

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
    ) -> None:
        self.config = config
        self.train_files = train_files
        self.eval_files = eval_files
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self.seed = seed
        self.shuffle_buffer_size = shuffle_buffer_size
        self.sharing = sharing

    def build_model(self) -> keras.Model:
        return AlbertPretrainer(self.config, sharing=self.sharing)

    def train_dataset(self, global_batch_size: int) -> tf.data.Dataset:
        return pretraining_dataset(
            self.train_files,
            global_batch_size,
            self.max_seq_length,
            self.max_predictions_per_seq,
            is_training=True,
            seed=self.seed,
            vocab_size=self.config.vocab_size,
            shuffle_buffer_size=self.shuffle_buffer_size,
        )

    def eval_dataset(self, global_batch_size: int) -> tf.data.Dataset | None:
        if not self.eval_files:
            return None
        return pretraining_dataset(
            self.eval_files,
            global_batch_size,
            self.max_seq_length,
            self.max_predictions_per_seq,
            is_training=False,
            vocab_size=self.config.vocab_size,
        )

    @staticmethod
    def _outputs(model, features, training):
        return model({k: features[k] for k in MODEL_INPUTS}, training=training)

    def compute_loss(self, model, features, training: bool):
        losses = pretraining_losses(self._outputs(model, features, training), features)
        logs = {"loss": losses["total_loss"], "mlm_loss": losses["mlm_loss"], "sop_loss": losses["sop_loss"]}
        return losses["total_loss"], logs

    def eval_sums(self, model, features):
        metrics = pretraining_metrics(self._outputs(model, features, False), features)
        return {k: metrics[k] for k in EVAL_SUMS}

    @staticmethod
    def eval_metrics(sums: dict[str, float]) -> dict[str, float]:
        """The official ``metric_fn`` values from summed counts (weighted by masked_lm_weights)."""
        weight = max(sums["masked_lm_weight"], 1e-12)
        count = max(sums["sentence_order_count"], 1.0)
        out = {
            "masked_lm_accuracy": sums["masked_lm_correct"] / weight,
            "masked_lm_loss": sums["masked_lm_nll_sum"] / weight,
            "sentence_order_accuracy": sums["sentence_order_correct"] / count,
            "sentence_order_loss": sums["sentence_order_nll_sum"] / count,
        }
        out["loss"] = out["masked_lm_loss"] + out["sentence_order_loss"]
        return out
