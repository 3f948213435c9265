"""What every benchmark script shares: the machine and library versions its JSON records, the foreign-load meter,
and the one worker harness (one implementation per spawned process, asked by the driver, a dead worker named at
once).

Machines here vary (matmul speed moved a ratio by 1.5x between two VMs of the same type), so every benchmark's JSON
carries :func:`machine_info` (CPU model, the SIMD/AMX flags that decide float32 and bfloat16 matmul speed, core
counts) and :func:`versions`.
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
import platform
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The flags that decide matmul speed: AVX-512 BF16 (bfloat16 dot products in vector units), AMX (bfloat16/int8
# matrix tiles, Sapphire Rapids and later), AVX-512 FP16.
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
             "amx_tile", "amx_bf16", "amx_int8")


#: The fine-tuning parity runs' mean official loss on the dev set (cross-entropy; squared error for STS-B). Below a
#: constant answer's loss, the model's outputs carry information about the dev labels even where its accuracy is near
#: the majority class's.
DEV_LOSS = "dev_loss"


def tokenizer_of(shared_data: str):
    """The official 30k-clean SentencePiece tokenizer of the shared data, lower-casing (the parity runs' inputs)."""
    from albert_tf.tokenization import FullTokenizer

    return FullTokenizer(spm_model_file=os.path.join(shared_data, "spm", "30k-clean.model"), do_lower_case=True)


def shared_data_dir() -> pathlib.Path:
    """``$ALBERT_TF_SHARED_DATA`` or ``../shared/data`` beside the project root (the tests' convention)."""
    env = os.environ.get("ALBERT_TF_SHARED_DATA")
    return pathlib.Path(env) if env else ROOT.parent / "shared" / "data"


def answerable_squad_file(shared: str | os.PathLike, workdir: str) -> str:
    """``squad/dev-v2.0-subset-a.json`` under ``shared`` cut to its answerable questions, written once to
    ``workdir/squad_v1_answerable.json`` as a SQuAD v1.1 file (the v1 benchmarks' data). Worker processes may write
    it at the same moment: each under its own temporary name, renamed whole."""
    from albert_tf import files
    from albert_tf.evaluation.squad_metrics import answerable_subset

    out = os.path.join(workdir, "squad_v1_answerable.json")
    if not os.path.exists(out):
        with open(os.path.join(shared, "squad", "dev-v2.0-subset-a.json"), encoding="utf-8") as f:
            data = json.load(f)
        files.write_text_atomic(out, json.dumps({"version": "1.1", "data": answerable_subset(data["data"])}))
    return out


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
        from albert_tf import files

        files.write_text_atomic(output, text + "\n")
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


class WorkerError(RuntimeError):
    """A benchmark worker failed, died (killed, out of memory) or went silent; the message is one line naming it."""


def _redirect_output(log_file: str) -> None:
    """Send this process's stdout and stderr (Python and C level) to ``log_file``: the driver's stdout is the JSON."""
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)


def _serve(factory: Callable[[], Callable[[Any], Any]], conn, log_file: str | None) -> None:
    """A worker's loop: build the handler, send its ``info`` (or None), then answer each message with
    ``handler(message)`` until "stop". An exception is printed (to the log) and sent as the answer's error."""
    if log_file:
        _redirect_output(log_file)
    try:
        handler = factory()
    except BaseException as e:  # noqa: BLE001 - reported to the driver
        traceback.print_exc()
        conn.send(("error", f"{type(e).__name__}: {e}"))
        return
    conn.send(("ok", getattr(handler, "info", None)))
    while True:
        try:
            message = conn.recv()
        except EOFError:  # the driver has gone
            return
        if message == _STOP:
            return
        try:
            answer = ("ok", handler(message))
        except BaseException as e:  # noqa: BLE001
            traceback.print_exc()
            answer = ("error", f"{type(e).__name__}: {e}")
        conn.send(answer)


_STOP = "stop"


#: How :class:`Workers` start their processes, from the environment: ``spawn`` (the default), a fresh interpreter
#: that imports its framework itself, what a measurement wants; or ``fork``, a copy of the driver, which skips the
#: imports the driver has already made and changes nothing else (each implementation still has its own process).
#: The smoke tests fork, from a driver that is itself a child of their fork server (TensorFlow imported once).
WORKER_START_VARIABLE = "ALBERT_TF_BENCH_WORKER_START"


