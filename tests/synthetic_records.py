"""Test helper: synthetic pretraining TFRecords in the official layout (spec 2.3), for tests and smoke runs.

Each record is a valid ``[CLS] A [SEP] B [SEP]`` instance with padding, sorted masked positions inside
the real tokens, ``masked_lm_weights`` 1.0 for real predictions, and a sentence-order label. The token
ids are not text: segment B is a fixed permutation of segment A for label 0 and random for label 1, and
the masked ids come from a skewed (Zipf-like) distribution, so MLM and SOP loss can fall in a few steps.
Deterministic under ``seed``.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

CLS_ID, SEP_ID, MASK_ID = 2, 3, 4
FIRST_WORD_ID = 5


def _int_feature(values) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))


def _float_feature(values) -> tf.train.Feature:
    return tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))


def synthetic_instance(
    rng: np.random.Generator,
    max_seq_length: int,
    max_predictions_per_seq: int,
    vocab_size: int,
    full_predictions: bool = True,
) -> dict[str, list]:
    """One official-layout instance as lists of python numbers."""
    words = np.arange(FIRST_WORD_ID, vocab_size)
    probs = 1.0 / np.arange(1, len(words) + 1)
    probs /= probs.sum()
    max_len = max_seq_length - 3
    length = int(rng.integers(max(4, max_len // 2), max_len + 1))
    len_a = length // 2
    len_b = length - len_a
    a = rng.choice(words, size=len_a, p=probs)
    label = int(rng.integers(0, 2))
    if label == 0:
        b = np.sort(rng.choice(words, size=len_b, p=probs))  # "in order": B is predictable from nothing but is sorted
    else:
        b = rng.choice(words, size=len_b, p=probs)[::-1]
    tokens = [CLS_ID, *a.tolist(), SEP_ID, *b.tolist(), SEP_ID]
    segment = [0] * (len_a + 2) + [1] * (len_b + 1)
    n_real = len(tokens)
    candidates = [i for i, t in enumerate(tokens) if t not in (CLS_ID, SEP_ID)]
    n_pred = max_predictions_per_seq if full_predictions else int(rng.integers(1, max_predictions_per_seq + 1))
    n_pred = min(n_pred, len(candidates))
    positions = sorted(rng.choice(candidates, size=n_pred, replace=False).tolist())
    masked_ids = [tokens[p] for p in positions]
    input_ids = list(tokens)
    for p in positions:
        input_ids[p] = MASK_ID
    pad = max_seq_length - n_real
    pad_pred = max_predictions_per_seq - n_pred
    return {
        "input_ids": input_ids + [0] * pad,
        "input_mask": [1] * n_real + [0] * pad,
        "segment_ids": segment + [0] * pad,
        "token_boundary": [1] * n_real + [0] * pad,
        "masked_lm_positions": positions + [0] * pad_pred,
        "masked_lm_ids": masked_ids + [0] * pad_pred,
        "masked_lm_weights": [1.0] * n_pred + [0.0] * pad_pred,
        "next_sentence_labels": [label],
    }


def write_synthetic_records(
    path: str,
    num_records: int,
    max_seq_length: int = 32,
    max_predictions_per_seq: int = 5,
    vocab_size: int = 1000,
    seed: int = 0,
    full_predictions: bool = True,
) -> str:
    """Write ``num_records`` synthetic instances to ``path`` (a TFRecord file); returns ``path``."""
    rng = np.random.default_rng(seed)
    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(num_records):
            inst = synthetic_instance(rng, max_seq_length, max_predictions_per_seq, vocab_size, full_predictions)
            features = {
                k: (_float_feature(v) if k == "masked_lm_weights" else _int_feature(v)) for k, v in inst.items()
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    return path
