"""The pretraining record schema (official ``create_pretraining_data.py: write_instance_to_example_files``): one table
that the writer, the reader and the checks share.

==========================  =======  ==========================================  ==================================
name                        dtype    length                                      content
==========================  =======  ==========================================  ==================================
``input_ids``               int64    max_seq_length                              ids, 0-padded
``input_mask``              int64    max_seq_length                              1 real / 0 pad
``segment_ids``             int64    max_seq_length                              0 for [CLS] A [SEP], 1 for B [SEP]
``token_boundary``          int64    max_seq_length                              1 at word starts and [CLS]/[SEP]
``masked_lm_positions``     int64    max_predictions_per_seq*(1+permutation)     0-padded
``masked_lm_ids``           int64    same                                        original ids, 0-padded
``masked_lm_weights``       float    same                                        1.0 real / 0.0 pad
``next_sentence_labels``    int64    1                                           sentence-order label
==========================  =======  ==========================================  ==================================

``token_boundary`` is written (as the official script does); training reads it only with ``--masked_lm_budget``
(online masking).
"""

from __future__ import annotations

from typing import Any


class PretrainingDataError(ValueError):
    """The pretraining TFRecords do not exist or do not match the flags; the message names the file. (Here, beside
    the schema the checks hold the records to, so that a command can name it without importing TensorFlow.)"""


# The JSON sidecar create_pretraining_data writes last, beside the records (flags, counts, every file's size).
SIDECAR_FORMAT = "albert-tf/pretraining-data/v1"

# (name, dtype, length kind, the flag that sets the length), in the official order.
FEATURES = (
    ("input_ids", "int64", "seq", "--max_seq_length"),
    ("input_mask", "int64", "seq", "--max_seq_length"),
    ("segment_ids", "int64", "seq", "--max_seq_length"),
    ("token_boundary", "int64", "seq", "--max_seq_length"),
    ("masked_lm_positions", "int64", "pred", "--max_predictions_per_seq"),
    ("masked_lm_ids", "int64", "pred", "--max_predictions_per_seq"),
    ("masked_lm_weights", "float32", "pred", "--max_predictions_per_seq"),
    ("next_sentence_labels", "int64", "one", "(fixed)"),
)
FEATURE_NAMES = tuple(name for name, *_ in FEATURES)
# What training reads (everything but token_boundary).
TRAINING_FEATURES = tuple(f for f in FEATURES if f[0] != "token_boundary")
# The model's inputs among them.
MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")


def feature_lengths(max_seq_length: int, max_predictions_per_seq: int) -> dict[str, int]:
    """``{name: length}`` of the features training reads."""
    size = {"seq": max_seq_length, "pred": max_predictions_per_seq, "one": 1}
    return {name: size[kind] for name, _, kind, _ in TRAINING_FEATURES}


def length_flag(name: str) -> str:
    """The flag that sets the length of feature ``name`` (for error messages)."""
    return next(flag for n, _, _, flag in FEATURES if n == name)


def feature_spec(max_seq_length: int, max_predictions_per_seq: int) -> dict[str, Any]:
    """``tf.io.parse_single_example`` spec of the features training reads."""
    import tensorflow as tf

    dtypes = {name: getattr(tf, dtype) for name, dtype, _, _ in TRAINING_FEATURES}
    return {
        name: tf.io.FixedLenFeature([length], dtypes[name])
        for name, length in feature_lengths(max_seq_length, max_predictions_per_seq).items()
    }
