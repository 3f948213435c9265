"""Which checkpoint format a path holds: the one format detector of every loader and runner."""

from __future__ import annotations

import os

from albert_tf import files as _fs
from albert_tf.checkpoints import keras_hub, official
from albert_tf.checkpoints.paths import what_folder_holds
from albert_tf.checkpoints.report import CheckpointError, NotAlbertCheckpointError

FORMATS = ("official", "albert_tf", "huggingface", "keras_hub")
_HUGGINGFACE_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def detect_format(path: str) -> str:
    """``official``, ``albert_tf`` (TF2 object checkpoint, ``.keras`` or ``.weights.h5``), ``huggingface`` or
    ``keras_hub`` (a preset folder, or one of keras-hub's own handles).

    Raises :class:`CheckpointError` for a missing path and :class:`NotAlbertCheckpointError`
    for a TF checkpoint in another layout (brightmart albert_zh, BERT, ...).
    """
    return detect(path)[0]


def detect(path: str | official.OpenCheckpoint) -> tuple[str, official.OpenCheckpoint | None]:
    """:func:`detect_format` and, for a TF checkpoint, the checkpoint it opened to tell (resolved and opened once,
    for the loader to read through; an opened checkpoint is told from its listing)."""
    if not isinstance(path, official.OpenCheckpoint):
        path = os.fspath(path)
        if keras_hub.is_keras_hub(path):
            return "keras_hub", None
        if _fs.isdir(path) and _fs.exists(os.path.join(path, "config.json")):
            if _is_huggingface_folder(path):
                return "huggingface", None
            raise CheckpointError(f"{path}: {what_folder_holds(path)}; its config.json is neither a Hugging Face "
                                  "config (model_type) nor a keras-hub one (module)")
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


def _is_huggingface_folder(path: str) -> bool:
    """A folder with transformers' weights, or whose ``config.json`` has transformers' ``model_type`` (read there,
    so that a Hugging Face folder without weights is told so by the Hugging Face reader)."""
    import json

    if any(_fs.exists(os.path.join(path, name)) for name in _HUGGINGFACE_WEIGHTS):
        return True
    try:
        data = json.loads(_fs.read_text(os.path.join(path, "config.json")))
    except (ValueError, UnicodeDecodeError):
        return True  # the Hugging Face reader names the broken JSON
    return isinstance(data, dict) and "model_type" in data
