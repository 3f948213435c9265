"""Which files a pretraining run reads: ``--input_file`` globs expanded, ``create_pretraining_data``'s JSON sidecars
told apart from record files. Plain Python (no TensorFlow), so that ``run_pretraining`` finds a glob that matches
nothing before it fetches a pretrained preset or starts TensorFlow."""

from __future__ import annotations

import json

from albert_tf import files as _fs
from albert_tf.data.pretraining.schema import SIDECAR_FORMAT, PretrainingDataError


def is_sidecar(path: str) -> bool:
    """Whether ``path`` is a JSON sidecar written by ``create_pretraining_data`` (never a record file)."""
    if not path.endswith(".json"):
        return False
    try:
        with _fs.open_file(path, "r") as f:
            return json.loads(f.read()).get("format") == SIDECAR_FORMAT
    except (ValueError, AttributeError, *_fs.read_errors(path)):
        return False


def expand_globs(input_file: str | list[str], flag_name: str = "--input_file", log=None) -> list[str]:
    """Comma-separated globs (or a list of them) -> sorted file list; each glob must match a file.

    Globs follow Python's rules for local paths (``files.glob``: ``~`` expanded, hidden files and directories not
    matched; no TensorFlow), ``tf.io.gfile`` for remote ones. ``create_pretraining_data`` sidecars matched by a
    glob are left out (said once through ``log``).
    """
    patterns = input_file if isinstance(input_file, (list, tuple)) else str(input_file or "").split(",")
    patterns = [p.strip() for p in patterns if p and p.strip()]
    if not patterns:
        raise PretrainingDataError(f"{flag_name} is empty: give one or more comma-separated TFRecord globs")
    files: list[str] = []
    sidecars: list[str] = []
    for pattern in patterns:
        matched = _fs.glob(pattern)
        if not matched and _fs.isdir(pattern):
            raise PretrainingDataError(f"{flag_name}={pattern} is a directory; give its record files, e.g. "
                                       f"{pattern.rstrip('/')}/*.tfrecord*")
        if not matched:
            raise PretrainingDataError(f"{flag_name}: no file matches {pattern!r}")
        for path in matched:
            (sidecars if is_sidecar(path) else files).append(path)
    if sidecars and log is not None:
        log(f"{flag_name}: skipping {len(sidecars)} create_pretraining_data sidecar(s): {', '.join(sidecars)}")
    if not files:
        raise PretrainingDataError(f"{flag_name}: only sidecar files match {input_file!r}, no TFRecord file")
    return files
