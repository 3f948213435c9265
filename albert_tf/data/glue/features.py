"""GLUE features: one example -> packed ids, written as ``tf.train.Example`` records in a keyed cache.

:func:`convert_example` is the official ``convert_single_example`` (tokenize, truncate, pack, map the label).
:func:`cached_features` converts a whole split once and reuses its record files only while everything that
affects the features is unchanged: the file names carry a hash of :func:`cache_key` (content hash of the
source files, tokenizer identity, ``max_seq_length``, task, split, labels, record order and layout,
``FEATURE_FORMAT_VERSION``), so a stale cache is never read (the official cache reuses ``<task>_train.tf_record``
even after a flag changed). A shuffled training split is written in consecutive shards (``data.cache.record_paths``)
that training reads in a seed-drawn order. Files are written under a temporary name and renamed when complete,
through ``tf.io.gfile``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterable, Sequence
from typing import Any

from albert_tf import files as _fs
from albert_tf.data.cache import (
    file_digest,
    key_digest,
    record_layout,
    record_paths,
    reusable_record_files,
    tokenizer_identity,
    training_order,
    write_records,
)
from albert_tf.data.glue.tsv import GlueProcessor, InputExample
from albert_tf.tokenization.packing import pack_inputs

logger = logging.getLogger(__name__)

# Bump when the record layout or the conversion changes: it is part of every cache key.
FEATURE_FORMAT_VERSION = 1


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


def cache_key(
    processor: GlueProcessor,
    split: str,
    source_paths: Sequence[str],
    tokenizer: Any,
    max_seq_length: int,
    order: str = "file",
) -> dict[str, Any]:
    """Everything that affects the features of one split (the cache file name hashes it); ``order`` is the record
    order's name from ``data.cache.training_order`` (a shuffled split is also split into files)."""
    return {
        "order": order,
        "layout": record_layout(order != "file"),
        "format_version": FEATURE_FORMAT_VERSION,
        "task": processor.name,
        "split": split,
        "source_sha256": [file_digest(p) for p in source_paths],
        "tokenizer": tokenizer_identity(tokenizer),
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
    """A split converted to TFRecords: the record files (one, or a shuffled training split's consecutive shards),
    its key and the examples behind it (in record order)."""

    record_files: list[str]
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
    shuffle: bool = False,
) -> CachedSplit:
    """Read, convert and write one split to ``cache_dir``, or reuse the file with the same key.

    The file names carry a hash of :func:`cache_key`; a JSON sidecar, written last, records the key, the example
    count and the record files. Writing goes to a temporary name first, so a killed run leaves no half file.
    ``shuffle`` writes the examples in ``data.cache.training_order``'s seeded permutation, split into files
    (``data.cache.record_paths``; for a training split).
    """
    sources = processor.source_paths(data_dir, split)
    examples, order = training_order(processor.get_examples(data_dir, split), shuffle)
    key = cache_key(processor, split, sources, tokenizer, max_seq_length, order)
    digest = key_digest(key)
    _fs.makedirs(cache_dir)
    record = os.path.join(cache_dir, f"{processor.name}_{split}_{digest}.tf_record")
    sidecar = record + ".json"
    if _fs.isfile(sidecar):
        meta = json.loads(_fs.read_bytes(sidecar).decode("utf-8"))
        paths = reusable_record_files(meta, cache_dir, key, len(examples))
        if paths:
            logger.info("reusing cached features %s (%d examples)", record, len(examples))
            return CachedSplit(paths, key, examples, len(examples), reused=True)
    paths = record_paths(record, len(examples), sharded=order != "file")
    write_features(examples, processor, tokenizer, max_seq_length, paths)
    meta = {"key": key, "num_examples": len(examples), "sources": sources,
            "record_files": [os.path.basename(p) for p in paths]}
    _fs.write_text_atomic(sidecar, json.dumps(meta, indent=1, sort_keys=True))
    return CachedSplit(paths, key, examples, len(examples), reused=False)


def write_features(
    examples: Sequence[InputExample], processor: GlueProcessor, tokenizer: Any, max_seq_length: int,
    paths: str | Sequence[str],
) -> int:
    """Convert ``examples`` and write them as tf.train.Example records to ``paths`` in order (one path, or
    consecutive shards; each atomically); returns the count."""
    records = (_serialize(convert_example(ex, processor, max_seq_length, tokenizer), processor.is_regression)
               for ex in examples)
    write_records([paths] if isinstance(paths, str) else list(paths), records, len(examples))
    return len(examples)
