"""run_classifier: fine-tune ALBERT on a GLUE task: train, evaluate every checkpoint, predict the test set, export.

The official run_classifier.py flags (same names and defaults) plus the shared trainer's
strategy/precision flags. Per-task presets from the official run_glue.sh: --preset=glue/<task>
(`python -m albert_tf.configs` lists them). A TF-Hub module: --albert_hub_module_handle=DIR instead of
--init_checkpoint, --albert_config_file and --spm_model_file.

  run_classifier --preset=glue/mrpc --data_dir=glue --output_dir=out/mrpc \\
      --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --init_checkpoint=albert_base/model.ckpt-best --do_train --do_eval --do_predict --export_dir=out/mrpc/export
"""

from __future__ import annotations

from absl import flags

from albert_tf.cli import app
from albert_tf.cli import flags as shared
from albert_tf.tasks.glue.options import GlueOptions
from albert_tf.training.run_config import define_option_flags

FLAGS = flags.FLAGS


def define_flags(fv: flags.FlagValues = FLAGS) -> None:
    """The flags of run_classifier on ``fv`` (idempotent): official names and defaults, ``--train_step`` and
    ``--warmup_step`` being the official aliases of ``--num_train_steps`` / ``--num_warmup_steps``."""
    if "task_name" in fv:
        return
    flags.DEFINE_bool("do_predict", False,
                      "Predict test.tsv into {Task}.tsv (GLUE submission) and test_results.tsv.", flag_values=fv)
    flags.DEFINE_string("export_dir", None,
                        "Write a SavedModel (raw-text serving_default + token-id signature) of the best weights to "
                        "<dir>/<step>.", flag_values=fv)
    define_option_flags(GlueOptions, fv)
    shared.define_fine_tuning_flags(
        fv, max_seq_length=512, max_seq_length_help="Tokens per example after packing; <= max_position_embeddings.",
        optimizer="adamw", learning_rate=5e-5, num_train_steps=1000, num_warmup_steps=0, steps_per_loop=1000,
        save_checkpoints_steps=1000, keep_checkpoint_max=0, train_batch_size=32, eval_batch_size=8, max_eval_steps=0,
    )


def config_from_flags(fv: flags.FlagValues = FLAGS, fetch: bool = True):
    """The run's ExperimentConfig: every flag to its one field (no TensorFlow yet); ``fetch``: fetch the pretrained
    preset ``--init_checkpoint`` may name and fill in its files."""
    from albert_tf.tasks.glue.options import make_config

    return make_config(fetch_preset=fetch, **shared.fine_tuning_values(fv, fetch))


def _main(argv: list[str]) -> int:
    from albert_tf.tasks.glue.inputs import check_inputs

    # flags, then the TSV files, both before a preset's download and TensorFlow's start-up
    config = shared.checked_config(lambda fetch: config_from_flags(fetch=fetch), check_inputs)
    from albert_tf.tasks import glue

    summary = glue.run(config)
    best = summary.get("best")
    if best:
        key = summary["key_metric"]
        print(f"best {key} = {best[key]:.4f} at step {best['global_step']}", flush=True)
    return 0


def expected_errors() -> tuple[type[BaseException], ...]:
    """The failures a user can cause: the shared ones and the task's data errors (``cli.flags.expected_errors``)."""
    from albert_tf.data.glue import GlueDataError

    return shared.expected_errors(GlueDataError)


def main(argv: list[str] | None = None) -> None:
    """Console script ``run_classifier``."""
    define_flags()
    app.run(_main, __doc__, errors=expected_errors(), argv=argv)


if __name__ == "__main__":
    main()
