"""Create ALBERT pretraining TFRecords (n-gram masked LM + sentence order). See ``--help``.

Thin entry point; the library is :mod:`albert_tf.data.pretraining`.
"""

from __future__ import annotations

from albert_tf.data.pretraining.cli import HELP, define_flags
from albert_tf.data.pretraining.cli import main as _cli_main

__doc__ = HELP
define_flags()


def main() -> None:
    """Console script ``create_pretraining_data``."""
    _cli_main()


if __name__ == "__main__":
    main()
