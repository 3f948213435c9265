"""Pretrain ALBERT (MLM + SOP): thin entry point; the command is :mod:`albert_tf.cli.run_pretraining`."""

from albert_tf.cli.run_pretraining import define_flags, main

__all__ = ["define_flags", "main"]

if __name__ == "__main__":
    main()
