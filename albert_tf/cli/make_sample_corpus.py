"""Write the deterministic sample pretraining corpus (logic: :mod:`albert_tf.data.sample_corpus`).

    python -m albert_tf.cli.make_sample_corpus --output_file=sample_corpus.txt --num_documents=2000 --seed=0
"""

from __future__ import annotations

import json

from absl import flags

from albert_tf.cli import app as cli_app
from albert_tf.data.sample_corpus import write_sample_corpus


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """The command's flags (idempotent)."""
    if "output_file" in fv:
        return
    flags.DEFINE_string("output_file", "sample_corpus.txt", "Output text file.", flag_values=fv)
    flags.DEFINE_integer("num_documents", 2000, "Number of documents.", flag_values=fv)
    flags.DEFINE_integer("seed", 0, "Generator seed.", flag_values=fv)


def _main(argv):
    del argv
    f = flags.FLAGS
    print(json.dumps(write_sample_corpus(f.output_file, f.num_documents, f.seed)))



def main(argv=None) -> None:
    """Console entry point."""
    define_flags()
    cli_app.run(_main, __doc__, argv=argv)


if __name__ == "__main__":
    main()
