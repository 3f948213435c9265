"""albert-tf's own formats: ``.keras`` files, ``.weights.h5`` and TF2 checkpoints.

TF2 checkpoints are written in the trainer's layout (``model_weights/<Keras variable path>``,
``albert_tf.checkpoints.trainer_layout``), so a converted checkpoint is directly an
``--init_checkpoint`` for every runner. Reading also accepts plain object checkpoints
(``tf.train.Checkpoint(model=...)``), whose keys are positions in the Keras functional graph
(``model/_operations/1/...``) and so only restore into a model of the same class and config.

Either way the checkpoint is restored into a same-shaped *source* model (a clone of the
target, then an ``AlbertPretrainer``, then an ``AlbertEncoder``), accepted only if every
variable of that source was matched, and copied into the target by official name; so a
classifier can be initialised from a pretraining run with the usual report.
"""

from __future__ import annotations

import os
from typing import Any

from albert_tf import files as _fs
from albert_tf.checkpoints import trainer_layout
from albert_tf.checkpoints.paths import damaged, list_variables, resolve_checkpoint_path, write_checkpoint_state
from albert_tf.checkpoints.report import (
    CheckpointError,
    LoadReport,
    assign_official_arrays,
    model_official_arrays,
)

MODEL_KEY = "model"
TRAINER_KEY = trainer_layout.WEIGHTS_KEY
_SKIP_ROOTS = ("_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter")


def _candidate_models(model: Any, config: Any) -> list[Any]:
    from albert_tf.modeling import AlbertEncoder, AlbertPretrainer

    sharing = getattr(model, "sharing", "all")
    out = []
    try:
        out.append(type(model).from_config(model.get_config()))
    except Exception:  # noqa: BLE001 - a model class without a usable get_config is simply not a candidate
        pass
    for cls in (AlbertPretrainer, AlbertEncoder):
        if not out or type(out[0]) is not cls:
            out.append(cls(config, sharing=sharing))
    # Object-checkpoint keys are graph positions, and the pretrainer's graph depends on last_layer_subset
    # (same variables): a checkpoint written with the other setting (or before the option) needs the other graph.
    subset = getattr(out[0], "last_layer_subset", True) if isinstance(out[0], AlbertPretrainer) else True
    out.append(AlbertPretrainer(config, sharing=sharing, last_layer_subset=not subset))
    return out


def _roots(prefix: str) -> list[str]:

    roots = []
    for name, _ in list_variables(prefix):
        root = name.split("/", 1)[0]
        if root not in _SKIP_ROOTS and root not in roots and "/" in name:
            roots.append(root)
    return sorted(roots, key=lambda r: (r != MODEL_KEY, r))


def _restore_trainer_checkpoint(model: Any, prefix: str, config: Any) -> Any | None:
    """The trainer's layout (``model_weights/<Keras variable path>``): the candidate it fills exactly.

    A candidate must get every variable with the right shape; one that also leaves nothing of
    the checkpoint unused (the model that wrote it) is preferred, so unused heads get reported.
    """
    fallback = None
    for candidate in _candidate_models(model, config):
        report = trainer_layout.load_weights_by_path(candidate, prefix)
        if not report.loaded or report.missing or report.shape_mismatches:
            continue
        if not report.unused:
            return candidate
        fallback = fallback or candidate
    return fallback


def _restore_object_checkpoint(model: Any, prefix: str, config: Any) -> Any:
    """A model holding the checkpoint's values, or raise CheckpointError."""
    import tensorflow as tf

    if TRAINER_KEY in _roots(prefix):
        found = _restore_trainer_checkpoint(model, prefix, config)
        if found is not None:
            return found
    for root in _roots(prefix):
        for candidate in _candidate_models(model, config):
            try:
                status = tf.train.Checkpoint(**{root: candidate}).read(prefix)
                status.assert_existing_objects_matched()
            except (IndexError, tf.errors.DataLossError) as e:  # not another model: the files are damaged
                raise damaged(prefix, e) from None
            except (AssertionError, ValueError, tf.errors.OpError):
                continue
            status.expect_partial()
            return candidate
    raise CheckpointError(
        f"{prefix}: no albert-tf model with this config matches the TF2 checkpoint "
        f"(roots {', '.join(_roots(prefix)) or 'none'}); checkpoint and config disagree?"
    )


