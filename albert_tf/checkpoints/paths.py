"""Where checkpoints are: prefix resolution, the ``checkpoint`` state file, a run's ``ckpt-N`` list.

The one place that turns a user's checkpoint argument (a prefix, a directory, an ``.index`` /
``.data-*`` / ``.meta`` file name) into a TF checkpoint prefix, for every format and every
runner. Everything goes through ``tf.io.gfile`` so ``gs://`` and ``ram://`` paths work.

TensorFlow's in-memory filesystem (``ram://``) reports every string prefix of a file name as an existing directory
(``RamFileSystem::Stat`` in ``xla/tsl/platform/ram_file_system.h`` tests ``StartsWith``, not a path separator), so
there a checkpoint prefix ``ckpt-20`` "is a directory" because ``ckpt-20.index`` exists. Hence: a path with an
``.index`` file beside it is a prefix before it is a directory (:func:`resolve_checkpoint_path`), and checkpoints are
opened with :func:`checkpoint_reader` instead of ``tf.train.load_checkpoint`` / ``tf.train.list_variables``, which
would take the prefix for a directory and look for a ``checkpoint`` file inside it.
"""

from __future__ import annotations

import os
import re
from typing import Any

from albert_tf import files as _fs
from albert_tf.checkpoints.report import CheckpointError
from albert_tf.files import write_text_atomic

STATE_FILE = "checkpoint"
_DATA_SUFFIX = re.compile(r"\.data-\d{5}-of-\d{5}$")
_RUN_CHECKPOINT = re.compile(r"ckpt-(\d+)\.index")


def resolve_checkpoint_path(path: str) -> str:
    """A checkpoint prefix from a prefix, a directory (latest checkpoint; a TF-Hub module's weights) or an
    ``.index`` file."""
    import tensorflow as tf

    from albert_tf.checkpoints.hub_module import MARKERS, VARIABLES_PREFIX, is_hub_module

    path = os.fspath(path)
    if is_hub_module(path):
        return os.path.join(path, VARIABLES_PREFIX)
    if path.endswith(".index"):
        path = path[: -len(".index")]
    elif _DATA_SUFFIX.search(path):
        path = _DATA_SUFFIX.sub("", path)
    elif path.endswith(".meta") and _fs.exists(path[: -len(".meta")] + ".index"):
        path = path[: -len(".meta")]
    if _fs.isdir(path) and not _fs.exists(path + ".index"):
        if any(_fs.exists(os.path.join(path, m)) for m in MARKERS):  # a SavedModel / Hub module without weights
            raise CheckpointError(f"{path}: a SavedModel without its variables ({VARIABLES_PREFIX}.index is missing): "
                                  "copied only in part?")
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            indexes = sorted(f for f in _fs.listdir(path) if f.endswith(".index"))
            if len(indexes) == 1:
                return os.path.join(path, indexes[0][: -len(".index")])
            raise CheckpointError(f"{path}: {what_folder_holds(path)}")
        return latest
    if not _fs.exists(path + ".index"):
        if _fs.exists(path):  # a file is there: not a missing checkpoint but something else
            raise CheckpointError(
                f"{path}: a file, but not a checkpoint (a TF checkpoint is a prefix: "
                f"{os.path.basename(path)}.index and .data-* files beside it)"
            )
        raise CheckpointError(
            f"{path}: checkpoint not found, {os.path.basename(path)}.index does not exist beside it"
        )
    return path


#: What albert-tf reads from a folder, for the message about a folder that holds none of it.
READABLE_FOLDERS = ("a TF checkpoint ('checkpoint' file or one .index)", "a Hugging Face model (config.json with "
                    "model.safetensors)", "a keras-hub preset (config.json with model.weights.h5)")


def what_folder_holds(path: str) -> str:
    """One line for a folder that holds no checkpoint of any format: what is in it, and what would be read."""
    names = sorted(_fs.listdir(path))
    shown = ", ".join(n.rstrip("/") for n in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    holds = f"a folder holding {shown}" if names else "an empty folder"
    return f"{holds}: no checkpoint albert-tf reads (looked for {'; '.join(READABLE_FOLDERS)})"


def damaged(prefix: str, error: BaseException) -> CheckpointError:
    """The one-line error for a checkpoint whose files cannot be read whole (TensorFlow says ``DataLossError`` for a
    corrupted ``.index``, ``IndexError: Read less bytes than requested`` for a ``.data`` file cut short)."""
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    first = message.strip().splitlines()[0] if message.strip() else type(error).__name__
    return CheckpointError(f"{prefix}: the checkpoint cannot be read, its .index or .data file is cut short or "
                           f"damaged ({first})")


def read_errors() -> tuple[type[BaseException], ...]:
    """What TensorFlow raises for a checkpoint file that is damaged or cut short."""
    import tensorflow as tf

    return (IndexError, tf.errors.DataLossError, tf.errors.OutOfRangeError, tf.errors.InternalError)


class _Reader:
    """A ``CheckpointReader`` whose reads fail with :func:`damaged` instead of TensorFlow's own errors."""

    def __init__(self, reader: Any, prefix: str) -> None:
        self._reader, self._prefix = reader, prefix

    def get_tensor(self, name: str) -> Any:
        try:
            return self._reader.get_tensor(name)
        except read_errors() as e:
            raise damaged(self._prefix, e) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)


def checkpoint_paths(path: str) -> list[str]:
    """``path`` and, when it resolves, the checkpoint prefix it stands for (a folder's latest checkpoint): what a
    command reads, for the checks that refuse writing onto it."""
    paths = [path]
    try:
        paths.append(resolve_checkpoint_path(path))
    except (CheckpointError, OSError):
        pass
    return paths


