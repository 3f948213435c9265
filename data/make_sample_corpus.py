"""Write the deterministic sample pretraining corpus.

Thin entry point; the command is :mod:`albert_tf.cli.make_sample_corpus`."""

from albert_tf.cli.make_sample_corpus import main

if __name__ == "__main__":
    main()
