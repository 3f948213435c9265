"""run_race: fine-tune ALBERT on RACE (4-way multiple choice): train, evaluate every checkpoint, predict.

The official run_race.py flags (same names and defaults: --do_train and --do_eval on by default,
max_seq_length 512, max_qa_length 128, learning rate 1e-5, train_step 12000, warmup_step 1000). The README's v2
hyper-parameters: --preset=race. --data_dir holds RACE/{train,dev,test}/{middle,high}/ in the official all.txt
layout or the original one-JSON-per-file release.

  run_race --preset=race --data_dir=data --output_dir=out/race --albert_config_file=albert_base_v2 \\
      --spm_model_file=30k-clean.model --init_checkpoint=albert_base/model.ckpt-best --do_predict

Every dev evaluation reports accuracy overall and per level (accuracy_middle, accuracy_high) in one run; the best
checkpoint by accuracy is kept in <output_dir>/best/. --do_predict writes predictions.tsv (id, letter,
probabilities) for the test split and its accuracies when the files have answers. --export_dir writes a SavedModel
that TF Serving answers from raw text (article, question, options [B, 4] -> probabilities, answer letter).
"""

from __future__ import annotations

from absl import flags

from albert_tf.cli import app
from albert_tf.cli import flags as shared
from albert_tf.tasks.race.options import RaceOptions
from albert_tf.training.run_config import define_option_flags

FLAGS = flags.FLAGS


def define_flags(fv: flags.FlagValues = FLAGS) -> None:
    """The flags of run_race on ``fv`` (idempotent): official names and defaults of run_race.py."""
    if "max_qa_length" in fv:
        return
    flags.DEFINE_bool("do_predict", False, "Predict the test split into predictions.tsv.", flag_values=fv)
    flags.DEFINE_string("export_dir", None,
                        "Write a SavedModel (raw article/question/options serving_default + token-id "
                        "serve_token_ids) of the best weights to <dir>/<step>.", flag_values=fv)
    define_option_flags(RaceOptions, fv)
    shared.define_fine_tuning_flags(
        fv, max_seq_length=512, max_seq_length_help="Tokens per option: [CLS] article [SEP] question+option [SEP].",
        optimizer="adamw", learning_rate=1e-5, num_train_steps=12000, num_warmup_steps=1000, steps_per_loop=1000,
        save_checkpoints_steps=100, keep_checkpoint_max=0, train_batch_size=32, eval_batch_size=8, max_eval_steps=0,
        do_train=True,
    )
    fv.set_default("do_eval", True)  # official default


def config_from_flags(fv: flags.FlagValues = FLAGS, fetch: bool = True):
    """The run's ExperimentConfig: every flag to its one field (no TensorFlow yet); ``fetch``: fetch the pretrained
    preset ``--init_checkpoint`` may name and fill in its files."""
    from albert_tf.tasks.race.options import make_config

    return make_config(fetch_preset=fetch, **shared.fine_tuning_values(fv, fetch))


def _main(argv: list[str]) -> int:
    from albert_tf.tasks.race.inputs import check_inputs

    # flags, then the RACE files, both before a preset's download and TensorFlow's start-up
    config = shared.checked_config(lambda fetch: config_from_flags(fetch=fetch), check_inputs)
    from albert_tf.tasks import race

    summary = race.run(config)
    best = summary.get("best")
    if best:
        levels = ", ".join(f"{k} {best[k]:.4f}" for k in ("accuracy_middle", "accuracy_high") if k in best)
        print(f"best accuracy = {best['accuracy']:.4f} ({levels}) at step {best['global_step']}", flush=True)
    scores = (summary.get("predict") or {}).get("scores")
    if scores:
        print(f"test accuracy = {scores['accuracy']:.4f} on {scores['num_questions']} questions", flush=True)
    return 0


def expected_errors() -> tuple[type[BaseException], ...]:
    """The failures a user can cause: the shared ones and the task's data errors (``cli.flags.expected_errors``)."""
    from albert_tf.data.race import RaceDataError

    return shared.expected_errors(RaceDataError)


def main(argv: list[str] | None = None) -> None:
    """Console script ``run_race``."""
    define_flags()
    app.run(_main, __doc__, errors=expected_errors(), argv=argv)


if __name__ == "__main__":
    main()
