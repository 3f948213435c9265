"""The SQuAD JSON reader (official ``squad_utils.py: read_squad_examples``): file -> validated questions.

Layout (v1.1 and v2.0): ``{"data": [{"paragraphs": [{"context": str, "qas": [{"id": str, "question": str,
"answers": [{"text": str, "answer_start": int}, ...], "is_impossible": bool}]}]}]}``.

Every structural problem is a :class:`SquadDataError` with one line naming the file and, where there is one, the
question id -- raised while reading, before any tokenisation starts. Differences from the official reader:

* answers are read for prediction files too (the scorer and the span diagnostics need them); the official reads
  them only for training;
* a training question with several answers uses the first one (official: "exactly 1 answer" error); the count is
  reported by the feature conversion (``ConversionReport.several_answers``);
* an ``is_impossible`` training question without ``version_2_with_negative`` is an error (a v1 model cannot learn
  it; the official silently turns it into an all-[CLS] target);
* the training answer is checked against the context (``context[start:start+len(text)] == text``); for prediction
  files a bad or out-of-range ``answer_start`` only makes the question unlabeled for span diagnostics (logged).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

from albert_tf import files as _fs

logger = logging.getLogger(__name__)

__all__ = ["SquadDataError", "SquadExample", "read_squad_examples", "read_squad_json"]


class SquadDataError(ValueError):
    """A SQuAD file (or a conversion setting) that cannot be used; one line naming the file and question id."""


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question with its paragraph.

    ``answers``: every gold answer text in file order (``()`` for impossible or unlabeled questions).
    ``orig_answer_text`` / ``start_position``: the answer the token span is built from (the first gold answer and
    its character offset); ``""`` / ``-1`` when impossible; ``None`` / ``None`` when the question is unlabeled.
    """

    qas_id: str
    question_text: str
    paragraph_text: str
    answers: tuple[str, ...]
    orig_answer_text: str | None
    start_position: int | None
    is_impossible: bool


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _load_json(path: str) -> Any:
    if _fs.isdir(path):
        raise SquadDataError(f"{path} is a directory; a SQuAD JSON file is expected (e.g. {path.rstrip('/')}/"
                             "train-v2.0.json)")
    if not _fs.isfile(path):
        raise SquadDataError(f"{path}: no such file")
    raw = _fs.read_bytes(path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise SquadDataError(f"{path}: not UTF-8 text (invalid byte at offset {e.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise SquadDataError(f"{path}: not JSON (line {e.lineno} column {e.colno}: {e.msg})") from None


def _check_question(path: str, where: str, qa: Any, seen: set[str]) -> None:
    if not isinstance(qa, dict):
        raise SquadDataError(f"{path}: {where}: expected a question object, got {type(qa).__name__}")
    qid = qa.get("id")
    if not isinstance(qid, str) or not qid:
        raise SquadDataError(f"{path}: {where}: question without an 'id' string")
    if qid in seen:
        raise SquadDataError(f"{path}: question {qid}: duplicate id")
    seen.add(qid)
    if not isinstance(qa.get("question"), str):
        raise SquadDataError(f"{path}: question {qid}: no 'question' string")
    if not isinstance(qa.get("is_impossible", False), bool):
        raise SquadDataError(f"{path}: question {qid}: 'is_impossible' must be true or false")
    answers = qa.get("answers")
    if answers is None:
        return
    if not isinstance(answers, list):
        raise SquadDataError(f"{path}: question {qid}: 'answers' must be a list")
    for k, answer in enumerate(answers):
        if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
            raise SquadDataError(f"{path}: question {qid}: answers[{k}] has no 'text' string")


def read_squad_json(path: str) -> list[dict]:
    """The validated ``data`` list of a SQuAD file (for the scorer and :func:`read_squad_examples`).

    Checks the layout (``data`` list, paragraphs with a ``context`` string and a ``qas`` list, questions with a
    unique ``id`` and a ``question``, answers with a ``text``); raises :class:`SquadDataError` otherwise.
    """
    top = _load_json(path)
    if not isinstance(top, dict) or not isinstance(top.get("data"), list):
        got = type(top).__name__ if not isinstance(top, dict) else f"keys {sorted(top)[:5]}"
        raise SquadDataError(f"{path}: not a SQuAD file (expected an object with a 'data' list, got {got})")
    seen: set[str] = set()
    for a, article in enumerate(top["data"]):
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            raise SquadDataError(f"{path}: data[{a}]: expected an object with a 'paragraphs' list")
        for p, paragraph in enumerate(article["paragraphs"]):
            where = f"data[{a}].paragraphs[{p}]"
            if not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str):
                raise SquadDataError(f"{path}: {where}: paragraph without a 'context' string")
            if not isinstance(paragraph.get("qas"), list):
                raise SquadDataError(f"{path}: {where}: paragraph without a 'qas' list")
            for q, qa in enumerate(paragraph["qas"]):
                _check_question(path, f"{where}.qas[{q}]", qa, seen)
    return top["data"]


def _valid_start(context: str, answer: dict) -> bool:
    start = answer.get("answer_start")
    return isinstance(start, int) and not isinstance(start, bool) and 0 <= start <= len(context)


def _training_answer(path: str, qid: str, context: str, answers: list | None) -> tuple[str, int]:
    if not answers:
        raise SquadDataError(f"{path}: question {qid}: a training question needs 'answers' (or is_impossible)")
    answer = answers[0]
    start = answer.get("answer_start")
    if not isinstance(start, int) or isinstance(start, bool):
        raise SquadDataError(f"{path}: question {qid}: 'answer_start' must be an integer, got {start!r}")
    text = answer["text"]
    found = context[start : start + len(text)] if start >= 0 else ""
    if found != text:
        raise SquadDataError(
            f"{path}: question {qid}: the answer does not match the context at answer_start={start}: "
            f"answer {_short(text)} vs context {_short(found)}"
        )
    return text, start


def read_squad_examples(path: str, is_training: bool, version_2_with_negative: bool = False,
                        dataset: list[dict] | None = None) -> list[SquadExample]:
    """Questions of a SQuAD v1.1/v2.0 file, in file order (validated; see the module docstring). ``dataset``: the
    file's ``data`` list when the caller parsed it already (:func:`read_squad_json`), so the file is read once."""
    examples: list[SquadExample] = []
    unusable_starts: list[str] = []
    for article in read_squad_json(path) if dataset is None else dataset:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                qid = qa["id"]
                is_impossible = bool(qa.get("is_impossible", False))
                answers = qa.get("answers")
                if is_impossible:
                    if is_training and not version_2_with_negative:
                        raise SquadDataError(
                            f"{path}: question {qid}: is_impossible in training data, but "
                            "version_2_with_negative is off (a SQuAD v1 model cannot learn unanswerable questions)"
                        )
                    texts: tuple[str, ...] = ()
                    orig: str | None = ""
                    start: int | None = -1
                elif is_training:
                    orig, start = _training_answer(path, qid, context, answers)
                    texts = tuple(a["text"] for a in answers)
                elif answers:
                    texts = tuple(a["text"] for a in answers)
                    if _valid_start(context, answers[0]):
                        orig, start = answers[0]["text"], answers[0]["answer_start"]
                    else:
                        orig = start = None
                        unusable_starts.append(qid)
                else:
                    texts, orig, start = (), None, None
                examples.append(SquadExample(qid, qa["question"], context, texts, orig, start, is_impossible))
    if unusable_starts:
        logger.warning(
            "%s: %d question(s) have no usable answer_start (scored, but no gold token span): %s",
            path,
            len(unusable_starts),
            ", ".join(unusable_starts[:10]) + (" ..." if len(unusable_starts) > 10 else ""),
        )
    return examples
