"""What the benchmark smoke tests (``tests/test_benchmark_*.py``) share: a script's command run to its JSON, and the
check of the machine record every benchmark JSON carries.

The smoke tests run each script in ``benchmarks/`` end to end through its real command line on its smallest honest
setting and check its JSON (every variant present, the derived fields following from the measured ones, the
reference side by side); they measure nothing and assert no wall-clock time. They are split over several files of
similar cost so that the two xdist workers (``--dist loadfile``) share them. The commands start through the fork
server (:mod:`commands`: TensorFlow, Keras and albert-tf imported once per test worker, not once per command); the
worker processes a benchmark spawns itself start fresh interpreters, as in a full run.
"""

from __future__ import annotations

import json
import pathlib
import sys

import commands

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the benchmarks' own lists (variants, implementations) are read from their modules
    sys.path.insert(0, str(ROOT))

#: every command's bound: only a hang reaches it
HANG_S = 3600


def command(*args: str, timeout: float = HANG_S, **options):
    """``python *args`` from the repository root through the fork server: its ``CompletedProcess``."""
    return commands.run([*args], cwd=ROOT, timeout=timeout, **options)


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
