"""What every benchmark script shares: the machine and library versions its JSON records, the foreign-load meter,
and step workers (one implementation per spawned process, stepped round by round by the driver).

Machines here vary (matmul speed moved a ratio by 1.5x between two VMs of the same type), so every benchmark's JSON
carries :func:`machine_info` (CPU model, the SIMD/AMX flags that decide float32 and bfloat16 matmul speed, core
counts) and :func:`versions`.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import time
import traceback
from collections.abc import Callable
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The flags that decide matmul speed: AVX-512 BF16 (bfloat16 dot products in vector units), AMX (bfloat16/int8
# matrix tiles, Sapphire Rapids and later), AVX-512 FP16.
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
             "amx_tile", "amx_bf16", "amx_int8")


def shared_data_dir() -> pathlib.Path:
    """``$ALBERT_TF_SHARED_DATA`` or ``../shared/data`` beside the project root (the tests' convention)."""
    env = os.environ.get("ALBERT_TF_SHARED_DATA")
    return pathlib.Path(env) if env else ROOT.parent / "shared" / "data"


def cpu_flags() -> set[str]:
    """Every flag of the first CPU in /proc/cpuinfo (empty where unreadable)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def machine_info() -> dict:
    """CPU model and the SIMD/AMX flags that decide matmul speed, core counts, platform (every benchmark's JSON)."""
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((x.split(":", 1)[1].strip() for x in f if x.startswith("model name")), model)
    except OSError:
        pass
    flags = cpu_flags()
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"cpu_model": model, "cpu_flags": {f: f in flags for f in CPU_FLAGS}, "cpu_count": os.cpu_count(),
            "usable_cpus": affinity, "platform": platform.platform(), "python": platform.python_version(),
            "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}


def versions(extra: tuple[str, ...] = ()) -> dict:
    """Installed versions of the stack (and of ``extra`` distributions); None where one is missing."""
    from importlib import metadata

    out = {}
    for dist in ("tensorflow", "tensorflow-text", "keras", "torch", "transformers", "tokenizers", "sentencepiece",
                 "numpy", "albert-tf", *extra):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def emit(result: dict, output: str = "") -> dict:
    """Print ``result`` as JSON on stdout and, with ``output``, write it there too (whole: a temporary name, then
    renamed). Returns ``result``."""
    text = json.dumps(result, indent=1, default=float)
    if output:
        with open(output + ".tmp", "w", encoding="utf-8") as f:
            f.write(text + "\n")
        os.replace(output + ".tmp", output)
    print(text)
    return result


def _cpu_jiffies(pids: list[int]) -> tuple[int, int] | None:
    """(busy jiffies of the whole machine incl. steal, user+system jiffies of ``pids``) from /proc; None where
    unreadable (not Linux)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]  # user nice system irq softirq steal (not idle, iowait)
        ours = 0
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read().rsplit(")", 1)[1].split()
            except OSError:  # a worker that has gone
                continue
            ours += int(stat[11]) + int(stat[12])  # utime, stime (all threads)
        return busy, ours
    except (OSError, ValueError, IndexError):
        return None


class ForeignLoad:
    """Share of the machine's CPU capacity used by processes other than ``pids`` (or stolen by the hypervisor)
    between ``start()`` and ``stop()``: 0 on a quiet machine, 1 when something else kept every core busy."""

    def __init__(self, pids: list[int]):
        self.pids = pids
        self.cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self.hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def start(self) -> None:
        self.t0, self.j0 = time.perf_counter(), _cpu_jiffies(self.pids)

    def stop(self) -> float | None:
        wall, j1 = time.perf_counter() - self.t0, _cpu_jiffies(self.pids)
        if self.j0 is None or j1 is None or wall <= 0:
            return None
        foreign = (j1[0] - self.j0[0]) - (j1[1] - self.j0[1])
        return round(max(foreign, 0) / self.hz / (wall * self.cpus), 3)


def _step_worker(build: Callable[[], Callable[[], Any]], conn) -> None:
    """Build one implementation's step, then answer each "step" message with its wall time (or the error)."""
    try:
        fn = build()
    except Exception:  # noqa: BLE001 - reported to the driver, which raises it
        conn.send(("error", traceback.format_exc()))
        return
    while True:
        message = conn.recv()
        if message == "stop":
            break
        try:
            t = time.perf_counter()
            fn()
            conn.send(("ok", time.perf_counter() - t))
        except Exception:  # noqa: BLE001
            conn.send(("error", traceback.format_exc()))
            return


class StepWorkers:
    """One spawned process per implementation (so one framework's thread pool cannot take the next one's cores),
    each owning a ``build() -> step`` (a picklable callable: a module-level function or ``functools.partial`` of
    one). The driver steps them one at a time, round by round, so all see the same machine load.

    ``first_steps(warmup)`` runs each worker's first (build + trace) step and ``warmup`` untimed steps, one worker
    at a time; ``rounds(n)`` runs ``n`` interleaved rounds and returns every step's wall time per name, with the
    foreign CPU share of each round in ``foreign``. A worker that fails raises ``RuntimeError`` with its traceback.
    """

    def __init__(self, builders: dict[str, Callable[[], Callable[[], Any]]]):
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.workers = {}
        for name, build in builders.items():
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_step_worker, args=(build, child), daemon=True)
            proc.start()
            self.workers[name] = (proc, parent)
        self.foreign: list[float | None] = []

    def step(self, name: str) -> float:
        proc, conn = self.workers[name]
        conn.send("step")
        try:
            status, value = conn.recv()
        except EOFError as e:
            raise RuntimeError(f"{name}: worker exited (code {proc.exitcode}) without an answer") from e
        if status != "ok":
            raise RuntimeError(f"{name} failed:\n{value}")
        return value

    def first_steps(self, warmup: int) -> dict[str, float]:
        first = {}
        for name in self.workers:
            first[name] = self.step(name)
            for _ in range(warmup):
                self.step(name)
        return first

    def rounds(self, n: int) -> dict[str, list[float]]:
        times: dict[str, list[float]] = {name: [] for name in self.workers}
        meter = ForeignLoad([os.getpid()] + [proc.pid for proc, _ in self.workers.values()])
        for _ in range(n):
            meter.start()
            for name in self.workers:
                times[name].append(self.step(name))
            self.foreign.append(meter.stop())
        return times

    def close(self) -> None:
        for proc, conn in self.workers.values():
            try:
                conn.send("stop")
            except (BrokenPipeError, OSError):
                pass
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()

    def __enter__(self) -> StepWorkers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
