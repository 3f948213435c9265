"""Fetching a pretrained preset into the local cache: download, resume, verify, unpack, lock, offline.

The cache is ``$ALBERT_TF_CACHE`` (default ``~/.cache/albert_tf``), a local directory:

* ``presets/<name>/``: an unpacked preset. It appears only complete, by one rename of a staging folder that already
  holds everything and the record ``.albert_tf_preset.json`` (URL, size, sha256 of the download); nothing partial is
  ever under that name.
* ``downloads/<name>.part``: a download in progress. A transfer cut short leaves it, and the next run continues
  it with an HTTP ``Range`` request; it is deleted once unpacked, or when its checksum or archive is wrong.
* ``locks/<name>.lock``: held (``fcntl.flock``) while one process fetches a preset; a second process waits, then
  finds the preset in the cache. The operating system releases the lock of a process that dies.

``ALBERT_TF_OFFLINE=1`` forbids the network: a cached preset works, any other is one error that says so.
Every failure is a :class:`DownloadError` with one line naming the preset, the URL or file, and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import sys
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from albert_tf import files as _fs
from albert_tf.checkpoints.presets import Preset, PresetError, local_source

CACHE_ENV = "ALBERT_TF_CACHE"
OFFLINE_ENV = "ALBERT_TF_OFFLINE"
RECORD = ".albert_tf_preset.json"
CHUNK = 1 << 20
TIMEOUT_S = 60.0
HF_PATTERNS = ("config.json", "*.safetensors", "*.safetensors.index.json", "spiece.model", "*.model", "vocab.txt")


class DownloadError(PresetError):
    """A preset that could not be fetched (network, checksum, archive, disk, offline); one line says why."""


def cache_dir() -> str:
    """``$ALBERT_TF_CACHE`` or ``~/.cache/albert_tf`` (local only: the cache takes locks and renames)."""
    path = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "albert_tf")
    if _fs.is_remote(path):
        raise DownloadError(f"${CACHE_ENV}={path}: the preset cache must be a local directory")
    return os.path.abspath(path)


def offline() -> bool:
    """Whether ``$ALBERT_TF_OFFLINE`` forbids downloads (1, true, yes, on)."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def safe_name(name: str) -> str:
    """A file name for preset ``name`` (``albert/albert-base-v2`` -> ``albert--albert-base-v2``)."""
    for scheme in ("https://", "http://", "hf://"):
        name = name.removeprefix(scheme)
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in name.replace("/", "--"))


def preset_dir(preset: Preset) -> str:
    """Where ``preset`` lives in the cache once fetched."""
    return os.path.join(cache_dir(), "presets", safe_name(preset.name))


