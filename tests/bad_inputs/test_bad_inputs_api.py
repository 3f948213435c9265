"""Bad inputs through the Python API (config, tokenizers, TFRecord reader, the serving preprocessor), and
Hypothesis fuzzing of the TFRecord reader and of the raw-text preprocessor: a clear error or a result, never
a crash."""

from __future__ import annotations

import os
import re
import struct

import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from albert_tf.config import AlbertConfig, ConfigError
from albert_tf.data.tfrecord import TFRecordError, count_records, iter_records, masked_crc32c
from albert_tf.tokenization import AlbertPreprocessor, FullTokenizer, TokenizerError

GOOD = {"vocab_size": 300, "hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 64}


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    from albert_tf.demo.finetune import train_demo_spm

    return train_demo_spm(str(tmp_path_factory.mktemp("spm")), seed=0, vocab_size=300)


@pytest.mark.parametrize(
    "changes, fragment",
    [
        ({"num_attention_heads": 5}, "num_attention_heads"),
        ({"hidden_act": "swish2"}, "hidden_act"),
        ({"hidden_dropout_prob": -0.1}, "hidden_dropout_prob"),
        ({"vocab_size": 0}, "vocab_size"),
        ({"num_hidden_groups": 99}, "num_hidden_groups"),
        ({"hidden_size": "big"}, "hidden_size"),
    ],
)
def test_bad_config_values(changes, fragment):
    with pytest.raises(ConfigError, match=fragment):
        AlbertConfig.from_dict({**GOOD, **changes})


@pytest.mark.parametrize("value", ["3", 2.5, True, None])
def test_num_labels_that_is_not_an_integer_is_named(value):
    """``int()`` would turn 2.5 into 2 and "3" into 3, and None into a TypeError from deep inside: refused by name."""
    from albert_tf.tasks.glue.model import AlbertClassifier

    with pytest.raises(ValueError, match=r"num_labels must be an integer >= 1 \(1 = regression\), got"):
        AlbertClassifier(AlbertConfig.from_dict(GOOD), num_labels=value)


def test_bad_config_files(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text('{\n "vocab_size": 300,\n "hidden_size": 32,,\n}')
    with pytest.raises(ConfigError, match=r"c\.json.*line 3"):
        AlbertConfig.from_json_file(str(bad))
    with pytest.raises((ConfigError, OSError), match="missing.json"):
        AlbertConfig.load(str(tmp_path / "missing.json"))


def test_bad_tokenizer_files(tmp_path):
    garbage = tmp_path / "garbage.model"
    garbage.write_bytes(os.urandom(200))
    with pytest.raises(TokenizerError, match="garbage.model: not a valid SentencePiece model"):
        FullTokenizer(spm_model_file=str(garbage))
    empty = tmp_path / "vocab.txt"
    empty.write_text("")
    with pytest.raises(TokenizerError, match="vocab.txt: empty vocab file"):
        FullTokenizer(vocab_file=str(empty))
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"[PAD]\ncaf\xe9\n")
    with pytest.raises(TokenizerError, match="latin.txt: vocab file is not UTF-8"):
        FullTokenizer(vocab_file=str(latin))
    with pytest.raises(FileNotFoundError, match="none.model"):
        FullTokenizer(spm_model_file=str(tmp_path / "none.model"))


def test_reader_names_file_and_record(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("not a record file at all\n" * 5)
    with pytest.raises(TFRecordError, match=r"text.txt: record 0: not a TFRecord file"):
        list(iter_records(str(text)))
    path = str(tmp_path / "ok.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for i in range(3):
            w.write(b"x" * (10 + i))
    data = open(path, "rb").read()
    (tmp_path / "cut.tfrecord").write_bytes(data[:-3])
    with pytest.raises(TFRecordError, match=r"cut.tfrecord: record 2: truncated"):
        count_records(str(tmp_path / "cut.tfrecord"))
    assert [len(r) for r in iter_records(path)] == [10, 11, 12] and count_records(path) == 3


@pytest.mark.heavy
def test_preprocessor_names_mismatched_batches(spm_model):
    layer = AlbertPreprocessor(spm_model, max_seq_length=16)
    with pytest.raises(tf.errors.InvalidArgumentError, match="text_a and text_b must hold the same number"):
        layer({"text_a": tf.constant(["a", "b"]), "text_b": tf.constant(["c"])})


# ---------------------------------------------------------------------------------------- fuzzing
def _frame(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))


@pytest.fixture(scope="module")
def real_records():
    return b"".join(_frame(bytes([i]) * (5 + 7 * i)) for i in range(6))


def _read_all(path):
    try:
        n = len(list(iter_records(path)))
        assert n == count_records(path)
    except TFRecordError as e:
        assert str(e).startswith(path) and "\n" not in str(e)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=600))
