"""Checkpoint interop: official TF1 checkpoints, albert-tf (TF2 / .keras), Hugging Face, keras-hub presets.

Every format passes through the official TF1 variable names (official ``modeling.py`` scopes; ``names.py``), so one
report type (:class:`LoadReport`) describes any load. Runners call :func:`init_from_checkpoint`
(``--init_checkpoint``): it detects the format of ``path`` once and initialises a model from it
(initialising is not resuming: optimizer state and ``global_step`` are never read). The
trainer's own layout and best copy live in :mod:`trainer_layout`, path resolution in :mod:`paths`, the
``run.json`` of the run that wrote a checkpoint in :mod:`run_meta`.
"""

from __future__ import annotations

from typing import Any

from albert_tf.checkpoints.formats import FORMATS, detect, detect_format
from albert_tf.checkpoints.paths import list_run_checkpoints, resolve_checkpoint_path
from albert_tf.checkpoints.report import (
    CheckpointError,
    ConfigMismatchError,
    LoadReport,
    NotAlbertCheckpointError,
    assign_official_arrays,
    model_official_arrays,
)
from albert_tf.checkpoints.trainer_layout import (
    WEIGHTS_KEY,
    is_trainer_checkpoint,
    load_weights_by_path,
    model_weights,
)

__all__ = [
    "FORMATS",
    "CheckpointError",
    "CheckpointInitError",
    "ConfigMismatchError",
    "LoadReport",
    "NotAlbertCheckpointError",
    "WEIGHTS_KEY",
    "assign_official_arrays",
    "detect_format",
    "init_from_checkpoint",
    "list_run_checkpoints",
    "load_checkpoint",
    "model_official_arrays",
    "model_weights",
    "resolve_checkpoint_path",
    "restore_pretrained",
]

class CheckpointInitError(CheckpointError):
    """``--init_checkpoint`` does not fit the model (nothing matched, or shapes differ)."""


def load_checkpoint(model: Any, path: Any, input_format: str | None = None, config: Any | None = None) -> LoadReport:
    """Load ``path`` (format detected unless given) into ``model``; returns the report, raises nothing on gaps.
    ``path`` may be the :class:`~albert_tf.checkpoints.official.OpenCheckpoint` the detector opened."""
    from albert_tf.checkpoints import huggingface, keras_hub, native, official

    if input_format:
        opened = path if isinstance(path, official.OpenCheckpoint) else None
    else:
        input_format, opened = detect(path)
    if opened is not None:
        path = opened.prefix
    if input_format == "official":
        return official.load_official_checkpoint(model, opened or path, config)
    if input_format == "huggingface":
        return huggingface.load_huggingface(model, path)
    if input_format == "albert_tf":
        return native.load_native(model, path, config)
    if input_format == "keras_hub":
        return keras_hub.load_keras_hub(model, path)
    raise CheckpointError(f"unknown checkpoint format {input_format!r}; use one of {', '.join(FORMATS)}")


def restore_pretrained(
    model: Any,
    path: Any,
    *,
    input_format: str | None = None,
    config: Any | None = None,
    require_backbone: bool = True,
) -> LoadReport:
    """Initialise ``model`` (encoder, pretrainer or task model) from a pretrained checkpoint.

    ``path`` may be an official TF1 checkpoint prefix or directory (``module/`` prefix and
    optimizer slots allowed), an albert-tf TF2 checkpoint (``ckpt-N`` or its directory), a
    ``.keras`` / ``.weights.h5`` file, a Hugging Face directory, or a keras-hub preset folder or handle (the
    backbone, and an ``AlbertTextClassifier``'s head for a classifier). The checkpoint is checked
    against the model's config first (one-line :class:`ConfigMismatchError`). Raises
    :class:`CheckpointError` when nothing loaded, and with ``require_backbone`` when any
    backbone (``bert/...``) variable is missing or mis-shaped; head variables absent from the
    checkpoint (a new task head) or of another shape (another label count) are only reported.
    """
    report = load_checkpoint(model, path, input_format=input_format, config=config)
    report.raise_if_empty()
    if require_backbone:
        report.raise_if_backbone_incomplete()
    return report


