"""The trainer's own checkpoint layout: model weights keyed by Keras variable path, and the best copy.

The trainer saves model weights as a flat, name-keyed dict (``model_weights/<variable path>``), next to
the optimizer, the global step and the input iterator. Keying by the Keras variable path (not by the
object graph) makes initialising a *different* model (a classifier from a pretrainer) a plain name
match, and lets us report loaded / missing / unused / shape-mismatched variables, as the official
``get_assignment_map_from_checkpoint`` did by TF1 name.

The best checkpoint of a run (by the task's key metric, the official ``model.ckpt-best``) is a copy
of the weights and the step in ``<output_dir>/best/ckpt-best``, in this same layout.
"""

from __future__ import annotations

import os
from typing import Any

from albert_tf import files as _fs
from albert_tf import interrupts
from albert_tf.checkpoints.paths import checkpoint_reader, damaged, list_variables, read_errors
from albert_tf.checkpoints.report import LoadReport

WEIGHTS_KEY = "model_weights"
BEST_DIR = "best"
BEST_PREFIX = "ckpt-best"
_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
_STEP_KEY = "global_step" + _SUFFIX


def is_rng_state(path: str) -> bool:
    """Keras seed-generator state: never loaded from another run's checkpoint."""
    return "seed_generator_state" in path


def model_weights(model: Any) -> dict[str, Any]:
    """``{variable path: tf variable}`` for every model variable, paths made unique."""
    import keras

    out: dict[str, Any] = {}
    for v in model.variables:
        key = v.path
        n = 1
        while key in out:
            key = f"{v.path}#{n}"
            n += 1
        out[key] = v.value if isinstance(v, keras.Variable) else v
    return out


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


def stored_weights(prefix: str) -> dict[str, str]:
    """``{Keras variable path: checkpoint key}`` of the trainer-layout weights in ``prefix`` (empty if none)."""
    head = WEIGHTS_KEY + "/"
    keys = list_variables(prefix)
    return {_unescape(k[len(head) : -len(_SUFFIX)]): k for k, _ in keys if k.startswith(head) and k.endswith(_SUFFIX)}


def is_trainer_checkpoint(prefix: str) -> bool:
    return bool(stored_weights(prefix))


def has_training_state(prefix: str) -> bool:
    """Whether ``prefix`` carries what a resumed run needs beside the weights: the optimizer's slots (a trainer's
    ``ckpt-N``), not only weights (a best copy, a converter output)."""
    return any(name.startswith("optimizer/") for name, _ in list_variables(prefix))


def load_weights_by_path(model: Any, prefix: str) -> LoadReport:
    """Assign every model variable whose Keras path is stored in ``prefix``; the report uses Keras paths."""
    reader = checkpoint_reader(prefix)
    shapes = reader.get_variable_to_shape_map()
    stored = {k: v for k, v in stored_weights(prefix).items() if not is_rng_state(k)}
    ours = {k: v for k, v in model_weights(model).items() if not is_rng_state(k)}
    report = LoadReport(source=prefix, encoder_prefixes=_encoder_prefixes(model))
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
    return report


def _encoder_prefixes(model: Any) -> tuple[str, ...]:
    """The top-level Keras path components of ``model.encoder``'s variables (each with its ``/``), so that a
    report in Keras paths can single out the encoder; every task model and the pretrainer hold one."""
    encoder = getattr(model, "encoder", None)
    if encoder is None:
        return ()
    return tuple(sorted({v.path.split("/")[0] + "/" for v in encoder.variables}))


def write_weights(model: Any, prefix: str, step: int | None = None) -> str:
    """The model's weights (and ``global_step``) in the trainer layout at ``prefix``; returns the prefix."""
    import tensorflow as tf

    items: dict = {WEIGHTS_KEY: model_weights(model)}
    if step is not None:
        items["global_step"] = tf.Variable(int(step), dtype=tf.int64)
    return tf.train.Checkpoint(**items).write(prefix)


def restore_weights(model: Any, prefix: str) -> None:
    """Read the model weights of a trainer checkpoint (or a best copy) into ``model`` (same model class)."""
    import tensorflow as tf

    try:
        tf.train.Checkpoint(**{WEIGHTS_KEY: model_weights(model)}).read(prefix).expect_partial()
    except read_errors() as e:
        raise damaged(prefix, e) from None


def checkpoint_step(prefix: str) -> int:
    """The ``global_step`` stored in a trainer checkpoint or best copy (0 when it has none)."""
    reader = checkpoint_reader(prefix)
    return int(reader.get_tensor(_STEP_KEY)) if reader.has_tensor(_STEP_KEY) else 0


def best_prefix(results_dir: str) -> str:
    return os.path.join(results_dir, BEST_DIR, BEST_PREFIX)


def has_best(results_dir: str) -> bool:
    return _fs.exists(best_prefix(results_dir) + ".index")


def save_best(model: Any, results_dir: str, step: int) -> str:
    """Copy the current weights and their step to ``<results_dir>/best/ckpt-best`` (no optimizer state).

    Written under a temporary prefix and renamed, so a kill leaves the previous best copy intact; Ctrl-C waits
    for the renames (a best copy of mixed steps would otherwise be possible).
    """
    final = best_prefix(results_dir)
    with interrupts.deferred():
        tmp = write_weights(model, final + "-tmp", step)
        # data shards first, the index last: the index is what makes the prefix exist
        for name in sorted(_fs.match(tmp + ".*"), key=lambda n: n.endswith(".index")):
            _fs.replace(name, final + name[len(tmp) :])
    return final
