"""GLUE tasks: TSV processors, feature conversion and a keyed TFRecord cache (spec 4.1).

What the official ``classifier_utils.py`` does, and where we differ on purpose:

* Processors read the original GLUE TSV layouts: ``data_dir`` is the GLUE root and each task
  reads ``data_dir/<TASK DIR>/<split>.tsv`` with the official column indexes (0-based). CoLA
  train/dev have no header, every other file has one; MRPC files start with a UTF-8 BOM; QQP
  train/dev rows that are too short are skipped (the official ``except IndexError: continue``),
  but we **count** them and log the count (``GlueProcessor.last_report``).
* Bad input is an error, not a crash deep inside training: a row with a wrong column count, a
  label outside the task's label set (or a non-number for STS-B) or bytes that are not UTF-8
  raise ``GlueDataError`` naming the file, the 1-based line and the expected layout.
* Text goes through the tokenizer, whose ``tokenize`` applies the official ``preprocess_text``
  (the official processors apply it to every field first; it is idempotent, so the result is
  the same). Labels are stripped (and, as ``preprocess_text`` does, lower-cased).
* Pair truncation is the official ``_truncate_seq_pair`` (``albert_tf.tokenization.packing``,
  shared with the in-graph preprocessor): pop from the end of the longer side (the second on
  ties) until ``len(a) + len(b) <= max_seq_length - 3``; a single sentence is cut to
  ``max_seq_length - 2``.
* The official cache reuses ``<task>_train.tf_record`` whenever it exists, even after a flag
  changed. Ours is keyed by everything that affects the features (content hash of the TSV,
  tokenizer identity, ``max_seq_length``, task, split, labels, format version), so a stale
  cache is never read.
* ``mnli-mm`` (official key ``mismnli``) and ``ax`` (official ``AXProcessor``, not registered
  there) are registered here; AX is predicted with an MNLI model (same labels).
* MRPC can also be read from the raw Microsoft files (``msr_paraphrase_train.txt`` +
  ``dev_ids.tsv``), split exactly as GLUE's download script does, when ``train.tsv`` is absent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from albert_tf.tokenization.packing import pack_inputs

logger = logging.getLogger(__name__)

# Bump when the record layout or the conversion changes: it is part of every cache key.
FEATURE_FORMAT_VERSION = 1

TRAIN, DEV, TEST = "train", "dev", "test"


class GlueDataError(ValueError):
    """Malformed GLUE input; the message names the file, the line and the expected layout."""


@dataclasses.dataclass(frozen=True)
class InputExample:
    """One GLUE example: ``label`` is a label string, a float (STS-B) or None (test split)."""

    guid: str
    text_a: str
    text_b: str | None = None
    label: str | float | None = None


@dataclasses.dataclass
class ReadReport:
    """What reading one file did: rows read and rows skipped (with their line numbers)."""

    path: str
    examples: int = 0
    skipped_short_rows: int = 0
    skipped_lines: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class SplitLayout:
    """Where the fields of one split live in its TSV (0-based columns; -1 = last column)."""

    filename: str
    header: bool
    text_a: int
    text_b: int | None = None
    label: int | None = None
    guid: int | None = None
    num_columns: int | None = None  # exact count for header-less files (CoLA)
    column_names: tuple[str, ...] = ()  # for error messages of header-less files

    def describe(self, header_names: Sequence[str] | None) -> str:
        names = list(header_names or self.column_names)
        parts = [f"text_a=col {self.text_a}"]
        if self.text_b is not None:
            parts.append(f"text_b=col {self.text_b}")
        if self.label is not None:
            parts.append("label=last col" if self.label == -1 else f"label=col {self.label}")
        if self.guid is not None:
            parts.append(f"guid=col {self.guid}")
        cols = f"{len(names)} tab-separated columns ({', '.join(names)})" if names else "tab-separated columns"
        head = "a header line, then " if self.header else "no header, "
        return f"{head}{cols}; reads {', '.join(parts)}"


class GlueProcessor:
    """Reads one GLUE task. Subclasses only declare their layout; see module docstring."""

    name: str = ""
    task_dir: str = ""
    dir_aliases: tuple[str, ...] = ()
    submission_name: str = ""
    labels: tuple[str, ...] | None = None  # None: regression (num_labels = 1)
    key_metric: str = "accuracy"  # the official best-checkpoint key
    dummy_test_label: str = "0"
    layouts: dict[str, SplitLayout] = {}
    skip_short_rows: frozenset[str] = frozenset()  # splits where short rows are skipped (QQP)

    def __init__(self) -> None:
        self.last_report: ReadReport | None = None

    # ------------------------------------------------------------------ public API
    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def num_labels(self) -> int:
        return 1 if self.labels is None else len(self.labels)

    def get_labels(self) -> list[str] | None:
        return None if self.labels is None else list(self.labels)

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(self.layouts)

    def get_train_examples(self, data_dir: str) -> list[InputExample]:
        return self.get_examples(data_dir, TRAIN)

    def get_dev_examples(self, data_dir: str) -> list[InputExample]:
        return self.get_examples(data_dir, DEV)

    def get_test_examples(self, data_dir: str) -> list[InputExample]:
        return self.get_examples(data_dir, TEST)

    def split_path(self, data_dir: str, split: str) -> str:
        """The TSV file a split is read from (raises GlueDataError naming what was looked for)."""
        layout = self._layout(split)
        candidates = [os.path.join(data_dir, d, layout.filename) for d in (self.task_dir, *self.dir_aliases)]
        candidates.append(os.path.join(data_dir, layout.filename))  # data_dir is the task folder itself
        for path in candidates:
            if os.path.isfile(path):
                return path
        raise GlueDataError(
            f"{self.name}: no {split} file; looked for {', '.join(candidates)} "
            f"(--data_dir is the GLUE root that holds {self.task_dir}/)"
        )

    def source_paths(self, data_dir: str, split: str) -> list[str]:
        """The files whose content the features of ``split`` depend on (hashed into the cache key)."""
        return [self.split_path(data_dir, split)]

    def get_examples(self, data_dir: str, split: str) -> list[InputExample]:
        path = self.split_path(data_dir, split)
        return self.read_examples(path, split)

    def read_examples(self, path: str, split: str) -> list[InputExample]:
        """Parse one TSV file of ``split`` into examples, validating every row."""
        layout = self._layout(split)
        report = ReadReport(path=path)
        rows = read_tsv(path)
        header: list[str] | None = None
        if layout.header:
            if not rows:
                raise GlueDataError(f"{path}: empty file; expected {layout.describe(None)}")
            header = rows[0][1]
            rows = rows[1:]
        expected = layout.num_columns or (len(header) if header else None)
        needed = 1 + max(c for c in (layout.text_a, layout.text_b, layout.label, layout.guid) if c is not None)
        examples = []
        for line_no, cols in rows:
            where = f"{path}:{line_no}"
            if len(cols) < needed or (layout.label == -1 and len(cols) < 2):
                if split in self.skip_short_rows:
                    report.skipped_short_rows += 1
                    report.skipped_lines.append(line_no)
                    continue
                raise GlueDataError(
                    f"{where}: {len(cols)} column(s), expected {layout.describe(header)} ({self.name} {split})"
                )
            if expected is not None and len(cols) != expected:
                raise GlueDataError(
                    f"{where}: {len(cols)} columns, expected {layout.describe(header)} ({self.name} {split}); "
                    "a stray tab inside a sentence shifts every later column"
                )
            examples.append(self._make_example(cols, split, len(examples), layout, where, header))
        report.examples = len(examples)
        if report.skipped_short_rows:
            logger.warning(
                "%s: skipped %d row(s) with too few columns (official behaviour for %s), lines %s%s",
                path,
                report.skipped_short_rows,
                self.name,
                report.skipped_lines[:10],
                " ..." if len(report.skipped_lines) > 10 else "",
            )
        self.last_report = report
        return examples

    # ------------------------------------------------------------------ internals
    def _layout(self, split: str) -> SplitLayout:
        if split not in self.layouts:
            raise GlueDataError(f"task {self.name} has no {split!r} split; it has {', '.join(self.layouts)}")
        return self.layouts[split]

    def _make_example(
        self, cols: list[str], split: str, index: int, layout: SplitLayout, where: str, header: list[str] | None
    ) -> InputExample:
        guid = cols[layout.guid].strip() if layout.guid is not None else f"{split}-{index}"
        text_a = cols[layout.text_a]
        text_b = cols[layout.text_b] if layout.text_b is not None else None
        label: str | float | None = None
        if layout.label is not None:
            raw = cols[layout.label]
            label = self.parse_label(raw, where, layout, header)
        return InputExample(guid=guid, text_a=text_a, text_b=text_b, label=label)

    def parse_label(
        self, raw: str, where: str = "label", layout: SplitLayout | None = None, header: list[str] | None = None
    ) -> str | float:
        """A label string of this task (or a float for regression); GlueDataError otherwise."""
        text = raw.strip().lower()
        layout_text = f"; layout: {layout.describe(header)}" if layout is not None else ""
        if self.labels is None:
            try:
                value = float(text)
            except ValueError:
                raise GlueDataError(
                    f"{where}: label {raw!r} is not a number ({self.name} is regression){layout_text}"
                ) from None
            if not np.isfinite(value):
                raise GlueDataError(f"{where}: label {raw!r} is not a finite number{layout_text}")
            return value
        if text not in self.labels:
            raise GlueDataError(f"{where}: label {raw!r} is not one of {list(self.labels)} ({self.name}){layout_text}")
        return text


def _layouts(**kw: SplitLayout) -> dict[str, SplitLayout]:
    return dict(kw)


class ColaProcessor(GlueProcessor):
    name, task_dir, submission_name = "cola", "CoLA", "CoLA"
    labels = ("0", "1")
    key_metric = "matthews_corr"
    _cols = ("source", "label", "original label", "sentence")
    layouts = _layouts(
        train=SplitLayout("train.tsv", header=False, text_a=3, label=1, num_columns=4, column_names=_cols),
        dev=SplitLayout("dev.tsv", header=False, text_a=3, label=1, num_columns=4, column_names=_cols),
        test=SplitLayout("test.tsv", header=True, text_a=1, guid=0),
    )


class MnliProcessor(GlueProcessor):
    name, task_dir, submission_name = "mnli", "MNLI", "MNLI-m"
    labels = ("contradiction", "entailment", "neutral")
    dummy_test_label = "contradiction"
    layouts = _layouts(
        train=SplitLayout("train.tsv", header=True, text_a=8, text_b=9, label=-1, guid=0),
        dev=SplitLayout("dev_matched.tsv", header=True, text_a=8, text_b=9, label=-1, guid=0),
        test=SplitLayout("test_matched.tsv", header=True, text_a=8, text_b=9, guid=0),
    )


class MnliMismatchedProcessor(MnliProcessor):
    name, submission_name = "mnli-mm", "MNLI-mm"
    layouts = _layouts(
        train=MnliProcessor.layouts[TRAIN],
        dev=SplitLayout("dev_mismatched.tsv", header=True, text_a=8, text_b=9, label=-1, guid=0),
        test=SplitLayout("test_mismatched.tsv", header=True, text_a=8, text_b=9, guid=0),
    )


class AxProcessor(MnliProcessor):
    """GLUE diagnostic set: test only, predicted with an MNLI model (the official AXProcessor)."""

    name, task_dir, submission_name = "ax", "diagnostic", "AX"
    dir_aliases = ("AX", "ax")
    layouts = _layouts(test=SplitLayout("diagnostic.tsv", header=True, text_a=1, text_b=2, guid=0))

    def split_path(self, data_dir: str, split: str) -> str:
        # GLUE's download script writes diagnostic/diagnostic.tsv; other copies use AX.tsv/ax.tsv.
        for sub in ("diagnostic", "AX", "ax", ""):
            for name in ("diagnostic.tsv", "AX.tsv", "ax.tsv"):
                path = os.path.join(data_dir, sub, name)
                if os.path.isfile(path):
                    return path
        return super().split_path(data_dir, split)


class MrpcProcessor(GlueProcessor):
    name, task_dir, submission_name = "mrpc", "MRPC", "MRPC"
    labels = ("0", "1")
    layouts = _layouts(
        train=SplitLayout("train.tsv", header=True, text_a=3, text_b=4, label=0),
        dev=SplitLayout("dev.tsv", header=True, text_a=3, text_b=4, label=0),
        test=SplitLayout("test.tsv", header=True, text_a=3, text_b=4, guid=0),
    )

    def source_paths(self, data_dir: str, split: str) -> list[str]:
        try:
            return super().source_paths(data_dir, split)
        except GlueDataError:
            raw = _find_msr_files(data_dir, split)
            if raw is None:
                raise
            return [p for p in raw if p is not None]

    def get_examples(self, data_dir: str, split: str) -> list[InputExample]:
        try:
            path = self.split_path(data_dir, split)
        except GlueDataError:
            raw = _find_msr_files(data_dir, split)
            if raw is None:
                raise
            return self._read_msr(split, *raw)
        return self.read_examples(path, split)

    def _read_msr(self, split: str, path: str, dev_ids_path: str | None) -> list[InputExample]:
        """GLUE's download script: train/dev from msr_paraphrase_train.txt split by dev_ids; test from the test file."""
        layout = SplitLayout(path, header=True, text_a=3, text_b=4, label=0)
        rows = read_tsv(path)[1:]
        dev_ids = set()
        if dev_ids_path is not None:
            for line_no, cols in read_tsv(dev_ids_path):
                if len(cols) != 2:
                    raise GlueDataError(f"{dev_ids_path}:{line_no}: expected 2 tab-separated ids (#1 ID, #2 ID)")
                dev_ids.add((cols[0].strip(), cols[1].strip()))
        examples = []
        for line_no, cols in rows:
            where = f"{path}:{line_no}"
            if len(cols) != 5:
                raise GlueDataError(f"{where}: {len(cols)} columns, expected {layout.describe(None)} (raw MSR file)")
            if split == TEST:
                examples.append(InputExample(guid=str(len(examples)), text_a=cols[3], text_b=cols[4]))
                continue
            in_dev = (cols[1].strip(), cols[2].strip()) in dev_ids
            if in_dev != (split == DEV):
                continue
            label = self.parse_label(cols[0], where, layout)
            examples.append(InputExample(f"{split}-{len(examples)}", cols[3], cols[4], label))
        self.last_report = ReadReport(path=path, examples=len(examples))
        return examples


