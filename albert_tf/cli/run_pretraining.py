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
from albert_tf.config import SHARING_MODES

FLAGS = flags.FLAGS


def define_flags(fv: flags.FlagValues = FLAGS) -> None:
    """The flags of run_pretraining (idempotent)."""
    if "albert_config_file" in fv:
        return
    from albert_tf.tasks.pretraining import TRAINER_DEFAULTS

    flags.DEFINE_string("albert_config_file", None,
                        "albert_config.json of the model (or a model config name: albert_base_v2, albert_tiny, ...).",
                        flag_values=fv)
    flags.DEFINE_string("input_file", None, "Comma-separated globs of pretraining TFRecords.", flag_values=fv)
    flags.DEFINE_string(
        "eval_input_file", None, "Comma-separated globs of held-out TFRecords for --do_eval (default: --input_file, "
        "as the official code, which evaluated on its training files).", flag_values=fv,
    )
    flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the records.", flag_values=fv)
    flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per record.", flag_values=fv)
    flags.DEFINE_integer("shuffle_buffer_size", 100, "Record shuffle buffer (official 100).", flag_values=fv)
    flags.DEFINE_integer(
        "masked_lm_budget", 0,
        "0: train on the masks written in the records. N > 0: online (dynamic) masking: every time a record is "
        "read its masks are drawn again in the tf.data graph (other masks every epoch), whole-word n-grams as "
        "create_pretraining_data draws them, min(N, --max_predictions_per_seq, max(1, round(masked_lm_prob * "
        "real tokens))) tokens per sequence, seeded by --seed (exact resume keeps the masks). Needs the records' "
        "token_boundary feature. Officially this flag is broken: the input function reads token_boundary "
        "instead of the masked_lm_* features but model_fn still needs masked_lm_positions, and the online-masking "
        "code was never released.", flag_values=fv,
    )
    flags.DEFINE_float(
        "masked_lm_prob", None,
        "With --masked_lm_budget > 0: the share of tokens to mask. Default: the value the records' "
        "create_pretraining_data sidecar records, else 0.15.", flag_values=fv,
    )
    flags.DEFINE_float(
        "sentence_loss_weight", 1.0,
        "Weight of the sentence-level loss (SOP or NSP, by the records) in the total loss. 1: the official "
        "MLM + SOP. 0: MLM only, the sentence head gets no gradient (the paper's Table 5 row 'None'; pair it with "
        "records of create_pretraining_data --sentence_order=none, whose label is a constant 0).",
        flag_values=fv,
    )
    flags.DEFINE_enum("sharing", "all", list(SHARING_MODES), "Cross-layer sharing (paper Table 4).",
                      flag_values=fv)
    shared.define_all_training_flags(fv, do_train=True, **TRAINER_DEFAULTS)


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
