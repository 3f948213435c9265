"""run_tagging: fine-tune ALBERT to tag words (named entities): train, evaluate every checkpoint, predict, export.

There is no official tagging runner; the flags are the other runners' (the trainer's, --albert_config_file,
--spm_model_file, --init_checkpoint: a checkpoint path or a released model's name) plus the task's own (the CoNLL
files, --tag_scheme, --labels, --window_stride, --label_all_pieces). WNUT 2017's recipe: --recipe=tagging/wnut17.

  run_tagging --recipe=tagging/wnut17 --train_file=wnut17train.conll --dev_file=emerging.dev.conll \\
      --output_dir=out/wnut17 --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --init_checkpoint=albert_base_v2 --do_train --do_eval

Files: the word in the first column and its tag in the last, an empty line after each sentence (IOB1, IOB2 or
BIOES; -DOCSTART- lines skipped). Every dev evaluation reports conlleval's entity precision, recall and F1 (overall
and per type) and token accuracy; the best checkpoint by F1 is kept in <output_dir>/best/. --do_predict writes
predictions.conll (word, gold, predicted: the input of conlleval). --export_dir writes a SavedModel that TF Serving
answers from raw sentences (the entities with their character offsets).
"""

from __future__ import annotations

from typing import Any

from albert_tf.cli.fine_tuning import FineTuningCommand
from albert_tf.data.tagging import TaggingDataError
from albert_tf.tasks.tagging.options import TaggingOptions


def _report(summary: dict[str, Any]) -> list[str]:
    lines = []
    data = summary.get("data") or {}
    if data.get("tag_scheme"):
        lines.append(f"tags read as {data['tag_scheme'].upper()}, learned and predicted as IOB2")
    best = summary.get("best")
    if best:
        lines.append(f"best entity f1 = {best['f1']:.4f} (precision {best['precision']:.4f}, recall "
                     f"{best['recall']:.4f}) at step {best['global_step']}")
    scores = (summary.get("predict") or {}).get("scores")
    if scores:
        lines.append(f"predict entity f1 = {scores['f1']:.4f} on {summary['predict']['num_sentences']} sentences")
    return lines


COMMAND = FineTuningCommand(
    doc=__doc__,
    package="albert_tf.tasks.tagging",
    options_type=TaggingOptions,
    data_error=TaggingDataError,
    help={
        "do_predict": "Tag --predict_file into predictions.conll (word, gold, predicted).",
        "export_dir": "Write a SavedModel (raw sentences -> entities serving_default + token-id serve_token_ids) "
                      "of the best weights to <dir>/<step>.",
    },
    defaults={"learning_rate": 5e-5, "num_train_steps": 1000, "num_warmup_steps": 100,
              "save_checkpoints_steps": 200},
    report=_report,
)
define_flags, config_from_flags, expected_errors, main = (
    COMMAND.define_flags, COMMAND.config_from_flags, COMMAND.expected_errors, COMMAND.main)

if __name__ == "__main__":
    main()
