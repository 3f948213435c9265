"""SQuAD questions -> fixed-length windows (official ``squad_utils.py: convert_examples_to_features``).

Per question: query ids ``encode_ids(preprocess_text(question, lower))`` cut to ``max_query_length``; paragraph
pieces ``encode_pieces(preprocess_text(context, lower))`` aligned with the original characters
(:mod:`~albert_tf.data.squad.alignment`); the answer's character span mapped to a token span; sliding windows of
``max_seq_length - len(query) - 3`` document tokens advancing by ``min(length, doc_stride)``; each window laid out
as ``[CLS] query [SEP] doc [SEP]`` (segment ids 0 / 1; ``p_mask`` 0 on ``[CLS]`` and document tokens, 1
elsewhere; zero padding) with ``token_is_max_context`` from the official max-context score
``min(left, right) + 0.01 * span_length``. A window without the answer (and every window of an impossible
question) is labelled ``start = end = 0`` and ``is_impossible``.

Differences from the official, on purpose:

* gold labels are computed for every question that has an answer, also for prediction files (the official only
  when training): a diagnostic needs the gold span of prediction windows. ``is_training`` only decides what is
  a hard requirement;
* problems are reported (:class:`ConversionReport`) instead of logged and forgotten: alignment mismatches (no
  features, as the official), questions that needed the doubled alignment band, truncated questions, several
  gold answers, and answers whose characters cannot be mapped to tokens (the official asserts: training drops
  the question, prediction keeps its windows without a gold span);
* ``example_index`` is always set (the official sets None for training features); ``doc_offset`` is stored.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Sequence
from typing import Any

from albert_tf.data.squad.alignment import AlignmentCache, ParagraphAlignment
from albert_tf.data.squad.reader import SquadDataError, SquadExample
from albert_tf.tokenization.preprocess import preprocess_text
from albert_tf.tokenization.sentencepiece_tokenizer import encode_ids, encode_pieces

logger = logging.getLogger(__name__)

__all__ = ["FIRST_UNIQUE_ID", "ConversionReport", "SquadFeature", "convert_examples_to_features", "doc_spans"]

FIRST_UNIQUE_ID = 1000000000  # the official first unique_id


@dataclasses.dataclass
class SquadFeature:
    """One window of one question: model inputs plus what post-processing needs to map back to text.

    ``tok_{start,end}_to_orig_index[t]``: character offsets in ``paragraph_text`` of the window's document token
    ``t`` (position ``doc_offset + t`` in ``input_ids``). ``token_is_max_context``: keyed by position in
    ``input_ids``. ``start_position``/``end_position``: the gold span as positions in ``input_ids`` (0 = [CLS]
    when the answer is not in this window or the question is impossible), None when the question is unlabeled.
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    doc_offset: int
    tok_start_to_orig_index: list[int]
    tok_end_to_orig_index: list[int]
    token_is_max_context: dict[int, bool]
    input_ids: list[int]
    input_mask: list[int]
    segment_ids: list[int]
    p_mask: list[int]
    paragraph_len: int
    start_position: int | None
    end_position: int | None
    is_impossible: bool | None


@dataclasses.dataclass
class ConversionReport:
    """What the conversion could not use as is; nothing is dropped silently.

    ``mismatched``: questions whose paragraph failed the 80% alignment rule (official "MISMATCH DETECTED!": no
    features). ``doubled_band``: questions whose alignment needed the doubled band. ``truncated_queries``:
    questions longer than ``max_query_length`` (cut, features kept). ``several_answers``: training questions with
    more than one gold answer (the first is used). ``unmapped_answers``: answers whose characters could not be
    mapped to a token span (training: no features; prediction: windows without a gold span).
    """

    num_examples: int = 0
    num_features: int = 0
    mismatched: list[str] = dataclasses.field(default_factory=list)
    doubled_band: list[str] = dataclasses.field(default_factory=list)
    truncated_queries: list[str] = dataclasses.field(default_factory=list)
    several_answers: int = 0
    unmapped_answers: list[str] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> ConversionReport:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def log_lines(self, path: str) -> list[str]:
        """One line per problem, naming ``path`` and the question id, plus a summary line first."""
        lines = [
            f"{path}: {self.num_examples} questions -> {self.num_features} features; "
            f"{len(self.mismatched)} without features (alignment mismatch), "
            f"{len(self.unmapped_answers)} with an unmappable answer, {len(self.truncated_queries)} truncated "
            f"questions, {len(self.doubled_band)} needed the doubled alignment band, "
            f"{self.several_answers} training questions with several answers (first used)"
        ]
        lines += [
            f"{path}: question {q}: paragraph and pieces align on less than 80% of the characters "
            "(official 'MISMATCH DETECTED!'): no features"
            for q in self.mismatched
        ]
        lines += [f"{path}: question {q}: the answer cannot be mapped to a token span" for q in self.unmapped_answers]
        lines += [f"{path}: question {q}: question cut to max_query_length tokens" for q in self.truncated_queries]
        lines += [f"{path}: question {q}: alignment needed the doubled band" for q in self.doubled_band]
        return lines


