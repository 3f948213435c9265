"""Export a fine-tuned classifier as a raw-text SavedModel.

Thin entry point; see :mod:`albert_tf.cli.export_savedmodel`."""

from albert_tf.cli.export_savedmodel import define_flags, main

__all__ = ["define_flags", "main"]

if __name__ == "__main__":
    main()
