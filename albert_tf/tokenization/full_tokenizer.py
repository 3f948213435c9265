"""``FullTokenizer``: the official ALBERT tokenizer (SentencePiece or WordPiece), with the user complaints fixed.

Differences from the official class (official ``tokenization.py``; google-research/albert#88, #249 and PR #4), each
documented and switchable:

* In SentencePiece mode ``tokenize(text)`` applies ``preprocess_text(text, lower=do_lower_case)`` itself; the
  official ignores ``do_lower_case`` and expects callers to pre-process (google-research/albert#88). Code that has
  already pre-processed (the pretraining-data and GLUE pipelines, which must store the pre-processed text) calls
  ``tokenize(text, preprocessed=True)``, which does exactly the official ``encode_pieces`` and nothing else.
  Pre-processing is not idempotent on the text: 50 characters such as "´" (U+00B4) decompose under NFKD to a space
  plus a combining mark, so one pass leaves a space that a second pass strips. With the 30k-clean model the ids
  do not change (SentencePiece's ``nmt_nfkc`` also removes extra spaces; checked for every code point), but code
  that aligns characters with the stored pre-processed text (SQuAD) must not pre-process twice, and it is wasted
  work. Hence the switch.
* ``keep_accents=True`` keeps diacritics (official: always stripped).
* ``official_digit_comma=False`` turns off the digit-comma re-encoding (official: on, Python 3 behaviour).
* Pieces are always ``str`` (the official returns a mix of ``str`` and UTF-8 ``bytes`` under Python 3).

In WordPiece mode ``tokenize`` is the official BasicTokenizer + WordpieceTokenizer; ``preprocessed`` has no effect
there (the BasicTokenizer always runs, as in the official).
"""

from __future__ import annotations

import hashlib
import os

from albert_tf.tokenization.preprocess import preprocess_text, printable_text
from albert_tf.tokenization.sentencepiece_tokenizer import (
    encode_pieces,
    is_start_piece_sp,
    load_sentencepiece,
    read_file_bytes,
)
from albert_tf.tokenization.wordpiece import (
    BasicTokenizer,
    WordpieceTokenizer,
    is_start_piece_wordpiece,
    load_vocab,
)

__all__ = ["FullTokenizer"]

_SPM_SPECIALS = {"pad": "<pad>", "unk": "<unk>", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}
_WP_SPECIALS = {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}


