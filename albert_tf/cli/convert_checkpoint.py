"""albert_convert_checkpoint convert ... (also ``python -m albert_tf.cli.convert_checkpoint convert ...``).

Converts between official TF1 ALBERT checkpoints, albert-tf (``.keras`` or TF2 checkpoint)
and Hugging Face model directories, printing the load report (loaded / missing / unused /
shape mismatches / ignored). Exits 1 with a one-line reason for a missing input, a non-ALBERT
checkpoint, a config that disagrees with the checkpoint or (without ``--allow_partial``) a
partial load. A Hugging Face output also gets the tokenizer (``--spm_model_file``, else the
``*.model`` beside ``--input``); when there is none, a warning on stderr says so.
"""

from __future__ import annotations

import sys

from absl import flags

FLAGS = flags.FLAGS


def define_flags(fv: flags.FlagValues = FLAGS) -> None:
    """Define the converter's flags on ``fv`` (idempotent), as the other entry points do in ``main``."""
    if "input_format" in fv:
        return
    from albert_tf.checkpoints.formats import FORMATS

    formats = list(FORMATS)
    flags.DEFINE_string(
        "albert_config_file",
        None,
        "The albert_config.json of the model. Default: albert_config.json beside --input "
        "(for a Hugging Face input, else its config.json; for a .keras input, the config stored in it).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "input",
        None,
        "Checkpoint to read: official TF1 prefix (e.g. model.ckpt-best) or its directory; albert-tf .keras "
        "file, TF2 checkpoint prefix (e.g. a run's ckpt-N) or its directory; Hugging Face directory with "
        "config.json and model.safetensors or pytorch_model.bin; keras-hub preset folder (save_to_preset: an "
        "AlbertBackbone, or an AlbertTextClassifier with its head) or keras-hub handle (albert_base_en_uncased, "
        "kaggle://...: needs keras-hub); or a pretrained preset name (albert_base_v2, ...: "
        "fetched and cached; it supplies --input_format, --albert_config_file and the tokenizer).",
        flag_values=fv,
    )
    flags.DEFINE_enum("input_format", None, formats, "Format of --input (a preset's is known).",
                      flag_values=fv)
    flags.DEFINE_string(
        "output",
        None,
        "Where to write: official TF1 prefix; albert-tf path ending in .keras / .weights.h5 or a TF2 "
        "checkpoint prefix; Hugging Face output directory; keras-hub preset folder (an AlbertBackbone, or an "
        "AlbertTextClassifier for a classifier head, with an AlbertTokenizer; needs keras-hub). albert_config.json "
        "is written beside official and albert-tf outputs.",
        flag_values=fv,
    )
    flags.DEFINE_enum("output_format", None, formats, "Format of --output.", flag_values=fv)
    flags.DEFINE_bool(
        "allow_partial",
        False,
        "Write the output even when some model variables were missing from the input or had another shape "
        "(they keep their random initial values).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "spm_model_file",
        None,
        "Hugging Face or keras-hub output only: the model's SentencePiece model (e.g. 30k-clean.model). Hugging "
        "Face: written as spiece.model with tokenizer.json, tokenizer_config.json and special_tokens_map.json so "
        "that transformers' AutoTokenizer and keras-hub's AlbertTokenizer.from_preset load it; keras-hub: an "
        "AlbertTokenizer whose model does the official preprocessing (--do_lower_case, accents, '1,' pieces), so "
        "that its ids are albert-tf's. Default: the one *.model file beside --input (else the "
        "one *vocab*.txt, as --vocab_file); '' writes no tokenizer.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "vocab_file",
        None,
        "Hugging Face output only: a WordPiece vocab.txt (Chinese ALBERT models) instead of --spm_model_file; written "
        "as vocab.txt with a BertTokenizer tokenizer_config.json.",
        flag_values=fv,
    )
    flags.DEFINE_bool(
        "do_lower_case",
        True,
        "Hugging Face or keras-hub output with a tokenizer: whether the model lower-cases its input (True for the "
        "released English and Chinese ALBERT models).",
        flag_values=fv,
    )
    flags.DEFINE_bool(
        "overwrite",
        False,
        "Allow a weights-only TF2 checkpoint output (--output_format=albert_tf, no .keras) to replace a training "
        "run's checkpoint with optimizer state, or to become the latest checkpoint of a run's folder. An output that "
        "would write onto --input is refused even so.",
        flag_values=fv,
    )
    flags.DEFINE_integer("global_step", 0, "global_step stored in an official TF1 output.", flag_values=fv)
    flags.DEFINE_bool(
        "module_prefix", False, "Write official TF1 names under the TF-Hub 'module/' prefix.", flag_values=fv
    )


