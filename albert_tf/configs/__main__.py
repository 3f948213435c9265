"""``python -m albert_tf.configs``: list the recipes, the model configs and the presets (released weights)."""

import sys

from albert_tf.configs import describe


def main() -> int:
    """Print the lists; a bad ``$ALBERT_TF_PRESETS`` file is one ``error:`` line (exit 2), not a traceback (its
    ``PresetError`` is a ``ValueError``; this layer does not import the checkpoints package to name it)."""
    try:
        text = describe()
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
