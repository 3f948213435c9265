"""run_race: fine-tune ALBERT on RACE (4-way multiple choice): train, evaluate every checkpoint, predict.

The official run_race.py flags (same names and defaults: --do_train and --do_eval on by default,
max_seq_length 512, max_qa_length 128, learning rate 1e-5, train_step 12000, warmup_step 1000). The README's v2
hyper-parameters: --recipe=race. --data_dir holds RACE/{train,dev,test}/{middle,high}/ in the official all.txt
layout or the original one-JSON-per-file release.

  run_race --recipe=race --data_dir=data --output_dir=out/race --albert_config_file=albert_base_v2 \\
      --spm_model_file=30k-clean.model --init_checkpoint=albert_base/model.ckpt-best --do_predict

Every dev evaluation reports accuracy overall and per level (accuracy_middle, accuracy_high) in one run; the best
checkpoint by accuracy is kept in <output_dir>/best/. --do_predict writes predictions.tsv (id, letter,
probabilities) for the test split and its accuracies when the files have answers. --export_dir writes a SavedModel
that TF Serving answers from raw text (article, question, options [B, 4] -> probabilities, answer letter).
"""

from __future__ import annotations

from typing import Any

from albert_tf.cli.fine_tuning import FineTuningCommand
from albert_tf.data.race import RaceDataError
from albert_tf.tasks.race.options import RaceOptions


def _report(summary: dict[str, Any]) -> list[str]:
    lines = []
    best = summary.get("best")
    if best:
        levels = ", ".join(f"{k} {best[k]:.4f}" for k in ("accuracy_middle", "accuracy_high") if k in best)
        lines.append(f"best accuracy = {best['accuracy']:.4f} ({levels}) at step {best['global_step']}")
    scores = (summary.get("predict") or {}).get("scores")
    if scores:
        lines.append(f"test accuracy = {scores['accuracy']:.4f} on {scores['num_questions']} questions")
    return lines


COMMAND = FineTuningCommand(
    doc=__doc__,
    package="albert_tf.tasks.race",
    options_type=RaceOptions,
    data_error=RaceDataError,
    help={
        "do_predict": "Predict the test split into predictions.tsv.",
        "export_dir": "Write a SavedModel (raw article/question/options serving_default + token-id serve_token_ids) "
                      "of the best weights to <dir>/<step>.",
    },
    defaults={"learning_rate": 1e-5, "num_train_steps": 12000, "num_warmup_steps": 1000,
              "save_checkpoints_steps": 100, "do_train": True, "do_eval": True},  # the official defaults
    report=_report,
)
define_flags, config_from_flags, expected_errors, main = (
    COMMAND.define_flags, COMMAND.config_from_flags, COMMAND.expected_errors, COMMAND.main)

if __name__ == "__main__":
    main()
