"""The pretraining task's options, the official defaults of its trainer options and its experiment config: plain
values, so that ``run_pretraining`` defines its flags (and ``--help``) and builds and checks its config without
importing TensorFlow."""

from __future__ import annotations

import dataclasses
from typing import Any

from albert_tf.config import SHARING_MODES
from albert_tf.training.run_config import ExperimentConfig, fetch_pretrained, option

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
    """The pretraining task's own ``run_pretraining`` flags (official names and defaults), each field its flag."""

    albert_config_file: str = option(
        "", "albert_config.json of the model (or a model config name: albert_base_v2, albert_tiny, ...).")
    input_file: str | None = option(None, "Comma-separated globs of pretraining TFRecords.")
    eval_input_file: str | None = option(
        None, "Comma-separated globs of held-out TFRecords for --do_eval (default: --input_file, as the official "
        "code, which evaluated on its training files).")
    max_seq_length: int = option(512, "Sequence length of the records.")
    max_predictions_per_seq: int = option(20, "Masked positions per record.")
    shuffle_buffer_size: int = option(100, "Record shuffle buffer (official 100).")
    masked_lm_budget: int = option(
        0, "0: train on the masks written in the records. N > 0: online (dynamic) masking: every time a record is "
        "read its masks are drawn again in the tf.data graph (other masks every epoch), whole-word n-grams as "
        "create_pretraining_data draws them, min(N, --max_predictions_per_seq, max(1, round(masked_lm_prob * real "
        "tokens))) tokens per sequence, seeded by --seed (exact resume keeps the masks). Needs the records' "
        "token_boundary feature. Officially this flag is broken: the input function reads token_boundary instead "
        "of the masked_lm_* features but model_fn still needs masked_lm_positions, and the online-masking code was "
        "never released.")
    masked_lm_prob: float | None = option(
        None, "With --masked_lm_budget > 0: the share of tokens to mask. Default: the value the records' "
        "create_pretraining_data sidecar records, else 0.15.")
    sentence_loss_weight: float = option(
        1.0, "Weight of the sentence-level loss (SOP or NSP, by the records) in the total loss. 1: the official MLM "
        "+ SOP. 0: MLM only, the sentence head gets no gradient (the paper's Table 5 row 'None'; pair it with "
        "records of create_pretraining_data --sentence_order=none, whose label is a constant 0).")
    sharing: str = option("all", "Cross-layer sharing (paper Table 4).", choices=SHARING_MODES)


def make_config(*, fetch_preset: bool = True, **options: Any) -> ExperimentConfig:
    """A pretraining experiment from flat options (the ``run_pretraining`` flag names); ``fetch_preset``: first
    fetch the preset ``init_checkpoint`` may name (:func:`fetch_pretrained`)."""
    options = {"do_train": True, **options}
    return ExperimentConfig.from_flat(PretrainingOptions,
                                      fetch_pretrained(PretrainingOptions, options) if fetch_preset else options,
                                      TRAINER_DEFAULTS)
