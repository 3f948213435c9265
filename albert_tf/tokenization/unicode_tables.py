"""Character classes of the running Python's ``unicodedata``, as RE2 patterns and lookup arrays for the graph.

The in-graph pre-processing must behave like Python's ``str.split()``, ``unicodedata.combining`` and ``str.lower()``
(the official ``preprocess_text`` is Python). RE2's ``\\s`` and TensorFlow's ``tf.strings.lower`` do not: RE2's
``\\s`` is ASCII-only, and ``tf.strings.lower(encoding="utf-8")`` cuts a string at the first NUL and follows an
older Unicode version. So the tables here are derived from Python itself (once per process, about 1 s) and baked
into the layer's graph.
"""

from __future__ import annotations

import functools
import sys
import unicodedata

import numpy as np

__all__ = [
    "UNICODE_VERSION",
    "bert_control_class_pattern",
    "bert_punctuation_class_pattern",
    "bert_whitespace_class_pattern",
    "char_class",
    "cjk_class_pattern",
    "mn_class_pattern",
    "combining_class_pattern",
    "final_sigma_pattern",
    "lowercase_table",
    "whitespace_class_pattern",
]

UNICODE_VERSION = unicodedata.unidata_version
_SURROGATES = range(0xD800, 0xE000)


def _all_chars():
    for cp in range(sys.maxunicode + 1):
        if cp not in _SURROGATES:
            yield chr(cp)


def char_class(codepoints: list[int], negate: bool = False) -> str:
    """An RE2 character class ``[...]`` matching exactly ``codepoints`` (consecutive runs become ranges)."""
    cps = sorted(set(codepoints))
    parts = []
    i = 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        parts.append(f"\\x{{{cps[i]:X}}}" if i == j else f"\\x{{{cps[i]:X}}}-\\x{{{cps[j]:X}}}")
        i = j + 1
    return "[" + ("^" if negate else "") + "".join(parts) + "]"


@functools.cache
def _tables() -> dict[str, list[int]]:
    space, combining, cased, case_ignorable = [], [], [], []
    control, bert_space, mn, punct = [], [], [], []
    for ch in _all_chars():
        cp = ord(ch)
        cat = unicodedata.category(ch)
        # BERT BasicTokenizer classes (wordpiece.py): _is_control (+ NUL, U+FFFD), _is_whitespace, Mn, _is_punctuation
        if cp in (0, 0xFFFD) or (cat.startswith("C") and ch not in "\t\n\r"):
            control.append(cp)
        elif ch in " \t\n\r" or cat == "Zs":
            bert_space.append(cp)
        if cat == "Mn":
            mn.append(cp)
        if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or cat.startswith("P"):
            punct.append(cp)
        if ch.isspace():
            space.append(cp)
        if unicodedata.combining(ch):
            combining.append(cp)
        # Python's final-sigma rule (Objects/unicodeobject.c, handle_capital_sigma) uses the Unicode properties
        # Cased and Case_Ignorable, which the stdlib does not expose; read them off str.lower() itself:
        # "XΣ" lowers to a final sigma iff X is cased and not case-ignorable; "AXΣ" iff X is case-ignorable or that.
        end_x = (ch + "\u03a3").lower()[-1] == "\u03c2"
        end_ax = ("A" + ch + "\u03a3").lower()[-1] == "\u03c2"
        if end_x:
            cased.append(cp)
        elif end_ax:
            case_ignorable.append(cp)
    return {
        "space": space,
        "combining": combining,
        "cased": cased,
        "case_ignorable": case_ignorable,
        "control": control,
        "bert_space": bert_space,
        "mn": mn,
        "punct": punct,
    }


def whitespace_class_pattern() -> str:
    """RE2 class of every character for which Python's ``str.isspace()`` is true (what ``str.split()`` uses)."""
    return char_class(_tables()["space"])


def combining_class_pattern() -> str:
    """RE2 class of every character with a non-zero canonical combining class (``unicodedata.combining``)."""
    return char_class(_tables()["combining"])


def final_sigma_pattern() -> tuple[str, str]:
    """(pattern, rewrite) turning U+03A3 into U+03C2 where Python's ``lower()`` gives a final sigma.

    Python: Σ is final when preceded by ``cased case_ignorable*`` and not followed by ``case_ignorable* cased``.
    RE2 has no look-around, so the following context is consumed and written back; a consumed character is never
    cased, so it cannot be the cased context of a later Σ (and a later Σ after it is not final anyway).
    """
    t = _tables()
    cased = char_class(t["cased"])
    ignorable = char_class(t["case_ignorable"])
    following = char_class(t["cased"] + t["case_ignorable"], negate=True)
    pattern = f"({cased}{ignorable}*)\u03a3({ignorable}*)({following}|$)"
    return pattern, "\\1\u03c2\\2\\3"


@functools.cache
def lowercase_table() -> tuple[np.ndarray, np.ndarray]:
    """(codepoints, lower-case codepoints) for every character whose Python ``lower()`` is one different character.

    U+0130 (the only character whose ``lower()`` is two characters) is left out and handled by a rewrite; the
    context-dependent final sigma by :func:`final_sigma_pattern`.
    """
    keys, values = [], []
    for ch in _all_chars():
        low = ch.lower()
        if low != ch and len(low) == 1:
            keys.append(ord(ch))
            values.append(ord(low))
    return np.asarray(keys, np.int64), np.asarray(values, np.int64)


def bert_control_class_pattern() -> str:
    """Characters the BERT BasicTokenizer deletes: NUL, U+FFFD and every C* character but tab, newline, return."""
    return char_class(_tables()["control"])


def bert_whitespace_class_pattern() -> str:
    """Characters the BERT BasicTokenizer maps to " ": space, tab, newline, return and every Zs character."""
    return char_class(_tables()["bert_space"])


def mn_class_pattern() -> str:
    """Category Mn (non-spacing marks), removed by the BERT accent strip after NFD."""
    return char_class(_tables()["mn"])


def bert_punctuation_class_pattern() -> str:
    """BERT punctuation: ASCII non-alphanumeric printable characters and every Unicode P* character."""
    return char_class(_tables()["punct"])


def cjk_class_pattern() -> str:
    """The official ``_is_chinese_char`` blocks (CJK Unified Ideographs and extensions, compatibility ideographs)."""
    from albert_tf.tokenization.wordpiece import CJK_RANGES

    return char_class([cp for lo, hi in CJK_RANGES for cp in range(lo, hi + 1)])
