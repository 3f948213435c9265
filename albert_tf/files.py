"""User files through ``tf.io.gfile`` (local ones through Python), and the one atomic text writer of the package.

So a ``gs://`` (or ``ram://``, or any other TensorFlow filesystem) data dir, cache dir or output dir works the
same as a local one. TensorFlow is imported on first use, not when the module is imported: ``albert_tf.data.glue``
(task names for flag help) stays cheap to import. Result files everywhere (GLUE caches and submissions, run
metadata, evaluation results, predictions, Hugging Face exports) are written with :func:`write_text_atomic` /
:func:`write_bytes_atomic`.

Local paths (no ``scheme://``) go through ``os`` / ``open`` / ``shutil`` in the simple file helpers below
(exists, isdir, isfile, size, read_bytes, makedirs, remove, replace, copy, :func:`open_file`, the atomic writers):
the same results, and a command whose paths are all local (``create_pretraining_data``) never imports TensorFlow,
whose import costs seconds of start-up. Failures on local paths are ``OSError`` (``FileNotFoundError``, ...);
on remote ones TensorFlow's ``OpError``. The directory-tree helpers keep ``tf.io.gfile`` for every path.

A path with a ``scheme://`` prefix is *remote* (:func:`is_remote`): it exists only for TensorFlow's filesystems,
so nothing may touch it through ``os`` / ``open`` / ``glob``. Two helpers keep Python's own behaviour for local
paths on purpose: :func:`glob` (Python's ``glob`` skips hidden files and keeps relative paths as given, where
``tf.io.gfile.glob`` matches dot files and prefixes ``./``) and :func:`canonical_path` (symlinks resolved).

Directory trees (:func:`rmtree`, :func:`rename_dir`, :func:`list_tree`) need care on TensorFlow's in-memory
filesystem ``ram://`` (``xla/tsl/platform/ram_file_system.h``, TF 2.21): it is a flat map from names to contents, so
renaming a directory moves only the directory's own entry and leaves its files under the old name,
``tf.io.gfile.rmtree`` fails with ``NotFoundError`` on a directory that exists only because files were written under
it, ``listdir``/``walk`` miss such implicit sub-directories, and every string prefix of a name "exists" as a
directory (``ckpt-20`` because ``ckpt-20.index`` exists). The helpers below move and delete ``ram://`` trees file by
file, found with one ``glob`` per depth (``glob`` matches every name); other filesystems use ``tf.io.gfile`` as is.
"""

from __future__ import annotations

import errno
import glob as _glob
import os
import posixpath
import shutil
from typing import Any

from albert_tf import interrupts


def gfile() -> Any:
    """``tf.io.gfile`` (TensorFlow imported lazily)."""
    import tensorflow as tf

    return tf.io.gfile


def is_remote(path: str | os.PathLike) -> bool:
    """True for a TensorFlow filesystem URL (``gs://``, ``ram://``, ``hdfs://``, ...), False for a local path."""
    return "://" in os.fspath(path)


def read_errors(path: str) -> tuple[type[BaseException], ...]:
    """What a failed read of ``path`` raises: ``OSError``, and for a remote path TensorFlow's ``OpError`` too (its
    reads go through ``tf.io.gfile``, so TensorFlow is imported already)."""
    if not is_remote(path):
        return (OSError,)
    import tensorflow as tf

    return (OSError, tf.errors.OpError)


def open_file(path: str, mode: str = "rb") -> Any:
    """A file object: ``open`` for a local path (text modes in UTF-8, as ``GFile`` reads and writes text), and
    ``tf.io.gfile.GFile`` for a remote one."""
    if is_remote(path):
        return gfile().GFile(path, mode)
    if "b" in mode:
        return open(path, mode)
    return open(path, mode, encoding="utf-8")


def exists(path: str) -> bool:
    """``os.path.exists`` for any TensorFlow filesystem."""
    return gfile().exists(path) if is_remote(path) else os.path.exists(path)


