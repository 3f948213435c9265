"""The GLUE task processors and their registry (``PROCESSORS``, ``TASK_ALIASES``, :func:`get_processor`).

Each task only declares where its files are and their column layouts; reading and validation live in the
``GlueProcessor`` base (``tsv``). MRPC can also be read from the raw Microsoft files, split as GLUE's download
script does. Official behaviour and our deliberate differences: see the package docstring.
"""

from __future__ import annotations

import os

from albert_tf import files as _fs
from albert_tf.data.glue.tsv import (
    DEV,
    TEST,
    TRAIN,
    GlueDataError,
    GlueProcessor,
    InputExample,
    ReadReport,
    SplitLayout,
    read_tsv,
)


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
                if _fs.isfile(path):
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
            if _fs.isfile(path):
                if split == TEST:
                    return path, None
                for ids in ("dev_ids.tsv", "dev_ids"):
                    if _fs.isfile(os.path.join(folder, ids)):
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
    label_range = (0.0, 5.0)  # the similarity scores of the STS benchmark (Cer et al. 2017)
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
