"""Fine-tune ALBERT on RACE: thin entry point; the command is :mod:`albert_tf.cli.run_race`."""

from albert_tf.cli.run_race import define_flags, main

__all__ = ["define_flags", "main"]

if __name__ == "__main__":
    main()
