"""SentencePiece encoding as the official ALBERT ``encode_pieces`` / ``encode_ids`` (official ``tokenization.py``).

The official ``encode_pieces`` re-encodes every piece that is longer than one character, ends in "," and has a
digit before the comma: ``sp.EncodeAsPieces(piece[:-1] without "▁")`` followed by "," as its own piece. The branch
that was meant to drop the dummy-prefix "▁" the re-encoding adds (when the original piece had none) compares
``str`` with ``bytes`` and is dead code under Python 3, so the re-encoded first piece keeps its "▁". This module
reproduces that (``official_digit_comma=True``, the default, verified on the golden file). With
``official_digit_comma=False`` pieces are plain SentencePiece output (no re-encoding; the fix users asked for in
google-research/albert#249, and what a bare ``sentencepiece`` / ``tf_text`` call gives).

Also here: the official start-piece rule used by whole-word / n-gram masking (``_is_start_piece_sp``).
"""

from __future__ import annotations

import os

import sentencepiece as spm

from albert_tf import files as _fs
from albert_tf.tokenization.preprocess import printable_text

__all__ = [
    "SPIECE_UNDERLINE",
    "encode_ids",
    "encode_pieces",
    "is_start_piece_sp",
    "load_sentencepiece",
    "needs_digit_comma_reencode",
    "read_file_bytes",
]

SPIECE_UNDERLINE = "\u2581"

# `_is_start_piece_sp` of the official create_pretraining_data.py. The official set literal is
# '!"#$%&\"()*+,-./:;?@[\\]^_`{|}~' (no "'", "<", "=", ">"), and "€" / "£" are added as UTF-8 *bytes*, which never
# equal a Python 3 ``str`` piece. Kept bit for bit.
_SPECIAL_PIECES: frozenset[object] = frozenset(list('!"#$%&"()*+,-./:;?@[\\]^_`{|}~') + ["€".encode(), "£".encode()])
_ENGLISH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz")
_ALLOWED = _ENGLISH_CHARS | _SPECIAL_PIECES


def is_start_piece_sp(piece: str) -> bool:
    """Official SentencePiece start-piece rule (official ``create_pretraining_data.py: create_masked_lm_predictions``):
    does ``piece`` start a new word?

    True when the piece starts with "▁" or "<", is one of the official punctuation pieces, or contains any
    character whose ``lower()`` is outside [a-z] and that punctuation set (so digits, non-English letters,
    "'" and "€" always count as word starts). ``bytes`` pieces are decoded first.
    """
    piece = printable_text(piece)
    if piece.startswith(SPIECE_UNDERLINE) or piece.startswith("<") or piece in _SPECIAL_PIECES:
        return True
    return not all(ch.lower() in _ALLOWED for ch in piece)


class TokenizerError(ValueError):
    """A vocabulary or SentencePiece model that cannot be used; the message names the file."""


def read_file_bytes(path: str | os.PathLike) -> bytes:
    """Bytes of a local file or of a ``scheme://`` path (``gs://``, ``ram://``: through ``tf.io.gfile``, as the
    official). Local files are read with Python's ``open`` so that the Python tokenizer, and the worker processes of
    ``create_pretraining_data`` that build one, never import TensorFlow."""
    path = os.fspath(path)
    if "://" in path:

        with _fs.open_file(path, "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def load_sentencepiece(model: str | os.PathLike | bytes) -> tuple[spm.SentencePieceProcessor, bytes]:
    """A processor from a model file path or from serialized proto bytes; returns (processor, proto bytes)."""
    proto = model if isinstance(model, bytes) else read_file_bytes(model)
    sp = spm.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(proto)
    except Exception as e:  # sentencepiece raises a bare RuntimeError/OSError without the file name
        where = "<bytes>" if isinstance(model, bytes) else os.fspath(model)
        raise TokenizerError(f"{where}: not a valid SentencePiece model ({_what_it_is(proto, e)})") from e
    return sp, proto


def _what_it_is(proto: bytes, error: BaseException) -> str:
    """Why ``proto`` is no model, in the user's terms rather than SentencePiece's C++ check that failed."""
    if not proto:
        return "the file is empty"
    try:
        text = proto[:4096].decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if text and all(c.isprintable() or c in "\t\r\n" for c in text):
        first = text.strip().splitlines()[0][:40] if text.strip() else ""
        return (f"a text file (starting {first!r}), where spm_train's binary .model file is expected; a WordPiece "
                "vocab.txt goes to --vocab_file")
    if "unk is not defined" in str(error):
        return "a model without an <unk> piece"
    return "unreadable as a model: a file of another kind, or a model cut short"


def needs_digit_comma_reencode(piece: str) -> bool:
    """The official condition: ``len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()``."""
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def encode_pieces(
    sp_model: spm.SentencePieceProcessor,
    text: str,
    return_unicode: bool = True,
    sample: bool = False,
    official_digit_comma: bool = True,
) -> list[str]:
    """SentencePiece pieces of ``text`` with the official digit-comma re-encoding (Python 3 behaviour).

    ``text`` must already be pre-processed (``preprocess_text``), as in the official code. ``return_unicode`` is
    accepted for signature compatibility (pieces are always ``str``). ``sample=True`` uses the official
    subword-regularisation setting ``SampleEncodeAsPieces(text, 64, 0.1)``.
    """
    del return_unicode
    text = printable_text(text)
    pieces = sp_model.SampleEncodeAsPieces(text, 64, 0.1) if sample else sp_model.EncodeAsPieces(text)
    if not official_digit_comma:
        return list(pieces)
    new_pieces: list[str] = []
    for piece in pieces:
        if needs_digit_comma_reencode(piece):
            # Official: EncodeAsPieces(bytes(piece[:-1]).replace(b"▁", b"")); the "strip the added ▁" branch is
            # dead under Python 3, so the re-encoding's dummy prefix stays.
            new_pieces.extend(sp_model.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, "")))
            new_pieces.append(piece[-1])
        else:
            new_pieces.append(piece)
    return new_pieces


def encode_ids(
    sp_model: spm.SentencePieceProcessor, text: str, sample: bool = False, official_digit_comma: bool = True
) -> list[int]:
    """Ids of :func:`encode_pieces` (``PieceToId`` of every piece)."""
    return [
        sp_model.PieceToId(p)
        for p in encode_pieces(sp_model, text, sample=sample, official_digit_comma=official_digit_comma)
    ]
