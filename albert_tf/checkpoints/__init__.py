"""Checkpoint interop: official TF1 checkpoints, albert-tf (TF2 / .keras), Hugging Face.

Every format passes through the official TF1 names of spec 1.4 (``names.py``), so one
report type (:class:`LoadReport`) describes any load. The entry point for runners is
:func:`restore_pretrained`, which detects the format of ``path`` and initialises a model
from it (initialising is not resuming: optimizer state and ``global_step`` are never read).
"""

from __future__ import annotations

import os
from typing import Any

from albert_tf.checkpoints.report import (
    CheckpointError,
    ConfigMismatchError,
    LoadReport,
    NotAlbertCheckpointError,
    assign_official_arrays,
    model_official_arrays,
)

FORMATS = ("official", "albert_tf", "huggingface")

__all__ = [
    "FORMATS",
    "CheckpointError",
    "ConfigMismatchError",
    "LoadReport",
    "NotAlbertCheckpointError",
    "assign_official_arrays",
    "detect_format",
    "load_checkpoint",
    "model_official_arrays",
    "restore_pretrained",
]


def detect_format(path: str) -> str:
    """``official``, ``albert_tf`` (TF2 object checkpoint, ``.keras`` or ``.weights.h5``) or ``huggingface``.

    Raises :class:`CheckpointError` for a missing path and :class:`NotAlbertCheckpointError`
    for a TF checkpoint in another layout (brightmart albert_zh, BERT, ...).
    """
    from albert_tf.checkpoints import official

    path = os.fspath(path)
    if os.path.isdir(path) and os.path.exists(os.path.join(path, "config.json")):
        return "huggingface"
    if path.endswith((".keras", ".weights.h5")):
        if not os.path.exists(path):
            raise CheckpointError(f"{path}: file not found")
        return "albert_tf"
    prefix = official.resolve_checkpoint_path(path)
    layout = official.detect_layout(official.list_checkpoint(prefix))
    if layout in ("official", "official_hub"):
        return "official"
    if layout == "tf2_object":
        return "albert_tf"
    raise NotAlbertCheckpointError(f"{prefix}: {official._LAYOUT_MESSAGES[layout]}")


def load_checkpoint(model: Any, path: str, input_format: str | None = None, config: Any | None = None) -> LoadReport:
    """Load ``path`` (format detected unless given) into ``model``; returns the report, raises nothing on gaps."""
    from albert_tf.checkpoints import huggingface, native, official

    input_format = input_format or detect_format(path)
    if input_format == "official":
        return official.load_official_checkpoint(model, path, config)
    if input_format == "huggingface":
        return huggingface.load_huggingface(model, path)
    if input_format == "albert_tf":
        return native.load_native(model, path, config)
    raise CheckpointError(f"unknown checkpoint format {input_format!r}; use one of {', '.join(FORMATS)}")


def restore_pretrained(
    model: Any,
    path: str,
    *,
    input_format: str | None = None,
    config: Any | None = None,
    require_backbone: bool = True,
) -> LoadReport:
    """Initialise ``model`` (encoder, pretrainer or task model) from a pretrained checkpoint.

    ``path`` may be an official TF1 checkpoint prefix or directory (``module/`` prefix and
    optimizer slots allowed), an albert-tf TF2 checkpoint (``ckpt-N`` or its directory), a
    ``.keras`` / ``.weights.h5`` file, or a Hugging Face directory. The checkpoint is checked
    against the model's config first (one-line :class:`ConfigMismatchError`). Raises
    :class:`CheckpointError` when nothing loaded, and with ``require_backbone`` when any
    backbone (``bert/...``) variable is missing or mis-shaped; head variables absent from the
    checkpoint (a new task head) or of another shape (another label count) are only reported.
    """
    report = load_checkpoint(model, path, input_format=input_format, config=config)
    report.raise_if_empty()
    if require_backbone:
        missing = [n for n in report.missing if n.startswith("bert/")]
        bad = [m for m in report.shape_mismatches if m[0].startswith("bert/")]
        if bad:
            name, a, b = bad[0]
            raise ConfigMismatchError(
                f"{report.source}: backbone variable {name} has shape {list(a)} in the checkpoint "
                f"but {list(b)} in the model (checkpoint and config disagree)"
            )
        if missing:
            raise CheckpointError(
                f"{report.source}: {len(missing)} backbone variable(s) not in the checkpoint, first {missing[0]}"
            )
    return report
