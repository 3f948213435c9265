"""Activation functions named as in ALBERT configs.

The official ``gelu`` is the tanh approximation
``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (Hugging Face calls it ``gelu_new``);
users hit the wrong variant in ports (huggingface/transformers#2395), so the exact erf form is only
available under the explicit name ``gelu_exact``.
"""

from __future__ import annotations

from collections.abc import Callable

import keras


@keras.saving.register_keras_serializable(package="albert_tf")
def gelu_tanh(x):
    """GELU, tanh approximation: what ALBERT's ``"gelu"`` computes, through Keras' ``gelu(approximate=True)`` (the
    same formula): on TensorFlow that is ``tf.nn.gelu``, whose graph TensorFlow's oneDNN rewrite fuses into the
    matmul before it (``attention.project``)."""
    return keras.activations.gelu(x, approximate=True)


@keras.saving.register_keras_serializable(package="albert_tf")
def gelu_exact(x):
    """GELU with the exact Gaussian CDF (opt-in; not what the released models used)."""
    return keras.activations.gelu(x, approximate=False)


def get_activation(name: str | None) -> Callable | None:
    """Map an ALBERT config ``hidden_act`` to a callable (None = identity)."""
    if name in (None, "", "linear"):
        return None
    table = {
        "gelu": gelu_tanh,
        "gelu_new": gelu_tanh,
        "gelu_exact": gelu_exact,
        "relu": keras.activations.relu,
        "tanh": keras.activations.tanh,
    }
    if name not in table:
        raise ValueError(f"unsupported activation {name!r}; expected one of {sorted(table)} or 'linear'")
    return table[name]
