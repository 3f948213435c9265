"""export_savedmodel: a checkpoint -> SavedModels answered from raw text (a fine-tuned task's --checkpoint, --task
as listed below) or reused as a TF-Hub-style encoder (--task=encoder).

A fine-tuned task is written to --export_dir/<global step> (the versioned layout TF Serving loads), with the
tokenizer its run trained with: the run's run.json records the SentencePiece model's sha256 and --do_lower_case, and
another model file or setting is refused before anything is built (a same-size vocab of another model would give
wrong ids without any error). --tflite also writes <step>/model.tflite: the task's token-id signature with TFLite
builtin ops only, any batch size at --max_seq_length (the raw-text signatures need TF string and tensorflow_text
ops, which TFLite has no builtins for); --quantize=dynamic (int8 weights) or float16 writes model_dynamic.tflite or
model_float16.tflite instead. --onnx writes <step>/model.onnx, the same signature for ONNX Runtime (the 'onnx'
extra: tf2onnx, onnx, onnxruntime).

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

from absl import flags

from albert_tf.cli import app
from albert_tf.tasks.base import FineTuningOptions
from albert_tf.tasks.registry import SHARED_EXPORT_FLAGS, TaskExport, get_task, load_tasks
from albert_tf.training.run_config import define_option_flags

FLAGS = flags.FLAGS
ENCODER = "encoder"
ENCODER_REQUIRED = ("albert_config_file", "spm_model_file", "init_checkpoint", "export_dir")
SHARED_EXPORT_HELP = {
    "albert_config_file": "albert_config.json or a model config name (albert_base_v2, albert_tiny, ...).",
    "spm_model_file": "SentencePiece model the model was fine-tuned with.",
    "do_lower_case": "Lower-case in the in-graph preprocess_text.",
    "max_seq_length": "Sequence length of the raw-text signature.",
    "sharing": "Cross-layer sharing.",
    "export_real_tokens": "The raw-text signatures run the dense layers on each request's real tokens only (one "
                          "example per row; same answers up to float rounding); off: every position, as before.",
}


def define_flags(fv: flags.FlagValues = FLAGS) -> None:
    """Flags of export_savedmodel: the shared ones, then each declared task's own (idempotent)."""
    if "checkpoint" in fv:
        return
    tasks = load_tasks()
    names = [task.name for task in tasks]
    default = next((task.name for task in tasks if task.default), names[0] if names else ENCODER)
    flags.DEFINE_enum("task", default, [*names, ENCODER],
                      "What to export: a fine-tuned task's --checkpoint, or the pretrained encoder + preprocessor.",
                      flag_values=fv)
    # The shared settings of every fine-tuned task, from their fields, with what they mean for an export.
    define_option_flags(FineTuningOptions, fv, names=SHARED_EXPORT_FLAGS, help=SHARED_EXPORT_HELP)
    flags.DEFINE_string("checkpoint", None,
                        "A fine-tuned task's checkpoint (its runner's best/ckpt-best or ckpt-N), or the name of a "
                        "preset in $ALBERT_TF_PRESETS that holds one.", flag_values=fv)
    if "init_checkpoint" not in fv:  # the runners define it too (cli/flags.py)
        flags.DEFINE_string("init_checkpoint", None,
                            "--task=encoder: pretrained weights (official TF1 prefix or directory, Hugging Face "
                            "directory, albert-tf checkpoint or .keras file), or a pretrained preset name "
                            "(albert_base_v2, ...: fetched and cached; it supplies --albert_config_file, "
                            "--spm_model_file and --do_lower_case when not given).", flag_values=fv)
    flags.DEFINE_string("export_dir", None,
                        "Base directory: a fine-tuned task writes <export_dir>/<step>; --task=encoder writes "
                        "<export_dir>/encoder and <export_dir>/preprocessor.", flag_values=fv)
    flags.DEFINE_bool("tflite", False,
                      "A fine-tuned task: also convert its token-id signature to <step>/model.tflite (TFLite "
                      "builtin ops only; any batch, sequence length --max_seq_length).", flag_values=fv)
    flags.DEFINE_bool("onnx", False,
                      "A fine-tuned task: also convert its token-id signature to <step>/model.onnx (tf2onnx; any "
                      "batch, sequence length --max_seq_length; needs the 'onnx' extra).", flag_values=fv)
    flags.DEFINE_enum("quantize", "none", ["none", "dynamic", "float16"],
                      "With --tflite: none (float32, model.tflite), dynamic (int8 weights, dynamic-range "
                      "activations: model_dynamic.tflite, about a quarter of the size) or float16 (half the size: "
                      "model_float16.tflite).", flag_values=fv)
    for task in tasks:
        task.define_flags(fv)


