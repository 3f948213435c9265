"""The GLUE task's options (``run_classifier``'s own flags) and its experiment config: plain values, so that a
command line builds and checks its config before it imports TensorFlow."""

from __future__ import annotations

import dataclasses
from typing import Any

from albert_tf.data.glue.processors import PROCESSORS
from albert_tf.tasks.base import PackedTrainingOptions
from albert_tf.training.run_config import ExperimentConfig, fetch_pretrained, option


@dataclasses.dataclass
class GlueOptions(PackedTrainingOptions):
    """The GLUE task's own ``run_classifier`` flags (official names and defaults)."""

    data_dir: str = option("", "GLUE root folder holding <TASK>/train.tsv, dev.tsv, test.tsv (required).")
    task_name: str = option("", "GLUE task (case-insensitive): " + ", ".join(PROCESSORS) + " (required; for an "
                            "export, the task the checkpoint was fine-tuned on: its labels, pair or single).")
    max_seq_length: int = option(512, "Tokens per example after packing; <= max_position_embeddings.")
    classifier_dropout: float = option(0.1, "Dropout on the pooled output before the classifier (official 0.1).")
    threshold_to_export: float | None = option(
        None, "With --export_dir: also return this float scalar as 'threshold' from every signature (default: none).")
    export_jit_compile: bool = option(
        False, "With --export_dir: run the model's forward under XLA in every signature (same outputs; lower CPU "
        "latency at batch 1; the first request of each shape compiles; every position computed: "
        "--export_real_tokens does not apply).")


def make_config(*, fetch_preset: bool = True, **options: Any) -> ExperimentConfig:
    """A GLUE experiment from flat options (the ``run_classifier`` flag names; official aliases accepted);
    ``fetch_preset``: first fetch the preset ``init_checkpoint`` may name (:func:`fetch_pretrained`)."""
    return ExperimentConfig.from_flat(GlueOptions, fetch_pretrained(GlueOptions, options) if fetch_preset
                                      else options)
