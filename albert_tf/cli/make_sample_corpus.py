"""Write the built-in sample data (logic: :mod:`albert_tf.data.sample_corpus`): a deterministic English-like
corpus, as one pretraining-format file (one sentence per line, blank line between documents), as plain text files
(one document each, the input of albert_prepare_text) and/or as a small GLUE SST-2-layout classification task.

    albert_make_sample_corpus --output_file=sample_corpus.txt --num_documents=2000 --seed=0
    albert_make_sample_corpus --output_file= --documents_dir=books --glue_dir=glue
"""

from __future__ import annotations

import json

from absl import flags

from albert_tf.cli import app as cli_app
from albert_tf.data.sample_corpus import write_document_files, write_sample_corpus, write_weather_task


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """The command's flags (idempotent)."""
    if "output_file" in fv:
        return
    flags.DEFINE_string("output_file", "sample_corpus.txt",
                        "Pretraining-format text file ('' to skip).", flag_values=fv)
    flags.DEFINE_string("documents_dir", None,
                        "Also write the documents as plain text files here, one per file.", flag_values=fv)
    flags.DEFINE_string("glue_dir", None,
                        "Also write a sunny-vs-other-weather task in the GLUE SST-2 layout to <glue_dir>/SST-2.",
                        flag_values=fv)
    flags.DEFINE_integer("num_documents", 2000, "Number of documents.", flag_values=fv, lower_bound=1)
    flags.DEFINE_integer("seed", 0, "Generator seed.", flag_values=fv)


def _main(argv):
    del argv
    f = flags.FLAGS
    if not (f.output_file or f.documents_dir or f.glue_dir):
        raise ValueError("nothing to write: give --output_file, --documents_dir or --glue_dir")
    result = {}
    if f.output_file:
        result["corpus"] = write_sample_corpus(f.output_file, f.num_documents, f.seed)
    if f.documents_dir:
        result["documents"] = write_document_files(f.documents_dir, f.num_documents, f.seed)
    if f.glue_dir:
        result["glue"] = write_weather_task(f.glue_dir, f.seed)
    print(json.dumps(result))



def main(argv=None) -> None:
    """Console entry point."""
    define_flags()
    cli_app.run(_main, __doc__, errors=(ValueError,), argv=argv)


if __name__ == "__main__":
    main()
