"""Which checkpoint format a path holds: the one format detector of every loader and runner."""

from __future__ import annotations

import os

from albert_tf import files as _fs
from albert_tf.checkpoints import official
from albert_tf.checkpoints.report import CheckpointError, NotAlbertCheckpointError

FORMATS = ("official", "albert_tf", "huggingface")


def detect_format(path: str) -> str:
    """``official``, ``albert_tf`` (TF2 object checkpoint, ``.keras`` or ``.weights.h5``) or ``huggingface``.

    Raises :class:`CheckpointError` for a missing path and :class:`NotAlbertCheckpointError`
    for a TF checkpoint in another layout (brightmart albert_zh, BERT, ...).
    """
    return detect(path)[0]


def detect(path: str | official.OpenCheckpoint) -> tuple[str, official.OpenCheckpoint | None]:
    """:func:`detect_format` and, for a TF checkpoint, the checkpoint it opened to tell (resolved and opened once,
    for the loader to read through; an opened checkpoint is told from its listing)."""
    if not isinstance(path, official.OpenCheckpoint):
        path = os.fspath(path)
        if _fs.isdir(path) and _fs.exists(os.path.join(path, "config.json")):
            return "huggingface", None
        if path.endswith((".keras", ".weights.h5")):
            if not _fs.exists(path):
                raise CheckpointError(f"{path}: file not found")
            return "albert_tf", None
    opened = official.open_checkpoint(path)
    layout = official.detect_layout(opened.listing)
    if layout in ("official", "official_hub"):
        return "official", opened
    if layout == "tf2_object":
        return "albert_tf", opened
    raise NotAlbertCheckpointError(f"{opened.prefix}: {official.LAYOUT_MESSAGES[layout]}")
