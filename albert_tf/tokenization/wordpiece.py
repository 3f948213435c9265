"""WordPiece tokenization for vocab-file models (the Chinese ALBERT releases), as the official code (official
``tokenization.py``).

* ``load_vocab``: first whitespace-separated field of every line; a blank line becomes " "; a duplicate is skipped
  and does not consume an id (ids are ``len(vocab)`` at insertion, as the official).
* ``BasicTokenizer``: drop NUL, U+FFFD and control characters, map whitespace to " ", put spaces around CJK
  ideographs, split on whitespace, optionally ``lower()`` + NFD accent strip (category Mn), split on punctuation
  (ASCII non-alphanumerics and every Unicode P* category).
* ``WordpieceTokenizer``: greedy longest-match-first with "##" continuation pieces; a word longer than 200
  characters, or one that cannot be fully matched, becomes "[UNK]".
"""

from __future__ import annotations

import collections
import os
import re
import unicodedata

from albert_tf.tokenization.preprocess import convert_to_unicode, sanitize_unicode
from albert_tf.tokenization.sentencepiece_tokenizer import TokenizerError

__all__ = [
    "CJK_RANGES",
    "BasicTokenizer",
    "WordpieceTokenizer",
    "is_chinese_char",
    "is_control",
    "is_punctuation",
    "is_start_piece_wordpiece",
    "is_whitespace",
    "load_vocab",
    "whitespace_tokenize",
]


def load_vocab(vocab_file: str | os.PathLike, vocab_bytes: bytes | None = None) -> collections.OrderedDict[str, int]:
    """Piece -> id from a BERT-style vocab file (one piece per line)."""
    if vocab_bytes is None:
        from albert_tf.tokenization.sentencepiece_tokenizer import read_file_bytes

        vocab_bytes = read_file_bytes(vocab_file)
    try:
        text = vocab_bytes.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TokenizerError(f"{vocab_file}: vocab file is not UTF-8 ({e})") from e
    if "\x00" in text:  # UTF-8 all the same (zeros): a binary file, not a vocab.txt of one token per line
        raise TokenizerError(f"{vocab_file}: a binary file (NUL bytes from byte {text.index(chr(0))}), not a vocab "
                             "file of one WordPiece token per line")
    vocab: collections.OrderedDict[str, int] = collections.OrderedDict()
    lines = text.split("\n")  # readline() semantics: "\n" ends a line; a final "\n" opens no extra line
    if lines and lines[-1] == "":
        lines.pop()
    for raw in lines:
        token = raw.strip().split()[0] if raw.strip() else " "
        if token not in vocab:
            vocab[token] = len(vocab)
    if not vocab:
        raise TokenizerError(f"{vocab_file}: empty vocab file (expected one WordPiece token per line)")
    return vocab


def whitespace_tokenize(text: str) -> list[str]:
    """``text.strip().split()`` (Python's Unicode whitespace)."""
    text = text.strip()
    return text.split() if text else []


def is_whitespace(char: str) -> bool:
    """Space, tab, newline, carriage return, or any Unicode Zs character."""
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def is_control(char: str) -> bool:
    """Any Unicode C* character except tab, newline and carriage return (which count as whitespace)."""
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char).startswith("C")


def is_punctuation(char: str) -> bool:
    """ASCII non-alphanumeric printable characters (so "$", "^", "`" count) and every Unicode P* character."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


# The official ``_is_chinese_char`` blocks: CJK Unified Ideographs (+ extensions A-E) and compatibility ideographs.
# Hangul, Hiragana and Katakana are deliberately not included (they are written with spaces).
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


_CJK_RE = re.compile("([" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES) + "])")
# ASCII fast path of _clean_text: delete C0 controls but tab/newline/return, and DEL; map tab/newline/return to " "
_ASCII_CLEAN = {cp: None for cp in [*range(32), 127] if chr(cp) not in "\t\n\r"} | {ord(c): " " for c in "\t\n\r"}


def is_chinese_char(cp: int) -> bool:
    """Whether code point ``cp`` is in one of the official CJK ideograph blocks (``CJK_RANGES``)."""
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def is_start_piece_wordpiece(piece: str) -> bool:
    """WordPiece start-piece rule (official ``create_pretraining_data.py: create_masked_lm_predictions``): every piece
    that does not start with "##"."""
    return not piece.startswith("##")


class BasicTokenizer:
    """Cleaning, CJK splitting, whitespace and punctuation splitting, optional lower-casing + accent strip."""

    def __init__(self, do_lower_case: bool = True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text: str | bytes) -> list[str]:
        text = sanitize_unicode(convert_to_unicode(text))
        text = self._clean_text(text)
        text = self._tokenize_chinese_chars(text)
        split_tokens: list[str] = []
        for token in whitespace_tokenize(text):
            if self.do_lower_case:
                token = self._run_strip_accents(token.lower())
            split_tokens.extend(self._run_split_on_punc(token))
        return whitespace_tokenize(" ".join(split_tokens))

    @staticmethod
    def _run_strip_accents(text: str) -> str:
        text = unicodedata.normalize("NFD", text)
        return "".join(c for c in text if unicodedata.category(c) != "Mn")

    @staticmethod
    def _run_split_on_punc(text: str) -> list[str]:
        output: list[list[str]] = []
        start_new_word = True
        for char in text:
            if is_punctuation(char):
                output.append([char])
                start_new_word = True
            else:
                if start_new_word:
                    output.append([])
                start_new_word = False
                output[-1].append(char)
        return ["".join(x) for x in output]

    @staticmethod
    def _tokenize_chinese_chars(text: str) -> str:
        """Spaces around every CJK ideograph (``_CJK_RE`` is built from ``CJK_RANGES``)."""
        return _CJK_RE.sub(r" \1 ", text)

    @staticmethod
    def _clean_text(text: str) -> str:
        if text.isascii():
            return text.translate(_ASCII_CLEAN)
        out: list[str] = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or is_control(char):
                continue
            out.append(" " if is_whitespace(char) else char)
        return "".join(out)


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece over whitespace-separated words."""

    def __init__(self, vocab: dict[str, int], unk_token: str = "[UNK]", max_input_chars_per_word: int = 200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text: str) -> list[str]:
        output_tokens: list[str] = []
        for token in whitespace_tokenize(convert_to_unicode(text)):
            chars = list(token)
            if len(chars) > self.max_input_chars_per_word:
                output_tokens.append(self.unk_token)
                continue
            sub_tokens: list[str] = []
            start = 0
            is_bad = False
            while start < len(chars):
                end = len(chars)
                cur_substr = None
                while start < end:
                    substr = "".join(chars[start:end])
                    if start > 0:
                        substr = "##" + substr
                    if substr in self.vocab:
                        cur_substr = substr
                        break
                    end -= 1
                if cur_substr is None:
                    is_bad = True
                    break
                sub_tokens.append(cur_substr)
                start = end
            if is_bad:
                output_tokens.append(self.unk_token)
            else:
                output_tokens.extend(sub_tokens)
        return output_tokens
