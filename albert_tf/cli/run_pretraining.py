"""run_pretraining: pretrain ALBERT (MLM + SOP) on official-format TFRecords.

The official ``run_pretraining.py`` flags plus tf.distribute ones. The paper's recipes:
--recipe=pretrain_{base,large,xlarge, xxlarge} (`python -m albert_tf.configs` lists the recipes).

  run_pretraining --recipe=pretrain_base --albert_config_file=albert_base_v2 \\
      --input_file='records/train.tfrecord-*' --output_dir=out/base

Resuming: rerun the same command; a checkpoint in --output_dir restores the model, optimizer, step and input
position exactly. --init_checkpoint only initialises the weights (step 0, fresh optimizer); --init_from_group0
initialises every group from the checkpoint's group 0. With --do_eval every checkpoint is evaluated on
--eval_input_file (eval_results.{txt,json,jsonl}, TensorBoard <output_dir>/eval) and the best by
masked_lm_accuracy is copied to <output_dir>/best/ckpt-best (the official model.ckpt-best).
"""

from __future__ import annotations

from absl import flags

from albert_tf.cli import app
from albert_tf.cli import flags as shared

FLAGS = flags.FLAGS


def define_flags(fv: flags.FlagValues = FLAGS) -> None:
    """The flags of run_pretraining (idempotent): the fields of ``PretrainingOptions``, the trainer's and the run's
    (official defaults: ``TRAINER_DEFAULTS``)."""
    if "albert_config_file" in fv:
        return
    from albert_tf.tasks.pretraining import TRAINER_DEFAULTS, PretrainingOptions
    from albert_tf.training.run_config import PRETRAINING_RUN_FLAGS, define_option_flags

    define_option_flags(PretrainingOptions, fv)
    shared.define_training_flags(fv, {**TRAINER_DEFAULTS, "do_train": True}, run_flags=PRETRAINING_RUN_FLAGS)


def _main(argv: list[str]) -> int:
    from albert_tf.tasks.pretraining.inputs import check_inputs
    from albert_tf.tasks.pretraining.options import make_config

    # flags, then the record globs, both before a preset's download and TensorFlow's start-up
    config = shared.checked_config(
        lambda fetch: make_config(fetch_preset=False, **shared.preset_values(FLAGS, fetch)), check_inputs)
    from albert_tf.tasks.pretraining.task import run

    run(config)
    return 0


def main(argv: list[str] | None = None) -> None:
    """Console script ``run_pretraining``."""
    define_flags()
    app.run(_main, __doc__, errors=expected_errors(), argv=argv)


def expected_errors() -> tuple[type[BaseException], ...]:
    """The failures a user can cause: the shared ones and the task's data errors (``cli.flags.expected_errors``)."""
    from albert_tf.data.pretraining.schema import PretrainingDataError

    return shared.expected_errors(PretrainingDataError)


if __name__ == "__main__":
    main()
