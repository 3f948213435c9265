"""Export a fine-tuned GLUE classifier as a SavedModel that TF Serving answers from raw text.

Signatures: ``serving_default`` (raw strings ``text_a`` [+ ``text_b`` for pair tasks] ->
``probabilities``, ``label``, ``label_id``, ``logits``; or ``score`` for STS-B) and
``serve_token_ids`` (``input_ids``/``input_mask``/``segment_ids``) and ``serve_tf_examples`` (the
official ``serialized_example`` receiver). Written to
``--export_dir/<global step>`` (the versioned layout TF Serving loads). Load it with
``import tensorflow_text`` first (SentencePiece ops). See ``albert_tf.export.serving``.

Example::

  python export_savedmodel.py --task_name=MRPC --albert_config_file=albert_base_v2 \\
      --spm_model_file=30k-clean.model --max_seq_length=128 \\
      --checkpoint=out/mrpc/best/ckpt-best --export_dir=serving/mrpc
"""

from __future__ import annotations

import math
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

from albert_tf import classifier_runner  # noqa: E402

FLAGS = flags.FLAGS


def define_flags(flag_values: flags.FlagValues = FLAGS) -> None:
    """Flags of export_savedmodel.py (official names where the official had them)."""
    fv = flag_values
    flags.DEFINE_string(
        "task_name", None, "GLUE task the checkpoint was fine-tuned on (labels, pair or single).", flag_values=fv
    )
    flags.DEFINE_string("albert_config_file", None, "albert_config.json or a preset name.", flag_values=fv)
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model the model was fine-tuned with.", flag_values=fv)
    flags.DEFINE_bool("do_lower_case", True, "Lower-case in the in-graph preprocess_text.", flag_values=fv)
    flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the raw-text signature.", flag_values=fv)
    flags.DEFINE_string(
        "checkpoint", None, "Fine-tuned checkpoint (run_classifier's best/ckpt-best or ckpt-N).", flag_values=fv
    )
    flags.DEFINE_string(
        "export_dir", None, "Base directory; the SavedModel goes to <export_dir>/<step>.", flag_values=fv
    )
    flags.DEFINE_float(
        "threshold_to_export", float("nan"), "Also return this float scalar as 'threshold' (NaN: none).", flag_values=fv
    )
    flags.DEFINE_enum("sharing", "all", ["all", "attention", "ffn", "none"], "Cross-layer sharing.", flag_values=fv)


def _main(argv) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    for name in ("task_name", "albert_config_file", "spm_model_file", "checkpoint", "export_dir"):
        if not getattr(FLAGS, name):
            raise app.UsageError(f"--{name} is required")
    try:
        path = classifier_runner.export_checkpoint(
            FLAGS.task_name,
            FLAGS.albert_config_file,
            FLAGS.spm_model_file,
            FLAGS.checkpoint,
            FLAGS.export_dir,
            max_seq_length=FLAGS.max_seq_length,
            do_lower_case=FLAGS.do_lower_case,
            sharing=FLAGS.sharing,
            threshold=None if math.isnan(FLAGS.threshold_to_export) else FLAGS.threshold_to_export,
        )
    except (classifier_runner.RunError, classifier_runner.glue.GlueDataError, FileExistsError) as e:
        raise SystemExit(f"export_savedmodel: error: {e}") from None
    print(f"exported {path}", flush=True)


def main() -> None:
    """Console entry point."""
    define_flags()
    app.run(_main)


if __name__ == "__main__":
    main()
