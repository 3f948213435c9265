"""Pretraining heads: masked-LM (tied to the word embeddings) and sentence-order prediction.

MLM (official ``cls/predictions``): gather the hidden states at ``masked_lm_positions``, dense
H->E with the config activation (``transform/dense``), LayerNorm in E (``transform/LayerNorm``),
then ``logits = x . W_word^T + output_bias[V]``. Computing logits only at the masked positions
keeps the [B, P, V] tensor small.

SOP (official ``cls/seq_relationship``): ``logits = pooled . W[2,H]^T + b[2]``; label 0 means the
two segments are in their original order.
"""

from __future__ import annotations

import keras
from keras import ops

from albert_tf.modeling.activations import get_activation
from albert_tf.modeling.embeddings import LAYER_NORM_EPSILON
from albert_tf.modeling.initializers import truncated_normal


def gather_positions(sequence, positions):
    """[B, S, H] gathered at int [B, P] positions -> [B, P, H]."""
    index = ops.cast(positions, "int32")[:, :, None]
    return ops.take_along_axis(sequence, index, axis=1)


@keras.saving.register_keras_serializable(package="albert_tf")
class MaskedLMHead(keras.layers.Layer):
    """Transform + LayerNorm + tied decoder; returns float32 logits [B, P, V].

    ``tied_embedding`` is the encoder's word-embedding layer. It is kept outside Keras'
    layer tracking (a getter, not an attribute), so the table is counted and saved once,
    as part of the encoder.
    """

    def __init__(
        self,
        embedding_size: int,
        vocab_size: int,
        hidden_act: str = "gelu",
        initializer_range: float = 0.02,
        tied_embedding=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.embedding_size = embedding_size
        self.vocab_size = vocab_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self._tied_embedding = (lambda: tied_embedding) if tied_embedding is not None else None
        self.transform_dense = keras.layers.Dense(
            embedding_size,
            activation=get_activation(hidden_act),
            kernel_initializer=truncated_normal(initializer_range),
            name="transform_dense",
            dtype=self.dtype_policy,
        )
        self.transform_layer_norm = keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, name="transform_LayerNorm", dtype=self.dtype_policy
        )

    def build(self, sequence_output_shape, masked_lm_positions_shape=None):
        self.transform_dense.build(sequence_output_shape)
        self.transform_layer_norm.build(tuple(sequence_output_shape[:-1]) + (self.embedding_size,))
        self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,), initializer="zeros")
        if self._tied_embedding is None:
            raise ValueError("MaskedLMHead needs the encoder's word-embedding layer (tied_embedding=...)")
        self.built = True

    def call(self, sequence_output, masked_lm_positions=None):
        """Logits [B, P, V] at ``masked_lm_positions`` of ``sequence_output`` [B, S, H]; without positions,
        ``sequence_output`` is already the [B, P, H] rows at the masked positions (the pretrainer's last-layer
        subset path) and is not gathered again."""
        x = sequence_output if masked_lm_positions is None else gather_positions(sequence_output, masked_lm_positions)
        x = self.transform_layer_norm(self.transform_dense(x))
        # The decoder runs in float32 even under mixed precision: [B*P, E] x [E, V] is small
        # next to the encoder, and float32 logits keep the softmax over V well-conditioned.
        x = ops.cast(x, "float32")
        table = ops.cast(self._tied_embedding().embeddings, "float32")
        return ops.matmul(x, ops.transpose(table)) + ops.cast(self.output_bias, "float32")

    def compute_output_spec(self, sequence_output, masked_lm_positions=None):
        rows = sequence_output.shape[:-1] if masked_lm_positions is None else masked_lm_positions.shape
        shape = tuple(rows) + (self.vocab_size,)
        return keras.KerasTensor(shape, dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            embedding_size=self.embedding_size,
            vocab_size=self.vocab_size,
            hidden_act=self.hidden_act,
            initializer_range=self.initializer_range,
        )
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class SentenceOrderHead(keras.layers.Layer):
    """2-way classifier on the pooled output, weights stored [2, H] like ``output_weights``."""

    def __init__(self, num_classes: int = 2, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.initializer_range = initializer_range

    def build(self, pooled_shape):
        self.output_weights = self.add_weight(
            name="output_weights",
            shape=(self.num_classes, pooled_shape[-1]),
            initializer=truncated_normal(self.initializer_range),
        )
        self.output_bias = self.add_weight(name="output_bias", shape=(self.num_classes,), initializer="zeros")
        self.built = True

    def call(self, pooled_output):
        # float32 logits (cheap: [B, H] x [H, 2]) whatever the compute dtype.
        x = ops.cast(pooled_output, "float32")
        w = ops.cast(self.output_weights, "float32")
        return ops.matmul(x, ops.transpose(w)) + ops.cast(self.output_bias, "float32")

    def compute_output_spec(self, pooled_output):
        return keras.KerasTensor(tuple(pooled_output.shape[:-1]) + (self.num_classes,), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(num_classes=self.num_classes, initializer_range=self.initializer_range)
        return config
