"""Create ALBERT pretraining TFRecords.

Thin entry point; the command is :mod:`albert_tf.cli.create_pretraining_data`."""

from albert_tf.cli.create_pretraining_data import HELP, define_flags, main

__doc__ = HELP
__all__ = ["define_flags", "main"]

if __name__ == "__main__":
    main()