@dataclasses.dataclass(frozen=True)
class _DocSpan:
    start: int
    length: int


def doc_spans(num_tokens: int, max_tokens_for_doc: int, doc_stride: int) -> list[_DocSpan]:
    """The official sliding windows: at most ``max_tokens_for_doc`` tokens, advancing by ``min(length, stride)``."""
    spans: list[_DocSpan] = []
    start = 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens_for_doc)
        spans.append(_DocSpan(start, length))
        if start + length == num_tokens:
            break
        start += min(length, doc_stride)
    return spans


def _max_context_span(spans: Sequence[_DocSpan], position: int) -> int | None:
    """Index of the span where ``position`` has the most context (official ``_check_is_max_context``: score
    ``min(left, right) + 0.01 * length``, first span wins ties)."""
    best_score, best = None, None
    for index, span in enumerate(spans):
        end = span.start + span.length - 1
        if position < span.start or position > end:
            continue
        score = min(position - span.start, end - position) + 0.01 * span.length
        if best_score is None or score > best_score:
            best_score, best = score, index
    return best


def _check_settings(tokenizer: Any, max_seq_length: int, doc_stride: int, max_query_length: int) -> None:
    if getattr(tokenizer, "sp_model", None) is None:
        raise SquadDataError(
            "SQuAD features need a SentencePiece tokenizer (FullTokenizer(spm_model_file=...)); the character "
            "alignment works on SentencePiece pieces, as the official squad_utils.py"
        )
    check_window_settings(max_seq_length, doc_stride, max_query_length)


def check_window_settings(max_seq_length: int, doc_stride: int, max_query_length: int) -> None:
    """The one check of SQuAD's window settings (``run_squad``, its export, the span-upper-bound diagnostic and the
    feature builder): ``[CLS] question [SEP] context [SEP]`` must leave room for at least one context token."""
    if max_query_length < 1:
        raise SquadDataError(f"--max_query_length must be at least 1, got {max_query_length}")
    if max_seq_length <= max_query_length + 3:
        raise SquadDataError(
            f"--max_seq_length={max_seq_length} is too short: max_seq_length must be greater than --max_query_length "
            f"({max_query_length}) + 3, or [CLS] question [SEP] context [SEP] leaves no room for the context"
        )
    if doc_stride < 1:
        raise SquadDataError(f"--doc_stride must be at least 1, got {doc_stride}")


