"""Reading plain-text corpora whose files are UTF-8 or ISO-8859-1 (as the public-domain texts in the test data).

Used by the vocab trainer, the parity measurement and the throughput benchmark. Each file is decoded as UTF-8 when
it is valid UTF-8 and as ISO-8859-1 otherwise (every byte string is valid ISO-8859-1); the choice is reported.
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Iterator

__all__ = ["corpus_files", "decode_text_file", "iter_lines", "split_lines"]

_NEWLINE = re.compile(r"\r\n|\r|\n")


def corpus_files(paths: list[str | os.PathLike]) -> list[pathlib.Path]:
    """Every regular file under ``paths`` (files or folders, recursively), sorted, hidden files skipped."""
    files: list[pathlib.Path] = []
    for p in paths:
        p = pathlib.Path(p)
        if p.is_dir():
            files.extend(f for f in sorted(p.rglob("*")) if f.is_file() and not f.name.startswith("."))
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or folder (expected text files or folders of them)")
    if not files:
        raise FileNotFoundError(f"no text files under {[str(p) for p in paths]}")
    return files


def decode_text_file(path: str | os.PathLike) -> tuple[str, str]:
    """(text, encoding): UTF-8 if the bytes are valid UTF-8 (a BOM is dropped), else ISO-8859-1."""
    data = pathlib.Path(path).read_bytes()
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
