"""Convert between official TF1 checkpoints, albert-tf (``.keras`` / TF2), Hugging Face and keras-hub presets.

Pipeline: read the input as ``{official name: array}`` (or, for albert-tf, the model it
holds), check it against the ALBERT config before anything is built, load it into an
albert-tf model (``AlbertPretrainer`` when the MLM and SOP heads are present, else
``AlbertEncoder``) and print the load report, then write the output format from that model.
A fine-tuning head held whole (``output_weights``, ``cls/squad/*``, SQuAD v2's) makes that model the task model
(:func:`read_input`), so every output format that has a class for the head holds it: official names, albert-tf,
Hugging Face (the SQuAD v2 head has none), keras-hub (``AlbertTextClassifier`` only). Head arrays no model holds are
carried unchanged to an official output. What an output cannot hold is refused unless ``encoder_only``
(:func:`not_written`).

A Hugging Face or keras-hub output also gets the model's tokenizer (:func:`find_tokenizer`): the given
SentencePiece ``.model`` / WordPiece vocab file (keras-hub: SentencePiece only), else the one found beside the input
checkpoint or in the keras-hub preset.
With none, the weights are still written and a warning says that no tokenizer was.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from albert_tf import files as _fs
from albert_tf.checkpoints import huggingface, keras_hub, native, official, trainer_layout
from albert_tf.checkpoints.formats import FORMATS
from albert_tf.checkpoints.heads import TaskHead, head_rows, heads_of, official_head_names
from albert_tf.checkpoints.huggingface_config import label_names
from albert_tf.checkpoints.huggingface_names import official_to_huggingface_name
from albert_tf.checkpoints.paths import checkpoint_paths, list_run_checkpoints
from albert_tf.checkpoints.report import (
    CheckpointError,
    LoadReport,
    NotAlbertCheckpointError,
    assign_official_arrays,
    model_official_arrays,
    official_slots,
)
from albert_tf.checkpoints.run_meta import find_in_run, run_folders

CONFIG_NAME = "albert_config.json"
#: The output formats that get the model's tokenizer, and how messages name each format's task classes.
TOKENIZER_OUTPUTS = ("huggingface", "keras_hub")
OUTPUT_NAMES = {"huggingface": "Hugging Face", "keras_hub": "keras-hub", "official": "official TF1"}
_PRETRAINING_HEADS = official.PRETRAINING_HEAD_NAMES


@dataclasses.dataclass
class ConversionResult:
    """What :func:`convert` did: the load report, the files written, the heads carried or dropped, warnings."""

    report: LoadReport
    outputs: list[str]
    carried: list[str]
    dropped: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)


# Tokenizer files looked for beside an input checkpoint, in this order: the official English tarballs hold
# 30k-clean.model next to model.ckpt-best, a Hugging Face directory its spiece.model (or a WordPiece vocab.txt),
# the Chinese tarballs a WordPiece vocab_chinese.txt.
TOKENIZER_PATTERNS = (("spm_model_file", "*.model"), ("vocab_file", "*vocab*.txt"))
_NO_TOKENIZER = (
    "transformers would silently build a 5-token tokenizer from the directory and keras-hub refuses it; "
    "pass --spm_model_file=<the model's SentencePiece .model> (or --vocab_file=<WordPiece vocab.txt>)"
)


def find_tokenizer(
    input_path: str, spm_model_file: str | None = None, vocab_file: str | None = None
) -> tuple[dict[str, str], str]:
    """The tokenizer for a Hugging Face output: ``({"spm_model_file" or "vocab_file": path[, "do_lower_case": the
    run's]} or {}, message)``.

    An explicit file wins (an empty string means "none"); else the file the checkpoint's fine-tuning run
    recorded in its ``run.json`` (``checkpoints.run_meta.find_run_meta``), with the run's ``do_lower_case``, where
    it still exists with the recorded content; else the single ``*.model`` beside the checkpoint, else the
    single ``*vocab*.txt``.
    ``message`` says where the tokenizer came from or, with ``{}``, why none will be written (a
    warning). A given file that does not exist raises :class:`CheckpointError`.
    """

    if spm_model_file and vocab_file:
        raise CheckpointError("give --spm_model_file (SentencePiece) or --vocab_file (WordPiece), not both")
    for key, given in (("spm_model_file", spm_model_file), ("vocab_file", vocab_file)):
        if given:
            if not _fs.exists(given):
                raise CheckpointError(f"--{key} {given}: file not found")
            return {key: given}, f"tokenizer: --{key} {given}"
    if spm_model_file == "" or vocab_file == "":
        return {}, f"no tokenizer written (empty --spm_model_file / --vocab_file): {_NO_TOKENIZER}"
    recorded, note = _run_tokenizer(input_path)
    if recorded:
        return recorded, note
    path = os.fspath(input_path)
    if keras_hub.is_keras_hub(path):
        found = keras_hub.tokenizer_file(path)
        if found:
            return {"spm_model_file": found}, f"tokenizer: {found} (the keras-hub preset's)"
    folder = path if _fs.isdir(path) else (os.path.dirname(path) or ".")
    for key, pattern in TOKENIZER_PATTERNS:
        found = sorted(_fs.match(os.path.join(folder, pattern)))
        if len(found) == 1:
            return {key: found[0]}, f"tokenizer: {found[0]} (found beside the input checkpoint)"
        if len(found) > 1:
            names = ", ".join(os.path.basename(f) for f in found)
            return {}, f"no tokenizer written: several {pattern} beside the input checkpoint ({names}); {_NO_TOKENIZER}"
    return {}, f"no tokenizer written: none given{note} and no *.model or *vocab*.txt in {folder}; {_NO_TOKENIZER}"


def _run_tokenizer(input_path: str) -> tuple[dict[str, str], str]:
    """``({flag: file}, message)`` from the ``run.json`` of the run that wrote ``input_path``, or ``({}, why not)``
    (``""`` where there is no record; a recorded file that is gone or changed is named, and not used)."""
    import hashlib

    from albert_tf.checkpoints.run_meta import find_run_meta

    found = find_run_meta(input_path)
    record = (found[1].get("tokenizer") or {}) if found else {}
    flag, file = record.get("flag"), record.get("file")
    if flag not in ("spm_model_file", "vocab_file") or not file:
        return {}, ""
    if not _fs.exists(file):
        return {}, f", the run's {file} ({found[0]}) is gone,"
    if hashlib.sha256(_fs.read_bytes(file)).hexdigest() != record.get("sha256"):
        return {}, f", the run's {file} ({found[0]}) has changed since the run,"
    lower = bool(record.get("do_lower_case", True))
    return {flag: file, "do_lower_case": lower}, f"tokenizer: {file}, do_lower_case={lower} (recorded in {found[0]})"


def find_config(input_path: str, input_format: str, albert_config_file: str | None) -> Any:
    """The ALBERT config: the given file, else ``albert_config.json`` beside the checkpoint or, for a run's best
    copy, in the run's folder (:func:`albert_tf.checkpoints.run_meta.run_folders`).

    A Hugging Face input without ``--albert_config_file`` uses its ``config.json``, a keras-hub preset its
    backbone's config. Returns
    None for a ``.keras`` input (the file holds its config).
    """
    from albert_tf.config import AlbertConfig

    if albert_config_file:
        return AlbertConfig.from_json_file(albert_config_file)
    if input_format == "keras_hub":
        return keras_hub.find_config(input_path)
    path = os.fspath(input_path)
    if input_format == "albert_tf" and path.endswith(".keras"):
        return None
    checkpoint = path if _fs.is_remote(path) else os.path.abspath(path)
    found = find_in_run(checkpoint, CONFIG_NAME)
    if found is not None:
        return AlbertConfig.from_json_file(found)
    if input_format == "huggingface":
        return huggingface.albert_config_from_huggingface(huggingface.read_huggingface_config(path))
    looked = ", ".join(run_folders(checkpoint))
    raise CheckpointError(
        f"{path}: no --albert_config_file given and no {CONFIG_NAME} beside the checkpoint or in its run's "
        f"folder (looked in {looked})"
    )


def identify_head(names: set[str], heads: Sequence[TaskHead], *, architecture: str | None = None,
                  keras_hub_task: str | None = None) -> TaskHead | None:
    """The head whose weights are all among ``names`` and that a task model can be rebuilt with: the one of the
    given transformers ``architecture`` or keras-hub task class, else one that may be guessed from the names alone
    (a tagging head has a classifier's names: only its model or the input's architecture names it)."""
    fits = [h for h in heads if h.model and h.official_names and set(h.official_names) <= names]
    if architecture:
        return next((h for h in fits if h.huggingface_architecture == architecture), None)
    if keras_hub_task:
        return next((h for h in fits if h.keras_hub_task == keras_hub_task), None)
    return next((h for h in fits if h.guessed_from_arrays), None)


def _model_for(arrays: dict[str, np.ndarray], config: Any, head: TaskHead | None,
               labels: Sequence[str] | None = None) -> Any:
    """The model to load ``arrays`` into: the pretrainer where the MLM and SOP heads are there, the task model of
    ``head`` (:meth:`TaskHead.model`'s ``for_head``, with the input's label names where it has them), else the
    encoder."""
    from albert_tf.modeling import AlbertEncoder, AlbertPretrainer

    if all(name in arrays for name in _PRETRAINING_HEADS):
        return AlbertPretrainer(config)
    if head is not None:
        return native.model_class(head.model).for_head(config, head, head_rows(head, arrays), labels=labels)
    return AlbertEncoder(config)


def _described_model(path: str, arrays: Mapping[str, np.ndarray], config: Any, heads: Sequence[TaskHead]) -> Any:
    """The model of the ``model.json`` an albert-tf conversion wrote beside an official checkpoint, where the arrays
    fill it exactly (every variable, no head left over): what tells a RACE head from a regression head, which
    have the same official names. None otherwise."""
    found = find_in_run(path, native.MODEL_FILE)
    if found is None:
        return None
    try:
        model = native.model_from_file(found)
        huggingface.check_configs_agree(config, official.effective_config(model), path)
    except CheckpointError:  # a class not built here, or written for another model than the checkpoint now beside it
        return None
    report = assign_official_arrays(model, arrays)
    left = set(report.unused) & (official_head_names(heads) | set(_PRETRAINING_HEADS))
    return None if report.missing or report.shape_mismatches or left else model


def _check_input_exists(path: str, input_format: str) -> None:
    if input_format == "keras_hub":
        if not keras_hub.is_keras_hub(path):
            raise CheckpointError(f"{path}: not a keras-hub preset (a folder whose config.json names a keras-hub "
                                  "class, or a keras-hub handle)")
        return
    if input_format == "huggingface":
        if not _fs.isdir(path):
            raise CheckpointError(f"{path}: Hugging Face input must be a directory with config.json")
        return
    if path.endswith((".keras", ".weights.h5")) or _fs.isdir(path):
        if not _fs.exists(path):
            raise CheckpointError(f"{path}: file not found")
        return
    official.resolve_checkpoint_path(path)


def read_input(
    path: str, input_format: str, config: Any, heads: Sequence[TaskHead] = ()
) -> tuple[Any, LoadReport, dict[str, np.ndarray]]:
    """``(model, report, carried arrays)`` for an input checkpoint; refuses bad inputs early.

    The model holds what the input holds: a task model where the input has one of ``heads`` whole (an albert-tf
    run's or conversion's model, the transformers architecture of a Hugging Face folder, the keras-hub task of a
    preset, or a head guessed from official names), so the report counts the head's variables; the pretrainer
    where it has the MLM and SOP heads; else the encoder. Head arrays no model took (part of a head, a head beside
    the pretraining heads) are carried as arrays; an albert-tf checkpoint's unplaced variables are reported unused.
    """
    if input_format not in FORMATS:
        raise CheckpointError(f"--input_format {input_format!r} is not one of {', '.join(FORMATS)}")
    _check_input_exists(path, input_format)
    if input_format == "albert_tf":
        model, unplaced = native.read_native(path, config)
        if config is not None and getattr(model, "config", None) is not None:
            huggingface.check_configs_agree(config, model.config, path)
        arrays = model_official_arrays(model)
        return model, LoadReport(source=path, loaded=sorted(arrays), unused=unplaced), {}
    hint: dict[str, str | None] = {}
    labels = None
    if input_format == "official":
        arrays, ignored, source = official.read_official_checkpoint(path)
    elif input_format == "keras_hub":
        huggingface.check_configs_agree(config, keras_hub.find_config(path), path)
        arrays, unknown = keras_hub.read_keras_hub(path, heads)
        ignored, source = [], path
        hint["keras_hub_task"] = keras_hub.task_class(path)
    else:
        state, hf_config = huggingface.read_huggingface_dir(path)
        huggingface.check_configs_agree(config, huggingface.albert_config_from_huggingface(hf_config), path)
        arrays, ignored, unknown = huggingface.huggingface_to_official_arrays(state, source=path, heads=heads)
        source = path
        hint["architecture"] = next(iter(hf_config.get("architectures") or []), None)
        labels = label_names(hf_config)
    official.check_config_matches({n: a.shape for n, a in arrays.items()}, config, source=source)
    described = _described_model(path, arrays, config, heads) if input_format == "official" else None
    model = described or _model_for(arrays, config, identify_head(set(arrays), heads, **hint), labels)
    report = assign_official_arrays(model, arrays, source=source, ignored=ignored)
    if input_format in ("huggingface", "keras_hub"):
        report.unused.extend(unknown)
    carried = {n: arrays[n] for n in report.unused if n in official_head_names(heads)}
    return model, report, carried


def not_written(model: Any, carried: Mapping[str, np.ndarray], output_format: str,
                heads: Sequence[TaskHead] = ()) -> list[str]:
    """The official names of ``model`` and ``carried`` that an ``output_format`` output cannot hold: a head
    transformers or keras-hub has no class for, the pretraining heads in keras-hub, carried arrays no albert-tf
    model holds."""
    own = heads_of(model)
    head = own[0] if own else None
    names = [*official_slots(model), *carried]
    if output_format == "official":
        return []
    if output_format == "albert_tf":
        return sorted(carried)
    if output_format == "keras_hub":
        return sorted(n for n in names if not keras_hub.writable(n, head))
    lost = [n for n in carried if official_to_huggingface_name(n, heads) is None]
    if head is not None and head.huggingface_architecture is None:
        lost += list(head.official_names)
    return sorted(lost)


def write_output(
    model: Any,
    carried: dict[str, np.ndarray],
    path: str,
    output_format: str,
    config: Any,
    global_step: int = 0,
    module_prefix: bool = False,
    tokenizer: dict[str, Any] | None = None,
    heads: Sequence[TaskHead] = (),
) -> list[str]:
    """Write ``model`` (a task model with its head) plus carried arrays (named by ``heads``) as ``output_format``;
    returns the files/prefix written. What the format cannot hold (:func:`not_written`) is left out.

    ``tokenizer`` (``spm_model_file`` or ``vocab_file``, and ``do_lower_case``) goes into a Hugging
    Face or keras-hub output only.
    """
    config = config if config is not None else model.config
    layout_config = official.effective_config(model, config)  # sharing='none' is stored as G = L
    own = heads_of(model)
    head = own[0] if own else None
    left_out = set(not_written(model, carried, output_format, heads))
    arrays = {n: v for n, v in {**model_official_arrays(model), **carried}.items() if n not in left_out}
    if output_format == "official":
        prefix = official.write_official_arrays(arrays, path, global_step, module_prefix=module_prefix)
        config_path = os.path.join(os.path.dirname(prefix), CONFIG_NAME)
        layout_config.to_json_file(config_path)
        if not carried:  # the task model, so that reading it back tells heads of the same names apart
            return [prefix, config_path, native.write_model_file(model, os.path.dirname(prefix))]
        return [prefix, config_path]
    if output_format == "huggingface":
        architecture = head.huggingface_architecture if head is not None and not left_out & set(
            head.official_names) else None
        labels = getattr(model, "labels", None) if architecture else None
        return huggingface.save_huggingface_arrays(arrays, layout_config, path, heads=heads, architecture=architecture,
                                                   labels=labels, **(tokenizer or {}))
    if output_format == "keras_hub":
        options = {k: v for k, v in (tokenizer or {}).items() if k in ("spm_model_file", "do_lower_case")}
        written_head = head if head is not None and head.keras_hub_task else None
        return keras_hub.save_keras_hub_arrays(arrays, layout_config, path, head=written_head, **options)
    if output_format == "albert_tf":
        written = native.save_native(model, path)
        folder = os.path.dirname(written if _fs.is_remote(written) else os.path.abspath(written))
        config_path = os.path.join(folder, CONFIG_NAME)
        config.to_json_file(config_path)
        return [written, config_path]
    raise CheckpointError(f"--output_format {output_format!r} is not one of {', '.join(FORMATS)}")


def _refuse_writing_onto_input(input_path: str, output_path: str, output_format: str, overwrite: bool) -> None:
    hit = _fs.written_input(checkpoint_paths(input_path), [output_path])
    if hit is not None:
        raise CheckpointError(f"--output {output_path} would write onto the input {hit[0]}; choose another --output")
    if output_format != "albert_tf" or output_path.endswith((".keras", ".weights.h5")) or overwrite:
        return
    # A TF2 prefix output also becomes its folder's latest checkpoint (the state file): what a run there resumes.
    run_checkpoints = [prefix for _, prefix in list_run_checkpoints(os.path.dirname(output_path) or ".")]
    for prefix in (output_path, *run_checkpoints[-1:]):
        if prefix and _fs.exists(prefix + ".index") and trainer_layout.has_training_state(prefix):
            raise CheckpointError(
                f"--output {output_path}: {prefix} is a training run's checkpoint (optimizer state) that a "
                "weights-only output would replace as the run's latest; choose another folder, or pass --overwrite"
            )


def _write_output_staged(model: Any, carried: dict[str, np.ndarray], path: str, *args: Any, **kwargs: Any) -> list[str]:
    """:func:`write_output` into a hidden folder beside ``path``, then each file renamed into place
    (:func:`albert_tf.files.publish_staged`): an error or Ctrl-C while writing leaves no partial output."""
    path = path.rstrip("/")
    parent = os.path.dirname(path) or "."
    stage = os.path.join(parent, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    _fs.rmtree(stage)
    try:
        written = write_output(model, carried, os.path.join(stage, os.path.basename(path)), *args, **kwargs)
        _fs.publish_staged(stage, parent)
    finally:
        _fs.rmtree(stage)
    moved = {stage: parent}
    if not _fs.is_remote(stage):
        moved[os.path.abspath(stage)] = os.path.abspath(parent)
    return [next((moved[s] + w[len(s):] for s in moved if w.startswith(s)), w) for w in written]


def convert(
    input_path: str,
    input_format: str,
    output_path: str,
    output_format: str,
    albert_config_file: str | None = None,
    *,
    allow_partial: bool = False,
    encoder_only: bool = False,
    global_step: int = 0,
    module_prefix: bool = False,
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    overwrite: bool = False,
    heads: Sequence[TaskHead] = (),
    log: Callable[[str], Any] = print,
    warn: Callable[[str], Any] | None = None,
) -> ConversionResult:
    """Convert one checkpoint; prints the load report through ``log`` and warnings through ``warn`` (default ``log``).

    ``heads``: the fine-tuning heads a checkpoint may hold (every task's:
    ``albert_tf.tasks.registry.task_heads()``, as ``albert_convert_checkpoint`` passes); a head's weights not named
    there are reported as unused. The output holds the input's head in every format that can (:func:`read_input`
    rebuilds the task model); where the output format cannot hold a head (:func:`not_written`), the conversion is
    refused unless ``encoder_only``, which writes the encoder alone and lists what it left out.

    Refuses (``CheckpointError`` with a one-line message) missing inputs, non-ALBERT
    checkpoints, config mismatches and, unless ``allow_partial``, loads that left model
    variables missing or mis-shaped (the report is printed before refusing). A Hugging Face
    output gets the tokenizer of :func:`find_tokenizer` (``do_lower_case`` as the model was
    trained: True for the released English models), or a warning that it has none. An output that would write
    onto the input is refused; so is a weights-only checkpoint in place of a training run's latest checkpoint
    (optimizer state), unless ``overwrite``.
    """
    warn = warn or log
    for flag, value in (("--input_format", input_format), ("--output_format", output_format)):
        if value not in FORMATS:
            raise CheckpointError(f"{flag} {value!r} is not one of {', '.join(FORMATS)}")
    if output_format not in TOKENIZER_OUTPUTS and (spm_model_file or vocab_file):
        raise CheckpointError("--spm_model_file / --vocab_file go into a Hugging Face or keras-hub output only "
                              "(--output_format)")
    if output_format == "keras_hub" and vocab_file:
        raise CheckpointError("--vocab_file: keras-hub's AlbertTokenizer is SentencePiece only (--spm_model_file)")
    if output_format == "huggingface":
        huggingface.require_safetensors(output_path)
    if output_format == "keras_hub" or input_format == "keras_hub":
        keras_hub.require_keras_hub()
    _check_input_exists(input_path, input_format)
    _refuse_writing_onto_input(input_path, output_path, output_format, overwrite)
    tokenizer: dict[str, Any] = {}
    tokenizer_message = ""
    if output_format in TOKENIZER_OUTPUTS:
        tokenizer, tokenizer_message = find_tokenizer(input_path, spm_model_file, vocab_file)
        if output_format == "keras_hub" and "vocab_file" in tokenizer:
            tokenizer, tokenizer_message = {}, (f"no tokenizer written: {tokenizer['vocab_file']} is WordPiece, and "
                                                "keras-hub's AlbertTokenizer is SentencePiece only")
    config = find_config(input_path, input_format, albert_config_file)
    heads = tuple(heads)
    model, report, carried = read_input(input_path, input_format, config, heads)
    log(report.summary())
    if carried:
        log(f"  carried through unchanged (task heads): {', '.join(sorted(carried))}")
    report.raise_if_empty()
    if not allow_partial and (report.missing or report.shape_mismatches):
        what = report.shape_mismatches[0][0] if report.shape_mismatches else report.missing[0]
        raise CheckpointError(
            f"{report.source}: partial load ({len(report.missing)} missing, {len(report.shape_mismatches)} "
            f"shape mismatches, first {what}); pass --allow_partial to write it anyway"
        )
    dropped = not_written(model, carried, output_format, heads)
    if input_format == "albert_tf":
        dropped += report.unused  # variables of the checkpoint no albert-tf model here holds (Keras paths)
    if dropped and not encoder_only:
        own = heads_of(model)
        what = (f"the {own[0].name} head has" if own and set(dropped) <= set(own[0].official_names)
                else f"{len(dropped)} head variables have")
        where = (f"no {OUTPUT_NAMES[output_format]} equivalent" if output_format in OUTPUT_NAMES
                 else "no place in an albert-tf model")
        raise CheckpointError(
            f"{report.source}: {what} {where} ({len(dropped)} variables, first {dropped[0]}); pass "
            "--encoder_only to write the encoder alone"
        )
    if encoder_only:
        encoder = getattr(model, "encoder", model)
        dropped = sorted({*official_slots(model), *carried, *dropped} - set(official_slots(encoder)))
        model, carried = encoder, {}
    if tokenizer:
        tokenizer.setdefault("do_lower_case", do_lower_case)  # a run's recorded tokenizer keeps its own setting
    outputs = _write_output_staged(
        model, carried, output_path, output_format, config, global_step, module_prefix, tokenizer=tokenizer,
        heads=heads,
    )
    if dropped:
        log(f"  left out (--encoder_only): {len(dropped)} head variables: {', '.join(dropped)}")
    warnings = []
    if tokenizer_message and tokenizer:
        log(tokenizer_message)
    elif tokenizer_message:
        warnings.append(f"warning: {tokenizer_message}")
    log(f"wrote {output_format}: {', '.join(outputs)}")
    for line in warnings:
        warn(line)
    return ConversionResult(report=report, outputs=outputs, carried=sorted(carried), dropped=dropped, warnings=warnings)


__all__ = [
    "FORMATS",
    "ConversionResult",
    "NotAlbertCheckpointError",
    "convert",
    "find_config",
    "find_tokenizer",
    "read_input",
]
