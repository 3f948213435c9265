"""Fine-tune ALBERT on GLUE: thin entry point; the command is :mod:`albert_tf.cli.run_classifier`."""

from albert_tf.cli.run_classifier import define_flags, main

__all__ = ["define_flags", "main"]

if __name__ == "__main__":
    main()
