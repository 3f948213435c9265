"""export_savedmodel: a fine-tuned GLUE classifier -> a SavedModel that TF Serving answers from raw text.

Signatures: serving_default (raw strings text_a [+ text_b for pair tasks] -> probabilities, label, label_id,
logits; or score for STS-B), serve_token_ids (input_ids/input_mask/segment_ids) and serve_tf_examples (the
official serialized_example receiver). Written to --export_dir/<global step> (the versioned layout TF Serving
loads). Load it with `import tensorflow_text` first (SentencePiece ops).

  export_savedmodel --task_name=MRPC --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --max_seq_length=128 --checkpoint=out/mrpc/best/ckpt-best --export_dir=serving/mrpc
"""

from __future__ import annotations

import math

from absl import flags

from albert_tf.cli import app

FLAGS = flags.FLAGS


def define_flags(fv: flags.FlagValues = FLAGS) -> None:
    """Flags of export_savedmodel (official names where the official had them; idempotent)."""
    if "checkpoint" in fv:
        return
    flags.DEFINE_string("task_name", None, "GLUE task the checkpoint was fine-tuned on (labels, pair or single).",
                        flag_values=fv)
    flags.DEFINE_string("albert_config_file", None, "albert_config.json or a preset name.", flag_values=fv)
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model the model was fine-tuned with.", flag_values=fv)
    flags.DEFINE_bool("do_lower_case", True, "Lower-case in the in-graph preprocess_text.", flag_values=fv)
    flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the raw-text signature.", flag_values=fv)
    flags.DEFINE_string("checkpoint", None, "Fine-tuned checkpoint (run_classifier's best/ckpt-best or ckpt-N).",
                        flag_values=fv)
    flags.DEFINE_string("export_dir", None, "Base directory; the SavedModel goes to <export_dir>/<step>.",
                        flag_values=fv)
    flags.DEFINE_float("threshold_to_export", float("nan"), "Also return this float scalar as 'threshold' (NaN: none).",
                       flag_values=fv)
    flags.DEFINE_enum("sharing", "all", ["all", "attention", "ffn", "none"], "Cross-layer sharing.", flag_values=fv)


def _main(argv: list[str]) -> int:
    from albert_tf.tasks import glue
    from albert_tf.training.run_config import RunError

    for name in ("task_name", "albert_config_file", "spm_model_file", "checkpoint", "export_dir"):
        if not getattr(FLAGS, name):
            raise RunError(f"--{name} is required")
    path = glue.export_checkpoint(
        FLAGS.checkpoint,
        FLAGS.export_dir,
        task_name=FLAGS.task_name,
        albert_config_file=FLAGS.albert_config_file,
        spm_model_file=FLAGS.spm_model_file,
        max_seq_length=FLAGS.max_seq_length,
        do_lower_case=FLAGS.do_lower_case,
        sharing=FLAGS.sharing,
        threshold_to_export=None if math.isnan(FLAGS.threshold_to_export) else FLAGS.threshold_to_export,
    )
    print(f"exported {path}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> None:
    """Console script ``export_savedmodel``."""
    from albert_tf.cli.run_classifier import expected_errors

    define_flags()
    app.run(_main, __doc__, errors=(*expected_errors(), FileExistsError), argv=argv)


if __name__ == "__main__":
    main()
