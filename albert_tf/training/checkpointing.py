"""Checkpoint layout of the trainer, and initialisation from a pretrained checkpoint.

The trainer saves model weights as a flat, name-keyed dict (``model_weights/<variable path>``), next to
the optimizer, the global step and the input iterator. Keying by the Keras variable path (not by the
object graph) makes initialising a *different* model (a classifier from a pretrainer) a plain name
match, and lets us report loaded / missing / unused / shape-mismatched variables, as the official
``get_assignment_map_from_checkpoint`` did by TF1 name.

Initialising (``init_checkpoint``: weights only, step 0, fresh optimizer) is distinct from resuming (a
checkpoint of the run itself in ``output_dir``: everything restored); see ``Trainer``.
Official TF1 checkpoints (``bert/...`` names) are delegated to ``albert_tf.checkpoints``.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.report import LoadReport

WEIGHTS_KEY = "model_weights"
_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


class CheckpointInitError(ValueError):
    """init_checkpoint does not fit the model (nothing matched, or shapes differ)."""


def _is_rng_state(path: str) -> bool:
    return "seed_generator_state" in path


def model_weights(model: keras.Model) -> dict[str, tf.Variable]:
    """``{variable path: tf variable}`` for every model variable, paths made unique."""
    out: dict[str, tf.Variable] = {}
    for v in model.variables:
        key = v.path
        n = 1
        while key in out:
            key = f"{v.path}#{n}"
            n += 1
        out[key] = v.value if isinstance(v, keras.Variable) else v
    return out


def _escape(name: str) -> str:
    return name.replace(".", "..").replace("/", ".S")


def _unescape(name: str) -> str:
    out, i = [], 0
    while i < len(name):
        if name[i] == "." and i + 1 < len(name):
            out.append("/" if name[i + 1] == "S" else name[i + 1])
            i += 2
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


def resolve_checkpoint_path(path: str) -> str:
    """A checkpoint prefix from a prefix or a directory (its latest checkpoint)."""
    if tf.io.gfile.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise CheckpointInitError(f"init_checkpoint: no checkpoint found in directory {path}")
        return latest
    if not tf.io.gfile.exists(path + ".index"):
        raise CheckpointInitError(f"init_checkpoint: {path}.index does not exist")
    return path


def init_from_checkpoint(model: keras.Model, path: str, *, allow_shape_mismatch: bool = False) -> LoadReport:
    """Load the model weights found in ``path`` by name; print the report; fail loudly if nothing fits.

    Trainer checkpoints are matched by Keras variable path; Keras files, Hugging Face directories
    and official TF1 checkpoints go through ``albert_tf.checkpoints.restore_pretrained``.
    """
    if str(path).endswith((".keras", ".weights.h5")) or tf.io.gfile.exists(os.path.join(path, "config.json")):
        return _init_from_official(model, path, {})
    path = resolve_checkpoint_path(path)
    reader = tf.train.load_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
    ours = {k: v for k, v in model_weights(model).items() if not _is_rng_state(k)}
    prefix = WEIGHTS_KEY + "/"
    stored = {
        _unescape(k[len(prefix) : -len(_SUFFIX)]): k for k in shapes if k.startswith(prefix) and k.endswith(_SUFFIX)
    }
    if not stored:
        return _init_from_official(model, path, shapes)
    stored = {k: v for k, v in stored.items() if not _is_rng_state(k)}
    report = LoadReport(source=path)
    for name, var in ours.items():
        key = stored.get(name)
        if key is None:
            report.missing.append(name)
            continue
        if list(shapes[key]) != list(var.shape):
            report.shape_mismatches.append((name, tuple(shapes[key]), tuple(var.shape)))
            continue
        var.assign(reader.get_tensor(key).astype(var.dtype.as_numpy_dtype))
        report.loaded.append(name)
    report.unused = sorted(set(stored) - set(ours))
    logging.info("init_checkpoint %s", report.summary())
    _check(report, path, allow_shape_mismatch)
    return report


def _check(report: LoadReport, path: str, allow_shape_mismatch: bool) -> None:
    if report.shape_mismatches and not allow_shape_mismatch:
        name, stored, wanted = report.shape_mismatches[0]
        raise CheckpointInitError(
            f"init_checkpoint {path} does not fit this model ({len(report.shape_mismatches)} shape mismatches, e.g. "
            f"{name}: checkpoint {list(stored)} vs model {list(wanted)}): was it trained with another albert_config "
            "(model size)?"
        )
    if not report.loaded:
        raise CheckpointInitError(
            f"init_checkpoint {path}: no variable matched this model ({report.summary(verbose=False)}); "
            "refusing to train from scratch silently"
        )


def _init_from_official(model: keras.Model, path: str, shapes: dict) -> LoadReport:
    """Other layouts (official TF1 ``bert/...`` names, Hugging Face, keras files): ``albert_tf.checkpoints``."""
    from albert_tf.checkpoints import CheckpointError, restore_pretrained

    try:
        report = restore_pretrained(model, path, require_backbone=False)
    except CheckpointError as e:
        raise CheckpointInitError(f"init_checkpoint: {e}") from None
    logging.info("%s", report.summary())
    _check(report, path, allow_shape_mismatch=False)
    return report
