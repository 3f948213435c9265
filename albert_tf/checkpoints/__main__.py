"""``python -m albert_tf.checkpoints convert ...``: the converter command (:mod:`albert_tf.cli.convert_checkpoint`)."""

from albert_tf.cli.convert_checkpoint import main, run_cli

__all__ = ["main", "run_cli"]

if __name__ == "__main__":
    main()
