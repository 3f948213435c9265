"""Keras layers and models of ALBERT: the encoder, its layers, the pretraining heads and model. The task models
(classifier, SQuAD, multiple choice) live in their task packages, ``albert_tf.tasks.<task>.model``."""

from albert_tf.modeling.attention import AlbertAttention
from albert_tf.modeling.embeddings import AlbertEmbeddings, TiedEmbedding
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.heads import MaskedLMHead, SentenceOrderHead
from albert_tf.modeling.models import AlbertPretrainer
from albert_tf.modeling.transformer import AttentionSublayer, FeedForwardSublayer, TransformerBlock

__all__ = [
    "AlbertAttention",
    "AlbertEmbeddings",
    "AlbertEncoder",
    "AlbertPretrainer",
    "AttentionSublayer",
    "FeedForwardSublayer",
    "MaskedLMHead",
    "SentenceOrderHead",
    "TiedEmbedding",
    "TransformerBlock",
]
