"""Plain text files (one document each, paragraphs) -> one sentence per line, blank line between documents.

    python -m albert_tf.cli.prepare_text --input_file='books/*.txt' --output_file=corpus.txt \\
        --input_encoding=utf-8,iso-8859-1

Logic: :mod:`albert_tf.data.prepare_text`.
"""

from __future__ import annotations

import json
import sys

from absl import flags

from albert_tf.cli import app as cli_app
from albert_tf.data import files as _fs
from albert_tf.data.prepare_text import prepare_files


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """The command's flags (idempotent)."""
    if "output_file" in fv:
        return
    flags.DEFINE_string("input_file", None, "Comma-separated files or globs; each file is one document.",
                        flag_values=fv)
    flags.DEFINE_string("output_file", None, "Output text file (UTF-8).", flag_values=fv)
    flags.DEFINE_string("input_encoding", "utf-8", "Comma-separated encodings tried in order per file.",
                        flag_values=fv)
    flags.DEFINE_integer("min_sentences", 1, "Skip (and count) documents with fewer sentences.",
                         flag_values=fv)


def _main(argv):
    del argv
    f = flags.FLAGS
    if not f.input_file or not f.output_file:
        print("error: --input_file and --output_file are required", file=sys.stderr)
        return 1
    files = []
    for pattern in f.input_file.split(","):
        matches = _fs.glob(pattern)  # local or gs:// (tf.io.gfile)
        if not matches:
            print(f"error: {pattern!r} matches no file", file=sys.stderr)
            return 1
        files.extend(matches)
    try:
        counts = prepare_files(files, f.output_file, f.input_encoding.split(","), f.min_sentences)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(counts))
    return 0



def main(argv=None) -> None:
    """Console entry point."""
    define_flags()
    cli_app.run(_main, __doc__, argv=argv)


if __name__ == "__main__":
    main()
