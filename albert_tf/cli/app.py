"""What every command line shares: ``--help`` that lists the command's own flags and exits 0, and one exit
path for expected errors (one line on stderr, non-zero status, no traceback unless ``--verbose``).

absl's own ``--help`` prints only the *main module's* key flags and exits 1; for a console script the main
module is the setuptools wrapper, which defines none. :func:`run` answers ``--help`` itself from the flags
that albert-tf modules define.

``--recipe=NAME`` reads a flagfile shipped inside the package (:mod:`albert_tf.configs`, e.g. ``glue/mrpc``) where
it stands on the command line, so recipes work from an installed wheel in any directory; flags after it
override it, as with ``--flagfile``. Its old spelling ``--preset`` still works, with a one-line notice ("preset"
names released weights: ``--init_checkpoint=albert_base_v2``).
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Sequence

from albert_tf.cli.quiet import quiet_logs, set_cpp_log_level

set_cpp_log_level()

from absl import app, flags  # noqa: E402

from albert_tf import interrupts  # noqa: E402
from albert_tf.configs import UnknownNameError, recipe_path, recipes  # noqa: E402

HELP_FLAGS = ("--help", "-h", "-?", "--helpshort", "-help")
#: absl's flag for every flag of every module (absl, TensorFlow included); answered here too, with exit 0.
HELP_FULL = "--helpfull"
VERBOSE = "--verbose"
RECIPE = "--recipe"
#: The old spelling of ``--recipe``, still read (with a notice on stderr).
OLD_RECIPE = "--preset"
RECIPE_HELP = (
    f"{RECIPE}=NAME: read a packaged flagfile (the official hyper-parameters) here; flags after it override it. "
    "`python -m albert_tf.configs` lists them: {names}."
)


def expand_recipes(argv: Sequence[str], notice: Callable[[str], object] | None = None) -> list[str]:
    """``--recipe=NAME`` / ``--recipe NAME`` -> ``--flagfile=<packaged file>`` at the same place (before ``--``).

    The old spelling ``--preset`` is read the same way; ``notice`` (default: a line on stderr) is told once."""
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i:])
            break
        flag = next((f for f in (RECIPE, OLD_RECIPE) if arg == f or arg.startswith(f + "=")), None)
        if flag is None:
            out.append(arg)
            i += 1
            continue
        if arg == flag:
            if i + 1 >= len(args):
                raise UnknownNameError(f"{flag} needs a name: {', '.join(recipes())}")
            i += 1
            name = args[i]
        else:
            name = arg.split("=", 1)[1]
        if flag == OLD_RECIPE:
            (notice or _stderr)(f"notice: {OLD_RECIPE}={name} is now spelled {RECIPE}={name} (a packaged flagfile; "
                                f"a preset is released weights, --init_checkpoint=NAME)")
            notice = _ignore
        out.append(f"--flagfile={recipe_path(name)}")
        i += 1
    return out


def check_flagfiles(argv: Sequence[str]) -> str | None:
    """What is wrong with a ``--flagfile=F`` of ``argv`` (``files.flagfile_problem``), else None."""
    from albert_tf import files as _fs

    for arg in _options(["", *argv[1:]]):
        problem = _fs.flagfile_problem(arg.split("=", 1)[1]) if arg.startswith("--flagfile=") else None
        if problem:
            return problem
    return None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def _ignore(line: str) -> None:
    pass


def common_errors() -> tuple[type[BaseException], ...]:
    """Failures of the environment every command can meet: file system and TensorFlow I/O errors, bad JSON.

    TensorFlow's ``OpError`` is included only once TensorFlow is imported (before that none can be raised), so
    asking never imports it: a command that does not need TensorFlow does not pay its start-up.
    """
    import json

    out: tuple[type[BaseException], ...] = (OSError, json.JSONDecodeError, UnicodeDecodeError)
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        out += (tf.errors.OpError,)
    return out


GRAPH_ERROR = "Graph execution error:"


def one_line(error: BaseException) -> str:
    """The first line of an error's message (TensorFlow's OpErrors carry whole stack dumps).

    An error raised inside a ``tf.function`` starts with ``Graph execution error:`` and the stack of the failing
    node (indented frames under ``Detected at node ...`` lines); its own message comes after them, so that is the
    line returned, after the prefix.
    """
    if isinstance(error, KeyError) and error.args:
        return str(error.args[0])
    message = (getattr(error, "message", None) or str(error) or type(error).__name__).strip()
    if not message:
        return type(error).__name__
    lines = message.splitlines()
    if lines[0].strip() == GRAPH_ERROR:
        own = [line for line in lines[1:]
               if line.strip() and not line[0].isspace() and not line.startswith("Detected at node")]
        return f"{GRAPH_ERROR} {own[0].strip()}" if own else GRAPH_ERROR
    return lines[0]


_OS_ERRORS = {
    errno.EISDIR: "is a directory; a file is expected",
    errno.ENOTDIR: "not a directory: a part of the path is a file",
    errno.EEXIST: "exists as a file where a directory is needed",
    errno.ENOENT: "no such file or directory",
    errno.EACCES: "permission denied",
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "no space left on the device",
}


def _path_flags(fv: flags.FlagValues) -> list[tuple[str, str]]:
    """``(flag, normalised local path)`` of every albert-tf flag holding a non-empty local path string."""
    from albert_tf.cli.flags import option_values

    return [(name, os.path.normpath(value)) for name, value in option_values(fv).items()
            if isinstance(value, str) and value and "://" not in value]


def _under(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip("/") + "/")


def _flag_through(path: str, fv: flags.FlagValues) -> str | None:
    """The albert-tf flag whose value is a path under ``path`` (``--output_dir=<path>/run``)."""
    path = os.path.normpath(path)
    return next((name for name, value in _path_flags(fv) if _under(value, path)), None)


def _flag_of(path: str, fv: flags.FlagValues) -> str | None:
    """The albert-tf flag whose value is ``path``, else one whose value is under it or above it."""
    path = os.path.normpath(path)
    found = _path_flags(fv)
    exact = next((name for name, value in found if value == path), None)
    return exact or next((name for name, value in found if _under(value, path) or _under(path, value)), None)


def describe_os_error(error: OSError, fv: flags.FlagValues | None = None) -> str:
    """An ``OSError`` as one line that names the flag the path came from and what is wrong with it, instead of
    Python's ``[Errno 21] Is a directory: '...'``."""
    path = error.filename
    if not isinstance(path, str):
        return one_line(error)
    from albert_tf import files as _fs

    fv = flags.FLAGS if fv is None else fv
    blocker = _fs.file_in_the_way(path) if error.errno in (errno.ENOTDIR, errno.EEXIST) else None
    if blocker is not None:  # a folder was needed where a file is: name the flag whose path runs through it
        flag = _flag_through(blocker, fv)
        where = f"--{flag}={fv[flag].value}: " if flag else ""
        return f"{where}{blocker} is a file, not a directory"
    flag = _flag_of(path, fv)
    what = _OS_ERRORS.get(error.errno, error.strerror or one_line(error))
    if flag is None:
        return f"{path}: {what}"
    given = fv[flag].value
    if os.path.normpath(given) == os.path.normpath(path):
        return f"--{flag}={given}: {what}"
    return f"--{flag}={given}: {path} {what}"


