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

``validate_pretraining_files`` checks, before any model is built, that every glob matches files and that
the records have the layout the flags promise (lengths, ids < vocab_size), with one-line errors naming the
file and record. The pipeline also asserts ``ids < vocab_size`` on every record as a safety net.
"""

from __future__ import annotations

import json
import os

import numpy as np
import tensorflow as tf
from google.protobuf.message import DecodeError
from tensorflow.core.example import example_pb2

from albert_tf import files as _fs
from albert_tf.data.pretraining.online_masking import (
    SPM_MASK_ID,
    OnlineMaskingConfig,
    add_random_draws,
    mask_batch,
    masking_key,
)
from albert_tf.data.pretraining.record_files import is_sidecar
from albert_tf.data.pretraining.schema import (
    PretrainingDataError,
    feature_lengths,
    feature_spec,
    length_flag,
)
from albert_tf.data.tfrecord import TFRecordError, count_records, file_size, iter_records


def read_tfrecord_file(path: str, limit: int | None = None):
    """Yield raw records of a TFRecord file without starting the TF runtime, checking framing and checksums.

    (MultiWorkerMirroredStrategy must be created before any TF op runs, and we validate inputs first.)
    """
    try:
        yield from iter_records(path, limit)
    except TFRecordError as e:
        raise PretrainingDataError(str(e)) from None


def sidecar_entries(files: list[str]) -> dict[str, dict]:
    """``{record file: its entry}`` from the sidecars beside ``files`` (record count and size of each file)."""
    out: dict[str, dict] = {}
    for folder in sorted({os.path.dirname(p) for p in files}):
        for candidate in _fs.match(os.path.join(folder, "*.json")):
            if not is_sidecar(candidate):
                continue
            with _fs.open_file(candidate, "r") as f:
                for entry in json.loads(f.read()).get("files", []):
                    out[os.path.join(folder, entry["name"])] = dict(entry, sidecar=candidate)
    return out


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
            example = example_pb2.Example.FromString(raw)
            ids = _feature_values(example, "input_ids") or []
            weights = _feature_values(example, "masked_lm_weights") or []
            for position, weight in zip(_feature_values(example, "masked_lm_positions") or [], weights):
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


def check_complete(files: list[str]) -> None:
    """Every file is whole: its size equals the one its sidecar lists, or (no sidecar) every record's framing
    is sound to the end of the file. Catches a file cut short at its end (a killed writer), which a check of
    the first records cannot see.
    """
    listed = sidecar_entries(files)
    for path in files:
        entry = listed.get(path)
        if entry is None:
            try:
                count_records(path)
            except TFRecordError as e:
                raise PretrainingDataError(str(e)) from None
            continue
        size = file_size(path)
        if size != entry["bytes"]:
            raise PretrainingDataError(
                f"{path}: {size} bytes, but {entry['sidecar']} lists {entry['bytes']} bytes: the record set is "
                "incomplete or was overwritten by another run"
            )


def _feature_values(example: example_pb2.Example, name: str):
    feature = example.features.feature.get(name)
    if feature is None:
        return None
    kind = feature.WhichOneof("kind")
    return list(getattr(feature, kind).value) if kind else []


def validate_pretraining_files(
    files: list[str],
    max_seq_length: int,
    max_predictions_per_seq: int,
    vocab_size: int | None = None,
    records_per_file: int = 64,
    flag_prefix: str = "",
    token_boundary: bool = False,
) -> int:
    """Check the first ``records_per_file`` records of every file; return how many records were checked.

    ``token_boundary``: the records must also hold that feature (online masking reads it).
    Raises PretrainingDataError naming the file, the record index and what was expected.
    """
    checked = 0
    expected = feature_lengths(max_seq_length, max_predictions_per_seq)
    if token_boundary:
        expected["token_boundary"] = max_seq_length
    for path in files:
        try:
            n_in_file = 0
            for index, raw in enumerate(read_tfrecord_file(path, records_per_file)):
                n_in_file += 1
                try:
                    example = example_pb2.Example.FromString(raw)
                except DecodeError:
                    raise PretrainingDataError(f"{path}: record {index}: not a tf.train.Example") from None
                for name, length in expected.items():
                    values = _feature_values(example, name)
                    where = f"{path}: record {index}"
                    if values is None:
                        why = "--masked_lm_budget reads it" if name == "token_boundary" else "not an ALBERT record?"
                        raise PretrainingDataError(f"{where}: feature '{name}' is missing ({why})")
                    if len(values) != length:
                        raise PretrainingDataError(
                            f"{where}: '{name}' has {len(values)} values but {flag_prefix}{length_flag(name)}={length}"
                            f" (records were written with a different length)"
                        )
                if vocab_size is not None:
                    for name in ("input_ids", "masked_lm_ids"):
                        values = np.asarray(_feature_values(example, name))
                        if values.size and (values.max() >= vocab_size or values.min() < 0):
                            raise PretrainingDataError(
                                f"{path}: record {index}: '{name}' contains id {int(values.max())} but the config's "
                                f"vocab_size is {vocab_size} (records made with another vocabulary?)"
                            )
                positions = np.asarray(_feature_values(example, "masked_lm_positions"))
                if positions.size and positions.max() >= max_seq_length:
                    raise PretrainingDataError(
                        f"{path}: record {index}: masked_lm_positions has {int(positions.max())} >= max_seq_length "
                        f"{max_seq_length}"
                    )
            if n_in_file == 0:
                raise PretrainingDataError(f"{path}: the file holds no records")
            checked += n_in_file
        except (tf.errors.OpError, OSError) as e:
            raise PretrainingDataError(f"{path}: cannot read ({str(e).splitlines()[0]})") from None
    check_complete(files)
    return checked


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
