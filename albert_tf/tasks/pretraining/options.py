"""The pretraining task's options, the official defaults of its trainer options and its experiment config: plain
values, so that ``run_pretraining`` defines its flags (and ``--help``) and builds and checks its config without
importing TensorFlow."""

from __future__ import annotations

import dataclasses
from typing import Any

from albert_tf.training.run_config import ExperimentConfig, fetch_pretrained

# The official run_pretraining defaults of the shared trainer options (official ``run_pretraining.py``).
TRAINER_DEFAULTS = {
    "optimizer": "lamb",
    "learning_rate": 0.00176,
    "num_train_steps": 125000,
    "num_warmup_steps": 3125,
    "steps_per_loop": 1000,
    "save_checkpoints_steps": 5000,
    "keep_checkpoint_max": 5,
    "train_batch_size": 4096,
    "eval_batch_size": 64,
    "max_eval_steps": 100,
}


@dataclasses.dataclass
class PretrainingOptions:
    """The pretraining task's own ``run_pretraining`` flags (official names and defaults)."""

    albert_config_file: str = ""
    input_file: str | None = None
    eval_input_file: str | None = None
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    shuffle_buffer_size: int = 100
    sharing: str = "all"
    masked_lm_budget: int = 0  # 0: the records' masks; N > 0: online masking, at most N masked tokens per sequence
    masked_lm_prob: float | None = None  # online masking only; None: the records' sidecar value, else 0.15
    sentence_loss_weight: float = 1.0  # 1: the official MLM + SOP; 0: MLM only (Table 5's "no sentence loss")


def make_config(*, fetch_preset: bool = True, **options: Any) -> ExperimentConfig:
    """A pretraining experiment from flat options (the ``run_pretraining`` flag names); ``fetch_preset``: first
    fetch the preset ``init_checkpoint`` may name (:func:`fetch_pretrained`)."""
    options = {"do_train": True, **options}
    return ExperimentConfig.from_flat(PretrainingOptions,
                                      fetch_pretrained(PretrainingOptions, options) if fetch_preset else options,
                                      TRAINER_DEFAULTS)
