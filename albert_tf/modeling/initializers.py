"""Weight initialisation shared by every ALBERT layer."""

from __future__ import annotations

import keras


def truncated_normal(stddev: float) -> keras.initializers.Initializer:
    """``tf.truncated_normal_initializer(stddev)``: normal truncated at 2 sigma, as the official code."""
    return keras.initializers.TruncatedNormal(mean=0.0, stddev=stddev)
