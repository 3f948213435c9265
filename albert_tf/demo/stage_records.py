"""What makes ``make demo`` safe to run again: each finished stage leaves a record, and a rerun reuses it.

A stage that returns writes ``<workdir>/stages/<stage>.json`` (temporary name, then renamed): the settings it ran
with, the result the next stages read, and the lines it printed. A later run in the same work dir whose settings
agree and whose recorded output files still exist prints those lines again and goes on with the recorded result,
so the second ``make demo`` takes seconds and shows the same figures. A stage without a record (never run, or
stopped half-way) runs from its beginning, and every stage after it runs again too: its inputs may have changed.
The record is removed before a stage starts, so an interruption can never leave a record of unfinished work.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from albert_tf.files import write_text_atomic

RECORD_DIR = "stages"


def record_path(workdir: str, stage: str) -> str:
    return os.path.join(workdir, RECORD_DIR, f"{stage}.json")


def _written_paths(value: Any, workdir: str) -> Iterator[str]:
    """Every string in ``value`` (nested dicts and lists) naming a path under ``workdir``: the stage's outputs."""
    if isinstance(value, str):
        if os.path.abspath(value).startswith(os.path.abspath(workdir) + os.sep):
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _written_paths(item, workdir)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _written_paths(item, workdir)


def load(workdir: str, stage: str, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The record of ``stage`` if it was finished with ``settings`` and its output files are all there; else None
    (a record that cannot be read counts as none: the stage runs again and writes a new one)."""
    path = record_path(workdir, stage)
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("settings") != settings or "result" not in record:
        return None
    if not all(os.path.exists(p) for p in _written_paths(record["result"], workdir)):
        return None
    return record


def forget(workdir: str, stage: str) -> None:
    """Remove the record of ``stage`` (before the stage runs again)."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(record_path(workdir, stage))


def save(workdir: str, stage: str, settings: dict[str, Any], result: Any, lines: str, seconds: float) -> None:
    """Record a finished stage: its settings, JSON-able result, printed lines and duration."""
    os.makedirs(os.path.join(workdir, RECORD_DIR), exist_ok=True)
    record = {"stage": stage, "settings": settings, "result": result, "lines": lines, "seconds": round(seconds, 1),
              "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
    write_text_atomic(record_path(workdir, stage), json.dumps(record, indent=1, default=str))


class _Tee(io.TextIOBase):
    """Writes go to the real stream and into a buffer (the lines a reused stage prints again)."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.buffer = stream, io.StringIO()

    def write(self, text: str) -> int:
        self.buffer.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


@contextlib.contextmanager
def captured_stdout() -> Iterator[io.StringIO]:
    """Print as usual and keep a copy of what was printed."""
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield tee.buffer
