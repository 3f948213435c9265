"""Plain text -> the pretraining input format: one sentence per line, a blank line between documents.

Each input file is one document. Inside a file, paragraphs are separated by blank lines; the lines of a paragraph
are joined (hard-wrapped text) and split into sentences by :func:`split_sentences`, a simple rule-based splitter:
a sentence ends at ``.``, ``!`` or ``?`` (plus closing quotes/brackets) followed by white space and an upper-case
letter, a digit or an opening quote, unless the word before the period is a known abbreviation ("Mr.", "Dr.",
"e.g.") or a single capital initial ("J."). Good enough for pretraining segments; not a linguistic tool.

Input encodings are tried in order per file (e.g. ``("utf-8", "iso-8859-1")``); the output is UTF-8. Inputs and
output may be local or on any TensorFlow filesystem (``gs://``): every file goes through ``tf.io.gfile``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Sequence

from albert_tf import files as _fs
from albert_tf.progress import Progress

__all__ = ["decode_file", "paragraphs", "prepare_files", "split_sentences"]

_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "gen", "col", "capt", "lt", "sgt", "rev", "hon", "gov", "sen",
    "rep", "vs", "etc", "e.g", "i.e", "no", "vol", "fig", "co", "inc", "ltd", "mt", "ft", "messrs", "u.s", "u.n",
}
_BOUNDARY = re.compile(r"""([.!?]+["'\u201d\u2019)\]]*)\s+(?=["'\u201c\u2018(\[]?[A-Z0-9])""")


def split_sentences(text: str) -> list[str]:
    """Sentences of one paragraph (white space collapsed)."""
    text = " ".join(text.split())
    if not text:
        return []
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.end(1)
        words = text[start:m.start(1)].split()
        last = words[-1].lower().rstrip(".") if words else ""
        if m.group(1) == "." and (last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())):
            continue
        out.append(text[start:end].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return [s for s in out if s]


def decode_file(path: str, encodings: Sequence[str] = ("utf-8",)) -> tuple[str, str]:
    """(text, encoding used): the first of ``encodings`` that decodes the whole file; a clear error otherwise."""
    data = _fs.read_bytes(path)
    errors = []
    for enc in encodings:
        try:
            return data.decode(enc), enc
        except UnicodeDecodeError as e:
            errors.append(f"{enc}: byte offset {e.start} ({data[e.start:e.end]!r})")
    raise ValueError(f"{path}: cannot decode with any of {list(encodings)} (--input_encoding): " + "; ".join(errors)
                     + "; a file in Latin-1 reads with --input_encoding=utf-8,iso-8859-1")


def check_decodable(paths: Sequence[str], encodings: Sequence[str] = ("utf-8",),
                    log: Callable[[str], None] | None = None) -> None:
    """Decode every file before any long work (the sentence splitting of a large corpus takes minutes): one
    ``ValueError`` naming the first file that none of ``encodings`` decodes, where it fails and which flag to set."""
    progress = Progress("checking the encoding", total=len(paths), unit="files", log=log)
    for path in paths:
        decode_file(path, encodings)
        progress.update()


def paragraphs(text: str) -> Iterable[str]:
    """Blank-line separated paragraphs, their lines joined with spaces."""
    block: list[str] = []
    for line in text.splitlines():
        if line.strip():
            block.append(line.strip())
        elif block:
            yield " ".join(block)
            block = []
    if block:
        yield " ".join(block)


def prepare_files(input_files: Sequence[str], output_file: str, encodings: Sequence[str] = ("utf-8",),
                  min_sentences: int = 1, log: Callable[[str], None] | None = None) -> dict:
    """Convert ``input_files`` (one document each) into ``output_file``; returns counts.

    Documents with fewer than ``min_sentences`` sentences are skipped and counted. ``log`` gets a progress line
    every few seconds.
    """
    progress = Progress("preparing text", total=len(input_files), unit="files", log=log)
    counts = {"files": 0, "documents": 0, "skipped_documents": 0, "paragraphs": 0, "sentences": 0, "encodings": {}}
    _fs.makedirs_for(output_file)
    tmp = _fs.temporary_name(output_file)  # renamed over output_file when complete
    try:
        with _fs.open_file(tmp, "w") as out:
            first = True
            for path in input_files:
                progress.update()
                text, enc = decode_file(path, encodings)
                counts["files"] += 1
                counts["encodings"][enc] = counts["encodings"].get(enc, 0) + 1
                sentences: list[str] = []
                for para in paragraphs(text):
                    counts["paragraphs"] += 1
                    sentences.extend(split_sentences(para))
                if len(sentences) < max(1, min_sentences):
                    counts["skipped_documents"] += 1
                    continue
                if not first:
                    out.write("\n")
                out.write("\n".join(sentences) + "\n")
                first = False
                counts["documents"] += 1
                counts["sentences"] += len(sentences)
        if not counts["documents"]:  # nothing to publish: an empty output would pass for a prepared corpus
            raise ValueError(f"no document in {_fs.named(list(input_files))}: {counts['paragraphs']} paragraph(s), "
                             f"{counts['skipped_documents']} document(s) under --min_sentences={min_sentences} "
                             "skipped; the input is empty or blank")
    except BaseException:
        if _fs.exists(tmp):
            _fs.remove(tmp)
        raise
    _fs.replace(tmp, output_file)
    return counts


if __name__ == "__main__":  # a library module: say where the command is instead of exiting 0 silently
    print("albert_tf.data.prepare_text is a library module; the command is albert_prepare_text "
          "(python -m albert_tf.cli.prepare_text)", file=sys.stderr)
    sys.exit(2)