def isdir(path: str) -> bool:
    """``os.path.isdir`` for any TensorFlow filesystem."""
    return gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def isfile(path: str) -> bool:
    """``os.path.isfile`` for any TensorFlow filesystem (exists and is not a directory)."""
    if not is_remote(path):
        return os.path.exists(path) and not os.path.isdir(path)
    fs = gfile()
    return fs.exists(path) and not fs.isdir(path)


def size(path: str) -> int:
    """``os.path.getsize`` for any TensorFlow filesystem."""
    return int(gfile().stat(path).length) if is_remote(path) else os.path.getsize(path)


def read_bytes(path: str) -> bytes:
    """The whole file."""
    with open_file(path, "rb") as f:
        return f.read()


def read_text(path: str, encoding: str = "utf-8") -> str:
    """The whole file decoded (``encoding="utf-8-sig"`` drops a BOM)."""
    return read_bytes(path).decode(encoding)


def listdir(path: str) -> list[str]:
    """The names in the directory ``path`` (``os.listdir``), sorted."""
    return sorted(gfile().listdir(path) if is_remote(path) else os.listdir(path))


def match(pattern: str) -> list[str]:
    """Every name matching ``pattern`` on any filesystem, files and directories, dot files included, sorted
    (``tf.io.gfile.glob``: what checkpoint prefixes such as ``ckpt-*.index`` and ``ram://`` need, where :func:`glob`
    keeps Python's rules for user-facing input patterns). A local pattern is matched by Python's ``glob``, which
    agrees for these patterns and does not import TensorFlow (a command's output checks come before its start-up)."""
    if is_remote(pattern):
        return sorted(gfile().glob(pattern))
    return sorted(_glob.glob(pattern))


def makedirs(path: str) -> None:
    """Create ``path`` and its parents; an existing directory is fine."""
    if is_remote(path):
        gfile().makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def makedirs_for(path: str) -> None:
    """Create the directory that will hold the file ``path`` (nothing for a bare file name)."""
    parent = os.path.dirname(path)
    if parent:
        makedirs(parent)


def remove(path: str) -> None:
    """Delete a file."""
    if is_remote(path):
        gfile().remove(path)
    else:
        os.remove(path)


def replace(tmp: str, path: str) -> None:
    """Move a finished temporary file over ``path`` (``os.replace``)."""
    if is_remote(tmp) or is_remote(path):
        gfile().rename(tmp, path, overwrite=True)
    else:
        os.replace(tmp, path)


def copy(src: str, dst: str) -> None:
    """Copy one file, possibly between filesystems (local -> ``gs://``), replacing ``dst``."""
    if is_remote(src) or is_remote(dst):
        gfile().copy(src, dst, overwrite=True)
    else:
        shutil.copyfile(src, dst)


def is_ram(path: str) -> bool:
    """True for TensorFlow's in-memory filesystem (``ram://``), whose directory quirks the tree helpers work around."""
    return os.fspath(path).startswith("ram://")


def _ram_children_pattern(root: str) -> str:
    """The glob of the names one level under the ``ram://`` directory ``root`` (``ram://`` itself included);
    ``root`` must hold no glob characters (they would match other names)."""
    if any(c in root for c in "*?[]"):
        raise ValueError(f"{root}: a ram:// directory name with glob characters (*?[]) cannot be listed")
    base = root.rstrip("/")
    return "ram://*" if base == "ram:" else base + "/*"


def _ram_entries(root: str) -> list[str]:
    """Every ``ram://`` name strictly under the directory ``root`` (files and directory entries), one ``glob`` per
    depth until a depth matches nothing."""
    pattern = _ram_children_pattern(root)
    found: list[str] = []
    while True:
        level = gfile().glob(pattern)
        pattern += "/*"
        if not level:
            return found
        found.extend(level)


def list_tree(root: str) -> list[str]:
    """Every file (not directory) under ``root``, recursively, sorted (``tf.io.gfile.walk``; see the module
    docstring for ``ram://``)."""
    fs = gfile()
    if is_ram(root):
        return sorted(p for p in _ram_entries(root) if not fs.isdir(p))
    return sorted(posixpath.join(d, name) for d, _, names in fs.walk(root) for name in names)