def _find_msr_files(data_dir: str, split: str) -> tuple[str, str | None] | None:
    """The raw MSR paraphrase files (``msr_paraphrase_*.txt`` or bare ``train``/``test``) and dev ids."""
    for folder in (os.path.join(data_dir, "MRPC"), data_dir):
        want = "test" if split == TEST else "train"
        for name in (f"msr_paraphrase_{want}.txt", want):
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                if split == TEST:
                    return path, None
                for ids in ("dev_ids.tsv", "dev_ids"):
                    if os.path.isfile(os.path.join(folder, ids)):
                        return path, os.path.join(folder, ids)
    return None


class Sst2Processor(GlueProcessor):
    name, task_dir, submission_name = "sst-2", "SST-2", "SST-2"
    labels = ("0", "1")
    layouts = _layouts(
        train=SplitLayout("train.tsv", header=True, text_a=0, label=1),
        dev=SplitLayout("dev.tsv", header=True, text_a=0, label=1),
        test=SplitLayout("test.tsv", header=True, text_a=1, guid=0),
    )


class StsbProcessor(GlueProcessor):
    name, task_dir, submission_name = "sts-b", "STS-B", "STS-B"
    # "SST-B" is how one widely copied GLUE sample tree (the format samples) misspells the folder.
    dir_aliases = ("STSB", "SST-B")
    labels = None
    key_metric = "pearson"
    layouts = _layouts(
        train=SplitLayout("train.tsv", header=True, text_a=7, text_b=8, label=-1, guid=0),
        dev=SplitLayout("dev.tsv", header=True, text_a=7, text_b=8, label=-1, guid=0),
        test=SplitLayout("test.tsv", header=True, text_a=7, text_b=8, guid=0),
    )


