"""albert-tf's own formats: ``.keras`` files, ``.weights.h5`` and TF2 checkpoints.

TF2 checkpoints are written in the trainer's layout (``model_weights/<Keras variable path>``,
``albert_tf.checkpoints.trainer_layout``), so a converted checkpoint is directly an
``--init_checkpoint`` for every runner. Reading also accepts plain object checkpoints
(``tf.train.Checkpoint(model=...)``), whose keys are positions in the Keras functional graph
(``model/_operations/1/...``) and so only restore into a model of the same class and config.

A TF2 checkpoint is restored into a *source* model and copied into the target by official name, so a classifier
can be initialised from a pretraining run with the usual report. The source is the model that wrote it where its
run (or conversion) left ``model.json`` beside it (the Keras serialization of the model: class and options, so a
fine-tuned classifier is read with its head); else a same-shaped model (a clone of the target, then an
``AlbertPretrainer``, then an ``AlbertEncoder``), accepted only if every variable of that source was matched, and
what no candidate holds (another task's head) is reported as unused.

``.keras`` files and ``model.json`` name the module of their class; a module of this package is imported before
Keras reads them, so a task model's file loads without the user importing its task first.
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
from albert_tf.checkpoints.run_meta import find_in_run

MODEL_KEY = "model"
TRAINER_KEY = trainer_layout.WEIGHTS_KEY
#: The Keras serialization of the model a TF2 checkpoint holds, kept beside it by runs and conversions.
MODEL_FILE = "model.json"
PACKAGE = "albert_tf."
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


def import_model_module(serialized: Any) -> None:
    """Import the module a serialized model names, where it is one of this package's (Keras imports only its own
    packages' modules; a task model's class is registered when its module is imported)."""
    import importlib

    module = serialized.get("module") if isinstance(serialized, dict) else None
    if isinstance(module, str) and module.startswith(PACKAGE):
        try:
            importlib.import_module(module)
        except ImportError:  # Keras then names the class it cannot locate
            pass


def model_class(spec: str) -> type:
    """The class ``module:Class`` names, a module of this package (a head's model, :class:`TaskHead.model`)."""
    import importlib

    module, _, name = spec.partition(":")
    if not module.startswith(PACKAGE):
        raise CheckpointError(f"{spec}: not a model class of albert_tf")
    return getattr(importlib.import_module(module), name)


def write_model_file(model: Any, folder: str) -> str:
    """``folder/model.json``: the Keras serialization of ``model`` (class, module, options), written whole."""
    import json

    import keras

    path = os.path.join(folder, MODEL_FILE)
    _fs.write_text_atomic(path, json.dumps(keras.saving.serialize_keras_object(model), indent=1) + "\n")
    return path


def model_from_file(path: str) -> Any:
    """The (freshly initialised) model ``model.json`` at ``path`` describes; one line for a file that is not one."""
    import json

    import keras

    try:
        serialized = json.loads(_fs.read_text(path))
        import_model_module(serialized)
        return keras.saving.deserialize_keras_object(serialized)
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CheckpointError(f"{path}: not a model description albert-tf reads ({first})") from None


def described_model(prefix: str) -> Any | None:
    """The model whose ``model.json`` the run (or conversion) that wrote ``prefix`` left, restored from ``prefix``
    by Keras path; None where there is no ``model.json``, its class cannot be built here, or it does not fit the
    checkpoint (another model written into the same folder later)."""
    found = find_in_run(prefix, MODEL_FILE)
    if found is None:
        return None
    try:
        model = model_from_file(found)
    except CheckpointError:  # a class this process cannot build (a task package not installed here): read as before
        return None
    report = trainer_layout.load_weights_by_path(model, prefix)
    if report.missing or report.shape_mismatches or not report.loaded:
        return None
    return model


def load_keras_file(path: str) -> Any:
    """The model of a ``.keras`` file; a missing, empty, cut or foreign file is a one-line
    :class:`CheckpointError` (Keras says "File not found" for a file that is there but is no zip archive)."""
    import io
    import json
    import zipfile

    import keras

    if not _fs.exists(path):
        raise CheckpointError(f"{path}: file not found")
    if "://" not in path and not zipfile.is_zipfile(path):
        what = "empty" if os.path.getsize(path) == 0 else "not a zip archive: cut short, or a file of another kind"
        raise CheckpointError(f"{path}: not a .keras file ({what})")
    try:
        source = path if "://" not in path else io.BytesIO(_fs.read_bytes(path))
        with zipfile.ZipFile(source) as archive:
            import_model_module(json.loads(archive.read("config.json")))
    except (KeyError, ValueError, zipfile.BadZipFile):
        pass  # Keras names what is wrong with the archive
    try:
        return keras.saving.load_model(path, compile=False)
    except (ValueError, KeyError, OSError, TypeError, zipfile.BadZipFile) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CheckpointError(f"{path}: the .keras file cannot be loaded ({first})") from None


def read_native(path: str, config: Any | None = None) -> tuple[Any, list[str]]:
    """``(the model stored at path, what it could not place)``: a ``.keras`` file (any albert-tf model), or a TF2
    checkpoint restored into the model its ``model.json`` describes, else into an ``AlbertPretrainer`` or an
    ``AlbertEncoder`` of ``config``, whose unplaced variables (a task head of a checkpoint without ``model.json``)
    are listed by Keras path. ``.weights.h5`` holds no architecture and is refused here.
    """
    from albert_tf.checkpoints.huggingface import check_configs_agree
    from albert_tf.modeling import AlbertEncoder

    path = os.fspath(path)
    if path.endswith(".keras"):
        return load_keras_file(path), []
    if path.endswith(".weights.h5"):
        raise CheckpointError(f"{path}: a .weights.h5 file holds no architecture; convert the .keras file instead")
    if config is None:
        raise CheckpointError(f"{path}: a TF2 checkpoint needs the ALBERT config (--albert_config_file)")
    prefix = resolve_checkpoint_path(path)
    described = described_model(prefix)
    if described is not None:
        check_configs_agree(config, described.config, prefix)
        return described, []
    model = _restore_object_checkpoint(AlbertEncoder(config), prefix, config)
    return model, _unplaced(model, prefix)


def _unplaced(model: Any, prefix: str) -> list[str]:
    """The model weights of a trainer-layout checkpoint that ``model`` has no variable for (Keras paths)."""
    if TRAINER_KEY not in _roots(prefix):
        return []
    ours = set(trainer_layout.model_weights(model))
    return sorted(k for k in trainer_layout.stored_weights(prefix)
                  if k not in ours and not trainer_layout.is_rng_state(k))


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
        source = described_model(path)
        if source is None:
            source = _restore_object_checkpoint(model, path, config)
        elif config is not None:
            check_configs_agree(config, source.config, path)
    return assign_official_arrays(model, model_official_arrays(source), source=path)


def save_native(model: Any, path: str) -> str:
    """``.keras`` / ``.weights.h5`` by extension, else a TF2 checkpoint in the trainer's layout at ``path`` with
    ``model.json`` beside it."""

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
    write_model_file(model, os.path.dirname(prefix) or ".")  # what reads it back (with a task model's head)
    return prefix
