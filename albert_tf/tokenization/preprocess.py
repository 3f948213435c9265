"""Text pre-processing exactly as the official ALBERT ``tokenization.preprocess_text`` (official ``tokenization.py``).

The official function, as it behaves under Python 3:

1. ``" ".join(text.strip().split())`` when ``remove_space`` (Python's Unicode whitespace, so U+00A0, U+3000 ...
   count as spaces);
2. ``unicodedata.normalize("NFKD", ...)`` and then every character with a non-zero canonical combining class is
   dropped (``unicodedata.combining``) -- accents are always stripped in the official code;
3. ``lower()`` when ``lower`` is true (full Unicode lower-casing, including the Greek final-sigma rule);
4. no quote normalisation: `````` and ``''`` stay as they are (XLNet and Hugging Face map them to ``"``).

``keep_accents=True`` (google-research/albert PR #4 adds --do_uncased for Vietnamese: non-Latin languages lose their
diacritics) skips step 2 entirely,
as Hugging Face's ``AlbertTokenizer(keep_accents=True)`` does; the SentencePiece model's own ``nmt_nfkc``
normaliser still runs inside the model.
"""

from __future__ import annotations

import unicodedata

__all__ = ["convert_to_unicode", "preprocess_text", "printable_text", "sanitize_unicode"]


def sanitize_unicode(text: str) -> str:
    """Replace lone surrogates (not encodable as UTF-8) by U+FFFD so that no later step can fail on them.

    The in-graph path does the same for invalid UTF-8 bytes (``tf.strings.unicode_transcode`` with
    ``errors="replace"``). Text without surrogates is returned unchanged (the common, fast case).
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def convert_to_unicode(text: str | bytes) -> str:
    """``str`` unchanged; ``bytes`` decoded as UTF-8 (invalid bytes ignored, as the official helper does)."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise TypeError(f"convert_to_unicode: expected str or bytes, got {type(text).__name__}")


def printable_text(text: str | bytes) -> str:
    """Text suitable for logging / piece lookup: ``str`` as is, ``bytes`` decoded as UTF-8 (errors ignored)."""
    return convert_to_unicode(text)


def preprocess_text(
    inputs: str | bytes, remove_space: bool = True, lower: bool = False, keep_accents: bool = False
) -> str:
    """Official ALBERT text pre-processing (whitespace collapse, NFKD, drop combining marks, optional lower).

    Args:
      inputs: the raw text; ``bytes`` are decoded as UTF-8 (invalid bytes replaced by U+FFFD).
      remove_space: collapse every run of Unicode whitespace to one space and strip both ends.
      lower: apply Python's ``str.lower()`` (the processors pass ``lower=do_lower_case``).
      keep_accents: not in the official code. True skips NFKD and the removal of combining marks, so
        "Tiếng Việt" keeps its diacritics (the official always gives "Tieng Viet").

    Returns:
      The pre-processed ``str``. Lone surrogates are replaced by U+FFFD (the official code would crash later).
    """
    if isinstance(inputs, bytes):
        inputs = inputs.decode("utf-8", "replace")
    elif not isinstance(inputs, str):
        raise TypeError(f"preprocess_text: expected str or bytes, got {type(inputs).__name__}")
    outputs = sanitize_unicode(inputs)
    if remove_space:
        outputs = " ".join(outputs.strip().split())
    if not keep_accents and not outputs.isascii():  # ASCII is already NFKD and has no combining marks
        outputs = unicodedata.normalize("NFKD", outputs)
        outputs = "".join(c for c in outputs if not unicodedata.combining(c))
    if lower:
        outputs = outputs.lower()
    return outputs
