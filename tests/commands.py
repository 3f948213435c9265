"""Command lines run as processes of their own, started from an interpreter that has TensorFlow imported already.

Most of the suite's command-line cases (the bad-input corpus, damaged resumes, the entry-point walk) check what a
command answers: its exit status, its one ``error:`` line, the files it leaves. Started with ``python script.py``,
each case spends 5 to 8 s of CPU importing TensorFlow, Keras and albert-tf before it reads its first flag, and the
suite starts hundreds. Here a *fork server* imports them once per test worker (no TensorFlow op is run in it, so no
thread pool exists yet) and forks a child per command: the child takes the command's argv, environment, working
directory and standard streams and runs the script or module as ``__main__``, exactly as ``python`` would, then exits
with its status. It is a process of its own: a crash, a signal, ``os._exit`` or a stray thread stay in it.

What differs from a fresh interpreter: modules are imported before the command starts (so a test of what a command
does *before* importing TensorFlow, of interpreter start-up, of signals during start-up, or of an installed console
script in a clean environment must use :func:`subprocess.run`), and environment variables read at import time by
TensorFlow or Python itself (``PYTHONHASHSEED``, ``TF_CPP_MIN_LOG_LEVEL``, ``PYTHONPATH``) are the server's: it
starts with the suite's ``PYTHONHASHSEED=0`` and ``TF_CPP_MIN_LOG_LEVEL=2``, and :func:`run` refuses a request
whose environment changes one of them rather than ignore it silently. A module's import-time work is done once, in
the server: ``import albert_tf.cli`` installs the Ctrl-C and SIGTERM handlers there, and the child starts with
Python's own (a test that signals a command installs them again, as ``tests/test_interrupts.py``'s ``AS_SCRIPT``
does); and TensorFlow is always loaded in the child, so a command that behaves differently without it
(``albert_tf.interrupts.stop`` ends by ``os._exit`` where it is loaded, skipping multiprocessing's finalizers) runs
in a fresh interpreter where that difference is under test.

:func:`run` takes the arguments of :func:`subprocess.run` that the tests use and returns a
:class:`subprocess.CompletedProcess`; a command that outlives ``timeout`` is killed and
:class:`subprocess.TimeoutExpired` raised, as there. Waiting is on the server's reply (the child's exit), never a
sleep; :meth:`Command.wait_for` waits for an event while the command runs (a line on its stdout, a file, any
condition), looked at every few milliseconds until it happens or the command ends.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import pathlib
import pkgutil
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

#: Read by the interpreter, TensorFlow or the math libraries when they start or load: a request may not change
#: them (the server's stay), so a command that sets one is refused here and belongs in :func:`subprocess.run`.
STARTUP_ENV_PREFIXES = ("PYTHON", "TF_", "XLA_", "OMP_", "KMP_", "MKL_", "ONEDNN_", "DNNL_", "CUDA_", "COVERAGE_")
SERVER_ENV = {"PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
#: Modules imported by the server, so that no command imports them again; the Beam pipeline is left out (Beam
#: starts threads of its own at import, and no forked child should inherit a lock one of them holds).
SKIP_PRELOAD = ("albert_tf.data.pretraining.beam",)


# ------------------------------------------------------------------------------------------------------- server
def _preload() -> None:
    import keras  # noqa: F401
    import sentencepiece  # noqa: F401
    import tensorflow  # noqa: F401
    import tensorflow_text  # noqa: F401

    import albert_tf

    for module in pkgutil.walk_packages(albert_tf.__path__, "albert_tf."):
        if module.name.endswith("__main__") or module.name.startswith(SKIP_PRELOAD):
            continue
        importlib.import_module(module.name)


def _exit_status(error: BaseException | None) -> int:
    """The status a fresh interpreter exits with after ``error`` ended ``__main__`` (None: it returned)."""
    if error is None:
        return 0
    if isinstance(error, SystemExit):
        code = error.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code & 0xFF
        print(code, file=sys.stderr)
        return 1
    sys.excepthook(type(error), error, error.__traceback__)
    if isinstance(error, KeyboardInterrupt):  # as Python itself: die of SIGINT
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return 1


def _child(request: dict) -> None:
    """Become the command: streams, directory, environment, signals, argv; run it as ``__main__``; exit."""
    import runpy

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGCHLD, signal.SIGALRM):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as the interpreter sets it
    for fd, path, mode in ((0, request["stdin"], os.O_RDONLY), (1, request["stdout"], os.O_WRONLY),
                           (2, request["stderr"], os.O_WRONLY)):
        opened = os.open(path, mode)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = request["argv"]
    error: BaseException | None = None
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        elif argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            sys.path[0] = os.getcwd()
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        else:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except BaseException as e:  # noqa: BLE001 (the interpreter's own top level)
        error = e
    status = _exit_status(error)
    try:
        threading._shutdown()  # non-daemon threads are joined, as at interpreter exit
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 (a closed stream: nothing to flush)
                pass
        os._exit(status)


def _manage(conn: socket.socket) -> None:
    """One request: fork the command, tell the client its pid, pass on the signals the client asks for (through a
    pidfd, so never to another process that took the pid later), then tell the client how the command ended."""
    requests = _Replies(conn)
    request = requests.next(None)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        conn.close()
        _child(request)
    pidfd = os.pidfd_open(pid)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    while True:
        if b"\n" not in requests.buffer and pidfd in select.select([pidfd, conn], [], [])[0]:
            break  # the command has ended
        try:
            signum, gone = requests.next(None)["signal"], False
        except EOFError:  # the client went away: the command goes with it
            signum, gone = signal.SIGKILL, True
        try:
            signal.pidfd_send_signal(pidfd, signum)
        except ProcessLookupError:
            break
        if gone:
            break
    _, status = os.waitpid(pid, 0)
    try:
        conn.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
    except OSError:
        pass
    os._exit(0)


def serve(path: str) -> None:
    """Import the stack, listen on the Unix socket ``path``, say ``ready`` on stdout, then fork per connection until
    stdin closes (the client holds its write end, so the server ends with the test process)."""
    _preload()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)
    print("ready", json.dumps(dict(os.environ)), flush=True)  # with what its imports set (scikit-learn, KMP_*)
    while True:
        if sys.stdin in select.select([server, sys.stdin], [], [])[0]:
            return  # stdin closed: the test process that started the server has ended, however it ended
        conn, _ = server.accept()
        pid = os.fork()
        if pid == 0:
            server.close()
            _manage(conn)
        conn.close()
        while True:  # reap the managers that have finished, without waiting for any
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


# ------------------------------------------------------------------------------------------------------- client
class _Server:
    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="albert-tf-commands-")
        self.path = os.path.join(self.folder, "server.sock")
        started = {**os.environ, **SERVER_ENV}
        self.process = subprocess.Popen([sys.executable, __file__, self.path], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=started, text=True)
        line = self.process.stdout.readline()  # the event: the server prints "ready" once it listens
        if not line.startswith("ready "):
            raise RuntimeError(f"the command server did not start (exit status {self.process.poll()})")
        #: The server's environment once its imports are done, and the variables those imports set themselves
        #: (importing tensorflow_text loads scikit-learn, which sets KMP_DUPLICATE_LIB_OK): a test process sets
        #: them too once it imports the same library, and a request without them changes nothing that was read.
        self.env = json.loads(line[len("ready "):])
        self.set_by_imports = {name for name in self.env if name not in started}
        self.lock = threading.Lock()

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_server: _Server | None = None
_server_lock = threading.Lock()


def _get_server() -> _Server:
    global _server
    with _server_lock:
        if _server is None or _server.process.poll() is not None:
            _server = _Server()
            atexit.register(_server.close)
        return _server


class Command:
    """A command started through the fork server, like :class:`subprocess.Popen` with both streams captured to
    files: ``pid``, ``poll()``, ``wait(timeout)``, ``send_signal``, ``kill``, ``returncode`` and ``output()`` for
    (stdout, stderr) so far; ``wait_for(event, timeout)`` waits for a line on stdout, a file or any condition."""

    def __init__(self, args: list[str], *, cwd=None, env: dict | None = None, input: str | None = None) -> None:
        if args[0] in ("-m", "-c") and len(args) < 2:
            raise ValueError(f"{args[0]} needs a module or code")
        if args[0].startswith("-") and args[0] not in ("-m", "-c"):
            raise ValueError(f"interpreter option {args[0]!r}: use subprocess.run")
        env = {name: os.fspath(value) for name, value in (os.environ if env is None else env).items()}
        server = _get_server()
        for name in sorted(set(env) | set(server.env)):
            if name in SERVER_ENV and name not in env:
                continue  # unset: the server's fixed value is one a fresh interpreter could have drawn
            if name in server.set_by_imports and name not in env:
                continue  # set by a library the server imported, not by the test
            if name == "PYTHONPATH" and _only_this_checkout(env[name]):
                continue  # the checkout the server imported albert-tf from: already first on its path
            if name.startswith(STARTUP_ENV_PREFIXES) and env.get(name) != server.env.get(name):
                raise ValueError(f"{name}={env.get(name)!r} is read when the interpreter or TensorFlow starts (the "
                                 f"command server has {server.env.get(name)!r}): run this command with "
                                 "subprocess.run")
        self.args = [sys.executable, *map(str, args)]
        self.returncode: int | None = None
        self.scratch = tempfile.mkdtemp(dir=server.folder)
        self.paths = {name: os.path.join(self.scratch, name) for name in ("stdin", "stdout", "stderr")}
        pathlib.Path(self.paths["stdin"]).write_bytes((input or "").encode("utf-8"))
        for name in ("stdout", "stderr"):
            pathlib.Path(self.paths[name]).touch()
        request = {"argv": self.args[1:], "env": env, "cwd": str(cwd or os.getcwd()), **self.paths}
        self.conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.conn.connect(server.path)
        self.conn.sendall(json.dumps(request).encode() + b"\n")
        self.replies = _Replies(self.conn)
        self.pid: int = self.replies.next(None)["pid"]

    def wait(self, timeout: float | None = None) -> int:
        """The exit status (negative: the signal); :class:`subprocess.TimeoutExpired` when the command is still
        running after ``timeout`` seconds (it keeps running)."""
        if self.returncode is None:
            try:
                self.returncode = self.replies.next(timeout)["returncode"]
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout) from None
            self.conn.close()
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.conn], [], [], 0)[0]:
            self.wait()
        return self.returncode

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` to the command unless it has ended (the server delivers it through a pidfd)."""
        if self.returncode is None:
            try:
                self.conn.sendall(json.dumps({"signal": int(signum)}).encode() + b"\n")
            except OSError:  # the manager has replied and closed: the command has ended
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait_for(self, event, timeout: float, interval: float = 0.005):
        """Wait until ``event`` happens while the command runs, and return what showed it: ``event`` is a regular
        expression (a str, searched with ``re.MULTILINE``, or a compiled pattern) looked for in the command's stdout
        so far (the match is returned), a path (:class:`os.PathLike`) that must exist (returned), or a callable
        whose truthy result is returned.

        The event is looked at every ``interval`` seconds and at once when the command ends: it returns as soon as
        the event has happened, never after a fixed delay. None when the command ended without it (one last look
        after the end); :class:`subprocess.TimeoutExpired` when neither happened within ``timeout`` seconds (a
        bound that only a hang reaches; the command keeps running)."""
        if isinstance(event, str):
            event = re.compile(event, re.MULTILINE)
        if isinstance(event, re.Pattern):
            pattern = event

            def look():
                return pattern.search(_read(self.paths["stdout"], True))
        elif isinstance(event, os.PathLike):
            path = event

            def look():
                return path if os.path.exists(path) else None
        elif callable(event):
            look = event
        else:
            raise TypeError(f"wait_for: a regular expression, a path or a callable, not {type(event).__name__}")
        deadline = time.monotonic() + timeout
        while True:
            found = look()
            if found:
                return found
            if self.poll() is not None:
                return look() or None
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout, *self.output())
            select.select([self.conn], [], [], min(interval, left))  # wakes at once when the command ends

    def output(self, text: bool = True) -> tuple:
        return _read(self.paths["stdout"], text), _read(self.paths["stderr"], text)

    def close(self) -> None:
        """Kill the command if it still runs, and remove its captured streams."""
        if self.returncode is None:
            self.kill()
            self.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)


