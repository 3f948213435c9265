"""Ctrl-C (SIGINT) and SIGTERM as a clean stop of a command: one line, exit status 130 / 143, no traceback.

:func:`install` routes both signals to :class:`Interrupted` (a ``KeyboardInterrupt``), raised in the main thread
at the next Python instruction; a TensorFlow op that is running finishes first. The exception unwinds like any
other, so ``finally`` blocks and ``with`` exits run: the run lock is released, summary writers are flushed and
closed, worker processes are stopped. Inside :func:`deferred` (a checkpoint save, the rename that publishes an
output) a signal is held until the block ends, so a stop never leaves half a publication; a second signal while
one is held stops at once (the user insists).

The command's last line comes from :func:`note`, set by whoever knows the progress (the trainer: ``at step 57 of
100, last checkpoint step 40``) and :func:`advise` (what to do: resume, or run again). :func:`stop` prints it and
ends the process; with TensorFlow loaded by ``os._exit``, flushing stdout and stderr first: the unwinding has
already closed what this package opened, and TensorFlow's own teardown at interpreter exit is where a Ctrl-C used
to crash (a segmentation fault inside the summary writer).

Floor 0: no albert-tf import, no TensorFlow; the command-line layer installs it, every layer may :func:`note`.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import TracebackType

SIGNALS = (signal.SIGINT, signal.SIGTERM)
RESUME = "run the same command to resume"
AGAIN = "nothing was published; run the same command again"


class Interrupted(KeyboardInterrupt):
    """A command was asked to stop by ``signum``; :attr:`exit_status` is the shell's ``128 + signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


_state: dict = {"progress": "", "advice": RESUME, "holding": 0, "pending": None, "received": None}


def _handler(signum: int, frame) -> None:
    _state["received"] = signum
    if _state["holding"] and _state["pending"] is None:
        _state["pending"] = signum
        return
    raise Interrupted(signum)


