"""Multi-head self-attention as ALBERT computes it (official scope ``attention_1``).

* Q, K, V kernels are stored [H, N*D] (head n in columns n*D ... (n+1)*D-1) with biases [N*D],
  the output projection [N*D, H] with bias [H]: the official checkpoint layouts, so a converter
  needs no reshapes.
* Q, K and V are three matmuls (:func:`project`). One matmul against the concatenated kernel copied the three
  kernels on every call, 12 copies of 7 MB per ALBERT-base forward (one per layer); three matmuls copy nothing
  (``benchmarks/README.md``, "Serving one long pair with less work per layer").
* Scores are ``q.k / sqrt(D)`` plus an additive ``(1 - mask) * -10000`` on *keys only*; padded
  query rows are still computed, as in the official code. Softmax runs in float32 under mixed
  precision.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import keras
from keras import ops

from albert_tf.modeling.initializers import truncated_normal
from albert_tf.modeling.recompute import dropout

MASK_NEGATIVE = -10000.0


def project(x, kernel, bias, dtype, activation=None):
    """``activation(x @ kernel + bias)`` in ``dtype`` on the last axis of ``x``, written as TensorFlow's oneDNN graph
    rewrite fuses it into one kernel: a 2-D MatMul (``x`` of higher rank is flattened around it; Keras would take
    ``tensordot``, whose reshape sits between the matmul and the bias), the bias added by ``BiasAdd`` (an ``AddV2``
    fuses with no activation) and GELU as ``tf.nn.gelu`` writes it (:func:`~albert_tf.modeling.activations.gelu_tanh`).
    Unfused, the bias and the GELU's eight elementwise ops each read and write the whole activation."""
    width = int(kernel.shape[-1])
    flat = ops.reshape(x, (-1, ops.shape(x)[-1])) if len(x.shape) != 2 else x
    y = ops.matmul(flat, ops.cast(kernel, dtype))
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        y = tf.nn.bias_add(y, ops.cast(bias, dtype))
    else:
        y = y + ops.cast(bias, dtype)
    if activation is not None:
        y = activation(y)
    if len(x.shape) == 2:
        return y
    return ops.reshape(y, (*ops.shape(x)[:-1], width))


@dataclasses.dataclass(frozen=True)
class TokenLayout:
    """Where the real tokens of a batch of rows stand, for layers that compute on those tokens alone.

    ``real`` [R, L]: which row positions hold a real token; ``positions`` [T]: each real token's flat index into the
    rows; ``sources`` [R * L]: the token each row position is filled from (its own at a real position, the real
    token before it at padding). The embeddings, projections and FFN work on the [T, H] token activations; attention
    alone needs the rows (:meth:`to_rows`, :meth:`take`), and the encoder's output is laid back into rows at its edge.
    """

    real: Any
    positions: Any
    sources: Any

    @classmethod
    def of(cls, real: Any) -> TokenLayout:
        """The layout of the true entries of the [R, L] boolean ``real`` (at least one of them true: the row
        positions are filled from the tokens)."""
        flat = ops.reshape(real, (-1,))
        positions = ops.nonzero(flat)[0]  # [T], ascending
        sources = ops.maximum(ops.cumsum(ops.cast(flat, "int32")) - 1, 0)
        return cls(real, positions, sources)

    def take(self, rows: Any) -> Any:
        """[R, L, ...] -> the real tokens' entries [T, ...]."""
        flat = ops.reshape(rows, (-1, *rows.shape[2:]))
        return ops.take(flat, self.positions, axis=0)

    def to_rows(self, tokens: Any, zero_padding: bool = False) -> Any:
        """[T, D] -> [R, L, D] by a gather (a scatter into zeros takes about 3x as long on CPU). A padding position
        holds a copy of the real token before it, which attention never reads: its key is masked (its probability
        underflows to exactly 0, so its value adds exact zeros) and its query's output is dropped (:meth:`take`).
        ``zero_padding``: zeros there instead (the encoder's ``sequence_output``)."""
        r, length = ops.shape(self.real)
        rows = ops.reshape(ops.take(tokens, self.sources, axis=0), (r, length, tokens.shape[-1]))
        return ops.where(self.real[:, :, None], rows, ops.zeros_like(rows)) if zero_padding else rows


def attention_bias_from_mask(input_mask, dtype="float32"):
    """[B, S] 1/0 mask -> [B, 1, 1, S] additive bias (0 for real keys, -10000 for padding)."""
    mask = ops.cast(input_mask, dtype)
    return ((1.0 - mask) * MASK_NEGATIVE)[:, None, None, :]


