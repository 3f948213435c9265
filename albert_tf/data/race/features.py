"""RACE questions -> four packed choices (official ``race_utils.py: convert_single_example``).

For option j of a question: ``qa = question.replace("_", option)`` when the question contains "_" (a cloze
question), else ``question + " " + option``. The qa pieces are cut to their **last** ``max_qa_length``; the
article pieces are cut from the end to ``max_seq_length - 3 - len(qa)``; the choice is ``[CLS] article [SEP] qa
[SEP]`` with segment ids 0 for ``[CLS]`` + article + ``[SEP]`` and 1 for qa + ``[SEP]``, mask 1 on the tokens, all
zero-padded to ``max_seq_length``. The four choices are concatenated ("flattened") to ``4 * max_seq_length``.

As the official, with a SentencePiece tokenizer each field (article, question, option) is pre-processed
(``preprocess_text``) *before* the cloze test and the concatenation, and the joined text is then encoded without a
second pass (``tokenize(..., preprocessed=True)``); a WordPiece tokenizer gets the raw text (official
``process_text`` is ``convert_to_unicode`` there). The article is tokenized once per passage, not once per question
(the pieces are the same). What was cut is counted per feature (``article_cut``, ``qa_cut``) for the report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from albert_tf.data.race.reader import NUM_CHOICES, RaceExample

__all__ = ["UNLABELLED", "RaceFeature", "check_lengths", "convert_example", "convert_examples", "qa_text"]

# label_ids of a question without an answer (the record needs an int). Never a class index: an unlabelled
# question must not reach a loss or an accuracy (accuracy would count it wrong, sparse cross-entropy fails).
UNLABELLED = -1


@dataclasses.dataclass
class RaceFeature:
    """One question as model input: ids, mask and segment ids of its four choices, each ``4 * max_seq_length``
    long (choice j at ``[j * L, (j + 1) * L)``).

    ``label``: the answer index 0..3, :data:`UNLABELLED` (-1) without an answer. ``is_real_example``: False only
    for padding features. ``article_cut`` / ``qa_cut``: how many of the four choices had their article / qa cut.
    """

    input_ids: list[int]
    input_mask: list[int]
    segment_ids: list[int]
    label: int
    is_real_example: bool = True
    article_cut: int = 0
    qa_cut: int = 0


def check_lengths(max_seq_length: int, max_qa_length: int) -> None:
    """ValueError unless a choice has room for [CLS], [SEP], [SEP] and a qa of up to ``max_qa_length`` pieces.

    The official code slices with ``[-max_qa_length:]`` and ``[:max_seq_length - 3 - len(qa)]``, which silently
    keeps everything for ``max_qa_length = 0`` or a negative room; both are refused here.
    """
    if max_qa_length < 1:
        raise ValueError(f"max_qa_length={max_qa_length} must be at least 1")
    if max_qa_length > max_seq_length - 3:
        raise ValueError(
            f"max_qa_length={max_qa_length} leaves no room in max_seq_length={max_seq_length} for [CLS] [SEP] [SEP]"
            f" (need max_qa_length <= max_seq_length - 3 = {max_seq_length - 3})"
        )


def _text_functions(tokenizer: Any) -> tuple[Callable[[str], str], Callable[[str], list[str]]]:
    """(pre-process one field, field text -> pieces), as the official ``process_text`` + ``tokenize``."""
    if getattr(tokenizer, "sp_model", None) is not None and hasattr(tokenizer, "preprocess"):
        return tokenizer.preprocess, lambda text: tokenizer.tokenize(text, preprocessed=True)
    return (lambda text: text), tokenizer.tokenize


def qa_text(question: str, option: str) -> str:
    """The second segment of a choice: the option in the blank of a cloze question, else after the question."""
    return question.replace("_", option) if "_" in question else question + " " + option


def _convert(
    example: RaceExample,
    tokenizer: Any,
    max_seq_length: int,
    max_qa_length: int,
    article_ids: list[int],
    text_functions: tuple[Callable[[str], str], Callable[[str], list[str]]],
) -> RaceFeature:
    prep, tokenize = text_functions
    cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    question = prep(example.question)
    input_ids: list[int] = []
    input_mask: list[int] = []
    segment_ids: list[int] = []
    article_cut = qa_cut = 0
    for option in example.options:
        qa_pieces = tokenize(qa_text(question, prep(option)))
        qa_cut += len(qa_pieces) > max_qa_length
        qa_ids = tokenizer.convert_tokens_to_ids(qa_pieces[-max_qa_length:])
        room = max_seq_length - 3 - len(qa_ids)
        article_cut += len(article_ids) > room
        ids = [cls_id, *article_ids[:room], sep_id, *qa_ids, sep_id]
        first = min(len(article_ids), room) + 2
        pad = [0] * (max_seq_length - len(ids))
        input_ids += ids + pad
        input_mask += [1] * len(ids) + pad
        segment_ids += [0] * first + [1] * (len(ids) - first) + pad
    label = UNLABELLED if example.label is None else int(example.label)
    return RaceFeature(input_ids, input_mask, segment_ids, label, True, article_cut, qa_cut)


def _check_example(example: RaceExample) -> None:
    if len(example.options) != NUM_CHOICES:
        n = len(example.options)
        raise ValueError(f"RACE example {example.example_id}: expected {NUM_CHOICES} options, got {n}")


def convert_example(example: RaceExample, tokenizer: Any, max_seq_length: int, max_qa_length: int) -> RaceFeature:
    """One question -> its four packed choices, flattened (see the module docstring)."""
    check_lengths(max_seq_length, max_qa_length)
    _check_example(example)
    functions = _text_functions(tokenizer)
    article_ids = tokenizer.convert_tokens_to_ids(functions[1](functions[0](example.article)))
    return _convert(example, tokenizer, max_seq_length, max_qa_length, article_ids, functions)


def convert_examples(
    examples: Iterable[RaceExample], tokenizer: Any, max_seq_length: int, max_qa_length: int
) -> Iterator[RaceFeature]:
    """:func:`convert_example` of each example, in order, tokenizing an article once for the consecutive
    questions of its passage (the same features, several times faster on RACE's long articles)."""
    check_lengths(max_seq_length, max_qa_length)
    functions = _text_functions(tokenizer)
    article: str | None = None
    article_ids: list[int] = []
    for example in examples:
        _check_example(example)
        if example.article != article:
            article = example.article
            article_ids = tokenizer.convert_tokens_to_ids(functions[1](functions[0](article)))
        yield _convert(example, tokenizer, max_seq_length, max_qa_length, article_ids, functions)