def has_children(path: str) -> bool:
    """True when ``path`` is a directory holding anything (``ram://``: a name under ``path/``, not a sibling that
    merely starts with the same letters)."""
    fs = gfile()
    if is_ram(path):
        return bool(fs.glob(_ram_children_pattern(path)))
    return fs.isdir(path) and bool(fs.listdir(path))


def rmtree(path: str) -> None:
    """Delete the directory ``path`` and everything under it (``shutil.rmtree``); a missing one is fine."""
    fs = gfile()
    if not is_ram(path):
        if fs.exists(path):
            fs.rmtree(path)
        return
    for name in sorted(_ram_entries(path), key=lambda p: p.count("/"), reverse=True):  # deepest first
        fs.remove(name)  # removes a file or a directory entry alike
    root = path.rstrip("/")
    if fs.exists(root) and not isfile(root):
        try:
            fs.remove(root)  # the directory's own entry, where one was made
        except Exception:  # noqa: BLE001 - an implicit directory has no entry to remove (NotFoundError)
            pass


def rename_dir(src: str, dst: str) -> None:
    """Move the directory ``src`` to ``dst`` (which must not exist). Local and most remote filesystems: one
    ``tf.io.gfile.rename``. ``ram://``: file by file (see the module docstring), then ``src`` is removed."""
    fs = gfile()
    if not is_ram(src):
        fs.rename(src, dst)
        return
    src_root, dst_root = src.rstrip("/"), dst.rstrip("/")
    fs.makedirs(dst_root)
    for name in _ram_entries(src_root):
        target = dst_root + name[len(src_root):]
        if fs.isdir(name):
            fs.makedirs(target)
        else:
            fs.rename(name, target, overwrite=True)
    rmtree(src_root)


def glob(pattern: str) -> list[str]:
    """Files (not directories) matching ``pattern``, sorted.

    Local patterns: Python's ``glob`` after ``~`` expansion (hidden files skipped, relative paths kept as given).
    Remote patterns: ``tf.io.gfile.glob``.
    """
    if is_remote(pattern):
        fs = gfile()
        return sorted(m for m in fs.glob(pattern) if not fs.isdir(m))
    return sorted(m for m in _glob.glob(os.path.expanduser(pattern)) if os.path.isfile(m))


def canonical_path(path: str) -> str:
    """A spelling of ``path`` that two names of the same file share, to tell whether an output is an input.

    Local: ``os.path.realpath`` (symlinks resolved). Remote: the scheme lower-cased and the rest normalised
    (``a//b/./c`` -> ``a/b/c``); object stores have no links, so that is all there is to compare.
    """
    path = os.fspath(path)
    if not is_remote(path):
        return os.path.realpath(path)
    scheme, _, rest = path.partition("://")
    return f"{scheme.lower()}://{posixpath.normpath(rest) if rest else ''}"


def temporary_name(path: str) -> str:
    """The sibling ``<path>.tmp-<pid>`` an output is written under before it is renamed over ``path``: per process,
    so two processes writing one output (the workers of a multi-worker run) never share it."""
    return f"{path}.tmp-{os.getpid()}"


def write_bytes_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to a temporary name, then rename it over ``path``.

    A killed run leaves the old file or none, never a half-written one. The temporary name is
    :func:`temporary_name`. Ctrl-C or SIGTERM while
    it writes is held until the rename is done (:func:`albert_tf.interrupts.deferred`): no temporary file is left.
    """
    if isdir(path):  # else the rename fails naming the temporary file, not the folder the user gave
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    tmp = temporary_name(path)
    with interrupts.deferred():
        with open_file(tmp, "wb") as f:
            f.write(data)
        replace(tmp, path)


def write_text_atomic(path: str, text: str) -> None:
    """:func:`write_bytes_atomic` of ``text`` as UTF-8 (newlines as given)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def _footprint(path: str) -> list[str]:
    """``path`` and, for a checkpoint prefix, the ``.index`` / ``.data-*`` files it stands for."""
    return [path, *match(path + ".index"), *match(path + ".data-*")]


