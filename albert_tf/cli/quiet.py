"""Quiet start-up: TensorFlow's native banners off unless ``--verbose``.

TensorFlow 2.21's shared libraries write a few INFO lines to file descriptor 2 while they load, before absl's
C++ logging is initialised ("All log messages before absl::InitializeLog() ...", "oneDNN custom operations are
on", "Could not find cuda drivers", the CPU-feature notice) and an ERROR line when no GPU driver answers
("failed call to cuInit"). ``TF_CPP_MIN_LOG_LEVEL`` does not reach the first ones, so a command imports
TensorFlow here with descriptor 2 captured, and passes on every captured line except those known banners.
``--verbose`` (or ``ALBERT_TF_VERBOSE=1``) leaves everything as TensorFlow prints it.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile

VERBOSE_ENV = "ALBERT_TF_VERBOSE"

# Lines TensorFlow prints at start-up on every machine without a GPU; nothing else is dropped.
BANNERS = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called"
    r"|oneDNN custom operations are on"
    r"|Could not find cuda drivers on your machine"
    r"|cpu_feature_guard\.cc"
    r"|^To enable the following instructions: .* rebuild TensorFlow"
    r"|failed call to cuInit"
)


def is_verbose(argv: list[str] | None = None) -> bool:
    """``--verbose`` on the command line or ``ALBERT_TF_VERBOSE`` set to a true value."""
    args = sys.argv if argv is None else argv
    return "--verbose" in args or os.environ.get(VERBOSE_ENV, "").lower() in ("1", "true", "yes")


def filter_banners(text: str) -> str:
    """``text`` without TensorFlow's start-up banner lines."""
    return "".join(line for line in text.splitlines(keepends=True) if not BANNERS.search(line))


def import_tensorflow_quietly(verbose: bool | None = None) -> None:
    """Import TensorFlow (and enumerate devices, where the cuInit line comes from) with the banners filtered."""
    if "tensorflow" in sys.modules:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if is_verbose() if verbose is None else verbose:
        return
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr replaced by an object without a descriptor
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), fd)
        try:
            import tensorflow as tf

            tf.config.list_physical_devices()
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            capture.seek(0)
            rest = filter_banners(capture.read().decode("utf-8", errors="replace"))
            if rest:
                sys.stderr.write(rest)
                sys.stderr.flush()
