"""export_savedmodel: a checkpoint -> SavedModels answered from raw text (--task=classifier, the default, and
--task=race) or reused as a TF-Hub-style encoder (--task=encoder).

--task=classifier: a fine-tuned GLUE classifier. Signatures: serving_default (raw strings text_a [+ text_b for
pair tasks] -> probabilities, label, label_id, logits; or score for STS-B), serve_token_ids
(input_ids/input_mask/segment_ids) and serve_tf_examples (the official serialized_example receiver). Written to
--export_dir/<global step> (the versioned layout TF Serving loads).

  export_savedmodel --task_name=MRPC --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --max_seq_length=128 --checkpoint=out/mrpc/best/ckpt-best --export_dir=serving/mrpc

--task=race: a fine-tuned RACE model (run_race's best/ckpt-best or ckpt-N). Signatures: serving_default (raw
strings article [B], question [B], options [B, 4] -> probabilities [B, 4], answer (the letter A-D), logits; the
features of the training pipeline, --max_seq_length per choice, --max_qa_length question+option tokens kept) and
serve_ids (input_ids/input_mask/segment_ids [B, 4, L]). Written to --export_dir/<global step>.

  export_savedmodel --task=race --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --max_seq_length=512 --max_qa_length=128 --checkpoint=out/race/best/ckpt-best --export_dir=serving/race

--task=encoder (the official export_to_tfhub.py / export_checkpoints.py): the pretrained backbone of
--init_checkpoint (official TF1, Hugging Face or albert-tf) as <export_dir>/encoder (input_word_ids, input_mask,
input_type_ids -> pooled_output, sequence_output; reusable: loaded(inputs, training=...), trainable_variables) and
the matching <export_dir>/preprocessor (raw strings -> those inputs at --max_seq_length; serving_default for one
segment, serve_text_pair for pairs, tokenize and bert_pack_inputs).

  export_savedmodel --task=encoder --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --max_seq_length=128 --init_checkpoint=albert_base/model.ckpt-best --export_dir=hub/albert_base

Load the exports with `import tensorflow_text` first (SentencePiece ops).
"""

from __future__ import annotations

import math

from absl import flags

from albert_tf.cli import app

FLAGS = flags.FLAGS
TASKS = ("classifier", "race", "encoder")
REQUIRED = {
    "classifier": ("task_name", "albert_config_file", "spm_model_file", "checkpoint", "export_dir"),
    "race": ("albert_config_file", "spm_model_file", "checkpoint", "export_dir"),
    "encoder": ("albert_config_file", "spm_model_file", "init_checkpoint", "export_dir"),
}


def define_flags(fv: flags.FlagValues = FLAGS) -> None:
    """Flags of export_savedmodel (official names where the official had them; idempotent)."""
    if "checkpoint" in fv:
        return
    flags.DEFINE_enum("task", "classifier", list(TASKS),
                      "What to export: a fine-tuned GLUE classifier, a fine-tuned RACE model, or the pretrained "
                      "encoder + preprocessor.",
                      flag_values=fv)
    flags.DEFINE_string("task_name", None,
                        "--task=classifier: GLUE task the checkpoint was fine-tuned on (labels, pair or single).",
                        flag_values=fv)
    flags.DEFINE_string("albert_config_file", None, "albert_config.json or a preset name.", flag_values=fv)
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model the model was fine-tuned with.", flag_values=fv)
    flags.DEFINE_bool("do_lower_case", True, "Lower-case in the in-graph preprocess_text.", flag_values=fv)
    flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the raw-text signature.", flag_values=fv)
    flags.DEFINE_integer("max_qa_length", 128, "--task=race: question + option tokens kept (the last ones).",
                         flag_values=fv)
    flags.DEFINE_string("checkpoint", None,
                        "--task=classifier / race: fine-tuned checkpoint (run_classifier's or run_race's "
                        "best/ckpt-best or ckpt-N).",
                        flag_values=fv)
    if "init_checkpoint" not in fv:  # the runners define it too (cli/flags.py)
        flags.DEFINE_string("init_checkpoint", None,
                            "--task=encoder: pretrained weights (official TF1 prefix or directory, Hugging Face "
                            "directory, albert-tf checkpoint or .keras file).", flag_values=fv)
    flags.DEFINE_string("export_dir", None,
                        "Base directory: --task=classifier / race write <export_dir>/<step>; --task=encoder writes "
                        "<export_dir>/encoder and <export_dir>/preprocessor.", flag_values=fv)
    flags.DEFINE_float("threshold_to_export", float("nan"), "Also return this float scalar as 'threshold' (NaN: none).",
                       flag_values=fv)
    flags.DEFINE_enum("sharing", "all", ["all", "attention", "ffn", "none"], "Cross-layer sharing.", flag_values=fv)


def _export_encoder() -> dict[str, str]:
    """--task=encoder: the encoder of --albert_config_file with --init_checkpoint's weights, and its preprocessor.

    The weights are loaded by official variable name (``restore_pretrained``), so any format the package reads
    works, and a checkpoint of another model size is a one-line error before anything is written.
    """
    from absl import logging

    from albert_tf.checkpoints import restore_pretrained
    from albert_tf.config import AlbertConfig
    from albert_tf.export.encoder import export_encoder_and_preprocessor
    from albert_tf.modeling import AlbertEncoder

    config = AlbertConfig.load(FLAGS.albert_config_file)
    config.check_max_seq_length(FLAGS.max_seq_length)
    encoder = AlbertEncoder(config, sharing=FLAGS.sharing)
    report = restore_pretrained(encoder, FLAGS.init_checkpoint, config=config)
    logging.info("init_checkpoint %s", report.summary())
    return export_encoder_and_preprocessor(
        encoder,
        FLAGS.export_dir,
        spm_model_file=FLAGS.spm_model_file,
        max_seq_length=FLAGS.max_seq_length,
        do_lower_case=FLAGS.do_lower_case,
        metadata={"checkpoint": FLAGS.init_checkpoint, "albert_config_file": FLAGS.albert_config_file},
    )


def _main(argv: list[str]) -> int:
    from albert_tf.tasks import glue, race
    from albert_tf.training.run_config import RunError

    for name in REQUIRED[FLAGS.task]:
        if not getattr(FLAGS, name):
            raise RunError(f"--{name} is required" + (" (--task=encoder)" if FLAGS.task == "encoder" else ""))
    if FLAGS.task == "encoder":
        if FLAGS.checkpoint:
            raise RunError(
                "--task=encoder reads its weights from --init_checkpoint; --checkpoint is for --task=classifier"
            )
        for kind, path in _export_encoder().items():
            print(f"exported {kind} {path}", flush=True)
        return 0
    if FLAGS.task == "race":
        path = race.export_checkpoint(
            FLAGS.checkpoint,
            FLAGS.export_dir,
            albert_config_file=FLAGS.albert_config_file,
            spm_model_file=FLAGS.spm_model_file,
            max_seq_length=FLAGS.max_seq_length,
            max_qa_length=FLAGS.max_qa_length,
            do_lower_case=FLAGS.do_lower_case,
            sharing=FLAGS.sharing,
        )
        print(f"exported {path}", flush=True)
        return 0
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
    from albert_tf.data.race import RaceDataError

    define_flags()
    app.run(_main, __doc__, errors=(*expected_errors(), RaceDataError, FileExistsError), argv=argv)


if __name__ == "__main__":
    main()