COMMANDS = ("convert",)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: absl parses the flags (``--help`` included), then the command runs."""
    from albert_tf.cli import app as cli_app

    define_flags(FLAGS)
    cli_app.run(lambda args: _run(args, FLAGS), __doc__, argv=argv, max_args=1)


def run_cli(argv: list[str]) -> int:
    """Run the CLI on ``argv`` (program name first) with private flags; returns the exit code.

    For programmatic use and tests: nothing touches the process-wide ``absl.flags.FLAGS``.
    """
    fv = flags.FlagValues()
    define_flags(fv)
    try:
        rest = fv(argv)
    except flags.Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return _run(rest, fv)


def _check_files(fv: flags.FlagValues) -> None:
    """What can be checked before TensorFlow starts (seconds, for a converter that loads it anyway): the config file
    parses, and a checkpoint input (a prefix, a folder or a file) is there."""
    import glob
    import os

    from albert_tf.checkpoints.report import CheckpointError
    from albert_tf.config import AlbertConfig

    if fv.albert_config_file:
        AlbertConfig.load(fv.albert_config_file)
    path = fv.input
    if "://" in path or fv.input_format in ("huggingface", "keras_hub"):
        return
    if not (os.path.exists(path) or os.path.exists(path + ".index") or glob.glob(glob.escape(path) + ".data-*")):
        raise CheckpointError(f"{path}: checkpoint not found, {os.path.basename(path)}.index does not exist beside it")


def _run(argv: list[str], fv: flags.FlagValues) -> int:
    from albert_tf import interrupts
    from albert_tf.checkpoints.convert import convert
    from albert_tf.checkpoints.report import CheckpointError
    from albert_tf.cli.flags import apply_preset_flag
    from albert_tf.config import ConfigError
    from albert_tf.tasks.registry import task_heads

    interrupts.advise(interrupts.AGAIN)

    args = argv[1:]
    if args != ["convert"]:
        usage = "convert --input ... --input_format ... --output ... --output_format ..."
        print(f"usage: {argv[0]} {usage}", file=sys.stderr)
        print(f"error: expected the command 'convert', got {' '.join(args) or 'nothing'}", file=sys.stderr)
        return 2
    try:
        found = apply_preset_flag(fv, "input")  # a pretrained preset name: fetched; its format, config, tokenizer
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if found is not None and not fv["input_format"].present:
        fv.input_format = "official" if found.format == "hub_module" else found.format
    for name in ("input", "input_format", "output", "output_format"):
        if getattr(fv, name) in (None, ""):
            print(f"error: --{name} is required", file=sys.stderr)
            return 2
    try:
        _check_files(fv)
        convert(
            fv.input,
            fv.input_format,
            fv.output,
            fv.output_format,
            fv.albert_config_file,
            allow_partial=fv.allow_partial,
            global_step=fv.global_step,
            heads=task_heads(),  # the converter starts from files, not from a task's model
            module_prefix=fv.module_prefix,
            spm_model_file=fv.spm_model_file,
            vocab_file=fv.vocab_file,
            do_lower_case=fv.do_lower_case,
            overwrite=fv.overwrite,
            warn=lambda line: print(line, file=sys.stderr),
        )
    except (CheckpointError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    main()
