"""Input files: glob expansion, an up-front decode check, and a stream of bounded chunks of lines.

The official format: one sentence (segment) per line, a blank line between documents. Lines are split on "\\n"
only (as ``tf.gfile.GFile.readline``), and -- as in the official reader -- a file boundary does not end a document
unless ``file_is_document_boundary`` is set.

Chunks are the unit of parallel work and of randomness: consecutive whole documents, closed at the first blank line
once ``chunk_chars`` characters have been read. A document longer than ``2 * chunk_chars`` is cut at a line
boundary (counted as ``split_documents``) so that memory stays bounded whatever the input. Chunk boundaries depend
only on the input and ``chunk_chars``, never on the number of worker processes.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator, Sequence

from albert_tf import files as _fs

__all__ = ["Chunk", "InputError", "iter_chunks", "resolve_input_files", "scan_inputs"]


class InputError(ValueError):
    """Bad input or flags, reported as one clear line (file, line, byte offset, what was expected)."""


class Chunk:
    """A bounded run of input lines; ``index`` seeds its random generators."""

    __slots__ = ("index", "lines", "split_documents")

    def __init__(self, index: int, lines: list[str], split_documents: int = 0):
        self.index = index
        self.lines = lines
        self.split_documents = split_documents


def _open_binary(path: str):
    """A binary line reader: ``tf.io.gfile`` for ``gs://``/``ram://``/... paths. Local files are read with
    Python's own buffered reader on purpose: much faster line iteration than ``GFile``, and ``OSError``s the command
    line reports as one line."""
    if _fs.is_remote(path):
        return _fs.open_file(path, "rb")
    return open(path, "rb")


def resolve_input_files(spec: str) -> list[str]:
    """Comma-separated globs -> files (each glob's matches sorted); an error names a glob that matches nothing."""
    files: list[str] = []
    named_by: dict[str, str] = {}
    for pattern in [p.strip() for p in (spec or "").split(",") if p.strip()]:
        matches = _fs.glob(pattern)
        if not matches and _fs.isdir(pattern):
            raise InputError(f"--input_file={pattern} is a directory; give its files, e.g. "
                             f"{pattern.rstrip('/')}/*.txt")
        if not matches:
            raise InputError(f"--input_file: {pattern!r} matches no file")
        for path in matches:  # one file twice would put its documents in the records twice, silently
            key = _fs.canonical_path(path)
            if key in named_by:
                raise InputError(f"--input_file: {path} is named twice ({named_by[key]!r} and {pattern!r}); each "
                                 "file is read once (for more passes over the corpus, --dupe_factor)")
            named_by[key] = pattern
        files.extend(matches)
    if not files:
        raise InputError("--input_file is empty (give a comma-separated list of files or globs)")
    return files


def _check_encoding(encoding: str) -> str:
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise InputError(f"--input_encoding={encoding!r} is not a known text encoding") from None
    if "\n".encode(info.name) != b"\n":
        raise InputError(
            f"--input_encoding={encoding!r}: only ASCII-compatible encodings are supported (UTF-16/32 are not)"
        )
    return info.name


def scan_inputs(files: Sequence[str], encoding: str = "utf-8") -> dict:
    """Decode every file once before any work starts; raise :class:`InputError` naming file, line and byte offset.

    Returns per-corpus counts: files, empty_files (0 bytes), blank_only_files, input_bytes, lines, text_lines.
    """
    encoding = _check_encoding(encoding)
    stats = {"files": len(files), "empty_files": 0, "blank_only_files": 0, "input_bytes": 0, "lines": 0,
             "text_lines": 0}
    for path in files:
        n_bytes = 0
        text_lines = 0
        with _open_binary(path) as f:
            for line_no, raw in enumerate(f, start=1):
                try:
                    line = raw.decode(encoding)
                except UnicodeDecodeError as e:
                    raise InputError(
                        f"{path}: line {line_no}, byte offset {n_bytes + e.start}: cannot decode "
                        f"{raw[e.start:e.end]!r} as {encoding} ({e.reason}); pass the file's encoding with "
                        "--input_encoding (e.g. iso-8859-1)"
                    ) from None
                n_bytes += len(raw)
                stats["lines"] += 1
                if line.strip():
                    text_lines += 1
        stats["input_bytes"] += n_bytes
        stats["text_lines"] += text_lines
        if n_bytes == 0:
            stats["empty_files"] += 1
        elif text_lines == 0:
            stats["blank_only_files"] += 1
    if stats["text_lines"] == 0:
        raise InputError(
            f"no text in the input ({_fs.named(list(files))}): {len(files)} file(s), {stats['lines']} line(s), all "
            "empty or blank (expected one sentence per line, blank lines between documents)"
        )
    return stats


def iter_lines(files: Sequence[str], encoding: str, file_is_document_boundary: bool) -> Iterator[str]:
    """Decoded lines of all files in order (trailing newline removed); a "" after each file if it ends a document."""
    encoding = _check_encoding(encoding)
    for path in files:
        with _open_binary(path) as f:
            for raw in f:
                yield raw.decode(encoding).rstrip("\n")
        if file_is_document_boundary:
            yield ""


def iter_chunks(
    files: Sequence[str], encoding: str = "utf-8", chunk_chars: int = 1 << 20, file_is_document_boundary: bool = False
) -> Iterator[Chunk]:
    """Chunks of whole documents of about ``chunk_chars`` characters (see the module docstring)."""
    lines: list[str] = []
    chars = 0
    index = 0
    split_next = 0
    for line in iter_lines(files, encoding, file_is_document_boundary):
        lines.append(line)
        chars += len(line) + 1
        blank = not line.strip()
        if (blank and chars >= chunk_chars) or (not blank and chars >= 2 * chunk_chars):
            yield Chunk(index, lines, split_next)
            split_next = 0 if blank else 1
            index += 1
            lines = []
            chars = 0
    if lines:
        yield Chunk(index, lines, split_next)