class QqpProcessor(GlueProcessor):
    name, task_dir, submission_name = "qqp", "QQP", "QQP"
    labels = ("0", "1")
    skip_short_rows = frozenset({TRAIN, DEV})
    layouts = _layouts(
        train=SplitLayout("train.tsv", header=True, text_a=3, text_b=4, label=5, guid=0),
        dev=SplitLayout("dev.tsv", header=True, text_a=3, text_b=4, label=5, guid=0),
        test=SplitLayout("test.tsv", header=True, text_a=1, text_b=2, guid=0),
    )


class QnliProcessor(GlueProcessor):
    name, task_dir, submission_name = "qnli", "QNLI", "QNLI"
    labels = ("entailment", "not_entailment")
    dummy_test_label = "entailment"
    layouts = _layouts(
        train=SplitLayout("train.tsv", header=True, text_a=1, text_b=2, label=-1, guid=0),
        dev=SplitLayout("dev.tsv", header=True, text_a=1, text_b=2, label=-1, guid=0),
        test=SplitLayout("test.tsv", header=True, text_a=1, text_b=2, guid=0),
    )


class RteProcessor(QnliProcessor):
    name, task_dir, submission_name = "rte", "RTE", "RTE"


class WnliProcessor(GlueProcessor):
    name, task_dir, submission_name = "wnli", "WNLI", "WNLI"
    labels = ("0", "1")
    layouts = QnliProcessor.layouts


