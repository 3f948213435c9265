"""export_savedmodel: a checkpoint -> SavedModels answered from raw text (--task=classifier, the default,
--task=squad and --task=race) or reused as a TF-Hub-style encoder (--task=encoder).

--task=classifier: a fine-tuned GLUE classifier. Signatures: serving_default (raw strings text_a [+ text_b for
pair tasks] -> probabilities, label, label_id, logits; or score for STS-B), serve_token_ids
(input_ids/input_mask/segment_ids) and serve_tf_examples (the official serialized_example receiver). Written to
--export_dir/<global step> (the versioned layout TF Serving loads). Each request is cut in the graph to its
longest real sequence rounded up to a --bucket_lengths length (same outputs; 'none' pads to --max_seq_length).

  export_savedmodel --task_name=MRPC --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --max_seq_length=128 --checkpoint=out/mrpc/best/ckpt-best --export_dir=serving/mrpc

--task=race: a fine-tuned RACE model (run_race's best/ckpt-best or ckpt-N). Signatures: serving_default (raw
strings article [B], question [B], options [B, 4] -> probabilities [B, 4], answer (the letter A-D), logits; the
features of the training pipeline, --max_seq_length per choice, --max_qa_length question+option tokens kept) and
serve_ids (input_ids/input_mask/segment_ids [B, 4, L]). Written to --export_dir/<global step>.

  export_savedmodel --task=race --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --max_seq_length=512 --max_qa_length=128 --checkpoint=out/race/best/ckpt-best --export_dir=serving/race

--task=squad: a fine-tuned SQuAD model (run_squad's best/ckpt-best or ckpt-N; --version_2_with_negative for v2).
Signatures: serving_default (raw strings question [B], context [B] of any length -> answer, start/end character
offsets into the context, score; v2 also null_score and has_answer at --null_score_diff_threshold; windows of
--max_seq_length with --doc_stride and the official post-processing run in the graph) and serve_token_ids
(input_ids/input_mask/segment_ids [+ p_mask for v2] of windows -> the model's raw outputs).

  export_savedmodel --task=squad --version_2_with_negative --albert_config_file=albert_base_v2 \
      --spm_model_file=30k-clean.model --max_seq_length=384 --checkpoint=out/squad2/best/ckpt-best \
      --export_dir=serving/squad2

--task=encoder (the official export_to_tfhub.py / export_checkpoints.py): the pretrained backbone of
--init_checkpoint (official TF1, Hugging Face or albert-tf) as <export_dir>/encoder (input_word_ids, input_mask,
input_type_ids -> pooled_output, sequence_output; reusable: loaded(inputs, training=...), trainable_variables) and
the matching <export_dir>/preprocessor (raw strings -> those inputs at --max_seq_length; serving_default for one
segment, serve_text_pair for pairs, tokenize and bert_pack_inputs).

  export_savedmodel --task=encoder --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --max_seq_length=128 --init_checkpoint=albert_base/model.ckpt-best --export_dir=hub/albert_base

A fine-tuned --checkpoint (classifier, squad, race) is exported with the tokenizer its run trained with: the run's
run.json records the SentencePiece model's sha256 and --do_lower_case, and another model file or setting is refused
before anything is built (a same-size vocab of another model would give wrong ids without any error).

--tflite (classifier, squad, race) also writes <step>/model.tflite: the token-id signature with TFLite builtin ops
only, any batch size at --max_seq_length (the raw-text signatures need TF string and tensorflow_text ops, which
TFLite has no builtins for).

Load the exports with `import tensorflow_text` first (SentencePiece ops).
"""

from __future__ import annotations

import math

from absl import flags

from albert_tf.cli import app
from albert_tf.data.batching import DEFAULT_BUCKET_LENGTHS

FLAGS = flags.FLAGS
TASKS = ("classifier", "squad", "race", "encoder")
REQUIRED = {
    "classifier": ("task_name", "albert_config_file", "spm_model_file", "checkpoint", "export_dir"),
    "squad": ("albert_config_file", "spm_model_file", "checkpoint", "export_dir"),
    "race": ("albert_config_file", "spm_model_file", "checkpoint", "export_dir"),
    "encoder": ("albert_config_file", "spm_model_file", "init_checkpoint", "export_dir"),
}


def define_flags(fv: flags.FlagValues = FLAGS) -> None:
    """Flags of export_savedmodel (official names where the official had them; idempotent)."""
    if "checkpoint" in fv:
        return
    flags.DEFINE_enum("task", "classifier", list(TASKS),
                      "What to export: a fine-tuned GLUE classifier, SQuAD model or RACE model, or the pretrained "
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
                        "--task=classifier / squad / race: fine-tuned checkpoint (the runner's best/ckpt-best or "
                        "ckpt-N).",
                        flag_values=fv)
    _define_squad_flags(fv)
    if "init_checkpoint" not in fv:  # the runners define it too (cli/flags.py)
        flags.DEFINE_string("init_checkpoint", None,
                            "--task=encoder: pretrained weights (official TF1 prefix or directory, Hugging Face "
                            "directory, albert-tf checkpoint or .keras file).", flag_values=fv)
    flags.DEFINE_string("export_dir", None,
                        "Base directory: --task=classifier / squad / race write <export_dir>/<step>; --task=encoder "
                        "writes "
                        "<export_dir>/encoder and <export_dir>/preprocessor.", flag_values=fv)
    flags.DEFINE_float("threshold_to_export", float("nan"), "Also return this float scalar as 'threshold' (NaN: none).",
                       flag_values=fv)
    flags.DEFINE_enum("sharing", "all", ["all", "attention", "ffn", "none"], "Cross-layer sharing.", flag_values=fv)
    if "export_jit_compile" not in fv:
        flags.DEFINE_bool("export_jit_compile", False,
                          "--task=classifier: run the model's forward under XLA in every signature (same outputs; "
                          "~10% lower CPU latency at batch 1; the first request of each shape compiles).",
                          flag_values=fv)
    if "bucket_lengths" not in fv:
        flags.DEFINE_string("bucket_lengths", DEFAULT_BUCKET_LENGTHS,
                            "--task=classifier: in-graph length bucketing of the raw-text and tf.Example "
                            "signatures: a request is cut to its longest real sequence rounded up to the next of "
                            "these lengths (capped at --max_seq_length), so short texts run at 32-64 positions; same "
                            "outputs to float rounding (serve_token_ids runs at the length sent). 'none': pad every "
                            "request to --max_seq_length (the official export).",
                            flag_values=fv)
    flags.DEFINE_bool("tflite", False,
                      "--task=classifier / squad / race: also convert the token-id signature to <step>/model.tflite "
                      "(TFLite builtin ops only; any batch, sequence length --max_seq_length).", flag_values=fv)


