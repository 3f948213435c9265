"""run_squad: fine-tune ALBERT on SQuAD 1.1 or 2.0: train, evaluate every checkpoint, predict answers.

The official flags of run_squad_v1.py and run_squad_v2.py under one command (SQuAD code in official
``squad_utils.py``), with
--version_2_with_negative choosing the v2 head (beam + answer class) and v2 scoring. Presets with the README
hyper-parameters: --preset=squad/v1 and --preset=squad/v2 (`python -m albert_tf.configs` lists them).

  run_squad --preset=squad/v2 --train_file=train-v2.0.json --predict_file=dev-v2.0.json \\
      --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --init_checkpoint=albert_base/model.ckpt-best --output_dir=out/squad2 --do_train --do_eval --do_predict

--do_eval scores every checkpoint on --predict_file (the official predict loop) and keeps the best by F1 in
<output_dir>/best/; --do_predict writes predictions.json, nbest_predictions.json and (v2) null_odds.json with the
best weights (or --predict_checkpoint) and scores them when the file has answers. v2 scores are reported twice:
exact/f1 with the null threshold tuned on the same file (the official numbers) and fixed_exact/fixed_f1 with
--null_score_diff_threshold (nothing tuned on the answers). --export_dir writes a SavedModel of the best weights that
TF Serving answers from raw text (question, context -> answer, character offsets, score; v2 also null_score and
has_answer), windows and post-processing in the graph.
"""

from __future__ import annotations

from absl import flags

from albert_tf.cli import app
from albert_tf.cli import flags as shared
from albert_tf.tasks.squad.options import SquadOptions
from albert_tf.training.run_config import define_option_flags

FLAGS = flags.FLAGS


def define_flags(fv: flags.FlagValues = FLAGS) -> None:
    """The flags of run_squad on ``fv`` (idempotent): official names and defaults of run_squad_v1/v2.py."""
    if "version_2_with_negative" in fv:
        return
    flags.DEFINE_bool("do_predict", False,
                      "Write predictions.json, nbest_predictions.json and (v2) null_odds.json for --predict_file.",
                      flag_values=fv)
    flags.DEFINE_string("export_dir", None,
                        "Write a SavedModel (raw question/context serving_default + token-id serve_token_ids) of the "
                        "best weights to <dir>/<step>.", flag_values=fv)
    define_option_flags(SquadOptions, fv)
    shared.define_fine_tuning_flags(
        fv, max_seq_length=384, max_seq_length_help="Tokens per window: [CLS] question [SEP] context [SEP].",
        spm_model_file_help="SentencePiece model (30k-clean.model); SQuAD is SentencePiece only.",
        vocab_file_help="Official flag; WordPiece is not supported for SQuAD.",
        cached_dir_help="Where feature TFRecords + JSON side files are cached (default: the directory of "
        "--train_feature_file/--predict_feature_file, else --output_dir).",
        optimizer="adamw", learning_rate=5e-5, num_train_steps=0, num_warmup_steps=-1, steps_per_loop=1000,
        save_checkpoints_steps=1000, keep_checkpoint_max=0, train_batch_size=32, eval_batch_size=8, max_eval_steps=0,
    )
    fv["num_train_steps"].help = "Optimizer updates; 0: from --num_train_epochs (official)."
    fv["num_warmup_steps"].help = "Linear warmup steps; < 0: int(num_train_steps * --warmup_proportion) (official)."


def config_from_flags(fv: flags.FlagValues = FLAGS, fetch: bool = True):
    """The run's ExperimentConfig: every flag to its one field (no TensorFlow yet); ``fetch``: fetch the pretrained
    preset ``--init_checkpoint`` may name and fill in its files."""
    from albert_tf.tasks.squad.options import make_config

    return make_config(fetch_preset=fetch, **shared.fine_tuning_values(fv, fetch))


def _main(argv: list[str]) -> int:
    from albert_tf.tasks.squad.inputs import check_inputs

    # flags, then the JSON files, both before a preset's download and TensorFlow's start-up; the step counts the
    # data gives are checked once the task has counted them
    config = shared.checked_config(lambda fetch: config_from_flags(fetch=fetch), check_inputs,
                                   schedule_from_data=True)
    from albert_tf.tasks import squad

    summary = squad.run(config)
    best = summary.get("best")
    if best:
        print(f"best f1 = {best['f1']:.2f} (exact {best['exact']:.2f}) at step {best['global_step']}", flush=True)
    scores = (summary.get("predict") or {}).get("scores")
    if scores:
        print("predictions: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items() if isinstance(v, float)),
              flush=True)
    if summary.get("export_dir"):
        print(f"exported {summary['export_dir']}", flush=True)
    return 0


def expected_errors() -> tuple[type[BaseException], ...]:
    """The failures a user can cause: the shared ones and the task's data errors (``cli.flags.expected_errors``)."""
    from albert_tf.data.squad import SquadDataError

    return shared.expected_errors(SquadDataError)


def main(argv: list[str] | None = None) -> None:
    """Console script ``run_squad``."""
    define_flags()
    app.run(_main, __doc__, errors=expected_errors(), argv=argv)


if __name__ == "__main__":
    main()
