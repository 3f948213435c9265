"""Cache keys for converted task features (GLUE, SQuAD, RACE): what goes into a key, how it becomes a file name,
and the order training examples are written in.

A task cache (``data/glue/features.py``, ``data/squad/cache.py``, ``data/race/cache.py``) is reused only while
everything that affects its features is unchanged. The task builds a JSON-able key dict (format version, flags,
record order, ...) with the helpers here -- the content hash of each source file (:func:`file_digest`, through
``tf.io.gfile`` so ``gs://`` works) and the tokenizer's identity (:func:`tokenizer_identity`) -- and names its files
after :func:`key_digest`. Shared so that the task packages key and order their caches the same way with one
implementation.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from typing import Any, TypeVar

from albert_tf import files as _fs

__all__ = ["TRAIN_SHUFFLE_SEED", "file_digest", "key_digest", "tokenizer_identity", "training_order"]

#: The seed of the one shuffle of training examples before they are written (the official run_squad_v{1,2}.py's
#: ``random.Random(12345)``).
TRAIN_SHUFFLE_SEED = 12345
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
