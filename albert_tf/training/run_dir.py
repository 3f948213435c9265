"""An output directory belongs to one job: ``run.json`` says which, and a foreign one is refused.

A run that trains writes ``run.json`` (the task's identity) into ``--output_dir``. A later run there
continues when the identity's ``task`` agrees; a different task may use the directory's model only where
the task allows it (its results then go to a sub-directory, e.g. MNLI-mismatched in an MNLI run).
A directory holding checkpoints without ``run.json`` (e.g. the pretrained model's own directory,
google-research/albert#224) is refused instead of being "resumed" with the wrong model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from albert_tf.checkpoints.paths import STATE_FILE, list_run_checkpoints
from albert_tf.training.run_config import RunError

META_FILE = "run.json"
LEGACY_META_FILES = ("run_classifier.json",)  # written by albert-tf 0.1 run_classifier runs


def write_text(path: str, text: str) -> None:
    """``text`` at ``path``, written to a temporary name and renamed when complete (a kill leaves no half file)."""
    tmp = path + ".tmp"
    with tf.io.gfile.GFile(tmp, "w") as f:
        f.write(text)
    tf.io.gfile.rename(tmp, path, overwrite=True)


def write_json(path: str, payload: Any) -> None:
    """``payload`` as indented JSON at ``path``, atomically."""
    write_text(path, json.dumps(payload, indent=1, sort_keys=True, default=str))


def read_json(path: str) -> Any:
    with tf.io.gfile.GFile(path, "r") as f:
        return json.loads(f.read())


def _holds_foreign_checkpoints(output_dir: str) -> bool:
    if not tf.io.gfile.isdir(output_dir):
        return False
    names = tf.io.gfile.listdir(output_dir)
    if STATE_FILE in names or any(n.startswith("model.ckpt") for n in names):
        return True
    return bool(list_run_checkpoints(output_dir))


def claim_output_dir(
    output_dir: str,
    identity: dict[str, Any],
    training: bool,
    results_subdir: Callable[[dict[str, Any], bool], str],
) -> str:
    """Check ``output_dir`` against ``identity``; return where results go (``output_dir`` or a sub-directory).

    ``results_subdir(previous, training)`` decides for a directory of another task (raise to refuse).
    """
    meta_path = os.path.join(output_dir, META_FILE)
    existing = [os.path.join(output_dir, n) for n in (META_FILE, *LEGACY_META_FILES)]
    existing = [p for p in existing if tf.io.gfile.exists(p)]
    if existing:
        previous = read_json(existing[0])
        if previous.get("task") != identity.get("task"):
            return os.path.join(output_dir, results_subdir(previous, training))
    elif _holds_foreign_checkpoints(output_dir):
        raise RunError(
            f"--output_dir {output_dir} already holds checkpoints that albert-tf did not write here (no {META_FILE}); "
            "resuming from them would restore the wrong model. If this is the pretrained model, pass it as "
            "--init_checkpoint and choose a new --output_dir (google-research/albert#224)"
        )
    if training:
        tf.io.gfile.makedirs(output_dir)
        write_json(meta_path, identity)
    return output_dir
