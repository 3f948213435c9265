"""What the benchmark smoke tests (``tests/test_benchmark_*.py``) share: a script's command run to its JSON, and the
check of the machine record every benchmark JSON carries.

The smoke tests run each script in ``benchmarks/`` end to end through its real command line on its smallest honest
setting and check its JSON (every variant present, the derived fields following from the measured ones, the
reference side by side); they measure nothing and assert no wall-clock time. They are split over several files of
similar cost so that the two xdist workers (``--dist loadfile``) share them. The commands start through the fork
server (:mod:`commands`: TensorFlow, Keras and albert-tf imported once per test worker, not once per command), and
the worker processes of a benchmark's harness start as forks of its driver (a full run spawns fresh interpreters).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

import commands

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the benchmarks' own lists (variants, implementations) are read from their modules
    sys.path.insert(0, str(ROOT))

#: every command's bound: only a hang reaches it
HANG_S = 3600


def command(*args: str, timeout: float = HANG_S, env: dict | None = None, **options):
    """``python *args`` from the repository root through the fork server: its ``CompletedProcess``. The script's
    workers start as forks of it (``benchmarks/common.py``'s ``WORKER_START_VARIABLE``), so they do not import
    TensorFlow again."""
    from benchmarks.common import WORKER_START_VARIABLE

    env = {**(os.environ if env is None else env), WORKER_START_VARIABLE: "fork"}
    return commands.run([*args], cwd=ROOT, timeout=timeout, env=env, **options)


def run(*args: str, timeout: float = HANG_S) -> dict:
    """``python *args`` (see :func:`command`): its stdout's JSON; a non-zero exit fails with the end of its
    stderr."""
    proc = command(*args, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def machine_ok(report: dict) -> None:
    """The JSON records the machine's CPU flags (as booleans) and the date."""
    flags = report["machine"]["cpu_flags"]
    assert {"avx512_bf16", "amx_bf16", "avx2"} <= set(flags)
    assert all(isinstance(v, bool) for v in flags.values())
    assert report["machine"]["date_utc"]
