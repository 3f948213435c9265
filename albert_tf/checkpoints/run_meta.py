"""Which albert-tf run wrote a checkpoint: the ``run.json`` that ``training.run_dir`` writes into a run's
``--output_dir``, found from the checkpoint's path (for the tools that take a checkpoint: export, conversion)."""

from __future__ import annotations

import json
import os
from typing import Any

from albert_tf import files
from albert_tf.checkpoints.report import CheckpointError

RUN_META_FILE = "run.json"


def find_run_meta(checkpoint: str) -> tuple[str, dict[str, Any]] | None:
    """``(path, content)`` of the ``run.json`` of the run that wrote ``checkpoint`` (a directory or a checkpoint
    prefix), or None: it sits beside the checkpoint, or, for a run's best copy (``best/ckpt-best``), one or two
    directories up (the run's directory, or the results sub-directory's parent). Nothing further up is searched,
    so a checkpoint copied elsewhere is not mistaken for a run's. A ``run.json`` that is not JSON raises
    :class:`CheckpointError` naming it."""
    path = os.fspath(checkpoint).rstrip("/")
    # a prefix with its .index beside it is a prefix even where the file system calls it a directory (ram://)
    is_dir = files.isdir(path) and not files.exists(path + ".index")
    folder = path if is_dir else (os.path.dirname(path) or ".")
    candidates = [folder]
    if os.path.basename(folder) == "best":
        parent = os.path.dirname(folder) or "."
        candidates += [parent, os.path.dirname(parent) or "."]
    for directory in candidates:
        meta = os.path.join(directory, RUN_META_FILE)
        if files.exists(meta):
            try:
                return meta, json.loads(files.read_text(meta))
            except ValueError as e:
                raise CheckpointError(f"{meta}: not valid JSON ({e}); albert-tf runs write it") from None
    return None
