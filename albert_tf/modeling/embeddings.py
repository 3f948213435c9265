"""ALBERT embeddings: word, position and token-type tables in E, LayerNorm and dropout in E.

ALBERT's factorised embedding parameterisation keeps every table at width E (128 in the
released models) and projects to the hidden width H only afterwards (the projection lives in
the encoder, ``embedding_hidden_mapping_in``, and only exists when E != H).
"""

from __future__ import annotations

import keras
from keras import ops

from albert_tf.modeling.initializers import truncated_normal

LAYER_NORM_EPSILON = 1e-12


@keras.saving.register_keras_serializable(package="albert_tf")
class TiedEmbedding(keras.layers.Embedding):
    """A word-embedding table that can also be applied in reverse (``x @ W^T``).

    The masked-LM head of ALBERT scores hidden states against the input embedding table
    (the official ``get_embedding_table()``); calling this layer with ``reverse=True`` gives
    those logits without a second copy of the table.
    """

    def call(self, inputs, reverse: bool = False):
        if reverse:
            table = ops.cast(self.embeddings, self.compute_dtype)
            return ops.matmul(inputs, ops.transpose(table))
        return super().call(inputs)

    def compute_output_spec(self, inputs, reverse: bool = False):
        if reverse:
            shape = tuple(inputs.shape[:-1]) + (self.input_dim,)
            return keras.KerasTensor(shape, dtype=self.compute_dtype)
        return super().compute_output_spec(inputs)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertEmbeddings(keras.layers.Layer):
    """``x = LayerNorm(W_word[ids] + W_type[segment_ids] + W_pos[0:S])``, then dropout; width E.

    Official scope ``bert/embeddings``: ``word_embeddings`` [V,E], ``token_type_embeddings``
    [T,E], ``position_embeddings`` [P,E], ``LayerNorm/{gamma,beta}`` [E].
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 2,
        initializer_range: float = 0.02,
        dropout_rate: float = 0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        init = truncated_normal(initializer_range)
        self.word_embeddings = TiedEmbedding(
            vocab_size, embedding_size, embeddings_initializer=init, name="word_embeddings", dtype=self.dtype_policy
        )
        self.token_type_embeddings = keras.layers.Embedding(
            type_vocab_size,
            embedding_size,
            embeddings_initializer=init,
            name="token_type_embeddings",
            dtype=self.dtype_policy,
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=LAYER_NORM_EPSILON, name="LayerNorm", dtype=self.dtype_policy
        )
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy)

    def build(self, input_ids_shape, segment_ids_shape=None):
        self.word_embeddings.build(input_ids_shape)
        self.token_type_embeddings.build(input_ids_shape)
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_position_embeddings, self.embedding_size),
            initializer=truncated_normal(self.initializer_range),
        )
        self.layer_norm.build(tuple(input_ids_shape) + (self.embedding_size,))
        self.built = True

    def call(self, input_ids, segment_ids, training=None, position_ids=None):
        """``position_ids`` [B, S] (packed rows, where positions restart per example): the position of every token;
        None: 0 ... S - 1 in every row."""
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(segment_ids)
        if position_ids is None:
            seq_len = ops.shape(input_ids)[1]
            x = x + ops.cast(self.position_embeddings[:seq_len], x.dtype)[None, :, :]
        else:
            x = x + ops.cast(ops.take(self.position_embeddings, position_ids, axis=0), x.dtype)
        x = self.layer_norm(x)
        return self.dropout(x, training=training)

    def compute_output_spec(self, input_ids, segment_ids, training=None, position_ids=None):
        return keras.KerasTensor(tuple(input_ids.shape) + (self.embedding_size,), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            embedding_size=self.embedding_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            initializer_range=self.initializer_range,
            dropout_rate=self.dropout_rate,
        )
        return config