def attention_bias_from_example_ids(example_ids, dtype="float32"):
    """[B, S] example numbers of packed rows (0 = padding; ``data.packing``) -> [B, 1, S, S] additive bias: 0 where
    query and key belong to the same example, -10000 elsewhere, so no example attends to another's tokens."""
    same = ops.logical_and(
        ops.equal(example_ids[:, :, None], example_ids[:, None, :]), ops.not_equal(example_ids, 0)[:, None, :]
    )
    return ((1.0 - ops.cast(same, dtype)) * MASK_NEGATIVE)[:, None, :, :]


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertAttention(keras.layers.Layer):
    """Self-attention with separate Q/K/V/output variables (the official checkpoint's)."""

    def __init__(
        self,
        hidden_size: int,
        num_attention_heads: int,
        attention_dropout_rate: float = 0.0,
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads:
            raise ValueError(
                f"hidden_size {hidden_size} is not a multiple of num_attention_heads {num_attention_heads}"
            )
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.head_size = hidden_size // num_attention_heads
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.attention_dropout = keras.layers.Dropout(attention_dropout_rate, dtype=self.dtype_policy)

    def build(self, input_shape):
        h = self.hidden_size
        in_dim = input_shape[-1]
        init = truncated_normal(self.initializer_range)
        for name in ("query", "key", "value"):
            setattr(self, f"{name}_kernel", self.add_weight(name=f"{name}_kernel", shape=(in_dim, h), initializer=init))
            setattr(self, f"{name}_bias", self.add_weight(name=f"{name}_bias", shape=(h,), initializer="zeros"))
        self.output_kernel = self.add_weight(name="output_kernel", shape=(h, h), initializer=init)
        self.output_bias = self.add_weight(name="output_bias", shape=(h,), initializer="zeros")
        self.built = True

    def call(self, x, attention_bias, training=None, query_input=None, layout=None, query_rows=None):
        """``x`` [B, S, H] -> [B, S, H]; with ``query_input`` the queries come only from those rows.

        ``query_input`` [B, P, H] (the pretraining model's last block, see ``TransformerBlock``): keys and values
        still come from every row of ``x``, so each output row equals that row of the full call; returns [B, P, H].
        ``query_input`` [N, H] with ``query_rows`` [N] (``AlbertEncoder.call_packed(pooled_only=True)``): one query
        per example, which attends to row ``query_rows[n]`` of the keys under ``attention_bias`` [N, 1, 1, L]
        (its own row of the bias); returns [N, H].

        Unpadded tokens (``AlbertEncoder.call_packed``): with a :class:`TokenLayout`, ``x`` [T, H] holds only the
        real tokens of its rows. The Q, K, V and output projections run on the T tokens; only the scores and their
        weighted sum are computed per row (Q, K, V laid into [R, L, H]; ``attention_bias`` masks the padding's
        keys, :meth:`TokenLayout.to_rows`). Returns [T, H].
        """
        dtype = self.compute_dtype
        queries = x if query_input is None else query_input
        q = project(queries, self.query_kernel, self.query_bias, dtype)
        k = project(x, self.key_kernel, self.key_bias, dtype)  # [B, S, H] or [T, H]
        v = project(x, self.value_kernel, self.value_bias, dtype)
        if layout is not None:
            k, v = layout.to_rows(k), layout.to_rows(v)  # [R, L, H]
            if query_input is None:
                q = layout.to_rows(q)
        if query_rows is not None:  # each query alone in a row, before the keys of its example's row
            q = q[:, None, :]
            k, v = ops.take(k, query_rows, axis=0), ops.take(v, query_rows, axis=0)  # [N, L, H]
        context = self._attend(q, k, v, attention_bias, training)  # [B, P, H]
        if query_rows is not None:
            context = context[:, 0, :]
        elif layout is not None and query_input is None:
            context = layout.take(context)  # [T, H]
        return project(context, self.output_kernel, self.output_bias, dtype)

    def _attend(self, q, k, v, attention_bias, training):
        """Scaled dot-product attention of queries [B, P, H] over keys and values [B, S, H] -> context [B, P, H]."""
        n, d = self.num_attention_heads, self.head_size
        dtype = self.compute_dtype

        def heads(t):  # [B, S, H] -> [B, N, S, D]
            return ops.transpose(ops.reshape(t, (ops.shape(t)[0], ops.shape(t)[1], n, d)), (0, 2, 1, 3))

        q, k, v = heads(q * ops.cast(1.0 / math.sqrt(d), dtype)), heads(k), heads(v)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))  # [B, N, P, S]
        scores = ops.cast(scores, "float32") + ops.cast(attention_bias, "float32")
        probs = ops.softmax(scores, axis=-1)
        probs = dropout(self.attention_dropout, ops.cast(probs, dtype), training)
        context = ops.matmul(probs, v)  # [B, N, P, D]
        b, p = ops.shape(context)[0], ops.shape(context)[2]
        return ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (b, p, n * d))

    def compute_output_spec(self, x, attention_bias, training=None, query_input=None, layout=None, query_rows=None):
        rows = x if query_input is None else query_input
        return keras.KerasTensor(tuple(rows.shape[:-1]) + (self.hidden_size,), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            attention_dropout_rate=self.attention_dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config
