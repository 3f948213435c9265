"""The RACE reader (official ``race_utils.py: RaceProcessor.read_examples``): passage files -> validated questions.

A passage is one JSON object ``{"id": str, "article": str, "questions": [str], "options": [[str x 4]],
"answers": ["A".."D"]}``. For each level folder ``data_dir/RACE/<split>/<level>`` (``middle``, then ``high``):

* ``all.txt`` when it exists (the official layout: one passage per line, in line order); else
* every ``*.txt`` file (the original release: one passage per file), in name order (plain string sort), so an
  ``all.txt`` made by concatenating the files in that order gives the same examples in the same order. (The
  official HEAD reads only ``all.txt``; the reverted PR #186 read ``*.txt`` in ``os.listdir`` order.)

Each question is one :class:`RaceExample` with the id ``f"{passage id}-{question index}"``. Every structural
problem is a :class:`RaceDataError` of one line naming the file, the line the passage starts on and, where there
is one, the question index -- raised while reading, before any tokenisation. ``answers`` may be missing only
outside ``train`` and ``dev`` (a test set without labels: ``label`` is None, and the count is logged); the
official reader needs them everywhere. A requested level without data is a warning (the other level is read);
a split without any data is an error naming the folders looked at.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from typing import Any

from albert_tf import files as _fs

logger = logging.getLogger(__name__)

__all__ = [
    "LABELS",
    "LEVELS",
    "NUM_CHOICES",
    "RaceDataError",
    "RaceExample",
    "race_source_files",
    "read_race_examples",
    "read_race_split",
]

LEVELS = ("middle", "high")
LABELS = ("A", "B", "C", "D")
NUM_CHOICES = len(LABELS)
# Splits whose passages must carry answers (the others may be unlabelled, e.g. a test set without keys).
_LABELLED_SPLITS = ("train", "dev")
_KEYS = ("id", "article", "questions", "options", "answers")


class RaceDataError(ValueError):
    """A RACE file (or a reading setting) that cannot be used; one line naming the file, line and question."""


@dataclasses.dataclass(frozen=True)
class RaceExample:
    """One question of a passage with its four options.

    ``label``: ``ord(answer) - ord("A")`` (0..3), None when the passage has no answers (unlabelled test data).
    ``level``: ``"middle"`` or ``"high"``, the folder the passage was read from.
    """

    example_id: str
    article: str
    question: str
    options: tuple[str, ...]
    label: int | None
    level: str


def _levels(middle_only: bool, high_only: bool) -> tuple[str, ...]:
    if middle_only and high_only:
        raise RaceDataError("middle_only and high_only together select no RACE level; give at most one")
    if middle_only:
        return ("middle",)
    if high_only:
        return ("high",)
    return LEVELS


def _level_files(level_dir: str) -> list[str]:
    """``all.txt`` of the folder if present, else its ``*.txt`` files by name; [] without a folder."""
    if not _fs.isdir(level_dir):
        return []
    all_txt = os.path.join(level_dir, "all.txt")
    if _fs.isfile(all_txt):
        return [all_txt]
    names = sorted(n.rstrip("/") for n in _fs.listdir(level_dir) if n.rstrip("/").endswith(".txt"))
    return [os.path.join(level_dir, n) for n in names]


def _level_sources(data_dir: str, split: str, middle_only: bool, high_only: bool) -> list[tuple[str, str]]:
    """(level, path) of every file to read, in reading order; RaceDataError when there is none."""
    if not split or "/" in split or split in (".", ".."):
        raise RaceDataError(f"bad RACE split name {split!r} (expected a folder name such as train, dev, test)")
    if _fs.isfile(data_dir):
        raise RaceDataError(f"--data_dir={data_dir} is a file, not a directory (the folder that holds RACE/)")
    sources: list[tuple[str, str]] = []
    empty: list[str] = []
    for level in _levels(middle_only, high_only):
        level_dir = os.path.join(data_dir, "RACE", split, level)
        found = _level_files(level_dir)
        if not found:
            empty.append(level_dir)
        sources.extend((level, path) for path in found)
    if not sources:
        raise RaceDataError(f"no RACE data for split {split!r}: no all.txt or *.txt in {', '.join(empty)}")
    for level_dir in empty:
        logger.warning("%s: no all.txt or *.txt; this level is not read", level_dir)
    return sources


def race_source_files(data_dir: str, split: str, middle_only: bool = False, high_only: bool = False) -> list[str]:
    """The files :func:`read_race_examples` reads for this split and level filter, in reading order."""
    return [path for _, path in _level_sources(data_dir, split, middle_only, high_only)]


def _decode(path: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise RaceDataError(f"{path}: line {line}: not UTF-8 text (invalid byte at offset {e.start})") from None


def _json_objects(path: str, text: str) -> list[tuple[int, Any]]:
    """(first line, object) of every JSON value in ``text``: the whole file as one value, or one per line."""
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg != "Extra data":  # one broken value (a pretty-printed file or the first line of all.txt)
            raise RaceDataError(f"{path}: line {e.lineno}: not JSON (column {e.colno}: {e.msg})") from None
    else:
        leading = len(text) - len(text.lstrip())
        return [(text.count("\n", 0, leading) + 1, whole)]
    objects = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            objects.append((lineno, json.loads(line)))
        except json.JSONDecodeError as e:
            raise RaceDataError(f"{path}: line {lineno}: not JSON (column {e.colno}: {e.msg})") from None
    return objects


def _check_passage(where: str, obj: Any, labelled: bool) -> None:
    """Raise RaceDataError (prefixed by ``where``) unless ``obj`` is a well-formed passage."""
    if not isinstance(obj, dict):
        raise RaceDataError(f"{where}: expected a JSON object (a RACE passage), got {type(obj).__name__}")
    missing = [k for k in _KEYS if obj.get(k) is None and (k != "answers" or labelled)]
    if missing:
        raise RaceDataError(f"{where}: passage without {', '.join(repr(k) for k in missing)} (keys: {sorted(obj)})")
    if not isinstance(obj["id"], str) or not obj["id"]:
        raise RaceDataError(f"{where}: 'id' must be a non-empty string, got {obj['id']!r}")
    if not isinstance(obj["article"], str):
        raise RaceDataError(f"{where}: 'article' must be a string, got {type(obj['article']).__name__}")
    lists = {k: obj[k] for k in ("questions", "options", "answers") if obj.get(k) is not None}
    for k, v in lists.items():
        if not isinstance(v, list):
            raise RaceDataError(f"{where}: {k!r} must be a list, got {type(v).__name__}")
    if len({len(v) for v in lists.values()}) > 1:
        sizes = ", ".join(f"{len(v)} {k}" for k, v in lists.items())
        raise RaceDataError(f"{where}: list lengths disagree ({sizes}); expected one entry per question")
    for i, question in enumerate(obj["questions"]):
        if not isinstance(question, str):
            raise RaceDataError(f"{where}: question {i}: expected a string, got {type(question).__name__}")
        options = obj["options"][i]
        if not isinstance(options, list) or len(options) != NUM_CHOICES:
            got = f"{len(options)}" if isinstance(options, list) else type(options).__name__
            raise RaceDataError(f"{where}: question {i}: expected {NUM_CHOICES} options, got {got}")
        if not all(isinstance(o, str) for o in options):
            raise RaceDataError(f"{where}: question {i}: every option must be a string, got {options!r}")
        if "answers" in lists and obj["answers"][i] not in LABELS:
            raise RaceDataError(f"{where}: question {i}: answer {obj['answers'][i]!r} is not one of A, B, C, D")


def _read_file(path: str, level: str, labelled: bool, seen: dict[str, str]) -> tuple[list[RaceExample], str, int]:
    """Examples of one file, the sha256 of its bytes and the number of unlabelled questions."""
    raw = _fs.read_bytes(path)
    examples: list[RaceExample] = []
    unlabelled = 0
    for lineno, obj in _json_objects(path, _decode(path, raw)):
        where = f"{path}: line {lineno}"
        _check_passage(where, obj, labelled)
        pid = obj["id"]
        if pid in seen:
            raise RaceDataError(f"{where}: passage id {pid!r} already read from {seen[pid]}")
        seen[pid] = where
        answers = obj.get("answers")
        if answers is None:
            unlabelled += len(obj["questions"])
        for i, question in enumerate(obj["questions"]):
            label = None if answers is None else ord(answers[i]) - ord("A")
            examples.append(RaceExample(f"{pid}-{i}", obj["article"], question, tuple(obj["options"][i]), label, level))
    return examples, hashlib.sha256(raw).hexdigest(), unlabelled


def read_race_split(
    data_dir: str, split: str, middle_only: bool = False, high_only: bool = False
) -> tuple[list[RaceExample], list[tuple[str, str]]]:
    """:func:`read_race_examples` plus ``(path relative to data_dir, sha256)`` of every file read.

    The digests come from the bytes that were parsed (one read per file), for the feature cache's key.
    """
    examples: list[RaceExample] = []
    digests: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    unlabelled = 0
    labelled = split in _LABELLED_SPLITS
    for level, path in _level_sources(data_dir, split, middle_only, high_only):
        file_examples, digest, n_unlabelled = _read_file(path, level, labelled, seen)
        examples.extend(file_examples)
        digests.append((path[len(data_dir) :].lstrip("/\\"), digest))  # joined onto data_dir: relative name
        unlabelled += n_unlabelled
    if unlabelled:
        logger.warning("RACE %s: %d of %d questions have no answer (unlabelled)", split, unlabelled, len(examples))
    if not examples:
        raise RaceDataError(f"no RACE questions for split {split!r} in {len(digests)} file(s) under {data_dir}")
    logger.info("RACE %s: %d questions from %d passages in %d file(s)", split, len(examples), len(seen), len(digests))
    return examples, digests


def read_race_examples(
    data_dir: str, split: str, middle_only: bool = False, high_only: bool = False
) -> list[RaceExample]:
    """The questions of ``data_dir/RACE/<split>/{middle,high}``, in reading order (see the module docstring).

    ``data_dir`` is the folder holding ``RACE/`` (the official ``--data_dir``); ``middle_only`` / ``high_only``
    read one level (the official flags). Raises :class:`RaceDataError` on bad input.
    """
    return read_race_split(data_dir, split, middle_only, high_only)[0]
