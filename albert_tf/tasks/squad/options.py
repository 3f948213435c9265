"""The SQuAD task's options (``run_squad``'s own flags) and its experiment config: plain values, so that a command
line builds and checks its config before it imports TensorFlow."""

from __future__ import annotations

import dataclasses
from typing import Any

from albert_tf.tasks.base import FineTuningOptions
from albert_tf.training.run_config import ExperimentConfig


@dataclasses.dataclass
class SquadOptions(FineTuningOptions):
    """The SQuAD task's own ``run_squad`` flags (the official names and defaults of run_squad_v1/v2.py)."""

    train_file: str | None = None
    predict_file: str | None = None
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    version_2_with_negative: bool = False
    n_best_size: int = 20
    max_answer_length: int = 30
    start_n_top: int = 5
    end_n_top: int = 5
    dropout_prob: float = 0.1
    null_score_diff_threshold: float = 0.0
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    # Official cache-file flags: our caches are keyed by content, so only their directory is used.
    train_feature_file: str | None = None
    predict_feature_file: str | None = None
    predict_feature_left_file: str | None = None
    use_einsum: bool = True  # official v1 (TFLite) flag; our attention needs no switch
    #: v1: the n-best start/end positions over every position, padding included, as the official post-processing
    #: (a padding position can take one of the n_best_size slots and is then discarded). Needs fixed padding.
    nbest_over_padding: bool = False


def make_config(*, fetch_preset: bool = True, **options: Any) -> ExperimentConfig:
    """A SQuAD experiment from flat options (the ``run_squad`` flag names; official aliases accepted);
    ``fetch_preset=False`` leaves a preset name in ``init_checkpoint`` unfetched."""
    return ExperimentConfig.from_flat(SquadOptions, options, fetch_preset=fetch_preset)
