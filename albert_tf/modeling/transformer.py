"""The post-LN transformer block that ALBERT applies again and again.

``a = LayerNorm(x + Dropout(Attention(x)))`` (official ``attention_1`` + ``LayerNorm``), then
``out = LayerNorm_1(a + Dropout(W2 act(W1 a + b1) + b2))`` (official ``ffn_1/intermediate/dense``
and ``ffn_1/intermediate/output/dense``).

``block(x, bias, query_positions=pos)`` computes the block only at the rows ``pos`` [B, P] (keys and
values still from every row of ``x``) and returns [B, P, H]: equal to gathering those rows of the full
output, because nothing in a block mixes rows except attention's keys/values. The pretraining model uses
it for its last block, whose output is only read at the masked positions and [CLS].

Cross-layer sharing is expressed by *calling the same object again*. For the paper's Table 4
ablation (share only attention or only the FFN) a block can be built around an attention or FFN
sublayer owned by another block.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import keras
from keras import ops

from albert_tf.modeling.activations import get_activation
from albert_tf.modeling.attention import AlbertAttention, project
from albert_tf.modeling.embeddings import LAYER_NORM_EPSILON
from albert_tf.modeling.heads import gather_positions
from albert_tf.modeling.initializers import truncated_normal
from albert_tf.modeling.recompute import block_seed, dropout, recompute


@dataclasses.dataclass(frozen=True)
class ExampleQueries:
    """The tokens a block computes when only one token per example is read after it (the [CLS] under the pooler):
    ``tokens`` [N] index the block's input flattened to tokens ([T, H], or [R * L, H] on rows), ``rows`` [N] the row
    each one's keys are in, ``attention_bias`` [N, 1, 1, L] its own row of the attention bias. Keys and values still
    come from every token, so each output equals that token's output of the whole block."""

    tokens: Any
    rows: Any
    attention_bias: Any


def _output_shape(x, query_positions, queries) -> tuple:
    if queries is not None:
        return (queries.tokens.shape[0], x.shape[-1])
    return x.shape if query_positions is None else tuple(query_positions.shape) + (x.shape[-1],)