PROCESSORS: dict[str, type[GlueProcessor]] = {
    p.name: p
    for p in (
        ColaProcessor,
        MnliProcessor,
        MnliMismatchedProcessor,
        MrpcProcessor,
        Sst2Processor,
        StsbProcessor,
        QqpProcessor,
        QnliProcessor,
        RteProcessor,
        WnliProcessor,
        AxProcessor,
    )
}
# Other spellings users type (the official key for mismatched MNLI is "mismnli").
TASK_ALIASES = {
    "mismnli": "mnli-mm",
    "mnli-m": "mnli",
    "sst2": "sst-2",
    "stsb": "sts-b",
    "sts": "sts-b",
    "diagnostic": "ax",
}


def get_processor(task_name: str) -> GlueProcessor:
    """The processor for ``task_name`` (case-insensitive); unknown names list the known ones."""
    key = task_name.strip().lower()
    key = TASK_ALIASES.get(key, key)
    if key not in PROCESSORS:
        raise GlueDataError(f"unknown GLUE task {task_name!r}; known tasks: {', '.join(PROCESSORS)}")
    return PROCESSORS[key]()


# ---------------------------------------------------------------------- TSV reading
def read_tsv(path: str) -> list[tuple[int, list[str]]]:
    """(1-based line number, columns) per line, as ``csv.reader(delimiter='\\t', quotechar=None)``.

    Lines end at ``\\n`` (``\\r\\n`` tolerated) and nowhere else, so a U+2028 inside a sentence
    does not split a row. A leading UTF-8 BOM is dropped. Non-UTF-8 bytes and blank lines raise
    GlueDataError with the line number.
    """
    with open(path, "rb") as f:
        data = f.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    rows = []
    for i, raw in enumerate(lines, start=1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise GlueDataError(
                f"{path}:{i}: bytes at column {e.start + 1} are not UTF-8 ({raw[e.start : e.end]!r}); "
                "GLUE files are UTF-8 text"
            ) from None
        if not text.strip():
            raise GlueDataError(f"{path}:{i}: blank line; every line must be a tab-separated row")
        rows.append((i, text.split("\t")))
    return rows


# ---------------------------------------------------------------------- features
@dataclasses.dataclass(frozen=True)
class InputFeatures:
    input_ids: list[int]
    input_mask: list[int]
    segment_ids: list[int]
    label_id: int | float
    is_real_example: int = 1


def convert_example(
    example: InputExample, processor: GlueProcessor, max_seq_length: int, tokenizer: Any
) -> InputFeatures:
    """Tokenize (the tokenizer applies ``preprocess_text``), truncate and pack (the official
    ``convert_single_example`` via ``albert_tf.tokenization.packing``: an empty ``text_b`` is a
    single segment, as the official ``if tokens_b:``), map the label."""
    if max_seq_length < 3 + (example.text_b is not None):
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for text and [CLS]/[SEP]")
    cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    ids_a = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(example.text_a))
    ids_b = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(example.text_b)) if example.text_b else None
    packed = pack_inputs(ids_a, ids_b, max_seq_length, cls_id=cls_id, sep_id=sep_id)
    input_ids, input_mask, segment_ids = packed["input_ids"], packed["input_mask"], packed["segment_ids"]
    if processor.is_regression:
        label_id: int | float = float(example.label) if example.label is not None else 0.0
    else:
        label_id = processor.labels.index(example.label) if example.label is not None else 0
    return InputFeatures(input_ids, input_mask, segment_ids, label_id)


