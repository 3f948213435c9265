"""Python SentencePiece tokenizer: the rules of spec section 5 restated independently, switches, ids, identity.

Checks that hold for any SentencePiece model use ``spm_model`` (30k-clean where ``../shared`` is present, else a
substitute trained on the sample corpus); the ``*_30k`` tests check 30k-clean's own pieces and ids and skip without it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

import pytest
from conftest import shared_path

from albert_tf.tokenization import FullTokenizer, encode_ids, encode_pieces, preprocess_text
from albert_tf.tokenization.sentencepiece_tokenizer import is_start_piece_sp


@pytest.fixture(scope="module")
def spm_file(spm_model):
    return spm_model


@pytest.fixture(scope="module")
def tok(spm_file):
    return FullTokenizer(spm_model_file=spm_file, do_lower_case=True)


@pytest.fixture(scope="module")
def spm_file_30k():
    return shared_path("spm", "30k-clean.model")


@pytest.fixture(scope="module")
def tok_30k(spm_file_30k):
    return FullTokenizer(spm_model_file=spm_file_30k, do_lower_case=True)


# ------------------------------------------------------------------------------------------------ preprocess_text
@pytest.mark.parametrize(
    "text, lower, expected",
    [
        # spec section 5, "Verified" examples
        ("Tiếng Việt", True, "tieng viet"),
        ("ﬁ", False, "fi"),
        ("２０２０", False, "2020"),
        ("²", False, "2"),
        ("…", False, "..."),
        # whitespace: Python str.split() semantics (NBSP, ideographic space, tabs, newlines)
        ("  a\u00a0\u3000b\t\nc  ", False, "a b c"),
        # no quote normalisation (XLNet / HF would give '"')
        ("``x''", False, "``x''"),
        # Python's lower(): final sigma
        ("ΟΔΟΣ ΣΟΣ", True, "οδος σος"),
        ("", True, ""),
    ],
)
def test_preprocess_text_spec_examples(text, lower, expected):
    assert preprocess_text(text, lower=lower) == expected


def test_preprocess_text_keep_accents_and_remove_space_switches():
    assert preprocess_text("Tiếng  Việt", lower=True, keep_accents=True) == "tiếng việt"
    assert preprocess_text(" a  b ", remove_space=False) == " a  b "


def test_preprocess_text_bytes_and_surrogates():
    assert preprocess_text("Café".encode()) == "Cafe"
    # The official would crash inside SentencePiece. A lone surrogate is 3 invalid UTF-8 bytes (ED A0 80) and becomes
    # 3 x U+FFFD, as tf.strings.unicode_transcode(errors="replace") does in the graph.
    assert preprocess_text("a\ud800b") == "a\ufffd\ufffd\ufffdb"
    with pytest.raises(TypeError, match="expected str or bytes"):
        preprocess_text(3)


def test_preprocess_text_drops_exactly_the_combining_characters():
    text = "e\u0301 \u0915\u094d \u05b0x"  # acute, virama (ccc 9), hebrew sheva
    expected = "".join(c for c in unicodedata.normalize("NFKD", text) if unicodedata.combining(c) == 0)
    assert preprocess_text(text) == expected == "e \u0915 x"


# ------------------------------------------------------------------------------------------------ digit-comma rule
def _official_rule_restated(sp, text: str) -> list[str]:
    """Spec section 5 restated: re-encode pieces matching /.+\\d,$/ without "▁"; the re-encoding keeps its "▁"."""
    out = []
    for piece in sp.encode(text, out_type=str):
        if re.fullmatch(r".+\d,", piece, flags=re.S) and piece[-2] in "0123456789":
            out += sp.encode(piece[:-1].replace("\u2581", ""), out_type=str) + [","]
        else:
            out.append(piece)
    return out


@pytest.mark.parametrize(
    "text",
    [
        "in 1999,2000, and 2001,",
        "it cost 3,000, then 4,5,6,",
        "a1,b2,",
        "x9,",
        "1999,",
        "2010, 2011,",
        "no digits, here",
    ],
)
def test_digit_comma_matches_restated_rule(tok, text):
    assert tok.tokenize(text) == _official_rule_restated(tok.sp_model, text)


def test_digit_comma_spec_examples_with_the_30k_model(tok_30k):
    # spec section 5 (the values measured with the English model)
    assert tok_30k.tokenize("a1,b2,") == ["▁a", "1", ",", "b", "2", ","]
    assert tok_30k.tokenize("in 1999,2000, and 2001,") == ["▁in", "▁1999", ",", "2000", ",", "▁and", "▁2001", ","]


def test_digit_comma_switch_off_gives_plain_sentencepiece(spm_file):
    plain = FullTokenizer(spm_model_file=spm_file, official_digit_comma=False)
    for text in ("in 1999,2000, and 2001,", "a1,b2,", "x9, y"):
        assert plain.tokenize(text) == plain.sp_model.encode(text, out_type=str)


def test_digit_comma_switch_changes_the_30k_pieces(spm_file_30k):
    # 30k-clean has pieces ending in digit + comma ("▁1999,"), which the official rule re-encodes
    plain = FullTokenizer(spm_model_file=spm_file_30k, official_digit_comma=False)
    text = "in 1999,2000, and 2001,"
    assert plain.tokenize(text) != FullTokenizer(spm_model_file=spm_file_30k).tokenize(text)


def test_encode_pieces_and_ids_helpers(tok):
    sp = tok.sp_model
    for text in ("1999,", "in 1999,2000, and 2001,"):
        assert encode_ids(sp, text) == [sp.piece_to_id(p) for p in encode_pieces(sp, text)]


def test_encode_pieces_and_ids_helpers_30k(tok_30k):
    sp = tok_30k.sp_model
    assert encode_pieces(sp, "1999,") == ["▁1999", ","]
    assert encode_ids(sp, "1999,") == [sp.piece_to_id("▁1999"), sp.piece_to_id(",")]


# ------------------------------------------------------------------------------------------------ do_lower_case
def test_do_lower_case_is_honoured_in_spm_mode(spm_file):
    lower = FullTokenizer(spm_model_file=spm_file, do_lower_case=True)
    cased = FullTokenizer(spm_model_file=spm_file, do_lower_case=False)
    assert lower.tokenize("Hello World") == lower.sp_model.encode("hello world", out_type=str)
    assert cased.tokenize("Hello World") == cased.sp_model.encode("Hello World", out_type=str)
    assert cased.tokenize("Hello World") != lower.tokenize("Hello World")
    # preprocessed=True: no second pre-processing (what the official tokenize does)
    assert cased.tokenize("Hello", preprocessed=True) == cased.sp_model.encode("Hello", out_type=str)


def test_do_lower_case_30k_pieces(tok_30k):
    assert tok_30k.tokenize("Hello World") == ["▁hello", "▁world"]


def test_keep_accents_keeps_diacritics(spm_file):
    keep = FullTokenizer(spm_model_file=spm_file, keep_accents=True)
    assert keep.preprocess("Café") == "café"
    assert "".join(keep.tokenize("Café")).replace("\u2581", "") == "café"


# ------------------------------------------------------------------------------------------------ ids and vocab
def test_special_ids_and_vocab(tok):
    assert [tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id] == [0, 1, 2, 3, 4]
    assert tok.convert_ids_to_tokens(range(13)) == [
        "<pad>",
        "<unk>",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "(",
        ")",
        '"',
        "-",
        ".",
        "–",
        "£",
        "€",
    ]
    assert tok.vocab_size == len(tok.vocab) == tok.sp_model.get_piece_size()
    assert all(tok.inv_vocab[i] == p for p, i in tok.vocab.items())
    assert tok.convert_tokens_to_ids(["▁the", "no-such-piece-xyz"]) == [tok.vocab["▁the"], 1]
    # control symbols are never produced from raw text
    assert 2 not in tok.encode("[CLS] [SEP] [MASK]")
    with pytest.raises(IndexError, match="outside"):
        tok.convert_ids_to_tokens([tok.vocab_size])


def test_special_ids_and_vocab_30k(tok_30k):
    assert tok_30k.vocab_size == len(tok_30k.vocab) == 30000
    assert tok_30k.convert_tokens_to_ids(["▁hello", "no-such-piece-xyz"]) == [tok_30k.vocab["▁hello"], 1]
    with pytest.raises(IndexError, match="outside"):
        tok_30k.convert_ids_to_tokens([30000])


def test_identity_changes_with_every_id_changing_switch(spm_file, tok):
    ids = {
        FullTokenizer(spm_model_file=spm_file, **kw).identity()
        for kw in ({}, {"do_lower_case": False}, {"keep_accents": True}, {"official_digit_comma": False})
    }
    assert len(ids) == 4
    assert tok.identity() == FullTokenizer(spm_model_file=spm_file.read_bytes()).identity()
    assert hashlib.sha256(spm_file.read_bytes()).hexdigest() in tok.identity()
    assert len(tok.identity_hash()) == 64


def test_identity_names_the_30k_model_sha(tok_30k):
    assert "fefb02b667a6c5c2fe27602d28e5fb3428f66ab89c7d6f388e7c8d44a02d0336" in tok_30k.identity()  # data README sha


def test_bad_model_file_gives_clear_error(tmp_path):
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="bad.model: not a valid SentencePiece model"):
        FullTokenizer(spm_model_file=bad)
    with pytest.raises(ValueError, match="give spm_model_file"):
        FullTokenizer()


# ------------------------------------------------------------------------------------------------ start pieces
def _start_rule_restated(piece: str) -> bool:
    """spec 2.2 step 4: '▁' or '<' prefix, an official punctuation piece, or a char outside [a-z] + punctuation."""
    punct = set('!"#$%&()*+,-./:;?@[\\]^_`{|}~')
    return (
        piece[:1] in ("\u2581", "<")
        or piece in punct
        or any(c.lower() not in set("abcdefghijklmnopqrstuvwxyz") | punct for c in piece)
    )


@pytest.mark.parametrize(
    "piece, expected",
    [
        ("▁the", True),
        ("ing", False),
        ("<unk>", True),
        (",", True),
        ("'", True),
        ("s", False),
        ("2000", True),
        ("ß", True),
        ("€", True),
        ("£", True),
        ("ED", False),
        ("a-b", False),
        ("=", True),
    ],
)
def test_is_start_piece_sp(tok, piece, expected):
    assert is_start_piece_sp(piece) is expected
    assert tok.is_start_piece(piece) is expected
    assert _start_rule_restated(piece) is expected


def test_is_start_piece_agrees_with_restated_rule_on_whole_vocab(tok):
    bad = [p for p in tok.vocab if tok.is_start_piece(p) != _start_rule_restated(p)]
    assert not bad


def test_preprocessing_twice_changes_the_text_but_not_the_ids(tok):
    once = preprocess_text("x \u00b4 y", lower=True)
    assert once == "x   y"  # the acute accent leaves its NFKD space (U+0020 U+0301 -> " ") behind
    assert preprocess_text(once, lower=True) == "x y"
    # SentencePiece's nmt_nfkc normaliser removes the extra spaces, so the ids agree either way
    assert tok.tokenize(once, preprocessed=True) == tok.tokenize(once) == tok.tokenize("x y", preprocessed=True)


def test_preprocessing_twice_changes_the_text_but_not_the_30k_ids(tok_30k):
    once = preprocess_text("x \u00b4 y", lower=True)
    assert tok_30k.tokenize(once, preprocessed=True) == tok_30k.tokenize(once) == ["\u2581x", "\u2581", "y"]
