"""RACE features on disk: TFRecords with the official feature names, in a keyed cache.

Records (official ``file_based_convert_examples_to_features``): ``input_ids``, ``input_mask``, ``segment_ids``
(int64 ``[4 * max_seq_length]``, the four choices one after the other), ``label_ids`` (int64, -1 without an
answer) and ``is_real_example`` (int64 0/1), one record per question in reading order, in one file (a training
split: in a seeded permutation over consecutive shards, ``data.cache.record_paths``, unless
``--noshuffle_train_examples``).

:func:`cached_features` names the file after a hash of everything that affects it: the content of every source
file (sha256 of the bytes the reader parsed, so each file is read once) with its name relative to ``data_dir``,
the split, the level filter, the record order and layout, the tokenizer identity, ``max_seq_length``,
``max_qa_length`` and :data:`FEATURE_FORMAT_VERSION`. The same key reuses the files without tokenising again (the
official reuses ``train_file`` whenever it exists, even after a flag changed). A JSON side file, written last,
records the key, the example count, the record files and the conversion report (how many articles / qa texts were
cut). Every file is written under a temporary name and renamed when complete, through ``tf.io.gfile``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from albert_tf import files as _fs
from albert_tf.data.cache import (
    key_digest,
    record_layout,
    record_paths,
    reusable_record_files,
    tokenizer_identity,
    training_order,
    write_records,
)
from albert_tf.data.race.features import UNLABELLED, RaceFeature, check_lengths, convert_examples
from albert_tf.data.race.reader import NUM_CHOICES, RaceExample, read_race_split

logger = logging.getLogger(__name__)

__all__ = ["FEATURE_FORMAT_VERSION", "CachedRace", "cache_key", "cached_features", "feature_spec", "write_features"]

# Bump when the record layout or the conversion changes: it is part of every cache key.
FEATURE_FORMAT_VERSION = 1


def feature_spec(max_seq_length: int) -> dict[str, Any]:
    """``tf.io.FixedLenFeature`` spec of the records (official ``input_fn_builder`` names, all int64)."""
    import tensorflow as tf

    flat = [NUM_CHOICES * max_seq_length]
    return {
        "input_ids": tf.io.FixedLenFeature(flat, tf.int64),
        "input_mask": tf.io.FixedLenFeature(flat, tf.int64),
        "segment_ids": tf.io.FixedLenFeature(flat, tf.int64),
        "label_ids": tf.io.FixedLenFeature([], tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }


def _record(feature: RaceFeature) -> bytes:
    import tensorflow as tf

    values = {
        "input_ids": feature.input_ids,
        "input_mask": feature.input_mask,
        "segment_ids": feature.segment_ids,
        "label_ids": [feature.label],
        "is_real_example": [int(feature.is_real_example)],
    }
    fields = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in values.items()}
    return tf.train.Example(features=tf.train.Features(feature=fields)).SerializeToString()


def write_features(paths: str | Sequence[str], features: Iterable[RaceFeature], num_features: int) -> dict[str, int]:
    """Write ``num_features`` ``features`` as records to ``paths`` in order (one path, or consecutive shards; each
    under a temporary name, then renamed); returns the conversion report: ``questions``, ``unlabelled``,
    ``articles_cut`` (questions with at least one choice whose article was cut), ``choices_article_cut`` and
    ``choices_qa_cut`` (choices whose question + option exceeded ``max_qa_length``)."""
    report = dict.fromkeys(("questions", "unlabelled", "articles_cut", "choices_article_cut", "choices_qa_cut"), 0)

    def counted() -> Iterator[bytes]:
        for feature in features:
            report["questions"] += 1
            report["unlabelled"] += feature.label == UNLABELLED
            report["articles_cut"] += feature.article_cut > 0
            report["choices_article_cut"] += feature.article_cut
            report["choices_qa_cut"] += feature.qa_cut
            yield _record(feature)

    write_records([paths] if isinstance(paths, str) else list(paths), counted(), num_features)
    return report


def cache_key(
    sources: list[tuple[str, str]],
    split: str,
    tokenizer: Any,
    max_seq_length: int,
    max_qa_length: int,
    middle_only: bool,
    high_only: bool,
    order: str = "file",
) -> dict[str, Any]:
    """Everything that affects the records; ``sources`` are ``(relative path, sha256)`` in reading order, ``order``
    the record order's name from ``data.cache.training_order``."""
    listing = "".join(f"{name}\0{digest}\n" for name, digest in sources)
    return {
        "order": order,
        "layout": record_layout(order != "file"),
        "format_version": FEATURE_FORMAT_VERSION,
        "task": "race",
        "split": split,
        "levels": "middle" if middle_only else "high" if high_only else "all",
        "num_source_files": len(sources),
        "sources_sha256": hashlib.sha256(listing.encode("utf-8")).hexdigest(),
        "tokenizer": tokenizer_identity(tokenizer),
        "max_seq_length": int(max_seq_length),
        "max_qa_length": int(max_qa_length),
    }