def _record_of(folder: str) -> dict[str, Any] | None:
    """The fetch record in a cache folder (what was fetched, from where), or None where there is none."""
    try:
        with open(os.path.join(folder, RECORD), encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def cached_record(preset: Preset) -> dict[str, Any] | None:
    """The cache's record of ``preset`` when it is there, complete and fetched from the same URL and checksum."""
    record = _record_of(preset_dir(preset))
    if record is None:
        return None
    if record.get("url") != preset.url:
        return None
    if preset.sha256 and record.get("sha256") not in (None, preset.sha256):
        return None
    return record


def fetch(preset: Preset, *, progress: Callable[[str], Any] | None = None) -> str:
    """The local folder of ``preset``: a folder source as is, else the cache's copy, fetched first if needed."""
    say = progress or _stderr
    if preset.kind == "directory":
        return local_source(preset.url)
    final = preset_dir(preset)
    if cached_record(preset) is not None:
        return final
    if offline():
        earlier = _record_of(final)
        if earlier is not None:  # the folder is there, fetched for another URL or checksum than the preset's now
            differs = "URL" if earlier.get("url") != preset.url else "sha256"
            raise DownloadError(
                f"preset {preset.name!r}: the cache holds a copy ({final}) fetched from {earlier.get('url')}, but the "
                f"preset's {differs} is now {preset.url if differs == 'URL' else preset.sha256}, and "
                f"${OFFLINE_ENV} forbids fetching it; run once with the network, or restore the entry it was "
                "fetched with"
            )
        raise DownloadError(
            f"preset {preset.name!r} is not in the cache ({final}) and ${OFFLINE_ENV} forbids downloading it; run "
            f"once with the network, or point ${CACHE_ENV} at a cache that holds it"
        )
    root = cache_dir()
    for sub in ("presets", "downloads", "locks"):
        _makedirs(os.path.join(root, sub), preset)
    with _locked(os.path.join(root, "locks", safe_name(preset.name) + ".lock"), preset, say):
        if cached_record(preset) is not None:  # another process fetched it while this one waited
            return final
        staging = os.path.join(root, "presets", f".staging-{safe_name(preset.name)}-{os.getpid()}")
        _clear_stale(os.path.join(root, "presets"), safe_name(preset.name))
        try:
            record = _fetch_into(preset, staging, root, say)
            _finish(preset, staging, record)
            if os.path.isdir(final):  # an older fetch from another URL: replaced whole
                _fs.rmtree(final)
            os.replace(staging, final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return final


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _makedirs(path: str, preset: Preset) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise DownloadError(f"preset {preset.name!r}: cannot create the cache folder {path} ({e.strerror}); "
                            f"set ${CACHE_ENV} to a writable directory") from None


@contextlib.contextmanager
def _locked(path: str, preset: Preset, say: Callable[[str], Any]) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (waiting, with one line, while another process holds it)."""
    import fcntl

    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"{preset.name}: another process is fetching it (lock {path}); waiting")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _clear_stale(presets_root: str, stem: str) -> None:
    """Remove staging folders that a killed fetch of this preset left (the lock is held: none is in use)."""
    for entry in os.listdir(presets_root):
        if entry.startswith(f".staging-{stem}-"):
            shutil.rmtree(os.path.join(presets_root, entry), ignore_errors=True)


def _fetch_into(preset: Preset, staging: str, root: str, say: Callable[[str], Any]) -> dict[str, Any]:
    """Fill ``staging`` with the preset's files; returns what the cache records about the download."""
    if preset.kind == "huggingface":
        return _fetch_huggingface(preset, staging)
    part = os.path.join(root, "downloads", safe_name(preset.name) + ".part")
    source = local_source(preset.url)
    if source is None:
        _download(preset, part, say)
    else:
        _copy_local(preset, source, part, say)
    digest = _sha256(part)
    if preset.sha256 and digest != preset.sha256:
        os.remove(part)
        raise DownloadError(f"preset {preset.name!r}: checksum mismatch for {preset.url} (expected sha256 "
                            f"{preset.sha256}, got {digest}); the download was deleted: run again to fetch it anew, "
                            f"or correct the entry's \"sha256\"")
    size = os.path.getsize(part)
    _unpack(preset, part, staging)
    os.remove(part)
    return {"sha256": digest, "size": size, "checked": "sha256" if preset.sha256 else "size and archive"}


def _download(preset: Preset, part: str, say: Callable[[str], Any]) -> None:
    """HTTP(S) download of ``preset.url`` into ``part``, continuing a partial file with a ``Range`` request."""
    import http.client
    import urllib.error
    import urllib.request

    have = os.path.getsize(part) if os.path.exists(part) else 0
    headers = {"User-Agent": "albert-tf"}
    if have:
        headers["Range"] = f"bytes={have}-"
    request = urllib.request.Request(preset.url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing left to send: the partial file is whole (the checks that follow tell)
            return
        raise DownloadError(f"preset {preset.name!r}: {preset.url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", None) or e
        raise DownloadError(f"preset {preset.name!r}: cannot reach {preset.url} ({reason}); check the network, or "
                            f"set ${OFFLINE_ENV}=1 to use the cache only") from None
    with response:
        resumed = have > 0 and response.status == 206
        if not resumed:
            have = 0
        length = response.headers.get("Content-Length")
        total = have + int(length) if length and length.isdigit() else preset.size
        if preset.size and total and total != preset.size:
            raise DownloadError(f"preset {preset.name!r}: {preset.url} serves {total} bytes, the entry says "
                                f"{preset.size}; the file has changed: correct the entry's \"size\" and \"sha256\"")
        _check_space(preset, part, (total or 0) - have)
        what = f"{preset.name}: {'resuming' if resumed else 'downloading'} {preset.url}"
        say(f"{what} ({_mb(total)})" if total else what)
        with _open_part(preset, part, "ab" if resumed else "wb") as out:
            done = _copy_stream(preset, response, out, part, have, total, say)
    if total and done != total:
        raise DownloadError(f"preset {preset.name!r}: the connection closed after {done} of {total} bytes; run the "
                            f"same command again to resume the download ({part})")


def _copy_local(preset: Preset, source: str, part: str, say: Callable[[str], Any]) -> None:
    """Copy a ``file://`` or path source (local or a TensorFlow filesystem) into ``part``."""
    if not _fs.exists(source):
        raise DownloadError(f"preset {preset.name!r}: {source}: no such file")
    if _fs.isdir(source):
        raise DownloadError(f"preset {preset.name!r}: {source} is a directory with an archive name; give the "
                            f"folder without the archive suffix or the archive file")
    total = _fs.size(source)
    _check_space(preset, part, total)
    say(f"{preset.name}: copying {source} ({_mb(total)})")
    with _fs.open_file(source, "rb") as src, _open_part(preset, part, "wb") as out:
        _copy_stream(preset, src, out, part, 0, total, say)


@contextlib.contextmanager
def _open_part(preset: Preset, part: str, mode: str) -> Iterator[BinaryIO]:
    try:
        with open(part, mode) as out:
            yield out
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise DownloadError(f"preset {preset.name!r}: no space left on the device of {part}; free some and run "
                                f"again (the download continues), or set ${CACHE_ENV} to a larger disk") from None
        raise


def _copy_stream(preset: Preset, src: Any, out: BinaryIO, part: str, done: int, total: int | None,
                 say: Callable[[str], Any]) -> int:
    """Copy ``src`` to ``out`` in chunks with a progress bar; returns the byte count of ``part``. A transfer that
    breaks leaves what arrived in ``part`` for the next run to continue."""
    import http.client

    bar = Progress(preset.name, total, done, say)
    while True:
        try:
            chunk = src.read(CHUNK)
        except (http.client.IncompleteRead, ConnectionError, TimeoutError, OSError) as e:
            out.flush()
            raise DownloadError(f"preset {preset.name!r}: the transfer broke after {done} bytes ({type(e).__name__}); "
                                f"run the same command again to resume the download ({part})") from None
        if not chunk:
            break
        out.write(chunk)
        done += len(chunk)
        bar.update(done)
    bar.close(done)
    return done


def _check_space(preset: Preset, part: str, needed: int) -> None:
    free = shutil.disk_usage(os.path.dirname(part)).free
    if needed > free:
        raise DownloadError(f"preset {preset.name!r}: needs {_mb(needed)} in {os.path.dirname(part)}, only "
                            f"{_mb(free)} free; free some space or set ${CACHE_ENV} to a larger disk")


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _unpack(preset: Preset, archive: str, staging: str) -> None:
    """Unpack a tar(.gz) or zip archive into ``staging``, refusing members that would land outside it. A damaged
    archive is deleted (the next run fetches it anew)."""
    os.makedirs(staging)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                for member in z.namelist():
                    target = os.path.realpath(os.path.join(staging, member))
                    if not target.startswith(os.path.realpath(staging) + os.sep):
                        raise DownloadError(f"preset {preset.name!r}: {preset.url}: archive member {member!r} "
                                            f"points outside its folder; refused")
                bad = z.testzip()
                if bad is not None:
                    raise zipfile.BadZipFile(f"CRC error in {bad}")
                z.extractall(staging)
        else:
            with tarfile.open(archive) as tar:
                tar.extractall(staging, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
        if isinstance(e, OSError) and e.errno == errno.ENOSPC:
            raise DownloadError(f"preset {preset.name!r}: no space left unpacking into {staging}; free some space "
                                f"or set ${CACHE_ENV} to a larger disk") from None
        html = _is_html(archive)
        os.remove(archive)
        if html:  # a login, consent or error page served with status 200
            raise DownloadError(f"preset {preset.name!r}: {preset.url} answered with an HTML page, not an archive (a "
                                "sign-in, consent or error page? the URL must be a direct download link); the page "
                                "was deleted") from None
        raise DownloadError(f"preset {preset.name!r}: {preset.url} is not a readable .tar.gz/.tar/.zip archive "
                            f"({e}); the download was deleted: run again to fetch it anew") from None


def _is_html(path: str) -> bool:
    """Whether the file at ``path`` starts like a web page."""
    try:
        with open(path, "rb") as f:
            head = f.read(512).lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    except OSError:
        return False
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<?xml")) or b"<html" in head[:200]


def _fetch_huggingface(preset: Preset, staging: str) -> dict[str, Any]:
    """A Hugging Face repository's config, weights and tokenizer through ``huggingface_hub``."""
    repo = preset.url.removeprefix("hf://")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise DownloadError(f"preset {preset.name!r} comes from the Hugging Face Hub: pip install huggingface_hub, "
                            f"or download the folder and pass its path") from None
    try:
        snapshot_download(repo, local_dir=staging, allow_patterns=list(HF_PATTERNS))
        if not _fs.match(os.path.join(staging, "*.safetensors")):  # older repositories: PyTorch weights only
            snapshot_download(repo, local_dir=staging, allow_patterns=["pytorch_model.bin"])
    except Exception as e:  # huggingface_hub raises its own hierarchy (HTTP, offline, gated, missing repository)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DownloadError(f"preset {preset.name!r}: Hugging Face repository {repo}: {first}") from None
    shutil.rmtree(os.path.join(staging, ".cache"), ignore_errors=True)
    return {"sha256": None, "size": None, "checked": "huggingface_hub (per-file hashes of the Hub)"}


def _finish(preset: Preset, staging: str, record: dict[str, Any]) -> None:
    """Check the unpacked files are a usable checkpoint, give a Hugging Face folder its ``albert_config.json``,
    and write the cache record (last: the record marks a complete preset)."""
    from albert_tf.checkpoints.preset_files import locate

    found = locate(staging, preset)
    if found.format == "huggingface" and found.albert_config_file is None:
        from albert_tf.checkpoints import huggingface

        config = huggingface.albert_config_from_huggingface(huggingface.read_huggingface_config(found.directory))
        config.to_json_file(os.path.join(found.directory, "albert_config.json"))
    record = {"name": preset.name, "url": preset.url, "format": found.format, **record,
              "fetched_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with open(os.path.join(staging, RECORD), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)


def _mb(n: int | None) -> str:
    return "size unknown" if n is None else f"{n / 1e6:.1f} MB"


class Progress:
    """A one-line progress bar on a terminal; elsewhere (logs, CI) a line at every quarter."""

    def __init__(self, name: str, total: int | None, done: int, say: Callable[[str], Any]) -> None:
        self.name, self.total, self.say = name, total, say
        self.start, self.start_bytes = time.monotonic(), done
        self.tty = say is _stderr and sys.stderr.isatty()
        self.next_quarter = 1
        self.last_draw = 0.0

    def update(self, done: int) -> None:
        now = time.monotonic()
        if self.tty:
            if now - self.last_draw >= 0.2:
                self.last_draw = now
                sys.stderr.write("\r" + self._line(done))
                sys.stderr.flush()
        elif self.total and done * 4 >= self.next_quarter * self.total and self.next_quarter < 4:
            self.say(self._line(done))
            self.next_quarter = done * 4 // self.total + 1

    def close(self, done: int) -> None:
        if self.tty:
            sys.stderr.write("\r" + self._line(done) + "\n")
        else:
            self.say(f"{self.name}: {_mb(done)} in {time.monotonic() - self.start:.1f} s")

    def _line(self, done: int) -> str:
        rate = (done - self.start_bytes) / max(time.monotonic() - self.start, 1e-6) / 1e6
        if self.total:
            width = 30
            filled = int(width * done / self.total)
            return (f"{self.name}: [{'#' * filled}{'.' * (width - filled)}] {done / 1e6:.1f}/{self.total / 1e6:.1f} "
                    f"MB {100 * done / self.total:3.0f}% {rate:.1f} MB/s")
        return f"{self.name}: {done / 1e6:.1f} MB {rate:.1f} MB/s"


__all__ = ["CACHE_ENV", "OFFLINE_ENV", "DownloadError", "cache_dir", "cached_record", "fetch", "offline",
           "preset_dir"]
