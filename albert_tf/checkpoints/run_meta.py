"""Which albert-tf run wrote a checkpoint, and the files it keeps beside its checkpoints: the ``run.json`` that
``training.run_dir`` writes into a run's ``--output_dir``, its ``albert_config.json`` and ``model.json``, found from
the checkpoint's path (for the tools that take a checkpoint: export, conversion)."""

from __future__ import annotations

import json
import os
from typing import Any

from albert_tf import files
from albert_tf.checkpoints.report import CheckpointError

RUN_META_FILE = "run.json"


def run_folders(checkpoint: str) -> list[str]:
    """The folders of the run that wrote ``checkpoint`` (a directory or a checkpoint prefix), nearest first: the
    checkpoint's own folder and, for a run's best copy (``best/ckpt-best``), one and two folders up (the run's
    folder, or the results sub-directory's parent). Nothing further up, so that a checkpoint copied elsewhere is
    not mistaken for a run's."""
    path = os.fspath(checkpoint).rstrip("/")
    # a prefix with its .index beside it is a prefix even where the file system calls it a directory (ram://)
    is_dir = files.isdir(path) and not files.exists(path + ".index")
    folder = path if is_dir else (os.path.dirname(path) or ".")
    out = [folder]
    if os.path.basename(folder) == "best":
        parent = os.path.dirname(folder) or "."
        out += [parent, os.path.dirname(parent) or "."]
    return out


def find_in_run(checkpoint: str, name: str) -> str | None:
    """The file ``name`` of the run that wrote ``checkpoint`` (:func:`run_folders`, nearest first), or None."""
    for directory in run_folders(checkpoint):
        found = os.path.join(directory, name)
        if files.exists(found):
            return found
    return None


def find_run_meta(checkpoint: str) -> tuple[str, dict[str, Any]] | None:
    """``(path, content)`` of the ``run.json`` of the run that wrote ``checkpoint`` (:func:`find_in_run`), or None.
    A ``run.json`` that is not JSON raises :class:`CheckpointError` naming it."""
    meta = find_in_run(checkpoint, RUN_META_FILE)
    if meta is None:
        return None
    try:
        return meta, json.loads(files.read_text(meta))
    except ValueError as e:
        raise CheckpointError(f"{meta}: not valid JSON ({e}); albert-tf runs write it") from None
