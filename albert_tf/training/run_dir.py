"""An output directory belongs to one job: ``run.json`` says which, and a foreign one is refused.

A run that trains writes ``run.json`` (the task's identity) into ``--output_dir``. A later run there
continues when the identity's ``task`` agrees; a different task may use the directory's model only where
the task allows it (its results then go to a sub-directory, e.g. MNLI-mismatched in an MNLI run).
A directory holding checkpoints without ``run.json`` (e.g. the pretrained model's own directory,
google-research/albert#224) is refused instead of being "resumed" with the wrong model.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from albert_tf import files as _fs
from albert_tf.checkpoints.paths import STATE_FILE, list_run_checkpoints
from albert_tf.checkpoints.run_meta import RUN_META_FILE, find_run_meta
from albert_tf.files import is_remote, write_text_atomic
from albert_tf.training.run_config import RunError

META_FILE = RUN_META_FILE
LEGACY_META_FILES = ("run_classifier.json",)  # written by albert-tf 0.1 run_classifier runs


def write_json(path: str, payload: Any) -> None:
    """``payload`` as indented JSON at ``path``, atomically."""
    write_text_atomic(path, json.dumps(payload, indent=1, sort_keys=True, default=str))


def read_json(path: str) -> Any:
    with _fs.open_file(path, "r") as f:
        return json.loads(f.read())


def _holds_foreign_checkpoints(output_dir: str) -> bool:
    if not _fs.isdir(output_dir):
        return False
    names = _fs.listdir(output_dir)
    if STATE_FILE in names or any(n.startswith("model.ckpt") for n in names):
        return True
    return bool(list_run_checkpoints(output_dir))


def claim_output_dir(
    output_dir: str,
    identity: dict[str, Any],
    training: bool,
    results_subdir: Callable[[dict[str, Any], bool], str],
    write: bool = True,
) -> str:
    """Check ``output_dir`` against ``identity``; return where results go (``output_dir`` or a sub-directory).

    ``results_subdir(previous, training)`` decides for a directory of another task (raise to refuse). A training
    run records its identity (``run.json``) here, or later with :func:`record_identity` when ``write`` is False.
    """
    existing = [os.path.join(output_dir, n) for n in (META_FILE, *LEGACY_META_FILES)]
    existing = [p for p in existing if _fs.exists(p)]
    if existing:
        previous = read_json(existing[0])
        if previous.get("task") != identity.get("task"):
            return os.path.join(output_dir, results_subdir(previous, training))
    elif _holds_foreign_checkpoints(output_dir):
        raise RunError(
            f"--output_dir {output_dir} already holds checkpoints that albert-tf did not write here (no {META_FILE}); "
            "resuming from them would restore the wrong model. If this is the pretrained model, pass it as "
            "--init_checkpoint and choose a new --output_dir (google-research/albert#224)"
        )
    if training and write and is_chief_process():  # the other workers of a multi-worker run find it written
        record_identity(output_dir, identity)
    return output_dir


def record_identity(output_dir: str, identity: dict[str, Any]) -> None:
    """Write ``run.json`` (the task's identity) into ``output_dir``."""
    _fs.makedirs(output_dir)
    write_json(os.path.join(output_dir, META_FILE), identity)


LOCK_FILE = "run.lock"


def _process_start(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (guards against a reused pid), where /proc exists."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return None if fields[0] == "Z" else fields[19]  # state Z: a zombie is not running
    except (OSError, IndexError):
        return None


def _alive(owner: dict[str, Any]) -> bool:
    pid = int(owner.get("pid", -1))
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    start = _process_start(pid)
    if os.path.exists("/proc/self/stat"):
        return start is not None and (owner.get("start") is None or start == owner.get("start"))
    return True


def is_chief_process() -> bool:
    """From ``TF_CONFIG`` (before any TF op): the process that owns a multi-worker run's output directory."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = config.get("task") or {}
    if not task:
        return True
    if task.get("type") == "chief":
        return True
    return task.get("type") == "worker" and int(task.get("index", 0)) == 0 and "chief" not in config.get("cluster", {})


class OutputDirLock:
    """``<output_dir>/run.lock`` names the live process writing there (host, pid, start time).

    A second run on the same directory is refused at once; a lock left by a process that no longer runs (a
    ``kill -9``) is reported and taken over. A lock from another host cannot be checked and is refused with
    how to clear it.

    On the local disk the lock file is created with ``O_CREAT | O_EXCL`` (atomic) and liveness is read from
    ``/proc``. On a ``gs://`` (or other ``tf.io.gfile``) directory there is no exclusive create: the lock is
    written through ``tf.io.gfile`` when none exists and read back, so it is *advisory*: it stops a second run
    started after the first one wrote its lock, but two runs started at the same instant can both pass.
    """

    def __init__(self, output_dir: str, log: Callable[[str], None] | None = None) -> None:
        self.path = os.path.join(output_dir, LOCK_FILE)
        self.log = log or (lambda message: print(message, file=sys.stderr, flush=True))
        self.owner = {"host": socket.gethostname(), "pid": os.getpid(), "start": _process_start(os.getpid())}
        self.held = False

    def acquire(self) -> OutputDirLock:
        _fs.makedirs(os.path.dirname(self.path))
        for _ in range(2):
            if self._create():
                self.held = True
                atexit.register(self.release)
                return self
            try:
                owner = read_json(self.path)
            except (ValueError, tf.errors.NotFoundError):
                owner = {}
            if owner.get("host") not in (None, self.owner["host"]):
                raise RunError(
                    f"--output_dir {os.path.dirname(self.path)} is locked by pid {owner.get('pid')} on host "
                    f"{owner.get('host')} ({self.path}); if that run is gone, delete the lock file"
                )
            if owner and _alive(owner):
                raise RunError(
                    f"--output_dir {os.path.dirname(self.path)} is in use by a live run (pid {owner['pid']} on "
                    f"{owner['host']}, {self.path}): wait for it to finish or choose another --output_dir"
                )
            self.log(f"taking over the stale lock {self.path} of pid {owner.get('pid')} (no longer running)")
            _fs.remove(self.path)
        raise RunError(f"could not lock --output_dir {os.path.dirname(self.path)}: another run took it meanwhile")

    def _create(self) -> bool:
        payload = json.dumps(self.owner, sort_keys=True)
        if "://" not in self.path:  # local file system: atomic exclusive create
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(payload)
            return True
        if _fs.exists(self.path):
            return False
        write_text_atomic(self.path, payload)
        return read_json(self.path) == self.owner  # another writer in between: theirs won

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        try:
            if read_json(self.path) == self.owner:
                _fs.remove(self.path)
        except (ValueError, tf.errors.OpError):
            pass

    def __enter__(self) -> OutputDirLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


# ------------------------------------------------------------------------------------------- the run's tokenizer
def tokenizer_record(flag: str, path: str, tokenizer: Any) -> dict[str, Any]:
    """What ``run.json`` records about a fine-tuning run's tokenizer (``FullTokenizer``): the flag and file it came
    from, the file's sha256 and the lower-casing (what an export or conversion of the run's checkpoints must agree
    on: a same-size vocab of another model, or cased text into an uncased model, gives wrong ids without an error),
    and its full identity. A local path is recorded absolute, so that tools run from another directory find it."""
    path = path if is_remote(path) else os.path.abspath(path)
    return {"flag": flag, "file": path, "sha256": tokenizer.model_sha256,
            "do_lower_case": bool(tokenizer.do_lower_case), "identity": tokenizer.identity()}


def check_run_tokenizer(checkpoint: str, tokenizer: Any, given: str) -> str:
    """Raise :class:`RunError` when the run that wrote ``checkpoint`` recorded a tokenizer other than ``tokenizer``
    (model file content or lower-casing); ``given`` names it in the message (e.g. ``--spm_model_file x.model``).
    Returns a line saying what was checked (nothing where the run's ``run.json`` records no tokenizer: runs
    written before it was recorded, pretraining runs, checkpoints from elsewhere)."""
    found = find_run_meta(checkpoint)
    recorded = (found[1].get("tokenizer") or {}) if found else {}
    if not recorded:
        return f"tokenizer not checked: no {META_FILE} with a tokenizer beside {checkpoint}"
    meta = found[0]
    if recorded.get("sha256") != tokenizer.model_sha256:
        raise RunError(
            f"{given} is not the tokenizer the run in {os.path.dirname(meta)} was trained with: {meta} records "
            f"--{recorded.get('flag')} {recorded.get('file')} (sha256 {str(recorded.get('sha256'))[:12]}...), this "
            f"file has sha256 {tokenizer.model_sha256[:12]}...; ids from another vocab are wrong without any error"
        )
    if bool(recorded.get("do_lower_case")) != bool(tokenizer.do_lower_case):
        raise RunError(
            f"--do_lower_case={tokenizer.do_lower_case} but the run in {os.path.dirname(meta)} was trained with "
            f"--do_lower_case={recorded.get('do_lower_case')} ({meta}); pass the run's setting"
        )
    return f"tokenizer: {given} is the one recorded in {meta}"
