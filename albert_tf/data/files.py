"""User files through ``tf.io.gfile``, and the one atomic text writer of the package.

So a ``gs://`` (or ``ram://``, or any other TensorFlow filesystem) data dir, cache dir or output dir works the
same as a local one. TensorFlow is imported on first use, not when the module is imported: ``albert_tf.data.glue``
(task names for flag help) stays cheap to import. Result files everywhere (GLUE caches and submissions, run
metadata, evaluation results, predictions, Hugging Face exports) are written with :func:`write_text_atomic` /
:func:`write_bytes_atomic`.
"""

from __future__ import annotations

import os
from typing import Any


def gfile() -> Any:
    """``tf.io.gfile`` (TensorFlow imported lazily)."""
    import tensorflow as tf

    return tf.io.gfile


def isfile(path: str) -> bool:
    """``os.path.isfile`` for any TensorFlow filesystem (exists and is not a directory)."""
    fs = gfile()
    return fs.exists(path) and not fs.isdir(path)


def read_bytes(path: str) -> bytes:
    with gfile().GFile(path, "rb") as f:
        return f.read()


def makedirs(path: str) -> None:
    """Create ``path`` and its parents; an existing directory is fine."""
    gfile().makedirs(path)


def replace(tmp: str, path: str) -> None:
    """Move a finished temporary file over ``path`` (``os.replace``)."""
    gfile().rename(tmp, path, overwrite=True)


def write_bytes_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to a temporary name, then rename it over ``path``.

    A killed run leaves the old file or none, never a half-written one. The temporary name carries the pid, so two
    processes writing the same file (the workers of one multi-worker run) never share it.
    """
    tmp = f"{path}.tmp-{os.getpid()}"
    with gfile().GFile(tmp, "wb") as f:
        f.write(data)
    replace(tmp, path)


def write_text_atomic(path: str, text: str) -> None:
    """:func:`write_bytes_atomic` of ``text`` as UTF-8 (newlines as given)."""
    write_bytes_atomic(path, text.encode("utf-8"))