def own_flags(task: TaskExport) -> frozenset[str]:
    """The flags ``task`` declares itself (those a user may give only with that --task)."""
    fv = flags.FlagValues()
    task.define_flags(fv)
    return frozenset(fv)


def help_doc() -> str:
    """The module docstring with a paragraph for each declared task."""
    parts = [__doc__.rstrip()]
    for task in load_tasks():
        parts.append(f"--task={task.name}: {task.description}")
    return "\n\n".join(parts) + "\n"


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
        metadata={"checkpoint": FLAGS.init_checkpoint, "checkpoint_prefix": _prefix_or_none(FLAGS.init_checkpoint),
                  "albert_config_file": FLAGS.albert_config_file},
    )


def _prefix_or_none(checkpoint: str) -> str | None:
    """The TF checkpoint prefix ``checkpoint`` stands for (a folder's latest), recorded in the encoder export so that
    a rerun finds the export of the same weights; None for other formats (a Hugging Face folder)."""
    from albert_tf.checkpoints.paths import resolve_checkpoint_path
    from albert_tf.checkpoints.report import CheckpointError

    try:
        return resolve_checkpoint_path(checkpoint)
    except (CheckpointError, OSError):
        return None


def _check_run_tokenizer() -> None:
    """A fine-tuned --checkpoint is exported with the tokenizer its run trained with (``run.json`` records it):
    another SentencePiece model of the same size, or another --do_lower_case, would give the raw-text signature
    wrong ids without any error. Checked before anything is built."""
    from absl import logging

    from albert_tf.tokenization import FullTokenizer
    from albert_tf.training.run_dir import check_run_tokenizer

    tokenizer = FullTokenizer(do_lower_case=FLAGS.do_lower_case, spm_model_file=FLAGS.spm_model_file)
    logging.info(check_run_tokenizer(FLAGS.checkpoint, tokenizer, f"--spm_model_file {FLAGS.spm_model_file}"))


def _exported(path: str) -> int:
    """Print the export, and with --tflite / --onnx convert its token-id signature next to it.

    The converters are long calls in C++ that a signal cannot cut short in this process, so each runs in a child
    process (:func:`albert_tf.interrupts.in_child`) that Ctrl-C abandons; the export this command has just written
    is then removed with whatever was converted into it, so an interrupted command publishes nothing. The lines
    naming what was written come once everything is written.
    """
    import functools

    from albert_tf import files as _fs
    from albert_tf import interrupts
    from albert_tf.export.savedmodel import IDS_SIGNATURE

    if not (FLAGS.tflite or FLAGS.onnx):
        print(f"exported {path}", flush=True)
        return 0
    conversions = []
    if FLAGS.tflite:
        from albert_tf.export import tflite

        conversions.append(("TFLite", functools.partial(tflite.convert_signature, path, signature_key=IDS_SIGNATURE,
                                                        quantize=FLAGS.quantize)))
    if FLAGS.onnx:
        from albert_tf.export import onnx

        conversions.append(("ONNX", functools.partial(onnx.convert_signature, path, signature_key=IDS_SIGNATURE)))
    written = []
    try:
        for name, convert in conversions:
            interrupts.note(f"while converting {path} to {name}")
            interrupts.advise(f"{path} was removed, nothing was published; run the same command again")
            print(f"converting the {IDS_SIGNATURE} signature of {path} to {name}", flush=True)
            written.append(interrupts.in_child(convert))
    except KeyboardInterrupt:  # Ctrl-C / SIGTERM (interrupts.Interrupted); a converter's error keeps the export
        with interrupts.deferred():
            _fs.rmtree(path)
        raise
    interrupts.note(f"after converting {path}")  # a stop from here on: everything is written
    interrupts.advise(f"{path} and {', '.join(written)} are complete (written before the stop)")
    print(f"exported {path}", flush=True)
    for converted in written:
        print(f"wrote {converted}", flush=True)
    return 0


