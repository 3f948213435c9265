"""Activation recomputation: a transformer block keeps only its input for the backward pass and computes its
activations again there (``tf.recompute_grad``), trading one more forward pass per block for the memory of its
attention scores, probabilities and FFN intermediate: the activations, not the parameters, are what fills an
accelerator when ALBERT-large/xxlarge fine-tunes on long sequences (google-research/albert#86).

A shared block stays shared: recomputation wraps each *application* of the block, and the gradients of every
application still flow into the one set of variables.

Dropout must draw the same mask in the recomputation as in the forward pass, which a stateful Keras ``Dropout``
does not (each call advances its seed generator). So a recomputed block draws one seed per application from the
seed generator of one of its own ``Dropout`` layers (an existing variable: checkpoints are unchanged), and inside
:func:`seeded_dropout` every dropout site of the block (:func:`dropout`) uses a stateless mask from that seed and the
site's order. Without recomputation the sites call their ``Dropout`` layers as before.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import keras

__all__ = ["block_seed", "dropout", "recompute", "seeded_dropout", "set_recompute"]

_scope = threading.local()  # per thread: MirroredStrategy traces each replica in its own thread


@contextlib.contextmanager
def seeded_dropout(seed: Any) -> Iterator[None]:
    """Inside, :func:`dropout` draws stateless masks from ``seed`` (an int32 [2] tensor), one per site in call
    order; a recomputation that enters it again with the same seed draws the same masks."""
    saved = getattr(_scope, "state", None)
    _scope.state = [seed, 0]
    try:
        yield
    finally:
        _scope.state = saved


def dropout(layer: keras.layers.Dropout, x: Any, training: Any) -> Any:
    """``layer(x, training=training)``, or inside :func:`seeded_dropout` the same rate and noise shape applied with
    a stateless mask from the scope's seed and this site's index."""
    state = getattr(_scope, "state", None)
    if state is None or not training or layer.rate == 0:
        return layer(x, training=training)
    import tensorflow as tf

    state[1] += 1
    seed = tf.random.experimental.stateless_fold_in(state[0], state[1])
    noise_shape = layer.noise_shape if layer.noise_shape is None else [
        tf.shape(x)[i] if d is None else d for i, d in enumerate(layer.noise_shape)]
    return tf.nn.experimental.stateless_dropout(x, rate=layer.rate, noise_shape=noise_shape, seed=seed)


def block_seed(dropouts: list[keras.layers.Dropout]) -> Any:
    """One fresh seed for one application of a block: from the first of its ``Dropout`` layers that draws masks
    (None when none does: nothing random to reproduce)."""
    import tensorflow as tf

    for layer in dropouts:
        generator = getattr(layer, "seed_generator", None)
        if layer.rate > 0 and generator is not None:
            return tf.cast(generator.next(), tf.int32)
    return None


def recompute(forward: Callable[..., Any], seed: Any, *tensors: Any) -> Any:
    """``forward(*tensors)`` whose activations are recomputed in the backward pass, with its dropout masks drawn
    from ``seed`` both times (plain :func:`seeded_dropout` when ``seed`` is None: no mask to reproduce)."""
    import tensorflow as tf

    def seeded(*args):
        with seeded_dropout(seed) if seed is not None else contextlib.nullcontext():
            return forward(*args)

    return tf.recompute_grad(seeded)(*tensors)


def set_recompute(model: keras.Model, on: bool = True) -> int:
    """Turn recomputation on (or off) in every ``TransformerBlock`` of ``model`` (the layers with a boolean
    ``recompute``; before its training step is traced); returns how many blocks it set. No variable changes, so this
    works on any built model."""
    layers = list(model._flatten_layers(include_self=True))
    blocks = [layer for layer in layers if isinstance(getattr(layer, "recompute", None), bool)]  # TransformerBlock
    for block in blocks:
        block.recompute = bool(on)
    for layer in layers:  # the encoder's own record of it (its get_config)
        if hasattr(layer, "recompute_activations"):
            layer.recompute_activations = bool(on)
    return len(blocks)
