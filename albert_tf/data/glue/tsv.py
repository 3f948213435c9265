"""GLUE TSV reading: the file reader, the per-split column layout, and the ``GlueProcessor`` base class.

:func:`read_tsv` splits a file into numbered rows (UTF-8 BOM dropped, byte-level UTF-8 errors with file and
1-based line). A task declares one :class:`SplitLayout` per split; :class:`GlueProcessor` finds the file,
validates every row against the layout and builds :class:`InputExample` s, raising :class:`GlueDataError`
(file, line, expected layout) on bad input. The tasks themselves are in ``processors``; official behaviour and
our deliberate differences are in the package docstring (``albert_tf.data.glue``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence

import numpy as np

from albert_tf import files as _fs

logger = logging.getLogger(__name__)

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
    """Reads one GLUE task. Subclasses only declare their layout; see the package docstring."""

    name: str = ""
    task_dir: str = ""
    dir_aliases: tuple[str, ...] = ()
    submission_name: str = ""
    labels: tuple[str, ...] | None = None  # None: regression (num_labels = 1)
    label_range: tuple[float, float] | None = None  # regression: the scores the task defines (others are refused)
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
        if _fs.isfile(data_dir):
            raise GlueDataError(f"--data_dir={data_dir} is a file, not a directory (the GLUE root that holds "
                                f"{self.task_dir}/)")
        candidates = [os.path.join(data_dir, d, layout.filename) for d in (self.task_dir, *self.dir_aliases)]
        candidates.append(os.path.join(data_dir, layout.filename))  # data_dir is the task folder itself
        for path in candidates:
            if _fs.isfile(path):
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
            if self.label_range is not None and not self.label_range[0] <= value <= self.label_range[1]:
                low, high = self.label_range
                raise GlueDataError(f"{where}: label {raw!r} is outside {self.name.upper()}'s scores "
                                    f"[{low:g}, {high:g}]: another column, or another task's file?{layout_text}")
            return value
        if text not in self.labels:
            raise GlueDataError(f"{where}: label {raw!r} is not one of {list(self.labels)} ({self.name}){layout_text}")
        return text


def read_tsv(path: str) -> list[tuple[int, list[str]]]:
    """(1-based line number, columns) per line, as ``csv.reader(delimiter='\\t', quotechar=None)``.

    Lines end at ``\\n`` (``\\r\\n`` tolerated) and nowhere else, so a U+2028 inside a sentence
    does not split a row. A leading UTF-8 BOM is dropped. Non-UTF-8 bytes and blank lines raise
    GlueDataError with the line number.
    """
    data = _fs.read_bytes(path)
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
