"""The one command behind ``run_classifier``, ``run_squad`` and ``run_race``: each declares a
:class:`FineTuningCommand` (its help, task package, options and defaults) and this module does the rest.

The order of work is the same for every task, and what makes a mistake cheapest to learn of: the flags (defined
from the task's options dataclass, :func:`~albert_tf.training.run_config.define_option_flags`, plus the shared
ones of :mod:`albert_tf.cli.flags`), then every input file the run reads (the task's ``inputs.check_inputs``), both
without TensorFlow and before a pretrained preset's download; then the model config and tokenizer files
(``tasks.base.check_model_files``), still without TensorFlow; then the task's ``run``.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any

from absl import flags

from albert_tf.cli import app
from albert_tf.cli import flags as shared
from albert_tf.tasks.base import check_model_files
from albert_tf.training.run_config import ExperimentConfig, define_option_flags

FLAGS = flags.FLAGS
#: The training-flag defaults every fine-tuning runner shares (the official runners'); each command adds its own.
TRAINING_DEFAULTS = {"optimizer": "adamw", "steps_per_loop": 1000, "keep_checkpoint_max": 0, "train_batch_size": 32,
                     "eval_batch_size": 8, "max_eval_steps": 0}


@dataclasses.dataclass(frozen=True)
class FineTuningCommand:
    """One fine-tuning console script.

    * ``doc``: its ``--help`` text; ``package``: the task package (its ``run`` and ``inputs.check_inputs``);
    * ``options_type``: the task's options dataclass, whose :func:`~albert_tf.training.run_config.option` fields are
      its own flags (``max_seq_length``'s default comes from it too);
    * ``data_error``: the task's input error (one line, exit 2);
    * ``help``: help texts of shared flags that say something task-specific (``do_predict``, ``export_dir``, ...);
    * ``defaults``: the runner's own defaults of shared flags (official values), over :data:`TRAINING_DEFAULTS`;
    * ``report(summary)``: the lines printed after the run;
    * ``schedule_from_data``: the step counts follow from the data (SQuAD's epochs), checked once counted.
    """

    doc: str
    package: str
    options_type: type
    data_error: type[BaseException]
    help: Mapping[str, str]
    defaults: Mapping[str, Any]
    report: Callable[[dict[str, Any]], list[str]]
    schedule_from_data: bool = False

    def define_flags(self, fv: flags.FlagValues = FLAGS) -> None:
        """The command's flags on ``fv`` (idempotent)."""
        if "do_predict" in fv:
            return
        defaults = {**TRAINING_DEFAULTS, **self.defaults}
        define_option_flags(self.options_type, fv, defaults=defaults, help=self.help)
        shared.define_hub_module_flag(fv)
        shared.define_training_flags(fv, defaults, help=self.help)

    def config_from_flags(self, fv: flags.FlagValues = FLAGS, fetch: bool = True) -> ExperimentConfig:
        """The run's ExperimentConfig: every flag to its one field (no TensorFlow yet); ``fetch``: fetch the
        pretrained preset ``--init_checkpoint`` may name and fill in its files."""
        return ExperimentConfig.from_flat(self.options_type, shared.fine_tuning_values(fv, fetch))

    def _main(self, argv: list[str]) -> int:
        check_inputs = importlib.import_module(f"{self.package}.inputs").check_inputs
        config = shared.checked_config(lambda fetch: self.config_from_flags(fetch=fetch), check_inputs,
                                       schedule_from_data=self.schedule_from_data)
        check_model_files(config.task)  # the config and tokenizer files, before TensorFlow starts
        summary = importlib.import_module(f"{self.package}.task").run(config)  # TensorFlow from here
        for line in self.report(summary):
            print(line, flush=True)
        return 0

    def expected_errors(self) -> tuple[type[BaseException], ...]:
        """The failures a user can cause: the shared ones and the task's data errors (``cli.flags.expected_errors``)."""
        return shared.expected_errors(self.data_error)

    def main(self, argv: list[str] | None = None) -> None:
        """The console script."""
        self.define_flags()
        app.run(self._main, self.doc, errors=self.expected_errors(), argv=argv)
