"""The TensorFlow-free ``tf.train.Example`` class parses every record as TensorFlow's own class does."""

from __future__ import annotations

import random

import pytest
import tensorflow as tf
from tensorflow.core.example import example_pb2

from albert_tf.data.example_proto import DecodeError, Example, feature_values


def _random_example(rng: random.Random) -> tf.train.Example:
    feature = {}
    for k in range(rng.randrange(0, 8)):
        kind = rng.choice(("int64", "float", "bytes", "none"))
        n = rng.choice((0, 1, 3, 512))
        if kind == "int64":
            values = [rng.randrange(-(2**63), 2**63) if rng.random() < 0.1 else rng.randrange(0, 30_000)
                      for _ in range(n)]
            feature[f"ids_{k}"] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        elif kind == "float":
            feature[f"w_{k}"] = tf.train.Feature(float_list=tf.train.FloatList(value=[rng.uniform(-1, 1)
                                                                                     for _ in range(n)]))
        elif kind == "bytes":
            feature[f"tekst_é_{k}"] = tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[bytes(rng.randrange(256) for _ in range(rng.randrange(9)))
                                                     for _ in range(n)]))
        else:
            feature[f"empty_{k}"] = tf.train.Feature()
    return tf.train.Example(features=tf.train.Features(feature=feature))


def test_every_feature_parses_to_the_values_tensorflow_reads():
    rng = random.Random(0)
    for _ in range(200):
        raw = _random_example(rng).SerializeToString()
        theirs, ours = example_pb2.Example.FromString(raw), Example.FromString(raw)
        assert set(ours.features.feature) == set(theirs.features.feature)
        for name, feature in theirs.features.feature.items():
            kind = feature.WhichOneof("kind")
            assert ours.features.feature[name].WhichOneof("kind") == kind
            expected = list(getattr(feature, kind).value) if kind else []
            got = feature_values(ours, name)
            if kind == "float_list":
                assert got == pytest.approx(expected, abs=0) and all(isinstance(v, float) for v in got)
            else:
                assert got == expected
        assert feature_values(ours, "not there") is None
        assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)


def test_bytes_that_are_no_example_raise_decode_error():
    for raw in (b"\xff\xff\xff", b"this is not a TFRecord file\n", b"\x0a\x05\x0a\x03"):
        with pytest.raises(DecodeError):
            example_pb2.Example.FromString(raw)  # the reference refuses them too
        with pytest.raises(DecodeError):
            Example.FromString(raw)
