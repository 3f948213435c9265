"""The benchmarks' one worker harness (``benchmarks/common.py``): a worker that dies or fails ends the driver's wait at
once with one line naming it; a killed worker never hangs the driver (it did: the driver held the worker's end of the
pipe, so ``recv`` waited forever)."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import WorkerError, Workers  # noqa: E402


class _Handler:
    """A worker's handler for these tests: "pid" -> its pid, "sleep" -> sleeps a minute, "fail" -> ValueError."""

    info = {"built": True}

    def __call__(self, message: str):
        if message == "pid":
            return os.getpid()
        if message == "sleep":
            time.sleep(60)
        if message == "fail":
            raise ValueError("the step went wrong")
        return message


def test_a_worker_killed_while_answering_ends_the_wait_with_its_name_and_signal():
    with Workers() as workers:
        workers.start("victim", _Handler)
        assert workers.ready("victim", 120) == {"built": True}
        pid = workers.ask("victim", "pid", 60)
        threading.Timer(1.0, os.kill, (pid, signal.SIGKILL)).start()
        started = time.monotonic()
        with pytest.raises(WorkerError) as caught:
            workers.ask("victim", "sleep", 120)
        assert time.monotonic() - started < 10
    message = str(caught.value)
    assert "\n" not in message
    assert "'victim'" in message and f"pid {pid}" in message and "killed by SIGKILL" in message
    assert "'sleep'" in message


def test_a_failing_handler_is_one_line_and_a_silent_one_times_out():
    with Workers() as workers:
        workers.start("w", _Handler)
        assert workers.ask("w", "echo", 120) == "echo"
        with pytest.raises(WorkerError, match=r"^benchmark worker 'w' failed on 'fail': ValueError: the step went "
                                              r"wrong$"):
            workers.ask("w", "fail", 60)
        assert workers.ask("w", "again", 60) == "again"  # a failed answer does not end the worker
        with pytest.raises(WorkerError, match="gave no answer to 'sleep' in 1 s; stopped it"):
            workers.ask("w", "sleep", 1)
        assert workers.names == []


def test_a_driver_whose_step_worker_is_killed_exits_with_one_line(tmp_path):
    """The whole path of a benchmark script: ``StepWorkers`` under ``run_main``, a step whose process is killed by
    SIGKILL (what the kernel's out-of-memory killer sends) after forking a helper that lives on (as a framework's
    helper process can) and so keeps the worker's end of the pipe open. The driver exits 1 with one line, in seconds;
    the harness before this one waited for the helper to end."""
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(f"""
        import os, signal, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from benchmarks.common import StepWorkers, run_main

        def step():
            helper = os.fork()
            if helper == 0:  # lives on for a minute, holding every inherited descriptor but stdio
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                time.sleep(60)
                os._exit(0)
            with open(sys.argv[1], "w") as f:
                f.write(str(helper))
            os.kill(os.getpid(), signal.SIGKILL)

        def build():
            return step

        def main():
            with StepWorkers({{"albert_tf": build}}) as workers:
                workers.first_steps(0)

        if __name__ == "__main__":
            run_main(main)
    """))
    helper_pid, stderr = tmp_path / "helper.pid", tmp_path / "stderr"
    started = time.monotonic()
    try:  # the driver's exit is timed, not its pipes' end: helpers of multiprocessing may hold those on
        with open(stderr, "w") as err:
            proc = subprocess.run([sys.executable, str(driver), str(helper_pid)], stdout=subprocess.DEVNULL,
                                  stderr=err, timeout=120)
        elapsed = time.monotonic() - started
    finally:
        if helper_pid.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(helper_pid.read_text()), signal.SIGKILL)
    proc.stderr = stderr.read_text()
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("driver.py: benchmark worker 'albert_tf' (pid ")
    assert "was killed by SIGKILL" in lines[0] and "while answering 'step'" in lines[0]
    assert helper_pid.exists()  # the helper was running while the driver ended
    assert elapsed < 30, elapsed  # the worker's spawn start-up is most of it; the helper would hold it 60 s


def test_workers_fork_when_asked_and_refuse_another_start(monkeypatch):
    """``ALBERT_TF_BENCH_WORKER_START=fork`` (the smoke tests' setting): each worker is a fork of the driver, so it
    holds what the driver imported (here a module only the driver loaded); any value but spawn or fork is refused."""
    from benchmarks.common import WORKER_START_VARIABLE

    monkeypatch.setenv(WORKER_START_VARIABLE, "fork")
    marker = type(sys)("_only_in_the_driver")
    monkeypatch.setitem(sys.modules, marker.__name__, marker)
    with Workers() as workers:
        workers.start("forked", _ModulesHandler)
        assert workers.ask("forked", marker.__name__, 120) is True
        assert workers.ask("forked", "pid", 60) != os.getpid()
    monkeypatch.setenv(WORKER_START_VARIABLE, "thread")
    with pytest.raises(ValueError, match=f"{WORKER_START_VARIABLE}='thread': expected spawn or fork"):
        Workers()


class _ModulesHandler(_Handler):
    """"pid" -> its pid; a module name -> whether this process has it imported."""

    def __call__(self, message: str):
        return os.getpid() if message == "pid" else message in sys.modules
