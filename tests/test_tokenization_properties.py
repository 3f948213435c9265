"""Property tests (hypothesis): the tokenizers never crash and always return valid ids of the right shape.

Covers arbitrary Unicode, empty and whitespace-only strings, 100k-character strings, lone surrogates and invalid
UTF-8 bytes (graph path), Python/graph agreement on arbitrary assigned Unicode text, and the closed-form pair
truncation against the official ``_truncate_seq_pair`` loop.

The properties hold for any vocabulary: the tokenizers come from ``spm_model`` / ``wordpiece_vocab`` (the real
files where ``../shared`` is present, else substitutes built from the sample corpus).
"""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from albert_tf.tokenization import FullTokenizer
from albert_tf.tokenization.packing import pack_inputs, truncated_pair_lengths

SEQ = 32
PROPERTY_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))

# Characters assigned in the running Python's Unicode database (ICU in tensorflow-text knows newer characters and
# decomposes some of them under NFKD where Python leaves them alone: a documented, expected difference).
assigned_text = st.text(st.characters(exclude_categories=("Cs", "Cn")), max_size=60)
whitespace = st.text(st.sampled_from(list(" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2028\u3000")), max_size=10)


@pytest.fixture(scope="module")
def tok(spm_model):
    return FullTokenizer(spm_model_file=spm_model)


@pytest.fixture(scope="module")
def layer(tok):
    pytest.importorskip("tensorflow_text")
    from albert_tf.tokenization import AlbertPreprocessor

    return AlbertPreprocessor.from_tokenizer(tok, SEQ)


def _official_truncate(len_a: int, len_b: int, max_length: int) -> tuple[int, int]:
    """_truncate_seq_pair restated: pop from the longer list (b on ties) until the total fits."""
    while len_a + len_b > max_length:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


@pytest.mark.heavy
@given(st.integers(0, 300), st.integers(0, 300), st.integers(0, 200))
@settings(max_examples=500, deadline=None)
def test_closed_form_truncation_is_the_official_loop(len_a, len_b, max_length):
    assert truncated_pair_lengths(len_a, len_b, max_length) == _official_truncate(len_a, len_b, max_length)


@given(st.lists(st.integers(5, 99), max_size=80), st.lists(st.integers(5, 99), max_size=80), st.integers(3, 64))
@settings(max_examples=200, deadline=None)
def test_pack_inputs_shape_and_layout(a, b, seq):
    out = pack_inputs(a, b, seq)
    ids, mask, seg = out["input_ids"], out["input_mask"], out["segment_ids"]
    n = sum(mask)
    assert len(ids) == len(mask) == len(seg) == seq
    assert mask == [1] * n + [0] * (seq - n) and ids[0] == 2 and ids[n - 1] == 3
    assert all(i == 0 for i in ids[n:]) and all(s == 0 for s in seg[n:])
    assert seg[:n] == sorted(seg[:n])  # zeros then ones


@given(st.lists(st.one_of(assigned_text, whitespace, st.just("")), min_size=1, max_size=6))
@PROPERTY_SETTINGS
def test_python_tokenizer_never_crashes_and_ids_are_valid(tok, texts):
    for text in texts:
        ids = tok.encode(text)
        assert all(0 <= i < tok.vocab_size for i in ids)
        if not text.split():
            assert ids == []


@pytest.mark.heavy
@given(st.text(max_size=40))
@PROPERTY_SETTINGS
def test_python_tokenizer_survives_lone_surrogates(tok, text):
    ids = tok.encode(text + "\ud800" + text[::-1])
    assert all(0 <= i < tok.vocab_size for i in ids)


def _check_outputs(out, batch, vocab_size):
    ids, mask, seg = (np.asarray(out[k]) for k in ("input_ids", "input_mask", "segment_ids"))
    assert ids.dtype == mask.dtype == seg.dtype == np.int32
    assert ids.shape == mask.shape == seg.shape == (batch, SEQ)
    assert ((ids >= 0) & (ids < vocab_size)).all()
    for r in range(batch):
        n = int(mask[r].sum())
        assert 2 <= n <= SEQ and (mask[r, :n] == 1).all() and ids[r, 0] == 2 and ids[r, n - 1] == 3
        assert (ids[r, n:] == 0).all() and (seg[r, n:] == 0).all()


@given(
    st.lists(
        st.one_of(
            st.text(max_size=60).map(lambda s: s.encode("utf-8", "surrogatepass")),  # lone surrogates as bytes
            st.binary(max_size=60),  # arbitrary, mostly invalid, UTF-8
            whitespace.map(str.encode),
            st.just(b""),
        ),
        min_size=1,
        max_size=6,
    )
)
@pytest.mark.heavy
@PROPERTY_SETTINGS
def test_graph_never_crashes_on_invalid_utf8(tok, layer, texts):
    import tensorflow as tf

    batch = tf.constant(texts, dtype=tf.string)
    _check_outputs(layer(batch), len(texts), tok.vocab_size)
    _check_outputs(layer({"text_a": batch, "text_b": tf.reverse(batch, [0])}), len(texts), tok.vocab_size)


@given(st.lists(st.one_of(assigned_text, whitespace), min_size=1, max_size=8))
@PROPERTY_SETTINGS
def test_graph_equals_python_on_arbitrary_assigned_unicode(tok, layer, texts):
    import tensorflow as tf

    graph = layer.tokenize(tf.constant(texts)).to_list()
    assert graph == [tok.encode(t) for t in texts]


def test_100k_character_strings(tok, layer):
    import tensorflow as tf

    rng = random.Random(0)
    pool = [chr(c) for c in range(0x20, 0x3000) if unicodedata.category(chr(c)) not in ("Cn", "Cs", "Co")]
    long_texts = [
        "".join(rng.choice(pool) for _ in range(100_000)),
        ("word 1999,2000, " * 7000)[:100_000],
        " " * 100_000,
    ]
    assert all(len(t) == 100_000 for t in long_texts)
    graph = layer.tokenize(tf.constant(long_texts)).to_list()
    for text, g in zip(long_texts, graph):
        assert g == tok.encode(text)
    _check_outputs(layer(tf.constant(long_texts)), 3, tok.vocab_size)


@pytest.fixture(scope="module")
def wordpiece(wordpiece_vocab):
    pytest.importorskip("tensorflow_text")
    from albert_tf.tokenization import AlbertPreprocessor

    tok = FullTokenizer(vocab_file=wordpiece_vocab)
    return tok, AlbertPreprocessor.from_tokenizer(tok, SEQ)


@given(st.lists(st.one_of(assigned_text, whitespace), min_size=1, max_size=8))
@PROPERTY_SETTINGS
def test_wordpiece_graph_equals_python_on_arbitrary_assigned_unicode(wordpiece, texts):
    import tensorflow as tf

    wp_tok, wp_layer = wordpiece
    assert wp_layer.tokenize(tf.constant(texts)).to_list() == [wp_tok.encode(t) for t in texts]
