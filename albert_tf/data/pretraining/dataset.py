"""Input pipeline for the official pretraining TFRecords (official ``create_pretraining_data.py:
write_instance_to_example_files``, ``run_pretraining.py: input_fn_builder``).

Features read: ``input_ids``, ``input_mask``, ``segment_ids`` [max_seq_length];
``masked_lm_positions``, ``masked_lm_ids`` (int64) and ``masked_lm_weights`` (float) [max_predictions_per_seq];
``next_sentence_labels`` [1] (the sentence-order label). int64 is cast to int32.

Training order follows the official ``input_fn_builder``: file list -> repeat -> shuffle(#files) ->
interleave(TFRecordDataset, cycle_length=min(4, #files)) -> shuffle(100) -> parse -> batch(drop_remainder).
Evaluation reads every record once and keeps the last partial batch (the official dropped it). Unlike the
official ``sloppy=True`` interleave, the order is deterministic given ``seed``, and the iterator is checkpointable,
so a resumed run reads exactly the records an uninterrupted run would.

With ``online_masking`` (``run_pretraining --masked_lm_budget=N``, see ``online_masking.py``) the records'
masks are replaced by new ones every time a record is read: ``token_boundary`` is read too, every element gets
its index in the record stream (``enumerate``, part of the checkpointed iterator) as the key of its random
draws, and the batches are masked before they leave the pipeline, with the same features and shapes.

``validate_pretraining_files`` (TensorFlow-free, in ``validation``; re-exported here) checks, before any model is
built, that the records have the layout the flags promise (lengths, ids < vocab_size), with one-line errors naming
the file and record. The pipeline also asserts ``ids < vocab_size`` on every record as a safety net.
"""

from __future__ import annotations

import json

import tensorflow as tf

from albert_tf import files as _fs
from albert_tf.data.example_proto import Example, feature_values
from albert_tf.data.pretraining.online_masking import (
    SPM_MASK_ID,
    OnlineMaskingConfig,
    add_random_draws,
    mask_batch,
    masking_key,
)
from albert_tf.data.pretraining.schema import PretrainingDataError, feature_spec
from albert_tf.data.pretraining.validation import (
    check_complete,
    read_tfrecord_file,
    sidecar_entries,
    validate_pretraining_files,
)

__all__ = [
    "check_complete",
    "online_masking_config",
    "pretraining_dataset",
    "read_tfrecord_file",
    "recorded_masking_flags",
    "records_mask_id",
    "sidecar_entries",
    "validate_pretraining_files",
]


# The create_pretraining_data flags online masking reuses from the records' sidecars.
MASKING_FLAGS = ("masked_lm_prob", "ngram", "favor_shorter_ngram", "do_whole_word_mask")


def recorded_masking_flags(files: list[str]) -> dict:
    """The masking flags (:data:`MASKING_FLAGS`) the sidecars of ``files`` record, for online masking to reuse.

    Only flags some sidecar records are returned (records without a sidecar contribute nothing); two sidecars
    that disagree on a flag raise :class:`PretrainingDataError` naming both, since one run masks one way.
    """
    found: dict[str, tuple] = {}
    for path, entry in sorted(sidecar_entries(files).items()):
        if path not in files:
            continue
        with _fs.open_file(entry["sidecar"], "r") as f:
            recorded = json.loads(f.read()).get("flags", {})
        for name in MASKING_FLAGS:
            if name not in recorded:
                continue
            value, source = found.setdefault(name, (recorded[name], entry["sidecar"]))
            if value != recorded[name]:
                raise PretrainingDataError(
                    f"{source} records {name}={value} but {entry['sidecar']} records {name}={recorded[name]}: "
                    f"online masking needs one value (give --{name} explicitly)"
                )
    return {name: value for name, (value, _) in found.items()}


def records_mask_id(files: list[str], records_per_file: int = 64) -> int | None:
    """The [MASK] id of the vocabulary the records were made with, read from the records themselves.

    The offline masker puts [MASK] at 80% of the predicted positions, so it is the input id that fills most of
    them; None when the first ``records_per_file`` records of each file hold too few predictions to tell.
    """
    counts: dict[int, int] = {}
    total = 0
    for path in files:
        for raw in read_tfrecord_file(path, records_per_file):
            example = Example.FromString(raw)
            ids = feature_values(example, "input_ids") or []
            weights = feature_values(example, "masked_lm_weights") or []
            for position, weight in zip(feature_values(example, "masked_lm_positions") or [], weights):
                if weight > 0 and 0 <= position < len(ids):
                    counts[ids[position]] = counts.get(ids[position], 0) + 1
                    total += 1
    if total < 20:
        return None
    best = max(counts, key=counts.get)
    return int(best) if counts[best] > total / 2 else None


