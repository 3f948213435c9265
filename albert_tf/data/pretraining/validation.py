"""Pretraining record files checked before any model is built, without TensorFlow: framing and checksums
(``data.tfrecord``), each record's features and lengths against the flags, its ids against the vocabulary, and
every file whole (its size as its sidecar lists, or sound framing to its end).

``run_pretraining`` checks the first records of every file before it fetches a preset or imports TensorFlow
(``tasks.pretraining.inputs.check_inputs``, without the vocabulary, which the preset's config gives), then again
with the vocabulary and the whole-file check before training. Records are parsed with the TensorFlow-free
``tf.train.Example`` class of :mod:`albert_tf.data.example_proto`. Every error is one line naming the file, the
record and what was expected (:class:`~albert_tf.data.pretraining.schema.PretrainingDataError`).
"""

from __future__ import annotations

import json
import os

import numpy as np

from albert_tf import files as _fs
from albert_tf.data.example_proto import DecodeError, Example, feature_values
from albert_tf.data.pretraining.record_files import is_sidecar
from albert_tf.data.pretraining.schema import PretrainingDataError, feature_lengths, length_flag
from albert_tf.data.tfrecord import TFRecordError, count_records, file_size, iter_records

__all__ = ["check_complete", "read_tfrecord_file", "sidecar_entries", "validate_pretraining_files"]


def read_tfrecord_file(path: str, limit: int | None = None):
    """Yield raw records of a TFRecord file without starting the TF runtime, checking framing and checksums.

    (MultiWorkerMirroredStrategy must be created before any TF op runs, and inputs are checked first.)
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


def validate_pretraining_files(
    files: list[str],
    max_seq_length: int,
    max_predictions_per_seq: int,
    vocab_size: int | None = None,
    records_per_file: int = 64,
    flag_prefix: str = "",
    token_boundary: bool = False,
    complete: bool = True,
) -> int:
    """Check the first ``records_per_file`` records of every file; return how many records were checked.

    ``vocab_size`` (None: not known yet, e.g. before a preset's config is fetched): every id must be below it.
    ``token_boundary``: the records must also hold that feature (online masking reads it). ``complete``: also
    :func:`check_complete` (a whole-file read for a file without a sidecar).
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
                    example = Example.FromString(raw)
                except DecodeError:
                    raise PretrainingDataError(f"{path}: record {index}: not a tf.train.Example") from None
                for name, length in expected.items():
                    values = feature_values(example, name)
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
                        values = np.asarray(feature_values(example, name))
                        if values.size and (values.max() >= vocab_size or values.min() < 0):
                            raise PretrainingDataError(
                                f"{path}: record {index}: '{name}' contains id {int(values.max())} but the config's "
                                f"vocab_size is {vocab_size} (records made with another vocabulary?)"
                            )
                positions = np.asarray(feature_values(example, "masked_lm_positions"))
                if positions.size and positions.max() >= max_seq_length:
                    raise PretrainingDataError(
                        f"{path}: record {index}: masked_lm_positions has {int(positions.max())} >= max_seq_length "
                        f"{max_seq_length}"
                    )
            if n_in_file == 0:
                raise PretrainingDataError(f"{path}: the file holds no records")
            checked += n_in_file
        except _fs.read_errors(path) as e:
            raise PretrainingDataError(f"{path}: cannot read ({str(e).splitlines()[0]})") from None
    if complete:
        check_complete(files)
    return checked
