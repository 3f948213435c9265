"""Write the deterministic sample pretraining corpus (logic: :mod:`albert_tf.data.sample_corpus`).

    python data/make_sample_corpus.py --output_file=sample_corpus.txt --num_documents=2000 --seed=0
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from absl import app, flags  # noqa: E402

from albert_tf.data.sample_corpus import write_sample_corpus  # noqa: E402

flags.DEFINE_string("output_file", "sample_corpus.txt", "Output text file.")
flags.DEFINE_integer("num_documents", 2000, "Number of documents.")
flags.DEFINE_integer("seed", 0, "Generator seed.")


def main(argv):
    del argv
    f = flags.FLAGS
    print(json.dumps(write_sample_corpus(f.output_file, f.num_documents, f.seed)))


if __name__ == "__main__":
    app.run(main)
