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
    alone needs rows, per head (:meth:`to_heads`, :meth:`from_heads`), and the encoder's output is laid back into
    rows at its edge (:meth:`to_rows`). ``head_sources`` and ``head_positions``: the same two maps for ``heads``
    slices of the width.
    """

    real: Any
    positions: Any
    sources: Any
    heads: int
    head_sources: Any
    head_positions: Any

    @classmethod
    def of(cls, real: Any, heads: int = 1) -> TokenLayout:
        """The layout of the true entries of the [R, L] boolean ``real`` (at least one of them true: the row
        positions are filled from the tokens), for attention of ``heads`` heads."""
        r, length = ops.shape(real)
        flat = ops.reshape(real, (-1,))
        positions = ops.cast(ops.nonzero(flat)[0], "int32")  # [T], ascending
        sources = ops.maximum(ops.cumsum(ops.cast(flat, "int32")) - 1, 0)
        head = ops.arange(heads, dtype="int32")
        # (row, head, position) <- slice `head` of token sources[row, position]; (token, head) <- (row, head, position)
        head_sources = ops.reshape(ops.reshape(sources, (r, 1, length)) * heads + head[None, :, None], (-1,))
        row, column = positions // length, positions % length
        head_positions = ops.reshape((row * heads * length + column)[:, None] + head[None, :] * length, (-1,))
        return cls(real, positions, sources, heads, head_sources, head_positions)

    def take(self, rows: Any) -> Any:
        """[R, L, ...] -> the real tokens' entries [T, ...]."""
        flat = ops.reshape(rows, (-1, *rows.shape[2:]))
        return ops.take(flat, self.positions, axis=0)

    def to_rows(self, tokens: Any) -> Any:
        """[T, D] -> [R, L, D], zero at padding."""
        r, length = ops.shape(self.real)
        rows = ops.reshape(ops.take(tokens, self.sources, axis=0), (r, length, tokens.shape[-1]))
        return ops.where(self.real[:, :, None], rows, ops.zeros_like(rows))

    def to_heads(self, tokens: Any) -> Any:
        """[T, H] -> [R, heads, L, H / heads], the layout attention's products take, in one gather of the tokens'
        head slices (cheaper than a scatter into zero rows and a transpose; benchmarks/README.md, "Serving exports on
        real tokens"). A padding position
        holds a copy of the real token before it, which attention never reads: its key is masked (its probability
        underflows to exactly 0, so its value adds exact zeros) and its query's output is dropped
        (:meth:`from_heads`)."""
        r, length = ops.shape(self.real)
        width = tokens.shape[-1] // self.heads
        heads = ops.take(ops.reshape(tokens, (-1, width)), self.head_sources, axis=0)
        return ops.reshape(heads, (r, self.heads, length, width))

    def from_heads(self, rows: Any) -> Any:
        """[R, heads, L, D] -> the real tokens' [T, heads * D]."""
        width = rows.shape[-1]
        return ops.reshape(ops.take(ops.reshape(rows, (-1, width)), self.head_positions, axis=0),
                           (-1, self.heads * width))


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
        weighted sum are computed per row (Q, K, V laid into rows of heads [R, N, L, D]; ``attention_bias`` masks the
        padding's keys, :meth:`TokenLayout.to_heads`). Returns [T, H].
        """
        dtype = self.compute_dtype
        queries = x if query_input is None else query_input
        q = project(queries, self.query_kernel, self.query_bias, dtype)
        k = project(x, self.key_kernel, self.key_bias, dtype)  # [B, S, H] or [T, H]
        v = project(x, self.value_kernel, self.value_bias, dtype)
        q = q * ops.cast(1.0 / math.sqrt(self.head_size), dtype)
        split = self._split_heads if layout is None else layout.to_heads  # [B, N, S, D]
        k, v = split(k), split(v)
        if query_rows is not None:  # each query alone in a row, before the keys of its example's row
            q = self._split_heads(q[:, None, :])
            k, v = ops.take(k, query_rows, axis=0), ops.take(v, query_rows, axis=0)  # [N, heads, L, D]
        else:
            q = split(q) if query_input is None else self._split_heads(q)
        context = self._attend(q, k, v, attention_bias, training)  # [B, N, P, D]
        if layout is not None and query_input is None:
            context = layout.from_heads(context)  # [T, H]
        else:
            context = self._merge_heads(context)  # [B, P, H]
            if query_rows is not None:
                context = context[:, 0, :]
        return project(context, self.output_kernel, self.output_bias, dtype)

    def _split_heads(self, t):
        """[B, S, H] -> [B, N, S, D]."""
        n, d = self.num_attention_heads, self.head_size
        return ops.transpose(ops.reshape(t, (ops.shape(t)[0], ops.shape(t)[1], n, d)), (0, 2, 1, 3))

    def _merge_heads(self, t):
        """[B, N, P, D] -> [B, P, H]."""
        b, p = ops.shape(t)[0], ops.shape(t)[2]
        return ops.reshape(ops.transpose(t, (0, 2, 1, 3)), (b, p, self.hidden_size))

    def _attend(self, q, k, v, attention_bias, training):
        """Dot-product attention of scaled queries [B, N, P, D] over keys and values [B, N, S, D] -> [B, N, P, D]."""
        dtype = self.compute_dtype
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))  # [B, N, P, S]
        scores = ops.cast(scores, "float32") + ops.cast(attention_bias, "float32")
        probs = ops.softmax(scores, axis=-1)
        probs = dropout(self.attention_dropout, ops.cast(probs, dtype), training)
        return ops.matmul(probs, v)

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
