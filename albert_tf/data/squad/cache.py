"""SQuAD features on disk: the TFRecords (official feature names) and their JSON side file, in a keyed cache.

The records (one file; a shuffled training file's in consecutive shards, ``data.cache.record_paths``) hold what
the model reads (``unique_ids``, ``input_ids``, ``input_mask``, ``segment_ids``, ``p_mask``, and for training
``start_positions``, ``end_positions``, ``is_impossible``; all int64). The side file holds what post-processing
needs per feature (unique id, example index, window index, ``doc_offset``, the token -> character maps, the
max-context flags, ``paragraph_len``, gold positions) plus the
:class:`~albert_tf.data.squad.features.ConversionReport`. It replaces the official ``predict_feature_left_file``
pickle: JSON, no pickle.

:func:`cached_features` names the files after a hash of everything that affects them (content hash of the SQuAD
file, tokenizer identity, ``max_seq_length``, ``doc_stride``, ``max_query_length``, ``is_training``,
``version_2_with_negative``, ``do_lower_case``, the record order and layout, :data:`FEATURE_FORMAT_VERSION`), so a
changed input never reads a stale cache (the official reuses ``train_feature_file`` whenever it exists). Every file
is written under a temporary name and renamed when complete, through ``tf.io.gfile``; the side file, which lists the
record files, last.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Sequence
from typing import Any

from albert_tf import files as _fs
from albert_tf.data.cache import (
    TRAIN_SHUFFLE_SEED,
    file_digest,
    key_digest,
    record_layout,
    record_paths,
    reusable_record_files,
    tokenizer_identity,
    training_order,
    write_records,
)
from albert_tf.data.squad.features import ConversionReport, SquadFeature, convert_examples_to_features
from albert_tf.data.squad.reader import SquadExample, read_squad_examples

logger = logging.getLogger(__name__)

__all__ = [
    "FEATURE_FORMAT_VERSION",
    "TRAIN_SHUFFLE_SEED",
    "CachedSquad",
    "cached_features",
    "feature_spec",
    "features_from_json",
    "features_to_json",
    "write_features",
]

# Bump when the record layout, the side file or the conversion changes: it is part of every cache key.
FEATURE_FORMAT_VERSION = 1

_INPUT_NAMES = ("input_ids", "input_mask", "segment_ids", "p_mask")
_LABEL_NAMES = ("start_positions", "end_positions", "is_impossible")


def feature_spec(max_seq_length: int, is_training: bool) -> dict[str, Any]:
    """``tf.io.FixedLenFeature`` spec of the records (the official ``input_fn_builder`` names, all int64)."""
    import tensorflow as tf

    spec = {"unique_ids": tf.io.FixedLenFeature([], tf.int64)}
    spec.update({name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in _INPUT_NAMES})
    if is_training:
        spec.update({name: tf.io.FixedLenFeature([], tf.int64) for name in _LABEL_NAMES})
    return spec


def _record(feature: SquadFeature, is_training: bool) -> bytes:
    import tensorflow as tf

    values: dict[str, list[int]] = {"unique_ids": [feature.unique_id]}
    values.update({name: list(getattr(feature, name)) for name in _INPUT_NAMES})
    if is_training:
        if feature.start_position is None or feature.end_position is None:
            raise ValueError(f"feature {feature.unique_id}: a training feature needs start/end positions")
        values["start_positions"] = [feature.start_position]
        values["end_positions"] = [feature.end_position]
        values["is_impossible"] = [int(bool(feature.is_impossible))]
    fields = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in values.items()}
    return tf.train.Example(features=tf.train.Features(feature=fields)).SerializeToString()


def write_features(paths: str | Sequence[str], features: Sequence[SquadFeature], is_training: bool) -> None:
    """Write ``features`` as ``tf.train.Example`` records to ``paths`` in order (one path, or consecutive shards;
    each under a temporary name, then renamed)."""
    records = (_record(feature, is_training) for feature in features)
    write_records([paths] if isinstance(paths, str) else list(paths), records, len(features))


def features_to_json(features: Sequence[SquadFeature]) -> list[dict[str, Any]]:
    """Per-feature metadata for the side file (no id arrays; max-context flags as 0/1 per document token)."""
    out = []
    for f in features:
        doc_positions = range(f.doc_offset, f.doc_offset + len(f.tok_start_to_orig_index))
        out.append(
            {
                "unique_id": f.unique_id,
                "example_index": f.example_index,
                "doc_span_index": f.doc_span_index,
                "doc_offset": f.doc_offset,
                "tok_start_to_orig_index": f.tok_start_to_orig_index,
                "tok_end_to_orig_index": f.tok_end_to_orig_index,
                "max_context": [int(f.token_is_max_context[p]) for p in doc_positions],
                "paragraph_len": f.paragraph_len,
                "start_position": f.start_position,
                "end_position": f.end_position,
                "is_impossible": f.is_impossible,
            }
        )
    return out


def features_from_json(items: Sequence[dict[str, Any]]) -> list[SquadFeature]:
    """:func:`features_to_json` back to :class:`SquadFeature` (``input_ids`` etc. empty: they live in the records)."""
    features = []
    for d in items:
        offset = d["doc_offset"]
        features.append(
            SquadFeature(
                unique_id=d["unique_id"],
                example_index=d["example_index"],
                doc_span_index=d["doc_span_index"],
                doc_offset=offset,
                tok_start_to_orig_index=list(d["tok_start_to_orig_index"]),
                tok_end_to_orig_index=list(d["tok_end_to_orig_index"]),
                token_is_max_context={offset + k: bool(v) for k, v in enumerate(d["max_context"])},
                input_ids=[],
                input_mask=[],
                segment_ids=[],
                p_mask=[],
                paragraph_len=d["paragraph_len"],
                start_position=d["start_position"],
                end_position=d["end_position"],
                is_impossible=d["is_impossible"],
            )
        )
    return features


@dataclasses.dataclass
class CachedSquad:
    """A SQuAD file converted and cached: the record files (one, or a shuffled training file's consecutive shards)
    and the side file, the examples (training: in the shuffled
    conversion order, so ``example_index`` refers to this list), the feature metadata and the report."""

    record_files: list[str]
    meta_file: str
    examples: list[SquadExample]
    features: list[SquadFeature]
    report: ConversionReport
    num_features: int
    key: dict[str, Any] = dataclasses.field(default_factory=dict)
    reused: bool = False


def _read_side_file(path: str) -> dict[str, Any] | None:
    """The side file's content, or None when it is missing or unreadable (then the cache is rebuilt)."""
    if not _fs.isfile(path):
        return None
    try:
        meta = json.loads(_fs.read_bytes(path).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        logger.warning("%s: unreadable cache side file (%s); converting again", path, e)
        return None
    return meta if isinstance(meta, dict) else None


def _log_report(report: ConversionReport, squad_file: str) -> None:
    """The summary line as info, every question that was not used as is as a warning."""
    for i, line in enumerate(report.log_lines(squad_file)):
        (logger.info if i == 0 else logger.warning)(line)


def cached_features(
    squad_file: str,
    tokenizer: Any,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    is_training: bool,
    version_2_with_negative: bool,
    cache_dir: str,
    do_lower_case: bool = True,
    examples: list[SquadExample] | None = None,
    shuffle: bool = True,
) -> CachedSquad:
    """Read ``squad_file`` (or take its ``examples``, read already), convert it and write the records + side file to
    ``cache_dir``, or reuse the files of the same key (no re-tokenisation). Training examples are shuffled with
    ``random.Random(12345)`` first, as the official runners do (``shuffle=False``: the file's order). The report's
    lines are logged (warnings when something was not used)."""
    if examples is None:
        examples = read_squad_examples(squad_file, is_training, version_2_with_negative)
    examples, order = training_order(examples, shuffle and is_training)  # a copy: the caller's list keeps its order
    key = {  # everything that affects the features (the file names hash it)
        "order": order,
        "layout": record_layout(order != "file"),
        "format_version": FEATURE_FORMAT_VERSION,
        "source_sha256": file_digest(squad_file),
        "tokenizer": tokenizer_identity(tokenizer),
        "max_seq_length": int(max_seq_length),
        "doc_stride": int(doc_stride),
        "max_query_length": int(max_query_length),
        "is_training": bool(is_training),
        "version_2_with_negative": bool(version_2_with_negative),
        "do_lower_case": bool(do_lower_case),
    }
    _fs.makedirs(cache_dir)
    stem = os.path.join(cache_dir, f"squad_{'train' if is_training else 'predict'}_{key_digest(key)}")
    record_file, meta_file = stem + ".tf_record", stem + ".features.json"
    meta = _read_side_file(meta_file)
    paths = reusable_record_files(meta, cache_dir, key, len(examples))
    if paths:
        logger.info("reusing cached SQuAD features %s (%d features)", record_file, meta["num_features"])
        report = ConversionReport.from_json(meta["report"])
        features = features_from_json(meta["features"])
        _log_report(report, squad_file)
        return CachedSquad(paths, meta_file, examples, features, report, len(features), key, reused=True)

    features, report = convert_examples_to_features(
        examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training, do_lower_case
    )
    _log_report(report, squad_file)
    paths = record_paths(record_file, len(features), sharded=order != "file")
    write_features(paths, features, is_training)
    meta = {
        "key": key,
        "record_files": [os.path.basename(p) for p in paths],
        "squad_file": squad_file,
        "num_examples": len(examples),
        "num_features": len(features),
        "report": report.to_json(),
        "features": features_to_json(features),
    }
    _fs.write_text_atomic(meta_file, json.dumps(meta, separators=(",", ":")))
    return CachedSquad(paths, meta_file, examples, features, report, len(features), key, reused=False)
