"""Plain text files -> one sentence per line, a blank line between documents (the pretraining input format).

    python -m albert_tf.cli.prepare_text --input_file='books/*.txt' --output_file=corpus.txt \\
        --input_encoding=utf-8,iso-8859-1

Paragraphs are blank-line separated blocks; their lines are joined and split into sentences by a rule-based
splitter. How documents are cut (--document_unit):

* file (the default): each input file is one document. Right for articles and speeches.
* paragraphs: each file is cut at paragraph ends into documents of paragraph/article size: consecutive paragraphs
  are gathered until the document holds at least --document_sentences sentences, and it closes at the end of that
  paragraph (a last remainder of fewer than half that many sentences joins the file's last document). A file
  without blank lines is one paragraph, hence one document. Books as one document each starve the sentence tasks:
  NSP's negatives and the official SOP data's one-segment negatives come from a random *other* document, and a
  corpus of a dozen books has a dozen documents (the paper's corpora: Wikipedia articles and books).

Held-out split (--heldout_file, --heldout_fraction): document i of file f goes to --heldout_file instead of
--output_file when sha256("<basename of f>:<i>") falls in the first --heldout_fraction of its range: a fixed
split, the same on every machine and for any file order. No held-out document is written to --output_file.

    python -m albert_tf.cli.prepare_text --input_file='books/*.txt' --output_file=train.txt \\
        --document_unit=paragraphs --document_sentences=20 --heldout_file=heldout.txt --heldout_fraction=0.05

Logic: :mod:`albert_tf.data.prepare_text` (sentences) and :mod:`albert_tf.data.documents` (documents, split).
"""

from __future__ import annotations

import json
import sys

from absl import flags

from albert_tf import files as _fs
from albert_tf.cli import app as cli_app
from albert_tf.data.documents import DOCUMENT_UNITS, prepare_split
from albert_tf.data.prepare_text import check_decodable, prepare_files


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """The command's flags (idempotent)."""
    if "output_file" in fv:
        return
    flags.DEFINE_string("input_file", None, "Comma-separated files or globs.", flag_values=fv)
    flags.DEFINE_string("output_file", None, "Output text file (UTF-8).", flag_values=fv)
    flags.DEFINE_string("input_encoding", "utf-8", "Comma-separated encodings tried in order per file.",
                        flag_values=fv)
    flags.DEFINE_integer("min_sentences", 1, "Skip (and count) documents with fewer sentences.",
                         flag_values=fv)
    flags.DEFINE_enum("document_unit", "file", list(DOCUMENT_UNITS),
                      "file: each input file is one document. paragraphs: documents of at least "
                      "--document_sentences sentences, cut at paragraph ends (see the description above).",
                      flag_values=fv)
    flags.DEFINE_integer("document_sentences", 20, "With --document_unit=paragraphs: a document closes at the "
                         "first paragraph end after this many sentences.", flag_values=fv)
    flags.DEFINE_string("heldout_file", None, "Where the held-out documents go (with --heldout_fraction > 0).",
                        flag_values=fv)
    flags.DEFINE_float("heldout_fraction", 0.0, "Share of documents held out, chosen by a hash of the file's base "
                       "name and the document's index in it (never written to --output_file).", flag_values=fv)


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
    if f.heldout_fraction > 0 and not f.heldout_file:
        print("error: --heldout_fraction > 0 needs --heldout_file", file=sys.stderr)
        return 1
    for flag, output in (("output_file", f.output_file), ("heldout_file", f.heldout_file)):
        if output and _fs.isdir(output):
            print(f"error: --{flag}={output}: is a directory; a text file is expected", file=sys.stderr)
            return 1
        hit = _fs.written_input(files, [output]) if output else None
        if hit is not None:
            print(f"error: --{flag}={output} is the input {hit[0]}: writing it would destroy the input",
                  file=sys.stderr)
            return 1
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731 - stdout is the JSON counts
    encodings = f.input_encoding.split(",")
    try:
        check_decodable(files, encodings, log=log)  # before the long work: the encoding of every file
        if f.document_unit == "file" and not f.heldout_file:
            counts = prepare_files(files, f.output_file, encodings, f.min_sentences, log=log)
        else:
            counts = prepare_split(
                files, f.output_file, f.heldout_file, document_unit=f.document_unit,
                document_sentences=f.document_sentences, heldout_fraction=f.heldout_fraction,
                min_sentences=f.min_sentences, encodings=encodings, log=log,
            )
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
