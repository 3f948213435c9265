"""The RACE task's options (``run_race``'s own flags) and its experiment config: plain values, so that a command
line builds and checks its config before it imports TensorFlow."""

from __future__ import annotations

import dataclasses
from typing import Any

from albert_tf.tasks.base import PackedTrainingOptions
from albert_tf.training.run_config import ExperimentConfig, fetch_pretrained, option


@dataclasses.dataclass
class RaceOptions(PackedTrainingOptions):
    """The RACE task's own ``run_race`` flags (official names and defaults, official ``race_utils.py``)."""

    data_dir: str = option("", "Folder holding RACE/{train,dev,test}/{middle,high}/ (required).")
    task_name: str = option("race", "Official flag: the task ('race').")
    max_seq_length: int = option(512, "Tokens per option: [CLS] article [SEP] question+option [SEP].")
    max_qa_length: int = option(128, "Question + option tokens kept (the last ones).")
    dropout_prob: float = option(0.1, "Dropout on the pooled output before the choice head.")
    middle_only: bool = option(False, "Only the middle-school questions.")
    high_only: bool = option(False, "Only the high-school questions.")
    # Official cache-file flags (TFRecord paths): our caches are keyed by content, so only their directory is used.
    train_file: str | None = option(None, "Official flag (a TFRecord cache path): its directory holds the training "
                                          "feature cache (keyed file names).")
    eval_file: str | None = option(None, "Official flag: its directory holds the dev feature cache.")
    predict_file: str | None = option(None, "Official flag: its directory holds the test feature cache.")
    num_keep_checkpoint: int = option(5, "Official flag, unused (as in the official); see --keep_checkpoint_max.")


def make_config(*, fetch_preset: bool = True, **options: Any) -> ExperimentConfig:
    """A RACE experiment from flat options (the ``run_race`` flag names; official aliases accepted);
    ``fetch_preset``: first fetch the preset ``init_checkpoint`` may name (:func:`fetch_pretrained`)."""
    return ExperimentConfig.from_flat(RaceOptions, fetch_pretrained(RaceOptions, options) if fetch_preset
                                      else options)