class FullTokenizer:
    """Text -> pieces -> ids for ALBERT, SentencePiece (``spm_model_file``) or WordPiece (``vocab_file``).

    Args:
      vocab_file: WordPiece vocab (one piece per line; local or ``gs://``), or its content as ``bytes``. Ignored when
        ``spm_model_file`` is given (as the official, which also gets the ``.vocab`` of an SPM model passed here and
        ignores it).
      do_lower_case: lower-case the text (honoured in SentencePiece mode too, unlike the official).
      spm_model_file: SentencePiece model path (local or ``gs://``), or the serialized model proto as ``bytes``.
      keep_accents: keep combining marks (no NFKD); official behaviour is False.
      official_digit_comma: reproduce the official digit-comma re-encoding (default True).
    """

    def __init__(
        self,
        vocab_file: str | os.PathLike | bytes | None = None,
        do_lower_case: bool = True,
        spm_model_file: str | os.PathLike | bytes | None = None,
        keep_accents: bool = False,
        official_digit_comma: bool = True,
    ):
        self.do_lower_case = bool(do_lower_case)
        self.keep_accents = bool(keep_accents)
        self.official_digit_comma = bool(official_digit_comma)
        self.sp_model = None
        if spm_model_file is not None:
            self.sp_model, self.model_bytes = load_sentencepiece(spm_model_file)
            self.kind = "spm"
            self.source = "<bytes>" if isinstance(spm_model_file, bytes) else os.fspath(spm_model_file)
            self.vocab = {self.sp_model.IdToPiece(i): i for i in range(self.sp_model.GetPieceSize())}
            self._specials = _SPM_SPECIALS
        elif vocab_file is not None:
            from_bytes = isinstance(vocab_file, bytes)
            self.model_bytes = vocab_file if from_bytes else read_file_bytes(vocab_file)
            self.kind = "wordpiece"
            self.source = "<bytes>" if from_bytes else os.fspath(vocab_file)
            self.vocab = dict(load_vocab(self.source, self.model_bytes))
            self.basic_tokenizer = BasicTokenizer(do_lower_case=self.do_lower_case)
            self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
            self._specials = _WP_SPECIALS
        else:
            raise ValueError("FullTokenizer: give spm_model_file (SentencePiece) or vocab_file (WordPiece)")
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.model_sha256 = hashlib.sha256(self.model_bytes).hexdigest()

    # ----------------------------------------------------------------------------------------------- text -> pieces
    def preprocess(self, text: str | bytes) -> str:
        """``preprocess_text(text, lower=do_lower_case, keep_accents=keep_accents)``: what the pipelines store."""
        return preprocess_text(text, lower=self.do_lower_case, keep_accents=self.keep_accents)

    def tokenize(self, text: str | bytes, preprocessed: bool = False) -> list[str]:
        """Pieces of ``text``.

        SentencePiece mode: ``encode_pieces(preprocess(text))``, or ``encode_pieces(text)`` when ``preprocessed``
        (the official ``FullTokenizer.tokenize``). WordPiece mode: BasicTokenizer + WordPiece.
        """
        if self.sp_model is not None:
            if not preprocessed:
                text = self.preprocess(text)
            return encode_pieces(self.sp_model, printable_text(text), official_digit_comma=self.official_digit_comma)
        tokens: list[str] = []
        for token in self.basic_tokenizer.tokenize(text):
            tokens.extend(self.wordpiece_tokenizer.tokenize(token))
        return tokens

    def encode(self, text: str | bytes, preprocessed: bool = False) -> list[int]:
        """``convert_tokens_to_ids(tokenize(text, preprocessed))``."""
        return self.convert_tokens_to_ids(self.tokenize(text, preprocessed=preprocessed))

    # ------------------------------------------------------------------------------------------------ pieces <-> ids
    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        """SentencePiece: ``PieceToId`` (unknown pieces -> ``<unk>`` = 1). WordPiece: vocab lookup (KeyError)."""
        if self.sp_model is not None:
            return [self.sp_model.PieceToId(printable_text(t)) for t in tokens]
        out = []
        for t in tokens:
            try:
                out.append(self.vocab[t])
            except KeyError:
                raise KeyError(f"token {t!r} is not in the WordPiece vocab") from None
        return out

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        """Pieces of ``ids`` (IndexError / KeyError for ids outside the vocab)."""
        if self.sp_model is not None:
            n = self.sp_model.GetPieceSize()
            for i in ids:
                if not 0 <= int(i) < n:
                    raise IndexError(f"id {i} is outside the SentencePiece vocab [0, {n})")
            return [self.sp_model.IdToPiece(int(i)) for i in ids]
        return [self.inv_vocab[int(i)] for i in ids]

    def is_start_piece(self, piece: str) -> bool:
        """Official start-piece rule (whole-word / n-gram masking): ``_is_start_piece_sp`` or "not ##"."""
        return is_start_piece_sp(piece) if self.sp_model is not None else is_start_piece_wordpiece(piece)

    # -------------------------------------------------------------------------------------------------- vocabulary
    @property
    def vocab_size(self) -> int:
        return self.sp_model.GetPieceSize() if self.sp_model is not None else len(self.vocab)

    def _special_id(self, name: str) -> int:
        piece = self._specials[name]
        if piece not in self.vocab:
            raise KeyError(f"{self.source}: {self.kind} vocab has no {piece!r} piece (needed as the {name} token)")
        return self.vocab[piece]

    @property
    def pad_id(self) -> int:
        return self._special_id("pad")

    @property
    def unk_id(self) -> int:
        return self._special_id("unk")

    @property
    def cls_id(self) -> int:
        return self._special_id("cls")

    @property
    def sep_id(self) -> int:
        return self._special_id("sep")

    @property
    def mask_id(self) -> int:
        return self._special_id("mask")

    @property
    def special_tokens(self) -> dict[str, str]:
        """Names -> pieces of the special tokens (pad, unk, cls, sep, mask) for this vocab kind."""
        return dict(self._specials)

    def identity(self) -> str:
        """Stable identity of the vocab and every switch that changes ids (for data sidecars and caches).

        ``"<kind>:sha256=<model/vocab file sha256>:lower=<0|1>:keep_accents=<0|1>:digit_comma=<official|off>"``.
        """
        return (
            f"{self.kind}:sha256={self.model_sha256}:lower={int(self.do_lower_case)}"
            f":keep_accents={int(self.keep_accents)}:digit_comma={'official' if self.official_digit_comma else 'off'}"
        )

    def identity_hash(self) -> str:
        """sha256 hex digest of :meth:`identity` (a short cache key)."""
        return hashlib.sha256(self.identity().encode()).hexdigest()

    def __repr__(self) -> str:
        return f"FullTokenizer({self.identity()}, vocab_size={self.vocab_size})"
