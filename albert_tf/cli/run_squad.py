"""run_squad: fine-tune ALBERT on SQuAD 1.1 or 2.0: train, evaluate every checkpoint, predict answers.

The official flags of run_squad_v1.py and run_squad_v2.py under one command (SQuAD code in official
``squad_utils.py``), with
--version_2_with_negative choosing the v2 head (beam + answer class) and v2 scoring. Presets with the README
hyper-parameters: --recipe=squad/v1 and --recipe=squad/v2 (`python -m albert_tf.configs` lists them).

  run_squad --recipe=squad/v2 --train_file=train-v2.0.json --predict_file=dev-v2.0.json \\
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

from typing import Any

from albert_tf.cli.fine_tuning import FineTuningCommand
from albert_tf.data.squad import SquadDataError
from albert_tf.tasks.squad.options import SquadOptions


def _report(summary: dict[str, Any]) -> list[str]:
    lines = []
    best = summary.get("best")
    if best:
        lines.append(f"best f1 = {best['f1']:.2f} (exact {best['exact']:.2f}) at step {best['global_step']}")
    scores = (summary.get("predict") or {}).get("scores")
    if scores:
        lines.append("predictions: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items() if isinstance(v, float)))
    if summary.get("export_dir"):
        lines.append(f"exported {summary['export_dir']}")
    return lines


COMMAND = FineTuningCommand(
    doc=__doc__,
    package="albert_tf.tasks.squad",
    options_type=SquadOptions,
    data_error=SquadDataError,
    help={
        "do_predict": "Write predictions.json, nbest_predictions.json and (v2) null_odds.json for --predict_file.",
        "export_dir": "Write a SavedModel (raw question/context serving_default + token-id serve_token_ids) of the "
                      "best weights to <dir>/<step>.",
        "spm_model_file": "SentencePiece model (30k-clean.model); SQuAD is SentencePiece only.",
        "vocab_file": "Official flag; WordPiece is not supported for SQuAD.",
        "cached_dir": "Where feature TFRecords + JSON side files are cached (default: the directory of "
                      "--train_feature_file/--predict_feature_file, else --output_dir).",
        "num_train_steps": "Optimizer updates; 0: from --num_train_epochs (official).",
        "num_warmup_steps": "Linear warmup steps; < 0: int(num_train_steps * --warmup_proportion) (official).",
    },
    defaults={"learning_rate": 5e-5, "num_train_steps": 0, "num_warmup_steps": -1,
              "save_checkpoints_steps": 1000},
    report=_report,
    schedule_from_data=True,
)
define_flags, config_from_flags, expected_errors, main = (
    COMMAND.define_flags, COMMAND.config_from_flags, COMMAND.expected_errors, COMMAND.main)

if __name__ == "__main__":
    main()