def _same_file(a: str, b: str) -> bool:
    if is_remote(a) or is_remote(b) or not (os.path.exists(a) and os.path.exists(b)):
        return False
    return os.path.samefile(a, b)  # a hard link or a bind mount has another name but the same inode


def named(paths: list[str], most: int = 3) -> str:
    """The first ``most`` of ``paths`` for a message, and how many more."""
    shown = ", ".join(paths[:most])
    return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")


def flagfile_problem(path: str) -> str | None:
    """What is wrong with ``path`` as an absl ``--flagfile`` (missing, a folder, binary), else None. absl's own
    words for these are ``ERROR:: Unable to open flagfile: [Errno 2] ...`` or a NUL line taken for an argument."""
    if is_remote(path):
        return None
    if not os.path.exists(path):
        return f"--flagfile={path}: no such file"
    if os.path.isdir(path):
        return f"--flagfile={path}: is a directory; a file of --flag=value lines is expected"
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"--flagfile={path}: not a flagfile: a binary file (not UTF-8 text at byte {e.start})"
    if "\x00" in text:
        return f"--flagfile={path}: not a flagfile: a binary file (NUL bytes)"
    return None


def flagfile_holding(flag_error: str, args: list[str]) -> str:
    """``"--flagfile=F: "`` where the flag an absl error names (``flag_error``) was read from a flagfile ``F`` of
    ``args``, so that the message points at the file to fix, not at a command line that does not hold the flag;
    else ``""``."""
    import re

    found = re.search(r"flag '-*([\w.-]+)'|--([\w.-]+)", flag_error)
    name = next((g for g in (found.groups() if found else ()) if g), None)
    for arg in args:
        if name and arg.startswith("--flagfile="):
            path = arg.split("=", 1)[1]
            try:
                with open(path, encoding="utf-8") as f:
                    if any(line.strip().lstrip("-").split("=")[0] == name for line in f):
                        return f"--flagfile={path}: "
            except (OSError, UnicodeDecodeError):
                continue
    return ""


def file_in_the_way(path: str) -> str | None:
    """The existing file that ``path`` or one of its parents is, where a folder is needed (``out.txt/run``)."""
    path = os.fspath(path).rstrip("/")
    while path and path not in (".", "/"):
        if isfile(path):
            return path
        if exists(path):
            return None
        parent = posixpath.dirname(path) if is_remote(path) else os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return None


def written_input(inputs: list[str], outputs: list[str]) -> tuple[str, str] | None:
    """``(input, output)`` for the first output that would write onto an input, else None.

    An output writes onto an input when they are the same path (after symlinks), the same file under another
    name (same inode), or when the output is a folder that holds the input (a folder output is replaced whole).
    A checkpoint prefix counts with its ``.index`` and ``.data-*`` files.
    """
    for output in outputs:
        out_files = _footprint(output)
        out_canon = {canonical_path(p) for p in out_files}
        out_dir = canonical_path(output).rstrip("/") + "/"
        for source in inputs:
            for file in _footprint(source):
                canon = canonical_path(file)
                if canon in out_canon or canon.startswith(out_dir) or any(_same_file(file, o) for o in out_files):
                    return source, output
    return None


def publish_staged(stage: str, target: str) -> None:
    """Move everything under the folder ``stage`` to the same relative place under ``target``, then remove
    ``stage``: how a command that writes several files publishes them once all are complete.

    Files are renamed one by one into folders that may already hold other files (which stay). Within a folder a
    checkpoint's ``.index`` follows its data, and the ``checkpoint`` state file comes last: a reader that finds
    them finds the rest. Ctrl-C waits until every file is in place.
    """
    def order(name: str) -> tuple[int, str]:
        return (name == "checkpoint") * 2 + name.endswith(".index"), name

    def move(src_dir: str, dst_dir: str) -> None:
        makedirs(dst_dir)
        for name in sorted(listdir(src_dir), key=order):
            name = name.rstrip("/")
            src, dst = posixpath.join(src_dir, name), posixpath.join(dst_dir, name)
            if isdir(src):
                move(src, dst)
            else:
                replace(src, dst)

    with interrupts.deferred():
        move(stage, target)
    rmtree(stage)