@keras.saving.register_keras_serializable(package="albert_tf")
class AttentionSublayer(keras.layers.Layer):
    """Self-attention, dropout, residual, post-LayerNorm."""

    def __init__(
        self,
        hidden_size: int,
        num_attention_heads: int,
        dropout_rate: float = 0.0,
        attention_dropout_rate: float = 0.0,
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.dropout_rate = dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.attention = AlbertAttention(
            hidden_size,
            num_attention_heads,
            attention_dropout_rate=attention_dropout_rate,
            initializer_range=initializer_range,
            name="attention_1",
            dtype=self.dtype_policy,
        )
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, name="LayerNorm", dtype=self.dtype_policy
        )

    def build(self, x_shape, attention_bias_shape=None):
        self.attention.build(x_shape)
        self.layer_norm.build(x_shape)
        self.built = True

    def call(self, x, attention_bias, training=None, query_positions=None, layout=None, queries=None):
        """[B, S, H] -> [B, S, H]; with ``query_positions`` [B, P] only those rows: [B, P, H]; unpadded tokens
        (a ``TokenLayout``: ``AlbertAttention.call``) [T, H] -> [T, H]; with ``queries`` (:class:`ExampleQueries`)
        only the N tokens it names, each attending to its own row: [N, H]."""
        if queries is not None:
            rows = ops.take(ops.reshape(x, (-1, ops.shape(x)[-1])), queries.tokens, axis=0)  # [N, H]
            a = self.attention(x, queries.attention_bias, training=training, query_input=rows, layout=layout,
                               query_rows=queries.rows)
        elif query_positions is None:
            a = self.attention(x, attention_bias, training=training, layout=layout)
            return self.layer_norm(x + dropout(self.dropout, a, training))
        else:
            rows = gather_positions(x, query_positions)
            a = self.attention(x, attention_bias, training=training, query_input=rows)
        return self.layer_norm(rows + dropout(self.dropout, a, training))

    def compute_output_spec(self, x, attention_bias, training=None, query_positions=None, layout=None, queries=None):
        return keras.KerasTensor(_output_shape(x, query_positions, queries), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            dropout_rate=self.dropout_rate,
            attention_dropout_rate=self.attention_dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class FeedForwardSublayer(keras.layers.Layer):
    """Dense(I, act), Dense(H), dropout, residual, post-LayerNorm (official ``LayerNorm_1``)."""

    def __init__(
        self,
        hidden_size: int,
        intermediate_size: int,
        hidden_act: str = "gelu",
        dropout_rate: float = 0.0,
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        init = truncated_normal(initializer_range)
        self.intermediate = keras.layers.Dense(
            intermediate_size,
            activation=get_activation(hidden_act),
            kernel_initializer=init,
            name="intermediate_dense",
            dtype=self.dtype_policy,
        )
        self.output_dense = keras.layers.Dense(
            hidden_size, kernel_initializer=init, name="intermediate_output_dense", dtype=self.dtype_policy
        )
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, name="LayerNorm_1", dtype=self.dtype_policy
        )

    def build(self, x_shape):
        self.intermediate.build(x_shape)
        self.output_dense.build(tuple(x_shape[:-1]) + (self.intermediate_size,))
        self.layer_norm.build(x_shape)
        self.built = True

    def call(self, x, training=None):
        # project() rather than calling the Dense layers (which hold the variables): it writes the bias and GELU as
        # TensorFlow fuses them into the matmul
        dense_in, dense_out, dtype = self.intermediate, self.output_dense, self.compute_dtype
        f = project(project(x, dense_in.kernel, dense_in.bias, dtype, dense_in.activation), dense_out.kernel,
                    dense_out.bias, dtype)
        return self.layer_norm(x + dropout(self.dropout, f, training))

    def compute_output_spec(self, x, training=None):
        return keras.KerasTensor(x.shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            dropout_rate=self.dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class TransformerBlock(keras.layers.Layer):
    """One ALBERT block (official ``group_g/inner_group_k``): attention sublayer then FFN sublayer.

    ``attention`` / ``ffn`` may be sublayers owned by another block: that is how the
    attention-only and FFN-only sharing ablations are built. Left as None, the block owns both.
    ``recompute=True`` recomputes the block's activations in the backward pass (``modeling.recompute``); it is
    an attribute, not a weight, so ``modeling.recompute.set_recompute`` can switch it on a built model.
    """

    def __init__(
        self,
        hidden_size: int,
        num_attention_heads: int,
        intermediate_size: int,
        hidden_act: str = "gelu",
        dropout_rate: float = 0.0,
        attention_dropout_rate: float = 0.0,
        initializer_range: float = 0.02,
        attention: AttentionSublayer | None = None,
        ffn: FeedForwardSublayer | None = None,
        recompute: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.recompute = bool(recompute)
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.dropout_rate = dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.attention_sublayer = attention or AttentionSublayer(
            hidden_size,
            num_attention_heads,
            dropout_rate=dropout_rate,
            attention_dropout_rate=attention_dropout_rate,
            initializer_range=initializer_range,
            name="attention",
            dtype=self.dtype_policy,
        )
        self.ffn_sublayer = ffn or FeedForwardSublayer(
            hidden_size,
            intermediate_size,
            hidden_act=hidden_act,
            dropout_rate=dropout_rate,
            initializer_range=initializer_range,
            name="ffn_1",
            dtype=self.dtype_policy,
        )

    def build(self, x_shape, attention_bias_shape=None):
        if not self.attention_sublayer.built:
            self.attention_sublayer.build(x_shape)
        if not self.ffn_sublayer.built:
            self.ffn_sublayer.build(x_shape)
        self.built = True

    def call(self, x, attention_bias, training=None, query_positions=None, layout=None, queries=None):
        """[B, S, H] -> [B, S, H]; with ``query_positions`` [B, P] the block's output at those rows [B, P, H]; on
        unpadded tokens (a ``TokenLayout``: ``AlbertAttention.call``) [T, H] -> [T, H]; with ``queries`` (inference
        only: :class:`ExampleQueries`) the output at those N tokens [N, H]."""
        def forward(x, attention_bias):
            a = self.attention_sublayer(x, attention_bias, training=training, query_positions=query_positions,
                                        layout=layout, queries=queries)
            return self.ffn_sublayer(a, training=training)

        if not (self.recompute and training):
            return forward(x, attention_bias)
        seed = block_seed(self.dropout_layers())
        return recompute(forward, seed, x, attention_bias)

    def dropout_layers(self) -> list[keras.layers.Dropout]:
        """The block's dropout sites (their seed generators feed a recomputed block's seed)."""
        a = self.attention_sublayer
        return [a.dropout, a.attention.attention_dropout, self.ffn_sublayer.dropout]

    def compute_output_spec(self, x, attention_bias, training=None, query_positions=None, layout=None, queries=None):
        return keras.KerasTensor(_output_shape(x, query_positions, queries), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            dropout_rate=self.dropout_rate,
            attention_dropout_rate=self.attention_dropout_rate,
            initializer_range=self.initializer_range,
            recompute=self.recompute,
        )
        return config