def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _tokenizer_identity(tokenizer: Any) -> Any:
    ident = getattr(tokenizer, "identity", None)
    if ident is None:
        raise TypeError("the tokenizer needs an identity() (hash of its model/vocab and options) to key the cache")
    return ident() if callable(ident) else ident


def cache_key(
    processor: GlueProcessor, split: str, source_paths: Sequence[str], tokenizer: Any, max_seq_length: int
) -> dict[str, Any]:
    """Everything that affects the features of one split (the cache file name hashes it)."""
    return {
        "format_version": FEATURE_FORMAT_VERSION,
        "task": processor.name,
        "split": split,
        "source_sha256": [_file_digest(p) for p in source_paths],
        "tokenizer": _tokenizer_identity(tokenizer),
        "max_seq_length": int(max_seq_length),
        "labels": processor.get_labels(),
    }


def feature_spec(max_seq_length: int, is_regression: bool) -> dict[str, Any]:
    import tensorflow as tf

    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }


def _serialize(features: InputFeatures, is_regression: bool) -> bytes:
    import tensorflow as tf

    def ints(values: Iterable[int]) -> tf.train.Feature:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    label = (
        tf.train.Feature(float_list=tf.train.FloatList(value=[features.label_id]))
        if is_regression
        else ints([features.label_id])
    )
    example = tf.train.Example(
        features=tf.train.Features(
            feature={
                "input_ids": ints(features.input_ids),
                "input_mask": ints(features.input_mask),
                "segment_ids": ints(features.segment_ids),
                "label_ids": label,
                "is_real_example": ints([features.is_real_example]),
            }
        )
    )
    return example.SerializeToString()