@dataclasses.dataclass
class CachedRace:
    """A RACE split converted to records: the files (one, or a shuffled training split's consecutive shards), the
    hex digest of its key (in the file name), the questions
    behind it (record order), their count, whether an existing file was reused, and the conversion report."""

    record_files: list[str]
    key: str
    examples: list[RaceExample]
    num_examples: int
    reused: bool
    report: dict[str, int] = dataclasses.field(default_factory=dict)


def _side_file(path: str) -> dict[str, Any] | None:
    """The side file's JSON object, or None when it is missing or unreadable (then the records are rebuilt)."""
    if not _fs.isfile(path):
        return None
    try:
        meta = json.loads(_fs.read_bytes(path).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        logger.warning("%s: unreadable cache side file; converting again", path)
        return None
    return meta if isinstance(meta, dict) else None


def _log_report(split: str, report: dict[str, int], max_seq_length: int, max_qa_length: int) -> None:
    logger.info(
        "RACE %s: %d questions; %d with an article cut to fit max_seq_length=%d (%d of %d choices); "
        "%d choices with question + option cut to the last max_qa_length=%d pieces; %d unlabelled",
        split,
        report.get("questions", 0),
        report.get("articles_cut", 0),
        max_seq_length,
        report.get("choices_article_cut", 0),
        NUM_CHOICES * report.get("questions", 0),
        report.get("choices_qa_cut", 0),
        max_qa_length,
        report.get("unlabelled", 0),
    )


def cached_features(
    data_dir: str,
    split: str,
    tokenizer: Any,
    max_seq_length: int,
    max_qa_length: int,
    cache_dir: str,
    middle_only: bool = False,
    high_only: bool = False,
    shuffle: bool = False,
) -> CachedRace:
    """Read ``data_dir/RACE/<split>`` (validated first), convert and write the records to ``cache_dir``, or reuse
    the file of the same key (no re-tokenisation). See the module docstring for the key. ``shuffle`` writes the
    questions in ``data.cache.training_order``'s seeded permutation (for the training split)."""
    check_lengths(max_seq_length, max_qa_length)
    examples, sources = read_race_split(data_dir, split, middle_only, high_only)
    examples, order = training_order(examples, shuffle)
    key = cache_key(sources, split, tokenizer, max_seq_length, max_qa_length, middle_only, high_only, order)
    digest = key_digest(key)
    _fs.makedirs(cache_dir)
    record_file = os.path.join(cache_dir, f"race_{split}_{key['levels']}_{digest}.tf_record")
    side_file = record_file + ".json"
    meta = _side_file(side_file)
    paths = reusable_record_files(meta, cache_dir, key, len(examples))
    if paths:
        logger.info("reusing cached RACE features %s (%d questions)", record_file, len(examples))
        report = dict(meta.get("report") or {})
        _log_report(split, report, max_seq_length, max_qa_length)
        return CachedRace(paths, digest, examples, len(examples), reused=True, report=report)

    paths = record_paths(record_file, len(examples), sharded=order != "file")
    features = convert_examples(examples, tokenizer, max_seq_length, max_qa_length)
    report = write_features(paths, features, len(examples))
    _log_report(split, report, max_seq_length, max_qa_length)
    meta = {"key": key, "num_examples": len(examples), "report": report, "data_dir": data_dir,
            "record_files": [os.path.basename(p) for p in paths]}
    _fs.write_text_atomic(side_file, json.dumps(meta, indent=1, sort_keys=True))
    return CachedRace(paths, digest, examples, len(examples), reused=False, report=report)
