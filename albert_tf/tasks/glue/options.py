"""The GLUE task's options (``run_classifier``'s own flags) and its experiment config: plain values, so that a
command line builds and checks its config before it imports TensorFlow."""

from __future__ import annotations

import dataclasses
from typing import Any

from albert_tf.data.packing import PACKING_MODES
from albert_tf.tasks.base import FineTuningOptions
from albert_tf.training.run_config import ExperimentConfig
from albert_tf.training.task import TaskError


@dataclasses.dataclass
class GlueOptions(FineTuningOptions):
    """The GLUE task's own ``run_classifier`` flags (official names and defaults)."""

    data_dir: str = ""
    task_name: str = ""
    max_seq_length: int = 512
    classifier_dropout: float = 0.1
    threshold_to_export: float | None = None
    export_jit_compile: bool = False
    #: The export's raw-text and tf.Example signatures run the dense layers on real tokens only.
    export_real_tokens: bool = False
    #: Training batches as packed rows (``albert_tf.data.packing``); ``none``: one example per row.
    packing: str = "first_fit"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.packing not in PACKING_MODES:
            raise TaskError(f"--packing={self.packing!r}: expected one of {', '.join(PACKING_MODES)}")
        if self.export_real_tokens and self.export_jit_compile:
            raise TaskError("--export_real_tokens runs a data-dependent number of tokens, which XLA cannot compile: "
                            "drop --export_jit_compile or --export_real_tokens")


def make_config(*, fetch_preset: bool = True, **options: Any) -> ExperimentConfig:
    """A GLUE experiment from flat options (the ``run_classifier`` flag names; official aliases accepted);
    ``fetch_preset=False`` leaves a preset name in ``init_checkpoint`` unfetched."""
    return ExperimentConfig.from_flat(GlueOptions, options, fetch_preset=fetch_preset)