@dataclasses.dataclass
class CachedSplit:
    """A split converted to TFRecords: the record file, its key and the examples behind it."""

    record_file: str
    key: dict[str, Any]
    examples: list[InputExample]
    num_examples: int
    reused: bool


def cached_features(
    processor: GlueProcessor,
    data_dir: str,
    split: str,
    tokenizer: Any,
    max_seq_length: int,
    cache_dir: str,
) -> CachedSplit:
    """Read, convert and write one split to ``cache_dir``, or reuse the file with the same key.

    The file name carries a hash of :func:`cache_key`; a JSON sidecar records the key and the
    example count. Writing goes to a temporary name first, so a killed run leaves no half file.
    """
    sources = processor.source_paths(data_dir, split)
    examples = processor.get_examples(data_dir, split)
    key = cache_key(processor, split, sources, tokenizer, max_seq_length)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    os.makedirs(cache_dir, exist_ok=True)
    record = os.path.join(cache_dir, f"{processor.name}_{split}_{digest}.tf_record")
    sidecar = record + ".json"
    if os.path.isfile(record) and os.path.isfile(sidecar):
        with open(sidecar, encoding="utf-8") as f:
            meta = json.load(f)
        if meta.get("key") == key and meta.get("num_examples") == len(examples):
            logger.info("reusing cached features %s (%d examples)", record, len(examples))
            return CachedSplit(record, key, examples, len(examples), reused=True)
    write_features(examples, processor, tokenizer, max_seq_length, record)
    tmp = sidecar + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"key": key, "num_examples": len(examples), "sources": sources}, f, indent=1, sort_keys=True)
    os.replace(tmp, sidecar)
    return CachedSplit(record, key, examples, len(examples), reused=False)


