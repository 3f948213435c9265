"""The RACE task's options (``run_race``'s own flags) and its experiment config: plain values, so that a command
line builds and checks its config before it imports TensorFlow."""

from __future__ import annotations

import dataclasses
from typing import Any

from albert_tf.tasks.base import FineTuningOptions
from albert_tf.training.run_config import ExperimentConfig


@dataclasses.dataclass
class RaceOptions(FineTuningOptions):
    """The RACE task's own ``run_race`` flags (official names and defaults, official ``race_utils.py``)."""

    data_dir: str = ""
    task_name: str = "race"
    max_seq_length: int = 512
    max_qa_length: int = 128
    dropout_prob: float = 0.1
    middle_only: bool = False
    high_only: bool = False
    # Official cache-file flags (TFRecord paths): our caches are keyed by content, so only their directory is used.
    train_file: str | None = None
    eval_file: str | None = None
    predict_file: str | None = None
    num_keep_checkpoint: int = 5  # official flag, unused there too; --keep_checkpoint_max prunes


def make_config(*, fetch_preset: bool = True, **options: Any) -> ExperimentConfig:
    """A RACE experiment from flat options (the ``run_race`` flag names; official aliases accepted);
    ``fetch_preset=False`` leaves a preset name in ``init_checkpoint`` unfetched."""
    return ExperimentConfig.from_flat(RaceOptions, options, fetch_preset=fetch_preset)
