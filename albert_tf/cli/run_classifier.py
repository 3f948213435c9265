"""run_classifier: fine-tune ALBERT on a GLUE task: train, evaluate every checkpoint, predict the test set, export.

The official run_classifier.py flags (same names and defaults) plus the shared trainer's
strategy/precision flags. Per-task recipes from the official run_glue.sh: --recipe=glue/<task>
(`python -m albert_tf.configs` lists them). A TF-Hub module: --albert_hub_module_handle=DIR instead of
--init_checkpoint, --albert_config_file and --spm_model_file.

  run_classifier --recipe=glue/mrpc --data_dir=glue --output_dir=out/mrpc \\
      --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --init_checkpoint=albert_base/model.ckpt-best --do_train --do_eval --do_predict --export_dir=out/mrpc/export
"""

from __future__ import annotations

from typing import Any

from albert_tf.cli.fine_tuning import FineTuningCommand
from albert_tf.data.glue import GlueDataError
from albert_tf.tasks.glue.options import GlueOptions


def _report(summary: dict[str, Any]) -> list[str]:
    best = summary.get("best")
    if not best:
        return []
    key = summary["key_metric"]
    return [f"best {key} = {best[key]:.4f} at step {best['global_step']}"]


COMMAND = FineTuningCommand(
    doc=__doc__,
    package="albert_tf.tasks.glue",
    options_type=GlueOptions,
    data_error=GlueDataError,
    help={
        "do_predict": "Predict test.tsv into {Task}.tsv (GLUE submission) and test_results.tsv.",
        "export_dir": "Write a SavedModel (raw-text serving_default + token-id signature) of the best weights to "
                      "<dir>/<step>.",
    },
    defaults={"learning_rate": 5e-5, "num_train_steps": 1000, "num_warmup_steps": 0,
              "save_checkpoints_steps": 1000},
    report=_report,
)
define_flags, config_from_flags, expected_errors, main = (
    COMMAND.define_flags, COMMAND.config_from_flags, COMMAND.expected_errors, COMMAND.main)

if __name__ == "__main__":
    main()
