"""Quiet start-up: TensorFlow's native banners off unless ``--verbose``.

TensorFlow 2.21's shared libraries write a few INFO lines to file descriptor 2 while they load, before absl's
C++ logging is initialised ("All log messages before absl::InitializeLog() ...", "oneDNN custom operations are
on", "Could not find cuda drivers", the CPU-feature notice) and an ERROR line when no GPU driver answers
("failed call to cuInit"). ``TF_CPP_MIN_LOG_LEVEL`` does not reach the first ones, so a command imports
TensorFlow here with descriptor 2 captured, and passes on every captured line except those known banners.
``--verbose`` (or ``ALBERT_TF_VERBOSE=1``) leaves everything as TensorFlow prints it.

Commands do not import TensorFlow up front: :func:`quiet_tensorflow_on_first_import` (run when ``albert_tf.cli`` is
imported) makes the *first* ``import tensorflow``, wherever it happens, the quiet import. So a command that never
needs TensorFlow (``create_pretraining_data`` on local paths) does not pay its seconds of start-up, and every other
command still gets its banners filtered.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

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


def set_cpp_log_level() -> None:
    """TensorFlow's C++ log level for a command, unless the environment sets one: fatal errors only (3), or
    errors too (2) with ``--verbose``. Level 2 still prints runtime notices such as ``E0000 ... oneDNN supports
    DT_INT64 only on platforms with AVX-512`` between a command's own lines. It must be set before TensorFlow starts."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2" if is_verbose() else "3")


def is_verbose(argv: list[str] | None = None) -> bool:
    """``--verbose`` on the command line or ``ALBERT_TF_VERBOSE`` set to a true value."""
    args = sys.argv if argv is None else argv
    return "--verbose" in args or os.environ.get(VERBOSE_ENV, "").lower() in ("1", "true", "yes")


def filter_banners(text: str) -> str:
    """``text`` without TensorFlow's start-up banner lines."""
    return "".join(line for line in text.splitlines(keepends=True) if not BANNERS.search(line))


@contextlib.contextmanager
def _banners_filtered() -> Iterator[None]:
    """Capture file descriptor 2 for the block, then write back what it got minus the banner lines."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr replaced by an object without a descriptor
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            capture.seek(0)
            rest = filter_banners(capture.read().decode("utf-8", errors="replace"))
            if rest:
                sys.stderr.write(rest)
                sys.stderr.flush()


def import_tensorflow_quietly(verbose: bool | None = None) -> None:
    """Import TensorFlow (and enumerate devices, where the cuInit line comes from) with the banners filtered."""
    if "tensorflow" in sys.modules:
        return
    set_cpp_log_level()
    if is_verbose() if verbose is None else verbose:
        return
    with _banners_filtered():
        import tensorflow as tf

        tf.config.list_physical_devices()


class _QuietLoader(importlib.abc.Loader):
    """TensorFlow's own loader, run with the banners filtered (and the devices enumerated inside the capture)."""

    def __init__(self, inner: importlib.abc.Loader):
        self.inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        if is_verbose():
            self.inner.exec_module(module)
            return
        with _banners_filtered():
            self.inner.exec_module(module)
            module.config.list_physical_devices()


class _QuietTensorFlowFinder(importlib.abc.MetaPathFinder):
    """Finds ``tensorflow`` once, through the other finders, and hands it :class:`_QuietLoader`."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "tensorflow":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)  # once: the real finders find it, and nested imports go straight through
        spec = importlib.util.find_spec("tensorflow")
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _QuietLoader(spec.loader)
        return spec


def quiet_tensorflow_on_first_import() -> None:
    """Make the first ``import tensorflow`` of this process (if any) :func:`import_tensorflow_quietly`'s import."""
    if "tensorflow" in sys.modules:
        return
    set_cpp_log_level()
    if not any(isinstance(f, _QuietTensorFlowFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietTensorFlowFinder())


def only_albert_info(record: Any) -> bool:
    """Log filter: warnings and errors from anywhere, INFO only from albert-tf's own modules."""
    return record.levelno >= 30 or "albert_tf" in str(getattr(record, "pathname", ""))


class PlainFormatter:
    """absl log records as the command's own lines: the message alone for INFO, ``warning: `` / ``error: `` before
    the others. absl's ``I1126 22:47:37.647765 140... experiment.py:116]`` prefix is for log files, not a terminal."""

    def format(self, record: Any) -> str:
        message = record.getMessage()
        if record.levelno >= 40:
            return f"error: {message}"
        if record.levelno >= 30:
            return f"warning: {message}"
        return message


def quiet_logs(verbose: bool = False) -> None:
    """A command's output limited to albert-tf's own lines (unless ``verbose``).

    absl's handler keeps INFO from albert-tf's modules only, printed without absl's prefix; TensorFlow's Python
    logger (deprecation notices, "Assets written") shows errors only; Python warnings raised outside albert-tf (Keras,
    TensorFlow, protobuf) are not shown; TensorFlow's C++ log (``E0000 ... oneDNN supports DT_INT64 only on platforms
    with AVX-512``) is limited by :func:`set_cpp_log_level`. ``--verbose`` (or
    ``ALBERT_TF_VERBOSE=1``) keeps everything as the libraries print it.
    """
    if verbose or is_verbose():
        return
    import logging as std_logging

    from absl import logging

    handler = logging.get_absl_handler()
    if only_albert_info not in handler.filters:
        handler.addFilter(only_albert_info)
    handler.python_handler.setFormatter(PlainFormatter())  # type: ignore[arg-type]
    # TensorFlow's own Python logger, set by name so that TensorFlow is not imported for it.
    std_logging.getLogger("tensorflow").setLevel(std_logging.ERROR)
    warnings.filterwarnings("ignore")
    warnings.filterwarnings("default", module=r"albert_tf(\.|$)")
