"""The SQuAD task's options (``run_squad``'s own flags) and its experiment config: plain values, so that a command
line builds and checks its config before it imports TensorFlow."""

from __future__ import annotations

import dataclasses
from typing import Any

from albert_tf.tasks.base import PackedTrainingOptions
from albert_tf.training.run_config import ExperimentConfig, fetch_pretrained, option
from albert_tf.training.task import TaskError


@dataclasses.dataclass
class SquadOptions(PackedTrainingOptions):
    """The SQuAD task's own ``run_squad`` flags (the official names and defaults of run_squad_v1/v2.py)."""

    train_file: str | None = option(None, "SQuAD JSON for training (official layout, v1.1 or v2.0).")
    predict_file: str | None = option(None, "SQuAD JSON to evaluate (--do_eval) and answer (--do_predict).")
    max_seq_length: int = option(384, "Tokens per window: [CLS] question [SEP] context [SEP].")
    doc_stride: int = option(128, "Tokens between the starts of two context windows.")
    max_query_length: int = option(64, "Question tokens kept (longer questions are cut and reported).")
    version_2_with_negative: bool = option(
        False, "SQuAD 2.0: unanswerable questions, the XLNet-style beam + answer-class head, v2 scoring.")
    n_best_size: int = option(20, "Start and end candidates kept per window, and per question in "
                                  "nbest_predictions.json.")
    max_answer_length: int = option(30, "Longest answer, in tokens.")
    start_n_top: int = option(5, "v2 beam: start positions kept.")
    end_n_top: int = option(5, "v2 beam: end positions kept per start.")
    dropout_prob: float = option(0.1, "v2: dropout in the answer-class layer.")
    null_score_diff_threshold: float = option(
        0.0, "v2: answer '' when the null score (min over windows of the answer-class logit) is >= this; an "
        "export's has_answer is null_score < this. Used for predictions.json and the fixed_* scores.")
    num_train_epochs: float = option(
        3.0, "Epochs over the training questions when --num_train_steps is 0 (official step count "
        "int(questions / train_batch_size * epochs)).")
    warmup_proportion: float = option(0.1, "Warmup share of the steps when --num_warmup_steps is < 0.")
    train_feature_file: str | None = option(
        None, "Official flag: its directory holds the training feature cache (keyed file names).")
    predict_feature_file: str | None = option(
        None, "Official flag: its directory holds the prediction feature cache (keyed file names).")
    predict_feature_left_file: str | None = option(
        None, "Official flag (a pickle there); accepted and unused: the window metadata lives in the cache's JSON "
        "side file.")
    use_einsum: bool = option(True, "Official v1 flag for TFLite; accepted, no effect here.")
    loss_over_padding: bool = option(
        False, "v1: the official loss, whose start and end softmaxes run over every position of the --max_seq_length "
        "window, padding included (squad_utils.create_v1_model; transformers' run_qa alike): training then keeps "
        "whole unpacked windows. Default: over the window's tokens only, so training packs windows and computes "
        "their real tokens alone (the same loss on every batch layout).")
    nbest_over_padding: bool = option(
        False, "v1: take the --n_best_size start/end positions over every position, padding included, as the "
        "official post-processing does (a padding position can take a slot and is then discarded); needs "
        "--bucket_lengths=none. Default: padding never enters the n-best.")


    def __post_init__(self) -> None:
        super().__post_init__()
        if self.loss_over_padding and self.version_2_with_negative:
            raise TaskError("--loss_over_padding is the v1 loss; the v2 head masks padding through p_mask: drop it "
                            "or --version_2_with_negative")


def make_config(*, fetch_preset: bool = True, **options: Any) -> ExperimentConfig:
    """A SQuAD experiment from flat options (the ``run_squad`` flag names; official aliases accepted);
    ``fetch_preset``: first fetch the preset ``init_checkpoint`` may name (:func:`fetch_pretrained`)."""
    return ExperimentConfig.from_flat(SquadOptions, fetch_pretrained(SquadOptions, options) if fetch_preset
                                      else options)