def cause(error: BaseException) -> Interrupted | None:
    """The :class:`Interrupted` that ``error`` is or comes from: a signal inside a C extension's import surfaces
    as ``ImportError: initialization failed`` raised from it."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, Interrupted):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def received() -> Interrupted | None:
    """An :class:`Interrupted` for the last signal this process's handler got, if any.

    An error that surfaces after a signal is taken as that signal's doing: the :class:`Interrupted` raised inside
    a library's own Python can come back as another exception without it as the cause (TensorFlow reported a
    Ctrl-C during a training step as ``Graph execution error``).
    """
    return None if _state["received"] is None else Interrupted(_state["received"])


def forget() -> None:
    """Start a command with no signal received (one process may run several commands: tests, notebooks)."""
    _state["received"] = None
    _state["pending"] = None


def _excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    interrupted = cause(value) or received()
    if interrupted is not None:  # a signal outside any command's main (e.g. while TensorFlow imports)
        stop(interrupted, hard=True)
    _previous_excepthook(kind, value, tb)


_previous_excepthook = sys.excepthook


def install() -> bool:
    """Route SIGINT and SIGTERM of this process to :class:`Interrupted`; an uncaught one becomes :func:`stop`.

    Only from the main thread of a main process (Python delivers signals there; a multiprocessing worker gets
    :func:`ignore_in_worker`); returns whether the handlers were installed. A handler someone else installed
    (not Python's defaults) is left alone.
    """
    global _previous_excepthook
    if threading.current_thread() is not threading.main_thread():
        return False
    if multiprocessing.current_process().name != "MainProcess":  # a pool's worker, importing the main module
        ignore_in_worker()
        return False
    for signum in SIGNALS:
        current = signal.getsignal(signum)
        if current in (signal.default_int_handler, signal.SIG_DFL, _handler, _ignore_from_now):
            signal.signal(signum, _handler)
    if sys.excepthook is not _excepthook:
        _previous_excepthook, sys.excepthook = sys.excepthook, _excepthook
    return True


def ignore_in_worker() -> None:
    """For a worker process: SIGINT ignored (Ctrl-C at a terminal reaches the whole process group; the parent
    decides), SIGTERM back to its default (the parent's pool stops its workers with it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def note(progress: str) -> None:
    """Where the command is, for its last line: ``interrupted <progress>; <advice>``."""
    _state["progress"] = progress


def advise(advice: str) -> None:
    """What a user does after a stop (default :data:`RESUME`; :data:`AGAIN` where an output appears only whole)."""
    _state["advice"] = advice


def message() -> str:
    progress = f" {_state['progress']}" if _state["progress"] else ""
    return f"interrupted{progress}; {_state['advice']}"


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold a signal that arrives inside the block until the block ends (then raise it)."""
    _state["holding"] += 1
    try:
        yield
    finally:
        _state["holding"] -= 1
        if not _state["holding"] and _state["pending"] is not None:
            signum, _state["pending"] = _state["pending"], None
            raise Interrupted(signum)


def _ignore_from_now(signum: int, frame) -> None:
    """The handler after :func:`settled`: the signal is dropped."""


def _ignore_at_exit() -> None:
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def settled() -> None:
    """The command's outcome is decided (its work done, or its one error line printed): from here a signal is
    dropped. The exit that follows tears down the interpreter and TensorFlow; Python puts the default handlers back
    early in that teardown, so a Ctrl-C landing there killed a finished run (exit status -2, no line). So the
    signals are dropped by a Python handler now and ignored (``SIG_IGN``) from the interpreter's exit on
    (``atexit``): an ignored signal stays ignored in every process started after it, so a command called inside a
    longer-lived process (a test, a notebook) must not leave it behind."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        signal.signal(signum, _ignore_from_now)
    if not _state.get("exit_hook"):
        _state["exit_hook"] = True
        atexit.register(_ignore_at_exit)


def stop(error: Interrupted, hard: bool = False) -> None:
    """Print :func:`message` on stderr and end the process with ``error.exit_status`` (130 or 143).

    With TensorFlow loaded (or ``hard``), by ``os._exit`` after flushing: its teardown at interpreter exit is
    skipped. Without it, by ``SystemExit``, so that Python's own exit work runs (multiprocessing's finalizers).
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        sys.stderr.write(message() + "\n")
        sys.stderr.flush()
    if hard or "tensorflow" in sys.modules:
        os._exit(error.exit_status)
    raise SystemExit(error.exit_status)


def _child_main(connection, target, args) -> None:
    ignore_in_worker()
    try:
        result = ("value", target(*args))
    except Exception as e:  # noqa: BLE001 - every failure goes back to the parent, which raises it
        result = ("error", e)
    try:
        connection.send(result)
    except Exception:  # noqa: BLE001 - an exception that cannot be sent: its type and message
        connection.send(("error", RuntimeError(f"{type(result[1]).__name__}: {result[1]}")))
    connection.close()


def in_child(target, *args, poll_s: float = 0.2, tick=None):
    """``target(*args)`` run in a fresh child process; its return value, or its exception raised here.

    For a long library call that holds this process in C code (SentencePiece training, the TFLite converter): a
    Python signal handler runs only between instructions, so Ctrl-C would wait for the call to end. Here the call
    runs in a child and this process waits in short polls, so a signal stops it at once, and the child is killed
    on the way out (it ignores SIGINT itself: the parent decides). ``target`` and ``args`` must be importable and
    picklable (the child is *spawned*: no forked copy of TensorFlow's threads). ``tick()``, if given, is called at
    every poll (a progress line that says the call is still running).
    """
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child_main, args=(sender, target, args), daemon=True)
    kind, value = None, None
    try:
        with deferred():  # a signal as the child starts is raised once it is known here, so it is killed below
            process.start()
            sender.close()
        while not receiver.poll(poll_s):  # a child that dies closes the pipe: poll answers, recv meets its end
            if tick is not None:
                tick()
        try:
            kind, value = receiver.recv()
        except EOFError:
            process.join(timeout=5)
            raise RuntimeError(f"{getattr(target, '__name__', target)} ended without a result (exit code "
                               f"{process.exitcode}: killed, or out of memory?)") from None
    finally:
        if process.pid is not None:
            process.join(timeout=5 if kind is not None else 0)  # answered: let it exit; stopped: kill it now
            if process.is_alive():
                process.kill()
                process.join()
        sender.close()
        receiver.close()
    if kind == "error":
        raise value
    return value
