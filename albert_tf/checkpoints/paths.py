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
            raise CheckpointError(f"{path}: directory holds no TF checkpoint (no 'checkpoint' file or single .index)")
        return latest
    if not _fs.exists(path + ".index"):
        raise CheckpointError(
            f"{path}: checkpoint not found, {os.path.basename(path)}.index does not exist beside it"
        )
    return path


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