def checkpoint_reader(prefix: str) -> Any:
    """``tf.train.load_checkpoint`` of a checkpoint *prefix* (from :func:`resolve_checkpoint_path`), without its
    directory test (see the module docstring: on ``ram://`` every prefix passes it). A damaged file is one
    :class:`CheckpointError` naming the prefix, when opened or when a tensor is read."""
    import tensorflow as tf

    try:
        return _Reader(tf.compat.v1.train.NewCheckpointReader(os.fspath(prefix)), os.fspath(prefix))
    except read_errors() as e:
        raise damaged(os.fspath(prefix), e) from None


def list_variables(prefix: str) -> list[tuple[str, list[int]]]:
    """``tf.train.list_variables`` of a checkpoint prefix: ``(name, shape)`` sorted by name."""
    return sorted(checkpoint_reader(prefix).get_variable_to_shape_map().items())


def write_checkpoint_state(directory: str, basename: str) -> None:
    """The ``checkpoint`` text-proto file ``tf.train.latest_checkpoint(directory)`` reads (atomically)."""
    quoted = basename.replace("\\", "\\\\").replace('"', '\\"')
    text = f'model_checkpoint_path: "{quoted}"\nall_model_checkpoint_paths: "{quoted}"\n'
    write_text_atomic(os.path.join(directory, STATE_FILE), text)


def list_run_checkpoints(directory: str) -> list[tuple[int, str]]:
    """``(step, prefix)`` of the trainer's ``ckpt-N`` checkpoints in ``directory``, by step."""

    if not _fs.isdir(directory):
        return []
    found = []
    for name in _fs.listdir(directory):
        m = _RUN_CHECKPOINT.fullmatch(name)
        if m:
            found.append((int(m.group(1)), os.path.join(directory, name[: -len(".index")])))
    return sorted(found)


_STATE_LATEST = re.compile(r'^model_checkpoint_path:\s*"((?:[^"\\]|\\.)*)"\s*$', re.M)


def _state_file_target(directory: str) -> str | None:
    """The checkpoint prefix the ``checkpoint`` state file of ``directory`` names (None when there is no state
    file); :class:`CheckpointError` naming the file when it cannot be read as one."""
    state = os.path.join(directory, STATE_FILE)
    if not _fs.exists(state):
        return None
    try:
        text = _fs.read_bytes(state).decode("utf-8")
    except UnicodeDecodeError:
        raise CheckpointError(f"{state}: the checkpoint state file is not text (binary or damaged); it should hold "
                              'a line model_checkpoint_path: "ckpt-N"') from None
    match = _STATE_LATEST.search(text)
    if match is None:
        raise CheckpointError(f'{state}: the checkpoint state file has no model_checkpoint_path: "ckpt-N" line '
                              "(damaged or not written by TensorFlow)")
    name = re.sub(r"\\(.)", r"\1", match.group(1))
    return name if os.path.isabs(name) or "://" in name else os.path.join(directory, name)


def resume_point(directory: str) -> str | None:
    """The checkpoint a training run in ``directory`` resumes from, checked whole before the run writes anything;
    None where the directory holds no checkpoint (a fresh start).

    Resume is all or nothing: a state file that cannot be read or names a missing checkpoint, checkpoints without a
    state file, or a latest checkpoint whose ``.index`` or ``.data`` cannot be read are each one
    :class:`CheckpointError` naming the file, never a silent start from step 0 that would write new ``ckpt-N``
    files over the trained ones. (TensorFlow's ``latest_checkpoint`` answers None for all of these.)
    """
    checkpoints = list_run_checkpoints(directory)
    found = ", ".join(os.path.basename(p) for _, p in checkpoints[-3:])
    latest = _state_file_target(directory) if _fs.isdir(directory) else None
    others = [p for _, p in checkpoints if p != latest]
    way_out = f"; a new --output_dir with --init_checkpoint={others[-1]} starts from its weights" if others else ""
    if latest is None:
        if checkpoints:
            raise CheckpointError(
                f"{os.path.join(directory, STATE_FILE)}: the checkpoint state file is missing while {found} remain; "
                f"refusing to start over on top of them (restore the file to resume{way_out})")
        return None
    if not _fs.exists(latest + ".index"):
        raise CheckpointError(
            f"{os.path.join(directory, STATE_FILE)} names {os.path.basename(latest)}, but {latest}.index does not "
            f"exist{' (the folder holds ' + found + ')' if found else ''}: refusing to start over{way_out}")
    import tensorflow as tf

    try:
        reader = checkpoint_reader(latest)
    except (CheckpointError, tf.errors.OpError):
        raise CheckpointError(f"{latest}.index: the latest checkpoint's index is cut short or damaged; refusing "
                              f"to resume from it or start over on top of it{way_out}") from None
    try:
        for name, dtype in reader.get_variable_to_dtype_map().items():
            if dtype != tf.variant:  # the input iterator's state: no numpy value to read (restore reads it)
                reader.get_tensor(name)
    except (CheckpointError, tf.errors.OpError):
        data = sorted(n for n in _fs.listdir(os.path.dirname(latest) or ".")
                      if n.startswith(os.path.basename(latest) + ".data-"))
        shown = os.path.join(os.path.dirname(latest), data[0]) if data else latest + ".data-*"
        raise CheckpointError(f"{shown}: the latest checkpoint's data file is cut short or damaged; refusing to "
                              f"resume from it or start over on top of it{way_out}") from None
    return latest
