"""CoNLL column files for token tagging (named entities): sentences of words with one tag each, checked and read.

The layout of the CoNLL shared tasks and of WNUT 2017: one word per line, the word in the first column and its tag
in the last (columns separated by tabs, or by spaces in a file without tabs); a sentence ends at a line that is
empty or holds only white space (WNUT 2017's files use both); ``-DOCSTART-`` lines (CoNLL 2003) start a document and
are skipped. Tags follow one of three schemes (:data:`SCHEMES`):

* ``iob2``: ``B-TYPE`` begins every entity, ``I-TYPE`` continues it;
* ``iob1`` (CoNLL 2003's original files): ``I-TYPE`` begins an entity too, ``B-TYPE`` only one that directly
  follows another of the same type;
* ``bioes``: ``S-TYPE`` a one-word entity, ``B-``/``I-``/``E-`` its begin, inside and end.

:func:`to_iob2` converts each of them to IOB2, the one scheme the model is trained on. An ``I-TYPE`` that continues
no entity of its type (after ``O`` or after another type) is read as the start of a new ``TYPE`` entity, as the
CoNLL evaluation script ``conlleval`` reads it; :class:`Repairs` counts them so a run can say so once.

Every structural problem is a :class:`TaggingDataError` of one line naming the file and line, raised while reading,
before any tokenisation or TensorFlow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from albert_tf import files as _fs

SCHEMES = ("iob1", "iob2", "bioes")
#: The prefixes each scheme's tags may carry (besides the tag ``O``).
PREFIXES = {"iob1": ("B", "I"), "iob2": ("B", "I"), "bioes": ("B", "I", "E", "S")}
OUTSIDE = "O"
DOCSTART = "-DOCSTART-"


class TaggingDataError(ValueError):
    """A tagging file that cannot be read as CoNLL columns; one line naming the file, line and expectation."""


@dataclasses.dataclass(frozen=True)
class TaggedSentence:
    """One sentence: its words, their tags as the file writes them, and the file line of its first word."""

    words: tuple[str, ...]
    tags: tuple[str, ...]
    line: int


@dataclasses.dataclass
class Repairs:
    """``I-`` tags read as the start of a new entity (they continued no entity of their type): how many, and the
    first one as ``file:line: I-x after y``."""

    count: int = 0
    first: str | None = None

    def note(self, where: str) -> None:
        self.count += 1
        if self.first is None:
            self.first = where


def _columns(line: str) -> list[str]:
    return line.split("\t") if "\t" in line else line.split()


def read_conll(path: str) -> list[TaggedSentence]:
    """The sentences of the CoNLL column file ``path``, in file order (tags as written; :func:`check_scheme`
    checks them). Raises :class:`TaggingDataError` for a file that is not UTF-8, a word line without a tag column,
    an empty word, or a file without a sentence."""
    try:
        text = _fs.read_text(path)
    except UnicodeDecodeError as e:
        raise TaggingDataError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    sentences: list[TaggedSentence] = []
    words: list[str] = []
    tags: list[str] = []
    first = 0

    def close() -> None:
        if words:
            sentences.append(TaggedSentence(tuple(words), tuple(tags), first))
        words.clear()
        tags.clear()

    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            close()
            continue
        columns = [c.strip() for c in _columns(raw)]
        if columns[0] == DOCSTART:
            close()
            continue
        if len(columns) < 2 or not columns[-1]:
            raise TaggingDataError(f"{path}:{number}: {raw.strip()!r} has no tag column (expected the word in the "
                                   "first column and its tag in the last, separated by a tab or spaces)")
        if not columns[0]:
            raise TaggingDataError(f"{path}:{number}: the word column is empty (expected the word first)")
        if not words:
            first = number
        words.append(columns[0])
        tags.append(columns[-1])
    close()
    if not sentences:
        raise TaggingDataError(f"{path}: no sentence (expected lines 'word<TAB>tag', sentences separated by empty "
                               "lines)")
    return sentences


def split_tag(tag: str) -> tuple[str, str]:
    """``("B", "person")`` for ``B-person``; ``("O", "")`` for ``O``."""
    if tag == OUTSIDE:
        return OUTSIDE, ""
    prefix, _, kind = tag.partition("-")
    return prefix, kind


def check_scheme(sentences: Iterable[TaggedSentence], scheme: str, path: str) -> None:
    """Every tag is ``O`` or ``PREFIX-TYPE`` with a prefix of ``scheme``; else a :class:`TaggingDataError` naming the
    first tag that is not (its line, and what the scheme allows)."""
    if scheme not in SCHEMES:
        raise TaggingDataError(f"tag scheme {scheme!r}: expected one of {', '.join(SCHEMES)}")
    allowed = PREFIXES[scheme]
    for sentence in sentences:
        for offset, tag in enumerate(sentence.tags):
            prefix, kind = split_tag(tag)
            if tag != OUTSIDE and (prefix not in allowed or not kind):
                spelled = ", ".join(f"{p}-TYPE" for p in allowed)
                raise TaggingDataError(f"{path}:{sentence.line + offset}: tag {tag!r} is not {scheme.upper()} "
                                       f"(expected O, {spelled})")


def detect_scheme(sentences: Iterable[TaggedSentence]) -> str:
    """The scheme the tags are written in: ``bioes`` where an ``E-`` or ``S-`` tag appears, ``iob1`` where an
    entity begins with ``I-`` and ``B-`` appears only right after an entity of its own type, else ``iob2``."""
    begins_with_i = b_elsewhere = False
    for sentence in sentences:
        previous = OUTSIDE
        for tag in sentence.tags:
            prefix, kind = split_tag(tag)
            if prefix in ("E", "S"):
                return "bioes"
            _, previous_kind = split_tag(previous)
            if prefix == "I" and previous_kind != kind:
                begins_with_i = True
            if prefix == "B" and previous_kind != kind:
                b_elsewhere = True
            previous = tag
    return "iob1" if begins_with_i and not b_elsewhere else "iob2"


def to_iob2(tags: Sequence[str], scheme: str, repairs: Repairs | None = None, path: str = "",
            line: int = 0) -> tuple[str, ...]:
    """``tags`` (checked, of ``scheme``) in IOB2. An ``I-TYPE`` that continues no entity of its type becomes
    ``B-TYPE`` (in IOB1 that is the scheme; in IOB2 and BIOES a repair, counted in ``repairs`` as
    ``path:line``, ``line`` being the file line of the sentence's first word)."""
    out: list[str] = []
    previous_kind = ""
    for offset, tag in enumerate(tags):
        written, kind = split_tag(tag)
        if written == OUTSIDE:
            out.append(OUTSIDE)
            previous_kind = ""
            continue
        prefix = {"S": "B", "E": "I"}.get(written, written)
        if prefix == "I" and previous_kind != kind:
            if scheme != "iob1" and repairs is not None:
                before = out[-1] if out else "the sentence start"
                repairs.note(f"{path}:{line + offset}: {tag} after {before}")
            prefix = "B"
        out.append(f"{prefix}-{kind}")
        # after a BIOES end or single, the next I- continues nothing
        previous_kind = "" if written in ("E", "S") else kind
    return tuple(out)


def entity_spans(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """The entities of an IOB tag sequence as ``(type, first word, last word + 1)``, read as ``conlleval`` reads
    chunks: an entity begins at ``B-TYPE`` or at an ``I-TYPE`` that does not continue an entity of its type, and
    ends before the next tag that does not continue it."""
    spans: list[tuple[str, int, int]] = []
    kind, start = "", -1
    for index, tag in enumerate([*tags, OUTSIDE]):
        prefix, tag_kind = split_tag(tag)
        continues = prefix == "I" and tag_kind == kind and start >= 0
        if start >= 0 and not continues:
            spans.append((kind, start, index))
            kind, start = "", -1
        if prefix in ("B", "I") and not continues:
            kind, start = tag_kind, index
    return spans


def labels_of(sentences: Iterable[Sequence[str]]) -> list[str]:
    """The label set of IOB2 tag sequences: ``O`` first, then ``B-``/``I-`` of each type in sorted type order
    (both prefixes of every type seen, so the model can tag any entity of a type it has seen)."""
    kinds = sorted({split_tag(tag)[1] for tags in sentences for tag in tags if tag != OUTSIDE})
    return [OUTSIDE, *(f"{prefix}-{kind}" for kind in kinds for prefix in ("B", "I"))]