def run(args: list[str], *, cwd=None, env: dict | None = None, timeout: float | None = None,
        input: str | None = None, capture_output: bool = True, text: bool = True,
        check: bool = False) -> subprocess.CompletedProcess:
    """``subprocess.run([sys.executable, *args], capture_output=True, ...)`` through the fork server.

    ``args`` are the interpreter's arguments: a script path, ``-m module`` or ``-c code``, then the command's own.
    """
    if not capture_output:
        raise ValueError("commands.run always captures the output")
    command = Command(args, cwd=cwd, env=env, input=input)
    try:
        try:
            returncode = command.wait(timeout)
        except subprocess.TimeoutExpired:
            command.kill()
            command.wait()
            raise subprocess.TimeoutExpired(command.args, timeout, *command.output(text)) from None
        result = subprocess.CompletedProcess(command.args, returncode, *command.output(text))
    finally:
        command.close()
    if check:
        result.check_returncode()
    return result


def _only_this_checkout(pythonpath: str) -> bool:
    import albert_tf

    root = os.path.realpath(os.path.dirname(os.path.dirname(albert_tf.__file__)))
    return all(os.path.realpath(entry) == root for entry in pythonpath.split(os.pathsep))


class _Replies:
    """The JSON lines coming in on one connection; ``next(timeout)`` raises TimeoutError when none comes in time and
    EOFError when the other side has closed."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn, self.buffer = conn, b""

    def next(self, timeout: float | None) -> dict:
        self.conn.settimeout(timeout)
        while b"\n" not in self.buffer:
            chunk = self.conn.recv(4096)
            if not chunk:
                raise EOFError("the other end of the command server's connection closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


def _read(path: str, text: bool):
    data = pathlib.Path(path).read_bytes()
    if not text:
        return data
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


if __name__ == "__main__":
    serve(sys.argv[1])
