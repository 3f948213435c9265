"""Multi-head self-attention as ALBERT computes it (official scope ``attention_1``).

* Q, K, V kernels are stored [H, N*D] (head n in columns n*D ... (n+1)*D-1) with biases [N*D],
  the output projection [N*D, H] with bias [H]: the official checkpoint layouts, so a converter
  needs no reshapes.
* The three projections run as one matmul against the concatenated kernel (fewer, larger
  matmuls are faster on CPU); the variables stay separate.
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


@dataclasses.dataclass(frozen=True)
class TokenLayout:
    """Where the real tokens of a batch of rows stand, for layers that compute on those tokens alone.

    ``positions`` [T]: each real token's flat index into rows of shape ``row_shape`` (an int32 [2] tensor (R, L): the
    batch size is data-dependent, so it travels as a tensor). The embeddings, projections and FFN work on the [T, H]
    token activations; attention alone needs the rows (:meth:`to_rows`, :meth:`from_rows`), and the encoder's
    output is laid back into rows at its edge.
    """

    positions: Any
    row_shape: Any

    @classmethod
    def of(cls, real: Any) -> TokenLayout:
        """The layout of the true entries of the [R, L] boolean ``real``."""
        positions = ops.nonzero(ops.reshape(real, (-1,)))[0]  # [T], ascending
        row_shape = ops.stack([ops.convert_to_tensor(d, "int32") for d in ops.shape(real)])
        return cls(positions, row_shape)

    def take(self, rows: Any) -> Any:
        """[R, L, ...] -> the real tokens' entries [T, ...]."""
        flat = ops.reshape(rows, (-1, *rows.shape[2:]))
        return ops.take(flat, self.positions, axis=0)

    def to_rows(self, tokens: Any) -> Any:
        """[T, D] -> [R, L, D], zero at padding."""
        r, length, width = self.row_shape[0], self.row_shape[1], tokens.shape[-1]
        return ops.reshape(ops.scatter(self.positions[:, None], tokens, (r * length, width)), (r, length, width))


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
    """Self-attention with separate Q/K/V/output variables and a fused QKV matmul."""

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

    def call(self, x, attention_bias, training=None, query_input=None, layout=None):
        """``x`` [B, S, H] -> [B, S, H]; with ``query_input`` [B, P, H] the queries come only from those rows.

        ``query_input`` (the last layer's subset path, see ``TransformerBlock``) gives [B, P, H]: keys and
        values still come from every row of ``x``, so each output row equals that row of the full call.

        Unpadded tokens (``AlbertEncoder.call_packed``): with a :class:`TokenLayout`, ``x`` [T, H] holds only the
        real tokens of its rows. The Q, K, V and output projections run on the T tokens; only the scores and their
        weighted sum are computed per row (Q, K, V laid into [R, L, 3H], zero at padding, whose keys
        ``attention_bias`` masks). Returns [T, H].
        """
        if query_input is not None:
            return self._call_query_subset(x, query_input, attention_bias, training)
        n, d = self.num_attention_heads, self.head_size
        dtype = self.compute_dtype
        kernel = ops.concatenate([self.query_kernel, self.key_kernel, self.value_kernel], axis=1)
        bias = ops.concatenate([self.query_bias, self.key_bias, self.value_bias], axis=0)
        qkv = ops.matmul(x, ops.cast(kernel, dtype)) + ops.cast(bias, dtype)  # [B, S, 3H] or [T, 3H]
        if layout is not None:
            qkv = layout.to_rows(qkv)  # [R, L, 3H]
        b, s = ops.shape(qkv)[0], ops.shape(qkv)[1]
        qkv = ops.transpose(ops.reshape(qkv, (b, s, 3 * n, d)), (0, 2, 1, 3))  # [B, 3N, S, D]
        # split (whose gradient is a concat), not indexing: a strided-slice gradient writes a
        # zero-filled copy of the whole tensor per slice, which was 10% of the step on CPU.
        q, k, v = ops.split(qkv, 3, axis=1)  # each [B, N, S, D]
        q = q * ops.cast(1.0 / math.sqrt(d), dtype)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))  # [B, N, S, S]
        scores = ops.cast(scores, "float32") + ops.cast(attention_bias, "float32")
        probs = ops.softmax(scores, axis=-1)
        probs = dropout(self.attention_dropout, ops.cast(probs, dtype), training)
        context = ops.matmul(probs, v)  # [B, N, S, D]
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (b, s, n * d))
        if layout is not None:
            context = layout.take(context)  # [T, H]
        return ops.matmul(context, ops.cast(self.output_kernel, dtype)) + ops.cast(self.output_bias, dtype)

    def _call_query_subset(self, x, query_input, attention_bias, training):
        """Queries from ``query_input`` [B, P, H], keys/values from ``x`` [B, S, H]; returns [B, P, H].

        Two matmuls (Q on P rows, fused K|V on S rows) instead of the fused QKV on S rows; the same
        variables, so checkpoints are unchanged.
        """
        b = ops.shape(x)[0]
        s = ops.shape(x)[1]
        p = ops.shape(query_input)[1]
        n, d = self.num_attention_heads, self.head_size
        dtype = self.compute_dtype
        q = ops.matmul(query_input, ops.cast(self.query_kernel, dtype)) + ops.cast(self.query_bias, dtype)
        q = ops.transpose(ops.reshape(q, (b, p, n, d)), (0, 2, 1, 3))  # [B, N, P, D]
        kernel = ops.concatenate([self.key_kernel, self.value_kernel], axis=1)
        bias = ops.concatenate([self.key_bias, self.value_bias], axis=0)
        kv = ops.matmul(x, ops.cast(kernel, dtype)) + ops.cast(bias, dtype)  # [B, S, 2H]
        kv = ops.transpose(ops.reshape(kv, (b, s, 2 * n, d)), (0, 2, 1, 3))  # [B, 2N, S, D]
        k, v = ops.split(kv, 2, axis=1)  # each [B, N, S, D]
        q = q * ops.cast(1.0 / math.sqrt(d), dtype)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))  # [B, N, P, S]
        scores = ops.cast(scores, "float32") + ops.cast(attention_bias, "float32")
        probs = ops.softmax(scores, axis=-1)
        probs = dropout(self.attention_dropout, ops.cast(probs, dtype), training)
        context = ops.matmul(probs, v)  # [B, N, P, D]
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (b, p, n * d))
        return ops.matmul(context, ops.cast(self.output_kernel, dtype)) + ops.cast(self.output_bias, dtype)

    def compute_output_spec(self, x, attention_bias, training=None, query_input=None, layout=None):
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
