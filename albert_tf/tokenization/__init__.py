"""ALBERT tokenization: the official SentencePiece / WordPiece tokenizers in Python and an in-graph Keras layer.

* :class:`FullTokenizer` -- Python tokenizer (SentencePiece model or WordPiece vocab), official ids.
* :func:`preprocess_text`, :func:`encode_pieces`, :func:`encode_ids` -- the official helpers (official
``tokenization.py``).
* :class:`AlbertPreprocessor` -- Keras layer, raw strings -> ``input_ids``/``input_mask``/``segment_ids``
  (imported lazily: it needs TensorFlow and tensorflow-text; the Python tokenizer does not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from albert_tf.tokenization.full_tokenizer import FullTokenizer
from albert_tf.tokenization.preprocess import convert_to_unicode, preprocess_text, printable_text
from albert_tf.tokenization.sentencepiece_tokenizer import (
    SPIECE_UNDERLINE,
    TokenizerError,
    encode_ids,
    encode_pieces,
    is_start_piece_sp,
    load_sentencepiece,
)
from albert_tf.tokenization.wordpiece import BasicTokenizer, WordpieceTokenizer, is_start_piece_wordpiece, load_vocab

if TYPE_CHECKING:
    from albert_tf.tokenization.preprocessor_layer import AlbertPreprocessor

__all__ = [
    "SPIECE_UNDERLINE",
    "TokenizerError",
    "AlbertPreprocessor",
    "BasicTokenizer",
    "FullTokenizer",
    "WordpieceTokenizer",
    "convert_to_unicode",
    "encode_ids",
    "encode_pieces",
    "is_start_piece_sp",
    "is_start_piece_wordpiece",
    "load_sentencepiece",
    "load_vocab",
    "preprocess_text",
    "printable_text",
]


def __getattr__(name: str):
    if name == "AlbertPreprocessor":
        from albert_tf.tokenization.preprocessor_layer import AlbertPreprocessor

        return AlbertPreprocessor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