def worker_start() -> str:
    """``spawn`` or ``fork`` (:data:`WORKER_START_VARIABLE`); anything else is refused, naming the variable."""
    start = os.environ.get(WORKER_START_VARIABLE, "spawn")
    if start not in ("spawn", "fork"):
        raise ValueError(f"{WORKER_START_VARIABLE}={start!r}: expected spawn or fork")
    return start


class Workers:
    """The one worker harness of the benchmarks: one spawned process per implementation, so one framework's thread
    pool cannot take the next one's cores, and the driver never imports a framework.

    A worker owns ``factory()`` (picklable: a module-level function or a ``functools.partial`` of one), which builds
    a handler: a callable answering each message the driver sends (``ask``), with an optional ``info`` attribute that
    ``ready`` returns. The driver waits on the answer *and* on the process, so a worker killed by the kernel (out of
    memory) or by a signal ends the wait at once with a :class:`WorkerError` naming it, never a hang; so do an
    exception in the worker (its type and message; the traceback is on the worker's stderr or in its log) and a
    worker silent past the timeout. With ``log_dir`` each worker writes its output to ``<log_dir>/<name>.log``.
    """

    def __init__(self, log_dir: str | None = None) -> None:
        import multiprocessing as mp

        self._ctx = mp.get_context(worker_start())
        self._workers: dict[str, tuple[Any, Any, str | None]] = {}
        self._info: dict[str, Any] = {}
        self.log_dir = log_dir

    @property
    def names(self) -> list[str]:
        return list(self._workers)

    def pids(self) -> list[int]:
        return [proc.pid for proc, _, _ in self._workers.values()]

    def start(self, name: str, factory: Callable[[], Callable[[Any], Any]]) -> None:
        """Spawn ``name``'s worker; it builds its handler while the driver goes on (``ready`` waits for it)."""
        log = os.path.join(self.log_dir, f"{name}.log") if self.log_dir else None
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_serve, args=(factory, child, log), daemon=True)
        proc.start()
        child.close()  # the worker's end lives in the worker only, so its death closes the pipe
        self._workers[name] = (proc, parent, log)

    def ready(self, name: str, timeout: float = 3600.0) -> Any:
        """Wait until ``name`` has built its handler; its ``info``."""
        if name not in self._info:
            self._info[name] = self._answer(name, "start", timeout)
        return self._info[name]

    def ask(self, name: str, message: Any, timeout: float = 3600.0) -> Any:
        """Send ``message`` to ``name`` and return its answer (:class:`WorkerError` when it fails, dies or is
        silent for ``timeout`` seconds; the wait for the handler's build counts against the same timeout)."""
        self.ready(name, timeout)
        _proc, conn, _log = self._workers[name]
        try:
            conn.send(message)
        except OSError:
            pass  # a dead worker: _answer names the cause
        return self._answer(name, message, timeout)

    def _answer(self, name: str, message: Any, timeout: float) -> Any:
        proc, conn, log = self._workers[name]
        where = f" (log: {log})" if log else ""
        deadline = time.monotonic() + timeout
        # The process's own exit status is checked each second: a helper the worker forked keeps its pipe and its
        # sentinel open after the worker itself was killed, so neither end alone tells of its death.
        while not conn.poll(min(1.0, max(deadline - time.monotonic(), 0))):
            if proc.exitcode is not None:
                break
            if time.monotonic() >= deadline:
                self.drop(name, kill=True)
                raise WorkerError(f"benchmark worker {name!r} gave no answer to {message!r} in {timeout:.0f} s; "
                                  f"stopped it{where}")
        try:
            status, value = conn.recv() if conn.poll() else ("died", None)
        except (EOFError, OSError):
            status, value = "died", None
        if status == "died":
            proc.join(timeout=5)
            raise WorkerError(f"benchmark worker {name!r} (pid {proc.pid}) {_death(proc.exitcode)} while answering "
                              f"{message!r}{where}")
        if status != "ok":
            raise WorkerError(f"benchmark worker {name!r} failed on {message!r}: {value}{where}")
        return value

    def drop(self, name: str, kill: bool = False) -> None:
        """Stop ``name``'s worker (``kill``, or when it does not stop within 30 s: kill it) and forget it."""
        proc, conn, _log = self._workers.pop(name)
        self._info.pop(name, None)
        try:
            conn.send(_STOP)
        except OSError:
            pass
        proc.join(timeout=0 if kill else 30)
        if proc.is_alive():
            proc.kill()
            proc.join()

    def close(self) -> None:
        for name in list(self._workers):
            self.drop(name)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            sig = signal.Signals(-exitcode).name
        except ValueError:
            sig = f"signal {-exitcode}"
        hint = " (the kernel's out-of-memory killer sends it: see dmesg)" if sig == "SIGKILL" else ""
        return f"was killed by {sig}{hint}"
    return f"exited (code {exitcode})"


