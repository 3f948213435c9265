"""Reading plain-text corpora whose files are UTF-8 or ISO-8859-1 (as the public-domain texts in the test data).

Used by the vocab trainer, the parity measurement and the throughput benchmark. Each file is decoded as UTF-8 when
it is valid UTF-8 and as ISO-8859-1 otherwise (every byte string is valid ISO-8859-1); the choice is reported.

Files and folders may be local or on any TensorFlow filesystem (``gs://``, ``ram://``): those are listed and read
through ``tf.io.gfile`` (TensorFlow is imported only for such a path).
"""

from __future__ import annotations

import os
import pathlib
import posixpath
import re
from collections.abc import Iterator

from albert_tf import files as _fs
from albert_tf.tokenization.sentencepiece_tokenizer import read_file_bytes

__all__ = ["corpus_files", "decode_text_file", "iter_lines", "split_lines"]

_NEWLINE = re.compile(r"\r\n|\r|\n")


def _remote_files(path: str) -> list[str]:
    """:func:`corpus_files` of one ``scheme://`` file or folder, through :mod:`albert_tf.files`."""
    if _fs.isdir(path):
        return [f for f in _fs.list_tree(path) if not posixpath.basename(f).startswith(".")]
    if _fs.exists(path):
        return [path]
    raise FileNotFoundError(f"{path}: no such file or folder (expected text files or folders of them)")


def corpus_files(paths: list[str | os.PathLike]) -> list[str]:
    """Every regular file under ``paths`` (files or folders, recursively), sorted, hidden files skipped."""
    files: list[str] = []
    for p in paths:
        if "://" in os.fspath(p):
            files.extend(_remote_files(os.fspath(p)))
            continue
        p = pathlib.Path(p)
        if p.is_dir():
            files.extend(str(f) for f in sorted(p.rglob("*")) if f.is_file() and not f.name.startswith("."))
        elif p.is_file():
            files.append(str(p))
        else:
            raise FileNotFoundError(f"{p}: no such file or folder (expected text files or folders of them)")
    if not files:
        raise FileNotFoundError(f"no text files under {[os.fspath(p) for p in paths]}")
    return files


def decode_text_file(path: str | os.PathLike) -> tuple[str, str]:
    """(text, encoding): UTF-8 if the bytes are valid UTF-8 (a BOM is dropped), else ISO-8859-1."""
    data = read_file_bytes(path)
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("iso-8859-1"), "iso-8859-1"


def split_lines(text: str) -> list[str]:
    """Lines of ``text`` split on universal newlines (as Python's text-mode ``readline``), without line ends.

    Not ``str.splitlines()``, which also splits on U+0085, U+2028, U+001C..U+001E and so changes what a line is.
    A final newline does not open an extra empty line.
    """
    lines = _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def iter_lines(paths: list[str | os.PathLike], skip_blank: bool = True) -> Iterator[str]:
    """Lines (without line ends) of every file under ``paths``; blank lines skipped when ``skip_blank``."""
    for f in corpus_files(paths):
        text, _ = decode_text_file(f)
        for line in split_lines(text):
            if skip_blank and not line.strip():
                continue
            yield line
