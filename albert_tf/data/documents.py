"""Documents of paragraph or article size, and a held-out split by document, for pretraining text.

The pretraining input format (one sentence per line, a blank line between documents) says nothing about how
large a document is; :mod:`albert_tf.data.prepare_text` makes every input *file* one document. That is right for
articles and speeches, but a whole book as one document starves the sentence-level tasks: NSP's negatives come
from a *random other document* and the official SOP data takes one for every one-segment chunk, so with a dozen
books nearly every "random document" is one of a dozen long books, and the number of document ends (where the
one-segment chunks fall) is tiny. The paper's corpora (Wikipedia articles, BookCorpus) have many documents.

``document_unit="paragraphs"`` cuts each file at paragraph boundaries (blank lines, as ``prepare_text`` reads
them): consecutive paragraphs are gathered until the document holds at least ``document_sentences`` sentences,
then the document closes at that paragraph's end (a trailing remainder shorter than half of that joins the last
document of its file). A file without blank lines (e.g. a State of the Union address, one paragraph per line
without blank separators) stays one paragraph, hence one document: speeches are documents. ``"file"`` keeps
one document per file (``prepare_text``'s behaviour).

Held-out split: document ``i`` of file ``f`` is held out when the first 8 bytes of
``sha256(f"{basename(f)}:{i}")``, read as an integer, fall below ``heldout_fraction`` of 2**64. Deterministic,
independent of the file order and of the machine, and per document, so that the held-out text covers every
source; the held-out documents are written to their own file and never to the training file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence

from albert_tf import files as _fs
from albert_tf.data.prepare_text import decode_file, paragraphs, split_sentences
from albert_tf.progress import Progress

__all__ = ["DOCUMENT_UNITS", "cut_documents", "is_heldout", "prepare_split"]

DOCUMENT_UNITS = ("file", "paragraphs")


def cut_documents(text: str, document_unit: str = "paragraphs", document_sentences: int = 20) -> list[list[str]]:
    """The documents of one file's text, each a list of sentences (see the module docstring)."""
    if document_unit not in DOCUMENT_UNITS:
        raise ValueError(f"document_unit must be one of {DOCUMENT_UNITS}, got {document_unit!r}")
    if document_sentences < 1:
        raise ValueError(f"document_sentences must be >= 1, got {document_sentences}")
    paras = [s for s in (split_sentences(p) for p in paragraphs(text)) if s]
    if document_unit == "file":
        return [[s for p in paras for s in p]] if paras else []
    docs: list[list[str]] = []
    current: list[str] = []
    for sentences in paras:
        current.extend(sentences)
        if len(current) >= document_sentences:
            docs.append(current)
            current = []
    if current:
        if docs and len(current) < max(1, document_sentences // 2):
            docs[-1].extend(current)
        else:
            docs.append(current)
    return docs


def is_heldout(file_name: str, index: int, heldout_fraction: float) -> bool:
    """Whether document ``index`` of the file named ``file_name`` (its base name counts) is held out."""
    if heldout_fraction <= 0:
        return False
    key = f"{os.path.basename(file_name)}:{index}".encode()
    value = int.from_bytes(hashlib.sha256(key).digest()[:8], "big")
    return value < heldout_fraction * 2**64


def _write(path: str, documents: Iterable[list[str]]) -> None:
    if os.path.dirname(path):
        _fs.makedirs(os.path.dirname(path))
    _fs.write_text_atomic(path, "\n\n".join("\n".join(doc) for doc in documents) + "\n")


def prepare_split(
    input_files: Sequence[str],
    train_output: str,
    heldout_output: str | None = None,
    *,
    document_unit: str = "paragraphs",
    document_sentences: int = 20,
    heldout_fraction: float = 0.0,
    min_sentences: int = 2,
    encodings: Sequence[str] = ("utf-8",),
    log: Callable[[str], None] | None = None,
) -> dict:
    """Cut ``input_files`` into documents and write them, one sentence per line, to ``train_output`` and (the
    held-out ones) ``heldout_output``; returns counts. Documents with fewer than ``min_sentences`` sentences are
    skipped and counted (two sentences are the least a sentence-pair task can use). ``log`` gets a progress line
    every few seconds."""
    if heldout_fraction > 0 and not heldout_output:
        raise ValueError("heldout_fraction > 0 needs a heldout_output file")
    if not 0 <= heldout_fraction < 1:
        raise ValueError(f"heldout_fraction must be in [0, 1), got {heldout_fraction}")
    train: list[list[str]] = []
    held: list[list[str]] = []
    counts = {"files": 0, "documents": 0, "heldout_documents": 0, "skipped_documents": 0,
              "sentences": 0, "heldout_sentences": 0, "document_unit": document_unit,
              "document_sentences": document_sentences, "heldout_fraction": heldout_fraction}
    progress = Progress("preparing text", total=len(input_files), unit="files", log=log)
    for path in input_files:
        progress.update()
        text, _ = decode_file(path, encodings)
        counts["files"] += 1
        for i, doc in enumerate(cut_documents(text, document_unit, document_sentences)):
            if len(doc) < max(1, min_sentences):
                counts["skipped_documents"] += 1
                continue
            if is_heldout(path, i, heldout_fraction):
                held.append(doc)
                counts["heldout_documents"] += 1
                counts["heldout_sentences"] += len(doc)
            else:
                train.append(doc)
                counts["documents"] += 1
                counts["sentences"] += len(doc)
    if not train:
        raise ValueError(f"no training document in {len(input_files)} file(s)")
    _write(train_output, train)
    if heldout_output:
        if not held:
            raise ValueError(f"no held-out document: heldout_fraction {heldout_fraction} is too small for "
                             f"{counts['documents']} documents")
        _write(heldout_output, held)
    return counts
