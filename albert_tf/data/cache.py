"""Cache keys for converted task features (GLUE, SQuAD): what goes into a key and how it becomes a file name.

A task cache (``data/glue/features.py``, ``data/squad/cache.py``) is reused only while everything that affects
its features is unchanged. The task builds a JSON-able key dict (format version, flags, ...) with the helpers
here -- the content hash of each source file (:func:`file_digest`, through ``tf.io.gfile`` so ``gs://`` works)
and the tokenizer's identity (:func:`tokenizer_identity`) -- and names its files after :func:`key_digest`.
Shared so that the two task packages key their caches the same way with one implementation.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from albert_tf import files as _fs

__all__ = ["file_digest", "key_digest", "tokenizer_identity"]


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