def convert_examples_to_features(
    examples: Sequence[SquadExample],
    tokenizer: Any,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    is_training: bool,
    do_lower_case: bool = True,
) -> tuple[list[SquadFeature], ConversionReport]:
    """Windows of every question, in order (see the module docstring), and the report of what was not used.

    ``tokenizer`` is a SentencePiece ``FullTokenizer``; its ``keep_accents`` / ``official_digit_comma`` switches
    are honoured (defaults = official). Unique ids start at 1000000000.
    """
    _check_settings(tokenizer, max_seq_length, doc_stride, max_query_length)
    sp = tokenizer.sp_model
    keep_accents = bool(getattr(tokenizer, "keep_accents", False))
    digit_comma = bool(getattr(tokenizer, "official_digit_comma", True))
    prep = functools.partial(preprocess_text, lower=do_lower_case, keep_accents=keep_accents)
    aligner = AlignmentCache(
        encode=lambda text: encode_pieces(sp, prep(text), official_digit_comma=digit_comma),
        normalize_char=functools.partial(prep, remove_space=False),
    )
    cls_id, sep_id = tokenizer.cls_id, tokenizer.sep_id

    report = ConversionReport(num_examples=len(examples))
    features: list[SquadFeature] = []
    unique_id = FIRST_UNIQUE_ID
    for example_index, example in enumerate(examples):
        if is_training and not example.is_impossible and len(example.answers) > 1:
            report.several_answers += 1
        query = encode_ids(sp, prep(example.question_text), official_digit_comma=digit_comma)
        if len(query) > max_query_length:
            query = query[:max_query_length]
            report.truncated_queries.append(example.qas_id)

        alignment = aligner.get(example.paragraph_text)
        if alignment.doubled_band:
            report.doubled_band.append(example.qas_id)
        if alignment.mismatched:
            report.mismatched.append(example.qas_id)
            continue

        labelled, gold = _gold_token_span(example, alignment)
        if labelled and not example.is_impossible and gold is None:
            report.unmapped_answers.append(example.qas_id)
            if is_training:
                continue
            labelled = False

        doc_ids = [sp.PieceToId(p) for p in alignment.pieces]
        spans = doc_spans(len(doc_ids), max_seq_length - len(query) - 3, doc_stride)
        doc_offset = len(query) + 2
        for span_index, span in enumerate(spans):
            window = range(span.start, span.start + span.length)
            input_ids = [cls_id, *query, sep_id, *(doc_ids[t] for t in window), sep_id]
            segment_ids = [0] * doc_offset + [1] * (span.length + 1)
            p_mask = [0] + [1] * (len(query) + 1) + [0] * span.length + [1]
            paragraph_len = len(input_ids)
            pad = max_seq_length - paragraph_len
            start_position = end_position = is_impossible = None
            if labelled:
                start_position, end_position, is_impossible = _window_label(example, gold, span, doc_offset)
            features.append(
                SquadFeature(
                    unique_id=unique_id,
                    example_index=example_index,
                    doc_span_index=span_index,
                    doc_offset=doc_offset,
                    tok_start_to_orig_index=[alignment.tok_start_to_orig_index[t] for t in window],
                    tok_end_to_orig_index=[alignment.tok_end_to_orig_index[t] for t in window],
                    token_is_max_context={
                        doc_offset + k: _max_context_span(spans, t) == span_index for k, t in enumerate(window)
                    },
                    input_ids=input_ids + [0] * pad,
                    input_mask=[1] * paragraph_len + [0] * pad,
                    segment_ids=segment_ids + [0] * pad,
                    p_mask=p_mask + [1] * pad,
                    paragraph_len=paragraph_len,
                    start_position=start_position,
                    end_position=end_position,
                    is_impossible=is_impossible,
                )
            )
            unique_id += 1
    report.num_features = len(features)
    return features, report


def _gold_token_span(example: SquadExample, alignment: ParagraphAlignment) -> tuple[bool, tuple[int, int] | None]:
    """``(labelled, token span)``: whether the question has a gold answer, and its token span in the paragraph
    (None when impossible, or when the characters cannot be mapped / the end maps before the start)."""
    if example.orig_answer_text is None or example.start_position is None:
        return False, None
    if example.is_impossible:
        return True, None
    span = alignment.answer_token_span(example.start_position, len(example.orig_answer_text))
    if span is None or span[0] > span[1]:
        return True, None
    return True, span


def _window_label(
    example: SquadExample, gold: tuple[int, int] | None, span: _DocSpan, doc_offset: int
) -> tuple[int, int, bool]:
    """The official training label of one window: the gold positions in ``input_ids``, or (0, 0, impossible)."""
    if example.is_impossible or gold is None:
        return 0, 0, True
    tok_start, tok_end = gold
    if not (tok_start >= span.start and tok_end <= span.start + span.length - 1):
        return 0, 0, True
    return tok_start - span.start + doc_offset, tok_end - span.start + doc_offset, False