def write_features(
    examples: Sequence[InputExample], processor: GlueProcessor, tokenizer: Any, max_seq_length: int, path: str
) -> int:
    """Convert ``examples`` and write them as tf.train.Example records (atomically); returns the count."""
    import tensorflow as tf

    tmp = path + ".tmp"
    with tf.io.TFRecordWriter(tmp) as writer:
        for ex in examples:
            writer.write(_serialize(convert_example(ex, processor, max_seq_length, tokenizer), processor.is_regression))
    os.replace(tmp, path)
    return len(examples)


def load_dataset(
    record_file: str,
    max_seq_length: int,
    is_regression: bool,
    batch_size: int,
    is_training: bool,
    seed: int | None = None,
    drop_remainder: bool = False,
):
    """``tf.data`` of feature dicts (``input_ids``/``input_mask``/``segment_ids`` int32, ``label_ids``,
    ``is_real_example``) from a cached record file.

    Training repeats, shuffles (the official buffer is 100; we use 1000 for better mixing, seeded)
    and drops the remainder. Evaluation/prediction reads in file order, once, keeping the last
    partial batch unless ``drop_remainder``.
    """
    import tensorflow as tf

    spec = feature_spec(max_seq_length, is_regression)

    def parse(record):
        parsed = tf.io.parse_single_example(record, spec)
        feats = {k: tf.cast(parsed[k], tf.int32) for k in ("input_ids", "input_mask", "segment_ids")}
        feats["label_ids"] = parsed["label_ids"] if is_regression else tf.cast(parsed["label_ids"], tf.int32)
        feats["is_real_example"] = tf.cast(parsed["is_real_example"], tf.int32)
        return feats

    ds = tf.data.TFRecordDataset(record_file)
    if is_training:
        ds = ds.shuffle(1000, seed=seed, reshuffle_each_iteration=True).repeat()
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size, drop_remainder=drop_remainder or is_training).prefetch(tf.data.AUTOTUNE)


# ---------------------------------------------------------------------- submissions
def submission_rows(
    processor: GlueProcessor, examples: Sequence[InputExample], predictions: np.ndarray
) -> list[tuple[str, str]]:
    """(index, prediction) rows of a GLUE submission file.

    Classification: ``predictions`` are class probabilities/logits [N, C] or class ids [N];
    written as label strings. Regression (STS-B): scores clipped to [0, 5], ``%.3f``.
    """
    preds = np.asarray(predictions)
    if len(preds) != len(examples):
        raise ValueError(f"{len(preds)} predictions for {len(examples)} examples")
    rows = []
    for ex, p in zip(examples, preds, strict=True):
        if processor.is_regression:
            value = float(np.clip(np.reshape(p, -1)[0], 0.0, 5.0))
            rows.append((ex.guid, f"{value:.3f}"))
        else:
            cls = int(np.argmax(p)) if np.ndim(p) > 0 else int(p)
            rows.append((ex.guid, processor.labels[cls]))
    return rows


def write_submission(path: str, rows: Sequence[tuple[str, str]]) -> None:
    """``index\\tprediction`` header, then one row per test example."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("index\tprediction\n")
        for guid, pred in rows:
            f.write(f"{guid}\t{pred}\n")