def load_keras_file(path: str) -> Any:
    """The model of a ``.keras`` file; a missing, empty, cut or foreign file is a one-line
    :class:`CheckpointError` (Keras says "File not found" for a file that is there but is no zip archive)."""
    import zipfile

    import keras

    if not _fs.exists(path):
        raise CheckpointError(f"{path}: file not found")
    if "://" not in path and not zipfile.is_zipfile(path):
        what = "empty" if os.path.getsize(path) == 0 else "not a zip archive: cut short, or a file of another kind"
        raise CheckpointError(f"{path}: not a .keras file ({what})")
    try:
        return keras.saving.load_model(path, compile=False)
    except (ValueError, KeyError, OSError, TypeError, zipfile.BadZipFile) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CheckpointError(f"{path}: the .keras file cannot be loaded ({first})") from None


def read_native(path: str, config: Any | None = None) -> Any:
    """The model stored at ``path``: a ``.keras`` file (any albert-tf model) or a TF2 checkpoint.

    A TF2 checkpoint is restored into an ``AlbertPretrainer``, else an ``AlbertEncoder``, of
    ``config``; ``.weights.h5`` holds no architecture and is refused here.
    """

    from albert_tf.modeling import AlbertEncoder

    path = os.fspath(path)
    if path.endswith(".keras"):
        return load_keras_file(path)
    if path.endswith(".weights.h5"):
        raise CheckpointError(f"{path}: a .weights.h5 file holds no architecture; convert the .keras file instead")
    if config is None:
        raise CheckpointError(f"{path}: a TF2 checkpoint needs the ALBERT config (--albert_config_file)")
    prefix = resolve_checkpoint_path(path)
    return _restore_object_checkpoint(AlbertEncoder(config), prefix, config)


def load_native(model: Any, path: str, config: Any | None = None) -> LoadReport:
    """Load a ``.keras`` file, a ``.weights.h5`` file or a TF2 object checkpoint into ``model``."""

    from albert_tf.checkpoints.huggingface import check_configs_agree

    config = config if config is not None else getattr(model, "config", None)
    path = os.fspath(path)
    if path.endswith(".keras"):
        source = load_keras_file(path)
        if config is not None and getattr(source, "config", None) is not None:
            check_configs_agree(config, source.config, path)
    elif path.endswith(".weights.h5"):
        if not _fs.exists(path):
            raise CheckpointError(f"{path}: file not found")
        source = type(model).from_config(model.get_config())
        try:
            source.load_weights(path)
        except ValueError as e:
            raise CheckpointError(f"{path}: does not fit this model ({str(e).splitlines()[0]})") from None
    else:
        if config is None:
            raise CheckpointError(f"{path}: a TF2 checkpoint needs the ALBERT config (--albert_config_file)")
        path = resolve_checkpoint_path(path)
        source = _restore_object_checkpoint(model, path, config)
    return assign_official_arrays(model, model_official_arrays(source), source=path)


def save_native(model: Any, path: str) -> str:
    """``.keras`` / ``.weights.h5`` by extension, else a TF2 checkpoint in the trainer's layout at ``path``."""

    path = os.fspath(path)
    if path.endswith((".keras", ".weights.h5")):
        _fs.makedirs(os.path.dirname(os.path.abspath(path)) if "://" not in path else os.path.dirname(path))
        if path.endswith(".keras"):
            model.save(path)
        else:
            model.save_weights(path)
        return path
    # the trainer's layout, so the result also works as --init_checkpoint of every runner
    prefix = trainer_layout.write_weights(model, path)
    # the state file lets tf.train.latest_checkpoint(dir) find it, as for checkpoints the trainer writes
    write_checkpoint_state(os.path.dirname(prefix) or ".", os.path.basename(prefix))
    return prefix
