"""The tagging task's own option checks and its CoNLL files, read and checked without TensorFlow and without the
pretrained model.

``run_tagging`` calls :func:`check_inputs` before it fetches a pretrained preset or imports TensorFlow
(``cli.flags.checked_config``), so a tag outside the scheme, a line without a tag column or a tag the model does not
know answers in a second with the file and line; :meth:`TaggingTask.from_options
<albert_tf.tasks.tagging.task.TaggingTask.from_options>` calls it too and keeps what it read.
"""

from __future__ import annotations

import dataclasses

from absl import logging

from albert_tf.data.tagging import (
    OUTSIDE,
    Repairs,
    TaggedSentence,
    TaggingDataError,
    check_scheme,
    detect_scheme,
    labels_of,
    read_conll,
    split_tag,
    to_iob2,
)
from albert_tf.tasks.base import needed_splits
from albert_tf.tasks.tagging.options import TaggingOptions
from albert_tf.training.run_config import RunOptions
from albert_tf.training.task import EVAL, PREDICT, TRAIN, TaskError

#: The repair warnings already given in this process: a command checks its inputs before TensorFlow and the task
#: again when it is built, and says each once.
_WARNED: set[str] = set()

#: The option naming each split's file.
FILE_OPTIONS = {TRAIN: "train_file", EVAL: "dev_file", PREDICT: "predict_file"}


@dataclasses.dataclass(frozen=True)
class TaggingInputs:
    """What :func:`check_inputs` read: the model's labels, the scheme the files are written in, each needed split's
    sentences with their tags in IOB2, and per split the ``I-`` tags read as the start of a new entity."""

    labels: tuple[str, ...]
    scheme: str
    sentences: dict[str, list[TaggedSentence]]
    repairs: dict[str, Repairs]


def checked_labels(labels: list[str], where: str) -> tuple[str, ...]:
    """``labels`` as the model's label set: ``O`` among them, every other one ``B-TYPE`` or ``I-TYPE``, none twice;
    else a :class:`TaskError` naming the first that is not."""
    if OUTSIDE not in labels:
        raise TaskError(f"{where}: the labels {labels} lack {OUTSIDE!r} (words outside every entity)")
    seen = set()
    for label in labels:
        prefix, kind = split_tag(label)
        if label in seen:
            raise TaskError(f"{where}: label {label!r} is listed twice")
        if label != OUTSIDE and (prefix not in ("B", "I") or not kind):
            raise TaskError(f"{where}: label {label!r} is not O, B-TYPE or I-TYPE (the model predicts IOB2)")
        seen.add(label)
    return tuple(labels)


def _to_iob2(path: str, sentences: list[TaggedSentence], scheme: str) -> tuple[list[TaggedSentence], Repairs]:
    """The sentences of ``path`` with their tags converted from ``scheme`` to IOB2 (checked first)."""
    check_scheme(sentences, scheme, path)
    repairs = Repairs()
    converted = [dataclasses.replace(s, tags=to_iob2(s.tags, scheme, repairs, path, s.line)) for s in sentences]
    message = (f"{path}: {repairs.count} I- tags continue no entity of their type (first {repairs.first}); each is "
               "read as the start of a new entity of its own type, as conlleval reads it")
    if repairs.count and message not in _WARNED:
        _WARNED.add(message)
        logging.warning(message)
    return converted, repairs


def _check_known(path: str, sentences: list[TaggedSentence], labels: tuple[str, ...]) -> None:
    known = set(labels)
    for sentence in sentences:
        for offset, tag in enumerate(sentence.tags):
            if tag not in known:
                raise TaggingDataError(f"{path}:{sentence.line + offset}: tag {tag!r} is not one the model knows "
                                       f"({len(labels)} labels: {', '.join(labels)})")


def check_inputs(options: TaggingOptions, run: RunOptions) -> TaggingInputs:
    """Check the options that need no pretrained file and read every file the run reads (:class:`TaggingDataError`
    names the file and line); returns what was read.

    The scheme is ``--tag_scheme``, or with ``auto`` the one the training file is written in (else the first file
    read). The labels are ``--labels``, else the training file's (read even when the run does not train, when it
    is given); a file whose tags include one outside them is refused.
    """
    splits = needed_splits(run)
    for split in splits:
        if not getattr(options, FILE_OPTIONS[split]):
            raise TaskError(f"--{FILE_OPTIONS[split]} is required with --do_{'eval' if split == EVAL else split}")
    read = [s for s in (TRAIN, *splits) if getattr(options, FILE_OPTIONS[s])]
    read = list(dict.fromkeys(read))  # the training file first, once
    written = {split: read_conll(getattr(options, FILE_OPTIONS[split])) for split in read}
    scheme = options.tag_scheme
    if scheme == "auto":
        scheme = detect_scheme(written[read[0]]) if read else "iob2"
    sentences: dict[str, list[TaggedSentence]] = {}
    repairs: dict[str, Repairs] = {}
    for split in read:
        sentences[split], repairs[split] = _to_iob2(getattr(options, FILE_OPTIONS[split]), written[split], scheme)
    if options.label_list():
        labels = checked_labels(options.label_list(), "--labels")
    elif TRAIN in sentences:
        labels = tuple(labels_of(s.tags for s in sentences[TRAIN]))
    else:
        raise TaskError("give --train_file (the model's labels are its tags) or --labels (an export finds them in "
                        "the run.json of the run that wrote --checkpoint)")
    for split in read:
        _check_known(getattr(options, FILE_OPTIONS[split]), sentences[split], labels)
    if TRAIN not in splits:
        sentences.pop(TRAIN, None)
        repairs.pop(TRAIN, None)
    return TaggingInputs(labels, scheme, sentences, repairs)
