"""The tagging task's options (``run_tagging``'s own flags) and its experiment config: plain values, so that a
command line builds and checks its config before it imports TensorFlow."""

from __future__ import annotations

import dataclasses
from typing import Any

from albert_tf.data.tagging import SCHEMES
from albert_tf.tasks.base import PackedTrainingOptions
from albert_tf.training.run_config import ExperimentConfig, fetch_pretrained, option
from albert_tf.training.task import TaskError

#: ``--tag_scheme`` values: each of the schemes the reader converts, or ``auto`` (read from the training file).
TAG_SCHEMES = ("auto", *SCHEMES)


@dataclasses.dataclass
class TaggingOptions(PackedTrainingOptions):
    """The tagging task's own ``run_tagging`` flags. There is no official tagging runner: the names follow the
    other runners' (``--classifier_dropout`` as ``run_classifier``'s, files as ``run_squad``'s)."""

    train_file: str = option("", "CoNLL column file to train on: the word in the first column, its tag in the last, "
                                 "an empty line after each sentence (required with --do_train; its tags are the "
                                 "model's label set unless --labels gives one).")
    dev_file: str = option("", "CoNLL column file scored with --do_eval (entity precision, recall and F1, "
                               "conlleval's).")
    predict_file: str = option("", "CoNLL column file tagged with --do_predict (its tag column may be all 'O'; "
                                   "predictions.conll holds word, gold and predicted tag per line).")
    labels: str = option("", "The model's tags, comma-separated, in output order (default: the training file's, "
                             "'O' first, then B-/I- of each type sorted). Needed with no --train_file.")
    tag_scheme: str = option("auto", "How the files write their tags: iob1 (CoNLL 2003's), iob2, bioes, or auto "
                                     "(read from the training file). Every file is converted to IOB2, which the "
                                     "model learns and predicts.", choices=TAG_SCHEMES)
    max_seq_length: int = option(128, "Pieces per window, [CLS] and [SEP] included; a longer sentence is split into "
                                      "overlapping windows, no word dropped.")
    window_stride: int = option(0, "Pieces between the starts of a long sentence's windows (0: half a window). "
                                   "Each word is scored from the window where it has the most context.")
    label_all_pieces: bool = option(False, "Train on every piece of a word (B-X continued as I-X) instead of its "
                                           "first piece alone; a word is still predicted from its first piece.")
    classifier_dropout: float = option(0.1, "Dropout on each position's hidden state before the tag layer "
                                            "(transformers' classifier_dropout_prob).")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tag_scheme not in TAG_SCHEMES:  # the Python API has no flag to check it
            raise TaskError(f"--tag_scheme={self.tag_scheme!r}: expected one of {', '.join(TAG_SCHEMES)}")
        if self.window_stride < 0:
            raise TaskError(f"--window_stride={self.window_stride} must be >= 0 (0: half a window)")
        if not 0.0 <= self.classifier_dropout < 1.0:
            raise TaskError(f"--classifier_dropout={self.classifier_dropout} must be in [0, 1)")

    def label_list(self) -> list[str]:
        """``--labels`` as a list (empty when not given)."""
        return [label.strip() for label in (self.labels or "").split(",") if label.strip()]


def make_config(*, fetch_preset: bool = True, **options: Any) -> ExperimentConfig:
    """A tagging experiment from flat options (the ``run_tagging`` flag names); ``fetch_preset``: first fetch the
    preset ``init_checkpoint`` may name (:func:`fetch_pretrained`)."""
    return ExperimentConfig.from_flat(TaggingOptions, fetch_pretrained(TaggingOptions, options) if fetch_preset
                                      else options)
