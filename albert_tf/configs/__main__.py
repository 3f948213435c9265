"""``python -m albert_tf.configs``: list the recipes, the model configs and the presets (released weights)."""

from albert_tf.configs import describe

if __name__ == "__main__":
    print(describe())
