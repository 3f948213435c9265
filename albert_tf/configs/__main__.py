"""``python -m albert_tf.configs``: list the packaged presets."""

from albert_tf.configs import describe

if __name__ == "__main__":
    print(describe())