class _TimedStep:
    """A step worker's handler: builds ``build() -> step``, answers each message with one step's wall time."""

    def __init__(self, build: Callable[[], Callable[[], Any]]) -> None:
        self.step = build()

    def __call__(self, message: Any) -> float:
        t = time.perf_counter()
        self.step()
        return time.perf_counter() - t


class StepWorkers(Workers):
    """:class:`Workers` whose handlers time one training step each: ``builders`` map a name to ``build() -> step``
    (picklable). ``first_steps(warmup)`` runs each worker's first (build + trace) step and ``warmup`` untimed steps,
    one worker at a time; ``rounds(n)`` runs ``n`` interleaved rounds and returns every step's wall time per name,
    with the foreign CPU share of each round in ``foreign``. The driver steps them round by round, so all see the
    same machine load."""

    def __init__(self, builders: dict[str, Callable[[], Callable[[], Any]]], log_dir: str | None = None):
        super().__init__(log_dir)
        for name, build in builders.items():
            self.start(name, functools.partial(_TimedStep, build))
        self.foreign: list[float | None] = []

    def step(self, name: str) -> float:
        return self.ask(name, "step")

    def first_steps(self, warmup: int) -> dict[str, float]:
        first = {}
        for name in self.names:
            self.ready(name)
            first[name] = self.step(name)
            for _ in range(warmup):
                self.step(name)
        return first

    def rounds(self, n: int) -> dict[str, list[float]]:
        times: dict[str, list[float]] = {name: [] for name in self.names}
        meter = ForeignLoad([os.getpid()] + self.pids())
        for _ in range(n):
            meter.start()
            for name in self.names:
                times[name].append(self.step(name))
            self.foreign.append(meter.stop())
        return times


def run_main(main: Callable[[], Any]) -> None:
    """Run a benchmark's ``main``; a :class:`WorkerError` ends it with its one line (exit status 1)."""
    try:
        main()
    except WorkerError as e:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {e}")


def set_tf_threads(threads: int) -> None:
    """TensorFlow's intra- and inter-op pools at ``threads`` (before its first op)."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)


class Implementation:
    """One side of a training-throughput benchmark (``finetune_throughput.py``): one library's fine-tuning loop over
    the pass. ``reset()`` restarts the pass, ``next_batch()`` runs the input pipeline for the next batch,
    ``shape(batch)`` is its (rows, padded length), ``real_tokens(batch)`` its non-padding tokens and ``train(batch)``
    one optimizer step on it (returns the loss). ``step()`` = both, the timed unit; ``record()`` then notes its shape
    and tokens."""

    num_steps: int
    framework = "tensorflow"

    def reset(self) -> None:
        raise NotImplementedError

    def next_batch(self):
        raise NotImplementedError

    def shape(self, batch) -> tuple[int, int]:
        raise NotImplementedError

    def real_tokens(self, batch) -> int:
        raise NotImplementedError

    def train(self, batch) -> float:
        raise NotImplementedError

    def step(self) -> float:
        self.last_batch = self.next_batch()
        return self.train(self.last_batch)

    def record(self) -> None:
        """Note the last step's shape and real tokens (after its time was taken)."""
        self.shapes.append(self.shape(self.last_batch))
        self.tokens.append(self.real_tokens(self.last_batch))


class DatasetImplementation(Implementation):
    """An implementation whose batches come from a ``tf.data`` pipeline (``make_dataset``), restarted by reset()."""

    make_dataset: Any

    def reset(self) -> None:
        self.iterator = iter(self.make_dataset())
        self.shapes: list[tuple[int, int]] = []
        self.tokens: list[int] = []

    def next_batch(self):
        return next(self.iterator)


class TorchImplementation(Implementation):
    """A transformers side: its batches drawn from a list by ``next_batch`` (``self.position`` the next one), one
    ``AdamW`` step of ``self.model`` on ``self.optimizer`` a batch, the model's own loss."""

    framework = "torch"

    def reset(self) -> None:
        self.position = 0
        self.shapes: list[tuple[int, int]] = []
        self.tokens: list[int] = []

    def real_tokens(self, batch) -> int:
        return int(batch["attention_mask"].sum())

    def train(self, batch) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.model(**batch).loss
        loss.backward()
        self.optimizer.step()
        return float(loss.item())