def online_masking_config(
    files: list[str],
    budget: int,
    vocab_size: int,
    max_predictions_per_seq: int,
    seed: int,
    masked_lm_prob: float | None = None,
) -> OnlineMaskingConfig:
    """The :class:`OnlineMaskingConfig` of a ``--masked_lm_budget`` run on ``files``.

    ``masked_lm_prob`` (None: the value the records' sidecars record, else the official 0.15; a recorded 0 means
    records made without masks, not a recipe, and also gives 0.15) and the n-gram and whole-word flags as the
    records were made, so online masks follow the records' recipe; the [MASK] id as :func:`records_mask_id`
    finds it, else ALBERT's SentencePiece id 4.
    """
    recorded = recorded_masking_flags(files)
    if recorded.get("masked_lm_prob") == 0:
        del recorded["masked_lm_prob"]
    if masked_lm_prob is not None:
        recorded["masked_lm_prob"] = masked_lm_prob
    mask_id = records_mask_id(files)
    return OnlineMaskingConfig(
        budget=budget,
        vocab_size=vocab_size,
        max_predictions_per_seq=max_predictions_per_seq,
        mask_id=SPM_MASK_ID if mask_id is None else mask_id,
        seed=seed,
        **recorded,
    )


def _decode(record, spec, vocab_size: int | None):
    example = tf.io.parse_single_example(record, spec)
    out = {}
    for name, value in example.items():
        out[name] = tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
    if vocab_size is not None:
        ids = tf.concat([out["input_ids"], out["masked_lm_ids"]], 0)
        with tf.control_dependencies(
            [
                tf.debugging.assert_less(
                    ids, vocab_size, message=f"pretraining record has a token id >= config vocab_size {vocab_size}"
                )
            ]
        ):
            out["input_ids"] = tf.identity(out["input_ids"])
    return out


def pretraining_dataset(
    files: list[str],
    batch_size: int,
    max_seq_length: int,
    max_predictions_per_seq: int,
    *,
    is_training: bool,
    seed: int | None = 12345,
    vocab_size: int | None = None,
    shuffle_buffer_size: int = 100,
    cycle_length: int = 4,
    online_masking: OnlineMaskingConfig | None = None,
) -> tf.data.Dataset:
    """Batched feature dicts (int32 ids, float32 weights).

    Training repeats forever in full batches (``drop_remainder``, as official). Evaluation reads the files once,
    in order, and keeps the last partial batch, so every held-out record counts: the trainer pads it to the full
    static batch and removes the padded rows' outputs (the official ``input_fn`` dropped the remainder, so its
    eval metrics skipped up to ``batch_size - 1`` records). ``online_masking`` re-masks every record
    as it is read (module docstring); its keys are ``(online_masking.seed, index in the stream)`` for training and
    ``(online_masking.seed, -1 - index)`` for evaluation, so every evaluation sees the same masks.
    """
    spec = feature_spec(max_seq_length, max_predictions_per_seq)
    if online_masking is not None:
        spec["token_boundary"] = tf.io.FixedLenFeature([max_seq_length], tf.int64)
    if is_training:
        d = tf.data.Dataset.from_tensor_slices(tf.constant(files))
        d = d.repeat()
        d = d.shuffle(buffer_size=len(files), seed=seed)
        d = d.interleave(
            tf.data.TFRecordDataset,
            cycle_length=min(cycle_length, len(files)),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        d = d.shuffle(buffer_size=shuffle_buffer_size, seed=None if seed is None else seed + 1)
    else:
        d = tf.data.TFRecordDataset(files)
    if online_masking is None:
        d = d.map(lambda r: _decode(r, spec, vocab_size), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        d = d.batch(batch_size, drop_remainder=is_training)
        return d.prefetch(2)
    config = online_masking
    sign = 1 if is_training else -1
    offset = 0 if is_training else -1

    def decode_and_draw(index, record):
        key = masking_key(config.seed, sign * index + offset)
        return add_random_draws(_decode(record, spec, vocab_size), key, config)

    d = d.enumerate().map(decode_and_draw, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    d = d.batch(batch_size, drop_remainder=is_training)
    d = d.map(lambda batch: mask_batch(batch, config), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return d.prefetch(2)