def describe(error: BaseException) -> str:
    """The one line an expected error prints (:func:`describe_os_error` for an ``OSError`` with a path)."""
    if isinstance(error, OSError) and isinstance(error.filename, str):
        return describe_os_error(error)
    return one_line(error)


def help_text(doc: str, fv: flags.FlagValues) -> str:
    """``doc`` followed by every flag albert-tf defines on ``fv``, grouped by defining module."""
    parts = [doc.strip(), ""]
    from albert_tf.cli.flags import is_albert_module

    for module in sorted(fv.flags_by_module_dict()):
        if is_albert_module(module):
            parts.append(fv.module_help(module))
    return "\n".join(parts) + "\n"


def _options(argv: Sequence[str]) -> list[str]:
    """The arguments before a ``--`` (after it everything is a positional argument)."""
    args = list(argv[1:])
    return args[: args.index("--")] if "--" in args else args


def wants_help(argv: Sequence[str]) -> bool:
    return any(a in HELP_FLAGS for a in _options(argv))


def wants_full_help(argv: Sequence[str]) -> bool:
    return HELP_FULL in _options(argv)


def run(
    main: Callable[[list[str]], int | None],
    doc: str,
    errors: tuple[type[BaseException], ...] = (),
    argv: Sequence[str] | None = None,
    max_args: int = 0,
) -> None:
    """Parse the global flags and run ``main(argv)``; ``--help`` prints :func:`help_text` and exits 0.

    An exception of a type in ``errors`` or :func:`common_errors` (expected failures: bad flags, bad input, I/O)
    becomes one line ``error: <message>`` on stderr and exit status 2; ``--verbose`` shows the traceback instead.
    Ctrl-C and SIGTERM end it with one line and exit status 130 / 143 (:mod:`albert_tf.interrupts`).
    """
    argv = list(sys.argv if argv is None else argv)
    if wants_full_help(argv):  # every module's flags, as absl's own --helpfull lists them
        sys.stdout.write(doc.strip() + "\n\n" + flags.FLAGS.get_help(include_special_flags=False) + "\n")
        sys.exit(0)
    if wants_help(argv):
        recipe_help = RECIPE_HELP.format(names=", ".join(recipes()))
        extra = f"\n\n{VERBOSE}: show the traceback of an error.\n{recipe_help}"
        sys.stdout.write(help_text(doc + extra, flags.FLAGS))
        sys.exit(0)
    try:
        argv = expand_recipes(argv)
    except UnknownNameError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    verbose = VERBOSE in argv
    argv = [a for a in argv if a != VERBOSE]
    flagfile_error = check_flagfiles(argv)
    if flagfile_error:
        print(f"error: {flagfile_error}", file=sys.stderr)
        sys.exit(2)
    try:  # absl's own report of a bad flag is two lines on stderr and exit 1
        flags.FLAGS(argv)
    except flags.Error as e:
        from albert_tf import files as _fs

        print(f"error: {_fs.flagfile_holding(str(e), _options(argv))}{one_line(e)}", file=sys.stderr)
        sys.exit(2)

    def wrapped(args: list[str]) -> None:
        quiet_logs(verbose)  # other libraries' log lines and warnings off, albert-tf's own without absl's prefix
        if len(args) - 1 > max_args:
            print(f"error: unexpected arguments: {' '.join(args[1 + max_args:])}", file=sys.stderr)
            sys.exit(2)
        interrupts.forget()
        try:
            code = main(args)
        except interrupts.Interrupted as e:  # Ctrl-C / SIGTERM: the unwinding closed what was open
            interrupts.stop(e)
        except Exception as e:
            interrupted = interrupts.cause(e) or interrupts.received()
            if interrupted is not None:  # e.g. an import or a TensorFlow call that the signal cut short
                interrupts.stop(interrupted)
            if verbose or not isinstance(e, (*errors, *common_errors())):  # the types, asked after the failure
                raise
            print(f"error: {describe(e)}", file=sys.stderr)
            interrupts.settled()
            sys.exit(2)
        interrupts.settled()
        sys.exit(code or 0)

    app.run(wrapped, argv=argv)
