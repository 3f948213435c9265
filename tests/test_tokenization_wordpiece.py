"""WordPiece path (the Chinese ALBERT vocab): official BasicTokenizer + greedy longest-match WordPiece.

Independent references: the expected pieces restated by hand from the rules in spec section 5, and Hugging Face's
``BertTokenizer`` (a separate implementation of the same algorithm) on mixed real and crafted text.

Tests of the Chinese vocab's own pieces and ids take it from ``../shared`` and skip without it; the rest hold for
any WordPiece vocab and take ``wordpiece_vocab`` (the Chinese vocab where present, else a small substitute).
"""

from __future__ import annotations

import pytest
from conftest import english_lines, shared_path

from albert_tf.tokenization import FullTokenizer
from albert_tf.tokenization.wordpiece import BasicTokenizer, WordpieceTokenizer, load_vocab


@pytest.fixture(scope="module")
def vocab_file():
    return shared_path("spm", "chinese-wordpiece-vocab.txt")


@pytest.fixture(scope="module")
def tok(vocab_file):
    return FullTokenizer(vocab_file=vocab_file, do_lower_case=True)


@pytest.fixture(scope="module")
def any_tok(wordpiece_vocab):
    return FullTokenizer(vocab_file=wordpiece_vocab, do_lower_case=True)


def test_special_ids(tok):
    assert [tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id] == [0, 100, 101, 102, 103]
    assert tok.vocab_size == 21128
    assert tok.identity().startswith("wordpiece:sha256=")


def test_cjk_characters_are_split_one_per_piece(tok):
    assert tok.tokenize("我爱北京天安门。") == ["我", "爱", "北", "京", "天", "安", "门", "。"]
    # Hiragana/Katakana are not in the official CJK ranges: they stay one word; lower-casing's NFD accent strip
    # also drops the dakuten (U+3099, category Mn), so "が" becomes "か"
    assert BasicTokenizer()._tokenize_chinese_chars("中a") == " 中 a"
    assert BasicTokenizer().tokenize("ひらがな") == ["ひらかな"]
    assert BasicTokenizer(do_lower_case=False).tokenize("ひらがな") == ["ひらがな"]


def test_mixed_text_lower_case_and_accents(tok, vocab_file):
    assert tok.tokenize("混合 English 和 中文 123") == ["混", "合", "english", "和", "中", "文", "123"]
    assert tok.tokenize("Héllo wörld") == ["hello", "world"]
    cased = FullTokenizer(vocab_file=vocab_file, do_lower_case=False)
    assert BasicTokenizer(do_lower_case=False).tokenize("Héllo") == ["Héllo"]  # no accent strip without lower
    assert cased.tokenize("Héllo")[0] != "hello"


def test_punctuation_splitting():
    # ASCII non-alphanumerics count as punctuation ($, ^, `), as does every Unicode P* character
    assert BasicTokenizer().tokenize("a$b^c`d，e“f”") == ["a", "$", "b", "^", "c", "`", "d", "，", "e", "“", "f", "”"]


def test_punctuation_splitting_chinese_vocab_pieces(tok):
    assert tok.tokenize("ALBERT模型很小, 但是很强!") == [
        "al",
        "##bert",
        "模",
        "型",
        "很",
        "小",
        ",",
        "但",
        "是",
        "很",
        "强",
        "!",
    ]


def test_unknown_chinese_characters(tok):
    assert tok.tokenize("𠀀罕见字") == ["[UNK]", "罕", "见", "字"]
    assert tok.tokenize("标点：“引号”") == ["标", "点", "：", "[UNK]", "引", "号", "[UNK]"]


def test_long_words_and_unknown_tokens(any_tok):
    assert any_tok.tokenize("a" * 200) != ["[UNK]"]
    assert any_tok.tokenize("a" * 201) == ["[UNK]"]  # max_input_chars_per_word = 200
    with pytest.raises(KeyError, match="not in the WordPiece vocab"):
        any_tok.convert_tokens_to_ids(["no-such-token"])


def test_control_characters_are_removed(any_tok):
    assert BasicTokenizer().tokenize("a\x00b\ufffdc\u200bd\te") == ["abcd", "e"]
    assert any_tok.tokenize("  ") == []


def test_greedy_longest_match_on_a_tiny_vocab(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\nun\n##want\n##ed\nwant\n##wa\nun\n\nrunning\n", encoding="utf-8")
    loaded = load_vocab(vocab)
    # duplicates are skipped and do not consume an id; a blank line is " "
    assert list(loaded.items()) == [
        ("[PAD]", 0),
        ("[UNK]", 1),
        ("un", 2),
        ("##want", 3),
        ("##ed", 4),
        ("want", 5),
        ("##wa", 6),
        (" ", 7),
        ("running", 8),
    ]
    wp = WordpieceTokenizer(loaded)
    assert wp.tokenize("unwanted running unx") == ["un", "##want", "##ed", "running", "[UNK]"]


def test_is_start_piece_wordpiece(any_tok):
    assert any_tok.is_start_piece("foo") and not any_tok.is_start_piece("##foo")


def test_agrees_with_huggingface_bert_tokenizer(any_tok, wordpiece_vocab):
    transformers = pytest.importorskip("transformers")
    ref = transformers.BertTokenizer(str(wordpiece_vocab), do_lower_case=True)
    texts = [
        "我爱北京天安门。",
        "ALBERT模型很小, 但是很强!",
        "Héllo wörld unwanted running",
        "𠀀罕见字",
        "标点：“引号”",
        "a\x00b\u200bc ß straße İstanbul",
        "ｆｕｌｌ　ｗｉｄｔｈ ①②",
        "e-mail: someone@example.com, 3.0, 1999,2000",
    ]
    texts += english_lines(300, "tinyshakespeare", "input.txt")
    bad = [(t, any_tok.tokenize(t), ref.tokenize(t)) for t in texts if any_tok.tokenize(t) != ref.tokenize(t)]
    assert not bad, bad[:3]


def test_ascii_fast_path_of_clean_text_equals_the_per_character_rule():
    from albert_tf.tokenization.wordpiece import is_control, is_whitespace

    for cp in range(128):
        c = chr(cp)
        per_char = "" if cp == 0 or is_control(c) else (" " if is_whitespace(c) else c)
        assert BasicTokenizer._clean_text(c) == per_char, cp
    assert BasicTokenizer._clean_text("a\x7fb\x0bc\td") == "abc d"
