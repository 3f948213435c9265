"""What every command line shares: ``--help`` that lists the command's own flags and exits 0, and one exit
path for expected errors (one line on stderr, non-zero status, no traceback unless ``--verbose``).

absl's own ``--help`` prints only the *main module's* key flags and exits 1; for a console script the main
module is the setuptools wrapper, which defines none. :func:`run` answers ``--help`` itself from the flags
that albert-tf modules define.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

HELP_FLAGS = ("--help", "-h", "-?", "--helpshort", "-help")


def help_text(doc: str, fv: flags.FlagValues) -> str:
    """``doc`` followed by every flag albert-tf defines on ``fv``, grouped by defining module."""
    parts = [doc.strip(), ""]
    from albert_tf.cli.flags import is_albert_module

    for module in sorted(fv.flags_by_module_dict()):
        if is_albert_module(module):
            parts.append(fv.module_help(module))
    return "\n".join(parts) + "\n"


def wants_help(argv: Sequence[str]) -> bool:
    args = list(argv[1:])
    if "--" in args:
        args = args[: args.index("--")]
    return any(a in HELP_FLAGS for a in args)


def run(
    main: Callable[[list[str]], int | None],
    doc: str,
    errors: tuple[type[BaseException], ...] = (),
    argv: Sequence[str] | None = None,
) -> None:
    """Parse the global flags and run ``main(argv)``; ``--help`` prints :func:`help_text` and exits 0.

    An exception of a type in ``errors`` (expected failures: bad flags, bad input) becomes one line
    ``error: <message>`` on stderr and exit status 2.
    """
    argv = list(sys.argv if argv is None else argv)
    if wants_help(argv):
        sys.stdout.write(help_text(doc, flags.FLAGS))
        sys.exit(0)

    def wrapped(args: list[str]) -> None:
        if len(args) > 1:
            raise app.UsageError(f"unexpected arguments: {' '.join(args[1:])}")
        try:
            code = main(args)
        except errors as e:
            message = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
            print(f"error: {message}", file=sys.stderr)
            sys.exit(2)
        sys.exit(code or 0)

    app.run(wrapped, argv=argv)