def _refuse_other_tasks_flags(chosen: str) -> None:
    """A flag that only another task declares, given on the command line, is an error (it would be ignored)."""
    from albert_tf.training.run_config import RunError

    mine = own_flags(get_task(chosen)) if chosen != ENCODER else frozenset()
    for task in load_tasks():
        if task.name == chosen:
            continue
        for name in sorted(own_flags(task) - mine):
            if FLAGS[name].present:
                raise RunError(f"--{name} is a flag of --task={task.name}, not of --task={chosen}")


def _check_export_dir(export_dir: str, checkpoint: str) -> None:
    """A file where the export folder goes, or an export folder that holds the checkpoint it reads: one line."""
    from albert_tf import files as _fs
    from albert_tf.checkpoints.paths import checkpoint_paths
    from albert_tf.training.run_config import RunError

    blocker = _fs.file_in_the_way(export_dir)
    if blocker is not None:
        raise RunError(f"--export_dir={export_dir}: {blocker} is a file, not a directory")
    hit = _fs.written_input(checkpoint_paths(checkpoint), [export_dir])
    if hit is not None:
        raise RunError(f"--export_dir={export_dir} holds the input checkpoint {hit[0]}: choose another folder")


def _main(argv: list[str]) -> int:
    from albert_tf import interrupts
    from albert_tf.cli.flags import apply_preset_flag
    from albert_tf.training.run_config import RunError

    interrupts.advise(interrupts.AGAIN)  # the SavedModel appears only whole

    _refuse_other_tasks_flags(FLAGS.task)
    if FLAGS.quantize != "none" and not FLAGS.tflite:
        raise RunError(f"--quantize={FLAGS.quantize} quantizes the TFLite file: add --tflite")
    for name in ("init_checkpoint", "checkpoint"):  # a pretrained preset name: fetched, its config and tokenizer
        apply_preset_flag(FLAGS, name)
    if FLAGS.task == ENCODER:
        for name in ENCODER_REQUIRED:
            if not getattr(FLAGS, name):
                raise RunError(f"--{name} is required (--task=encoder)")
        if FLAGS.tflite or FLAGS.onnx:
            raise RunError("--tflite and --onnx convert a fine-tuned model's token-id signature; not for "
                           "--task=encoder")
        if FLAGS.checkpoint:
            raise RunError("--task=encoder reads its weights from --init_checkpoint; --checkpoint is for a fine-tuned "
                           "task")
        for kind, path in _export_encoder().items():
            print(f"exported {kind} {path}", flush=True)
        return 0
    task = get_task(FLAGS.task)
    for name in (*task.required, "checkpoint", "export_dir"):
        if not getattr(FLAGS, name):
            raise RunError(f"--{name} is required")
    _check_export_dir(FLAGS.export_dir, FLAGS.checkpoint)
    _check_run_tokenizer()
    return _exported(task.export(FLAGS))


def main(argv: list[str] | None = None) -> None:
    """Console script ``export_savedmodel``."""
    from albert_tf.cli.flags import expected_errors

    define_flags()
    task_errors = tuple(error for task in load_tasks() for error in task.errors)
    app.run(_main, help_doc(), errors=(*expected_errors(*task_errors), FileExistsError), argv=argv)


if __name__ == "__main__":
    main()