def _define_squad_flags(fv: flags.FlagValues) -> None:
    """--task=squad: the run_squad flags that shape the windows, the head and the answers (run_squad's names and
    defaults; skipped where a runner sharing ``fv`` defined them already)."""
    squad_flags = [
        (flags.DEFINE_bool, "version_2_with_negative", False, "SQuAD 2.0 head (beam + answer class)."),
        (flags.DEFINE_integer, "doc_stride", 128, "Tokens between the starts of two context windows."),
        (flags.DEFINE_integer, "max_query_length", 64, "Question tokens kept."),
        (flags.DEFINE_integer, "max_answer_length", 30, "Longest answer, in tokens."),
        (flags.DEFINE_integer, "n_best_size", 20, "v1: start and end candidates per window."),
        (flags.DEFINE_integer, "start_n_top", 5, "v2 beam: start positions kept."),
        (flags.DEFINE_integer, "end_n_top", 5, "v2 beam: end positions kept per start."),
        (flags.DEFINE_float, "null_score_diff_threshold", 0.0, "v2: has_answer = null_score < this threshold."),
    ]
    for define, name, default, help_text in squad_flags:
        if name not in fv:
            define(name, default, "--task=squad: " + help_text, flag_values=fv)


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


def _check_run_tokenizer() -> None:
    """A fine-tuned --checkpoint is exported with the tokenizer its run trained with (``run.json`` records it):
    another SentencePiece model of the same size, or another --do_lower_case, would give the raw-text signature
    wrong ids without any error. Checked before anything is built."""
    from absl import logging

    from albert_tf.tokenization import FullTokenizer
    from albert_tf.training.run_dir import check_run_tokenizer

    tokenizer = FullTokenizer(do_lower_case=FLAGS.do_lower_case, spm_model_file=FLAGS.spm_model_file)
    logging.info(check_run_tokenizer(FLAGS.checkpoint, tokenizer, f"--spm_model_file {FLAGS.spm_model_file}"))


def _exported(path: str, ids_signature: str) -> int:
    """Print the export, and with --tflite convert its token-id signature next to it."""
    print(f"exported {path}", flush=True)
    if FLAGS.tflite:
        from albert_tf.export.tflite import convert_signature

        print(f"wrote {convert_signature(path, signature_key=ids_signature)}", flush=True)
    return 0


def _main(argv: list[str]) -> int:
    from albert_tf.export import IDS_SIGNATURE
    from albert_tf.export.multiple_choice import IDS_SIGNATURE as RACE_IDS_SIGNATURE
    from albert_tf.tasks import glue, race, squad
    from albert_tf.training.run_config import RunError

    for name in REQUIRED[FLAGS.task]:
        if not getattr(FLAGS, name):
            raise RunError(f"--{name} is required" + (" (--task=encoder)" if FLAGS.task == "encoder" else ""))
    if FLAGS.export_jit_compile and FLAGS.task != "classifier":
        raise RunError("--export_jit_compile is implemented for --task=classifier only")
    if FLAGS.task == "encoder":
        if FLAGS.tflite:
            raise RunError("--tflite converts a fine-tuned model's token-id signature; not for --task=encoder")
        if FLAGS.checkpoint:
            raise RunError(
                "--task=encoder reads its weights from --init_checkpoint; --checkpoint is for --task=classifier"
            )
        for kind, path in _export_encoder().items():
            print(f"exported {kind} {path}", flush=True)
        return 0
    _check_run_tokenizer()
    if FLAGS.task == "squad":
        path = squad.export_checkpoint(
            FLAGS.checkpoint,
            FLAGS.export_dir,
            **{name: FLAGS[name].value for name in (
                "albert_config_file", "spm_model_file", "max_seq_length", "do_lower_case", "sharing",
                "version_2_with_negative", "doc_stride", "max_query_length", "max_answer_length", "n_best_size",
                "start_n_top", "end_n_top", "null_score_diff_threshold")},
        )
        return _exported(path, IDS_SIGNATURE)
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
        return _exported(path, RACE_IDS_SIGNATURE)
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
        export_jit_compile=FLAGS.export_jit_compile,
        bucket_lengths=FLAGS.bucket_lengths,
    )
    return _exported(path, IDS_SIGNATURE)


def main(argv: list[str] | None = None) -> None:
    """Console script ``export_savedmodel``."""
    from albert_tf.cli.run_classifier import expected_errors
    from albert_tf.data.race import RaceDataError
    from albert_tf.data.squad import SquadDataError

    define_flags()
    app.run(_main, __doc__, errors=(*expected_errors(), RaceDataError, SquadDataError, FileExistsError), argv=argv)


if __name__ == "__main__":
    main()