def test_fuzz_reader_random_bytes(tmp_path, data):
    path = str(tmp_path / "fuzz.tfrecord")
    with open(path, "wb") as f:
        f.write(data)
    _read_all(path)


@pytest.mark.heavy
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzz_reader_truncated_and_flipped_records(tmp_path, real_records, data):
    blob = bytearray(real_records)
    cut = data.draw(st.integers(0, len(blob)))
    flips = data.draw(st.lists(st.integers(0, len(blob) * 8 - 1), max_size=3))
    for bit in flips:
        blob[bit // 8] ^= 1 << (bit % 8)
    blob = bytes(blob[:cut])
    path = str(tmp_path / "fuzz.tfrecord")
    with open(path, "wb") as f:
        f.write(blob)
    _read_all(path)
    if not flips and cut == len(real_records):
        assert count_records(path) == 6


@pytest.mark.slow
def test_fuzz_preprocessor_random_text_and_bytes(spm_model):
    layer = AlbertPreprocessor(spm_model, max_seq_length=24)
    text = st.one_of(st.text(max_size=40), st.binary(max_size=40))

    @settings(max_examples=600, deadline=None)  # ~60 ms each (eager); 2,000 took two minutes of CI
    @given(st.lists(text, min_size=0, max_size=4), st.lists(text, min_size=0, max_size=4))
    def check(a, b):
        try:
            out = layer({"text_a": tf.constant(a, tf.string, shape=[len(a)]),
                         "text_b": tf.constant(b, tf.string, shape=[len(b)])})
        except tf.errors.InvalidArgumentError as e:
            assert len(a) != len(b) or "UTF-8" in str(e) or "utf" in str(e).lower(), str(e)[:500]
            return
        ids = out["input_ids"].numpy()
        assert ids.shape == (len(a), 24) and (ids >= 0).all() and (ids < 300).all()
        assert (out["input_mask"].numpy().sum(-1) >= 2).all()  # at least [CLS] and [SEP]

    check()


@pytest.mark.heavy
def test_token_id_signatures_check_their_inputs(spm_model, tmp_path):
    """Bad token-id requests to a classifier export are refused with a message naming the input and the limit
    (no silent broadcast, no gather error without a name); an empty batch is an empty answer, through both the
    token-id and the raw-text signature. The same check (``export.savedmodel.checked_token_ids``) guards SQuAD's
    and RACE's token-id signatures (their export tests send mismatched shapes)."""
    import keras
    import numpy as np

    from albert_tf.tasks.glue import export as serving
    from albert_tf.tasks.glue.model import AlbertClassifier

    keras.utils.set_random_seed(0)
    config = AlbertConfig.from_name("albert_tiny").replace(vocab_size=300)
    model = AlbertClassifier(config, num_labels=2)
    pre = AlbertPreprocessor.from_tokenizer(FullTokenizer(spm_model_file=spm_model), 16)
    path = str(tmp_path / "cls" / "1")
    serving.export_classifier(model, path, labels=["0", "1"], text_pair=True, preprocessor=pre)
    loaded = tf.saved_model.load(path)
    serve = loaded.signatures["serve_token_ids"]
    ids = np.full((2, 16), 5, "int32")
    good = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    assert serve(**{k: tf.constant(v) for k, v in good.items()})["probabilities"].shape == (2, 2)
    limit = config.max_position_embeddings
    cases = {
        "input_ids must lie in [0, 300) (the vocabulary size)": {"input_ids": ids + 300},
        "input_ids must lie in [0, 300)": {"input_ids": ids - 6},
        f"segment_ids must lie in [0, {config.type_vocab_size}) (type_vocab_size)": {"segment_ids": ids},
        "input_mask must lie in [0, 2) (a mask)": {"input_mask": ids},
        "input_mask must have the shape of input_ids ([batch, seq])": {"input_mask": np.ones((1, 16), "int32")},
        "segment_ids must have the shape of input_ids": {"segment_ids": np.zeros((2, 8), "int32")},
        f"input_ids: sequences longer than max_position_embeddings={limit}": {
            k: np.zeros((1, limit + 1), "int32") for k in good},
    }
    for message, change in cases.items():
        request = {k: tf.constant(v) for k, v in {**good, **change}.items()}
        with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(message)):
            serve(**request)
    assert serve(**{k: tf.zeros((0, 16), tf.int32) for k in good})["probabilities"].shape == (0, 2)
    text = loaded.signatures["serving_default"]
    assert text(text_a=tf.constant([], tf.string), text_b=tf.constant([], tf.string))["label"].shape == (0,)
