"""Plain text files -> one sentence per line.

Thin entry point; the command is :mod:`albert_tf.cli.prepare_text`."""

from albert_tf.cli.prepare_text import main

if __name__ == "__main__":
    main()
