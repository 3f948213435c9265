"""The one filesystem API of the GLUE package: every user path goes through ``tf.io.gfile``.

So a ``gs://`` (or ``ram://``, or any other TensorFlow filesystem) ``--data_dir`` / cache dir / output
dir works the same as a local one. ``os.path.join`` is still used to build paths. TensorFlow is imported
on first use, not when the package is imported: ``albert_tf.data.glue`` (task names for flag help) stays
cheap to import, as it was before the split.
"""

from __future__ import annotations

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


def write_text_atomic(path: str, text: str) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path + '.tmp'``, then rename it over ``path``.

    A killed run leaves the old file or none, never a half-written one.
    """
    tmp = path + ".tmp"
    with gfile().GFile(tmp, "w") as f:
        f.write(text)
    replace(tmp, path)
