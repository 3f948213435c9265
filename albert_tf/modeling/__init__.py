"""Keras layers and models of ALBERT."""

from albert_tf.modeling.attention import AlbertAttention
from albert_tf.modeling.classifier import AlbertClassifier
from albert_tf.modeling.embeddings import AlbertEmbeddings, TiedEmbedding
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.heads import MaskedLMHead, SentenceOrderHead
from albert_tf.modeling.models import AlbertPretrainer
from albert_tf.modeling.multiple_choice import AlbertMultipleChoice
from albert_tf.modeling.squad import AlbertSquad
from albert_tf.modeling.transformer import AttentionSublayer, FeedForwardSublayer, TransformerBlock

__all__ = [
    "AlbertAttention",
    "AlbertClassifier",
    "AlbertEmbeddings",
    "AlbertEncoder",
    "AlbertMultipleChoice",
    "AlbertPretrainer",
    "AlbertSquad",
    "AttentionSublayer",
    "FeedForwardSublayer",
    "MaskedLMHead",
    "SentenceOrderHead",
    "TiedEmbedding",
    "TransformerBlock",
]
