"""Cache keys for converted task features (GLUE, SQuAD, RACE): what goes into a key, how it becomes a file name,
the order training examples are written in, and the files they are written to.

A task cache (``data/glue/features.py``, ``data/squad/cache.py``, ``data/race/cache.py``) is reused only while
everything that affects its features is unchanged. The task builds a JSON-able key dict (format version, flags,
record order, ...) with the helpers here -- the content hash of each source file (:func:`file_digest`, through
``tf.io.gfile`` so ``gs://`` works) and the tokenizer's identity (:func:`tokenizer_identity`) -- and names its files
after :func:`key_digest`. Shared so that the task packages key and order their caches the same way with one
implementation.

A training cache written in the seeded permutation is split into consecutive files (:func:`record_paths`,
:func:`write_records`) so that the input pipeline can read them in an order drawn from the run's seed, anew each
epoch (``data.batching.record_dataset``): without it every seed of ``--num_trials`` would train on the same first
part of the permutation, and a run shorter than an epoch would measure the spread of initialisation and dropout
only, not of which examples it saw. Evaluation and prediction caches, and a training cache in the file's order
(``--noshuffle_train_examples``, the official runners' layout), stay one file.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from albert_tf import files as _fs
from albert_tf import interrupts
from albert_tf.progress import Progress

__all__ = [
    "SHARD_MAX_FILES",
    "SHARD_MIN_RECORDS",
    "TRAIN_SHUFFLE_SEED",
    "file_digest",
    "key_digest",
    "record_layout",
    "record_paths",
    "reusable_record_files",
    "tokenizer_identity",
    "training_order",
    "write_records",
]

#: The seed of the one shuffle of training examples before they are written (the official run_squad_v{1,2}.py's
#: ``random.Random(12345)``).
TRAIN_SHUFFLE_SEED = 12345
#: A sharded training cache has one file per this many records (fewer for a small split), at most SHARD_MAX_FILES:
#: fine enough that seeds draw different examples first (MRPC's 3,668 pairs: 114 files), few enough for a bucket.
SHARD_MIN_RECORDS = 32
SHARD_MAX_FILES = 128
_T = TypeVar("_T")


def training_order(examples: Sequence[_T], shuffle: bool) -> tuple[list[_T], str]:
    """The order a training cache is written in, and its name for the cache key.

    Shuffled once by ``random.Random(TRAIN_SHUFFLE_SEED)`` (``"shuffled-12345"``), or the source's own order
    (``"file"``). The input pipeline then shuffles through a buffer of ``data.batching.SHUFFLE_BUFFER`` records,
    which mixes only a window of the file: a training file sorted by genre or label (STS-B's is sorted by genre)
    written in its own order gives batches of one genre at a time. The official run_squad shuffles first; the
    official run_classifier.py and run_race.py write the file's order (``--noshuffle_train_examples``).
    """
    ordered = list(examples)  # the caller's list keeps its order
    if not shuffle:
        return ordered, "file"
    random.Random(TRAIN_SHUFFLE_SEED).shuffle(ordered)
    return ordered, f"shuffled-{TRAIN_SHUFFLE_SEED}"


def record_layout(sharded: bool) -> str:
    """The files' layout for a cache key: ``"shards-32-128"`` (:data:`SHARD_MIN_RECORDS`, :data:`SHARD_MAX_FILES`)
    or ``"one-file"``; a change of either constant writes the cache again."""
    return f"shards-{SHARD_MIN_RECORDS}-{SHARD_MAX_FILES}" if sharded else "one-file"


def record_paths(path: str, num_records: int, sharded: bool) -> list[str]:
    """The files a cache of ``num_records`` records is written to: ``[path]``, or with ``sharded``
    ``path-00000-of-000NN`` ... (``max(1, min(SHARD_MAX_FILES, num_records // SHARD_MIN_RECORDS))`` files)."""
    if not sharded:
        return [path]
    count = max(1, min(SHARD_MAX_FILES, num_records // SHARD_MIN_RECORDS))
    return [f"{path}-{k:05d}-of-{count:05d}" for k in range(count)]


def write_records(paths: Sequence[str], records: Iterable[bytes], num_records: int,
                  log: Callable[[str], None] | None = print) -> None:
    """Write ``num_records`` serialized records to ``paths`` in order, consecutive runs of equal size (file ``k``
    holds records ``k * n // len(paths)`` up to ``(k + 1) * n // len(paths)``), all under temporary names, renamed
    together when the last is complete (removed when the records fail, e.g. a conversion error, or on Ctrl-C): a
    stopped run leaves no file of the cache under its final name. Raises ``ValueError`` when ``records`` yields
    another count than ``num_records``. The records are usually converted as they are written (a generator): a
    progress line goes to ``log`` every few seconds."""
    import tensorflow as tf

    stream = iter(records)
    count = len(paths)
    written: list[tuple[str, str]] = []
    progress = Progress(f"caching {os.path.basename(paths[0]).split('.tf_record')[0]}", total=num_records,
                        unit="records", log=log)
    try:
        for k, path in enumerate(paths):
            size = (k + 1) * num_records // count - k * num_records // count
            tmp = _fs.temporary_name(path)
            written.append((tmp, path))
            with tf.io.TFRecordWriter(tmp) as writer:
                for _ in range(size):
                    record = next(stream, None)
                    if record is None:
                        raise ValueError(f"{path}: fewer records than the {num_records} announced")
                    writer.write(record)
                    progress.update()
        if next(stream, None) is not None:
            raise ValueError(f"{paths[-1]}: more records than the {num_records} announced")
        with interrupts.deferred():  # all files under their names, or (a signal before this) none
            for tmp, path in written:
                _fs.replace(tmp, path)
            written.clear()
    finally:  # a conversion error or Ctrl-C: no half cache is left behind, under any name
        for tmp, _ in written:
            if _fs.exists(tmp):
                _fs.remove(tmp)


def reusable_record_files(meta: Any, directory: str, key: Any, num_examples: int) -> list[str] | None:
    """The record files of a cache whose side file ``meta`` (its parsed JSON, or None) records this ``key`` and
    ``num_examples`` and lists ``record_files`` (base names in ``directory``) that all exist; None otherwise: then
    the cache is written again."""
    if not isinstance(meta, dict) or meta.get("key") != key or meta.get("num_examples") != num_examples:
        return None
    names = meta.get("record_files")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        return None
    paths = [os.path.join(directory, n) for n in names]
    return paths if all(_fs.isfile(p) for p in paths) else None


def file_digest(path: str) -> str:
    """sha256 hex digest of the file's bytes (read in 1 MiB chunks through ``tf.io.gfile``)."""
    h = hashlib.sha256()
    with _fs.open_file(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tokenizer_identity(tokenizer: Any) -> Any:
    """``tokenizer.identity()`` (model/vocab hash and every switch that changes ids); TypeError without one."""
    ident = getattr(tokenizer, "identity", None)
    if ident is None:
        raise TypeError("the tokenizer needs an identity() (hash of its model/vocab and options) to key the cache")
    return ident() if callable(ident) else ident


def key_digest(key: dict[str, Any], length: int = 16) -> str:
    """A short hex digest of a cache key (sorted-key JSON), for file names."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:length]