def init_from_checkpoint(
    model: Any, path: str, *, init_from_group0: bool = False, allow_shape_mismatch: bool = False,
    encoder_only: bool = False, flag: str = "init_checkpoint",
) -> LoadReport:
    """``--init_checkpoint``: load the weights found at ``path`` into ``model``, print the report, fail loudly.

    The format is detected once (:func:`detect_format`). A checkpoint in the trainer's own layout
    is matched by Keras variable path (report in Keras paths); every other layout (official TF1,
    Hugging Face, ``.keras``, TF2 object checkpoints) by official name through
    :func:`restore_pretrained`. ``init_from_group0`` (official ``run_pretraining.py --init_from_group0``)
    initialises every group of a G > 1 model from the checkpoint's group 0. ``encoder_only`` loads
    ``model.encoder`` alone and leaves every other variable (the task or pretraining heads) at its initial value,
    whatever the checkpoint holds for it: fine-tuning from another task's fine-tuned model (the paper's MNLI-first
    recipe for RTE, MRPC and STS-B, section 4.9, after RoBERTa) or for another label count. Raises
    :class:`CheckpointInitError` when the checkpoint is missing, shapes differ, or nothing matched; its message
    names ``flag`` (the option the path came from).
    """
    from absl import logging

    initial_head = _head_values(model, flag) if encoder_only else None
    try:
        input_format, opened = detect(path)
        if init_from_group0:
            from albert_tf.checkpoints import group0

            report = group0.load_from_group0(model, path, input_format=input_format)
        elif input_format == "albert_tf" and not str(path).endswith((".keras", ".weights.h5")):
            prefix = opened.prefix if opened is not None else resolve_checkpoint_path(path)
            if is_trainer_checkpoint(prefix):
                report = load_weights_by_path(model, prefix)
            else:
                report = restore_pretrained(model, prefix, input_format=input_format, require_backbone=False)
        else:
            source = opened if input_format == "official" and opened is not None else path
            report = restore_pretrained(model, source, input_format=input_format, require_backbone=False)
    except CheckpointInitError:
        raise
    except CheckpointError as e:
        raise CheckpointInitError(f"{flag}: {e}") from None
    if initial_head is not None:
        for variable, value in initial_head:
            variable.assign(value)
        report.keep_encoder_only()
    logging.info("%s %s", flag, report.summary())
    if report.encoder_prefixes:
        logging.info("%s %s", flag, report.encoder_summary())
    _check_init(report, report.source or path, allow_shape_mismatch, flag)
    return report


def _head_values(model: Any, flag: str) -> list[tuple[Any, Any]]:
    """``(variable, initial value)`` for every variable of ``model`` outside ``model.encoder``, before a load."""
    encoder = getattr(model, "encoder", None)
    if encoder is None:
        raise CheckpointInitError(f"{flag}: encoder only needs a model with an encoder, not {type(model).__name__}")
    in_encoder = {id(v) for v in encoder.variables}
    return [(v, v.numpy()) for v in model.variables if id(v) not in in_encoder]


def _check_init(report: LoadReport, path: str, allow_shape_mismatch: bool, flag: str) -> None:
    if report.shape_mismatches and not allow_shape_mismatch:
        name, stored, wanted = report.shape_mismatches[0]
        if not any(n.startswith(report.encoder_prefixes) for n, _, _ in report.shape_mismatches):
            raise CheckpointInitError(  # the encoder fits: the task head is another task's or another label count
                f"{flag} {path}: its task head does not fit this model ({name}: checkpoint {list(stored)} vs model "
                f"{list(wanted)}): was it fine-tuned for another task (--task_name) or number of labels? "
                "(--init_encoder_only takes its encoder alone)"
            )
        raise CheckpointInitError(
            f"{flag} {path} does not fit this model ({len(report.shape_mismatches)} shape mismatches, e.g. "
            f"{name}: checkpoint {list(stored)} vs model {list(wanted)}): was it trained with another albert_config "
            "(model size)?"
        )
    if not report.loaded:
        raise CheckpointInitError(
            f"{flag} {path}: no variable matched this model ({report.summary(verbose=False)}); "
            "refusing to train from scratch silently"
        )
