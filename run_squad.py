"""Fine-tune ALBERT on SQuAD 1.1/2.0: thin entry point; the command is :mod:`albert_tf.cli.run_squad`."""

from albert_tf.cli.run_squad import define_flags, main

__all__ = ["define_flags", "main"]

if __name__ == "__main__":
    main()
