"""``tf.train.Example`` bytes for pretraining instances (official ``create_pretraining_data.py:
write_instance_to_example_files``) without building protos, and TFRecord writing.

The features, their order and lengths are the official ones (the table in ``schema.py``).

Building a ``tf.train.Example`` per instance costs more than creating the instance, so the protobuf wire format is
written directly: packed varints from per-value byte tables. The bytes parse with ``tf.train.Example.FromString``
and ``tf.io.parse_single_example`` (tested) and are deterministic (fixed feature order).

The TFRecord framing is written here too (:func:`tfrecord_frame`: length, masked CRC-32C of the length, data,
masked CRC-32C of the data; CRCs from ``google-crc32c``), byte-identical to ``tf.io.TFRecordWriter``'s (tested),
so creating records on local paths never imports TensorFlow (seconds of start-up per run, and per worker). Remote
paths (``gs://`` ...) are opened through ``tf.io.gfile``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import google_crc32c

from albert_tf import files as _fs
from albert_tf.data.pretraining.instances import Instance
from albert_tf.data.pretraining.schema import FEATURE_NAMES

__all__ = ["FEATURE_NAMES", "ExampleEncoder", "TFRecordShardWriter", "parse_examples", "tfrecord_frame", "varint"]

_CRC_MASK_DELTA = 0xA282EAD8


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C (``crc32c::Mask``): rotate right by 15 bits, add a constant, modulo 2**32."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _CRC_MASK_DELTA) & 0xFFFFFFFF


def tfrecord_frame(record: bytes) -> bytes:
    """One TFRecord: uint64 length, uint32 masked CRC of those 8 bytes, the data, uint32 masked CRC of the data
    (little-endian), exactly as ``tf.io.TFRecordWriter`` writes it (uncompressed)."""
    length = struct.pack("<Q", len(record))
    return b"".join((length, struct.pack("<I", masked_crc32c(length)), record,
                     struct.pack("<I", masked_crc32c(record))))


def varint(n: int) -> bytes:
    """Protobuf base-128 varint of a non-negative int."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key_prefix(name: str) -> bytes:
    key = name.encode()
    return b"\x0a" + varint(len(key)) + key


class ExampleEncoder:
    """Serializes :class:`Instance` objects as ``tf.train.Example`` bytes with the official features."""

    def __init__(self, max_seq_length: int, max_predictions: int, vocab_size: int):
        self.max_seq_length = int(max_seq_length)
        self.max_predictions = int(max_predictions)  # max_predictions_per_seq * (1 + do_permutation)
        self._ids = [varint(i) for i in range(max(vocab_size, max_seq_length, 1))]
        self._keys = {name: _key_prefix(name) for name in FEATURE_NAMES}
        self._one = struct.pack("<f", 1.0)
        self._labels = [self._entry("next_sentence_labels", b"\x1a", self._ids[i]) for i in (0, 1)]
        # features whose packed payload has a fixed length: 0/1 values are one byte each, floats four
        seq = self.max_seq_length
        self._fixed = {name: self._header(name, b"\x1a", seq) for name in ("input_mask", "segment_ids",
                                                                            "token_boundary")}
        self._fixed["masked_lm_weights"] = self._header("masked_lm_weights", b"\x12", 4 * self.max_predictions)

    def _varint(self, n: int) -> bytes:
        return self._ids[n] if n < len(self._ids) else varint(n)

    def _header(self, name: str, kind: bytes, payload_len: int) -> bytes:
        """Bytes of a map entry up to its payload (everything but the packed values)."""
        v = self._varint
        inner_len = 1 + len(v(payload_len)) + payload_len
        feature_len = 1 + len(v(inner_len)) + inner_len
        key = self._keys[name]
        entry_len = len(key) + 1 + len(v(feature_len)) + feature_len
        return b"".join((b"\x0a", v(entry_len), key, b"\x12", v(feature_len), kind, v(inner_len), b"\x0a",
                         v(payload_len)))

    def _entry(self, name: str, kind: bytes, payload: bytes) -> bytes:
        # Features.feature map entry {key (1): name, value (2): Feature {int64_list (3) | float_list (2) {value (1)}}}
        return self._header(name, kind, len(payload)) + payload

    def encode(self, inst: Instance) -> bytes:
        seq_len = self.max_seq_length
        n = len(inst.ids)
        if n > seq_len:
            raise ValueError(f"instance of {n} tokens exceeds max_seq_length {seq_len}")
        pad = seq_len - n
        table = self._ids
        zeros = b"\x00" * pad
        input_ids = b"".join([table[t] for t in inst.ids]) + zeros
        input_mask = b"\x01" * n + zeros
        if inst.len_b:
            segment_ids = b"\x00" * (inst.len_a + 2) + b"\x01" * (inst.len_b + 1) + zeros
        else:
            segment_ids = b"\x00" * n + zeros
        token_boundary = bytes(inst.token_boundary) + zeros
        k = len(inst.positions)
        mpad = self.max_predictions - k
        if mpad < 0:
            raise ValueError(f"{k} masked positions exceed the {self.max_predictions} slots")
        mzeros = b"\x00" * mpad
        positions = b"".join([table[p] for p in inst.positions]) + mzeros
        labels = b"".join([table[t] for t in inst.labels]) + mzeros
        weights = self._one * k + b"\x00\x00\x00\x00" * mpad
        entry = self._entry
        fixed = self._fixed
        features = b"".join(
            (
                entry("input_ids", b"\x1a", input_ids),
                fixed["input_mask"], input_mask,
                fixed["segment_ids"], segment_ids,
                fixed["token_boundary"], token_boundary,
                entry("masked_lm_positions", b"\x1a", positions),
                entry("masked_lm_ids", b"\x1a", labels),
                fixed["masked_lm_weights"], weights,
                self._labels[inst.label],
            )
        )
        return b"\x0a" + self._varint(len(features)) + features


class TFRecordShardWriter:
    """Writes serialized examples round-robin over ``paths`` (instance k goes to shard k % len(paths)).

    TFRecord framing by :func:`tfrecord_frame`; local files through ``open``, remote ones through ``tf.io.gfile``.
    """

    def __init__(self, paths: Sequence[str]):
        self.paths = list(paths)
        self._writers = []
        try:
            for p in self.paths:
                self._writers.append(_fs.open_file(p, "wb"))
        except BaseException:
            self.close()
            raise
        self.counts = [0] * len(self.paths)
        self._next = 0

    def write(self, record: bytes) -> None:
        self._writers[self._next].write(tfrecord_frame(record))
        self.counts[self._next] += 1
        self._next = (self._next + 1) % len(self._writers)

    def close(self) -> None:
        for w in self._writers:
            w.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def parse_examples(paths: Sequence[str], limit: int | None = None):
    """Yield ``{name: list}`` dicts from TFRecord files of pretraining examples (tests, statistics, inspection)."""
    import tensorflow as tf

    count = 0
    for path in paths:
        for raw in tf.data.TFRecordDataset([path]).as_numpy_iterator():
            ex = tf.train.Example.FromString(raw)
            out = {}
            for name, feat in ex.features.feature.items():
                kind = feat.WhichOneof("kind")
                out[name] = list(getattr(feat, kind).value)
            yield out
            count += 1
            if limit is not None and count >= limit:
                return
