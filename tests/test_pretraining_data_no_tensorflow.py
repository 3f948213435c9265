"""create_pretraining_data on local paths runs without TensorFlow (issue 17, item 4), with the same bytes.

The TFRecord framing is written by ``records.tfrecord_frame`` (CRC-32C from google-crc32c) and the
``tf.train.Example`` bytes by ``records.ExampleEncoder``: here both are compared byte for byte with TensorFlow's
``TFRecordWriter`` and ``Example.SerializeToString``; a local run (main process and worker processes) is shown
never to import TensorFlow, and a ``scheme://`` path (``ram://``) still goes through ``tf.io.gfile``.
(``test_pretraining_data_official.py`` compares whole files with the official script's TensorFlow-written ones.)
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import tensorflow as tf

from albert_tf.data.pretraining.instances import Instance
from albert_tf.data.pretraining.records import (
    FEATURE_NAMES,
    ExampleEncoder,
    TFRecordShardWriter,
    parse_examples,
    tfrecord_frame,
    varint,
)
from albert_tf.data.sample_corpus import write_sample_corpus

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_framing_equals_tfrecordwriter(tmp_path):
    rng = random.Random(0)
    records = [b"", b"x", bytes(range(256)) * 3] + [rng.randbytes(rng.randrange(1, 70000)) for _ in range(20)]
    ours, theirs = str(tmp_path / "ours.tfrecord"), str(tmp_path / "tf.tfrecord")
    with TFRecordShardWriter([ours]) as writer:
        for r in records:
            writer.write(r)
    with tf.io.TFRecordWriter(theirs) as writer:
        for r in records:
            writer.write(r)
    with open(ours, "rb") as a, open(theirs, "rb") as b:
        assert a.read() == b.read()
    assert b"".join(tfrecord_frame(r) for r in records) == open(theirs, "rb").read()
    # and TensorFlow's reader checks the CRCs
    assert list(tf.data.TFRecordDataset([ours]).as_numpy_iterator()) == records


def test_example_bytes_equal_serialize_to_string():
    """The hand-written wire format is ``tf.train.Example.SerializeToString`` of the official feature layout."""
    seq, preds = 16, 5
    encoder = ExampleEncoder(seq, preds, vocab_size=30000)
    rng = random.Random(1)
    for k in range(30):
        len_a = rng.randrange(1, 6)
        len_b = rng.randrange(0, 6) if k % 3 else 0
        n = len_a + len_b + 2 + (1 if len_b else 0)
        n = min(n, seq)
        ids = [rng.randrange(0, 30000) for _ in range(n)]
        positions = sorted(rng.sample(range(1, n), min(n - 1, rng.randrange(0, preds + 1))))
        inst = Instance(ids=ids, len_a=len_a, len_b=len_b, token_boundary=[rng.randrange(2) for _ in range(n)],
                        positions=positions, labels=[rng.randrange(0, 30000) for _ in positions],
                        label=k % 2)
        ours = encoder.encode(inst)
        pad = seq - n
        mpad = preds - len(positions)
        seg = ([0] * (len_a + 2) + [1] * (len_b + 1) if len_b else [0] * n) + [0] * pad

        def ints(v):
            return tf.train.Feature(int64_list=tf.train.Int64List(value=list(v)))

        feature = {
            "input_ids": ints(ids + [0] * pad),
            "input_mask": ints([1] * n + [0] * pad),
            "segment_ids": ints(seg),
            "token_boundary": ints(list(inst.token_boundary) + [0] * pad),
            "masked_lm_positions": ints(positions + [0] * mpad),
            "masked_lm_ids": ints(list(inst.labels) + [0] * mpad),
            "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * len(positions)
                                                                                 + [0.0] * mpad)),
            "next_sentence_labels": ints([inst.label]),
        }
        # Map entries have no defined serialization order (TensorFlow's Python protobuf writes hash order, or sorted
        # keys with deterministic=True): TF serializes each entry, and they are joined in the official order.
        entries = b"".join(tf.train.Features(feature={name: feature[name]}).SerializeToString()
                           for name in FEATURE_NAMES)
        assert ours == b"\x0a" + varint(len(entries)) + entries, k
        assert tf.train.Example.FromString(ours) == tf.train.Example(features=tf.train.Features(feature=feature))


def test_remote_paths_still_go_through_gfile(tmp_path):
    records = [b"a" * 10, b"bc" * 300]
    path = "ram://no_tf_test/records.tfrecord"
    with TFRecordShardWriter([path]) as writer:
        for r in records:
            writer.write(r)
    assert list(tf.data.TFRecordDataset([path]).as_numpy_iterator()) == records
    tf.io.gfile.remove(path)


def test_local_run_never_imports_tensorflow(tmp_path, spm_model):
    """Main process and 2 spawned workers: a stand-in ``tensorflow`` package first on the path records any import."""
    write_sample_corpus(str(tmp_path / "corpus.txt"), num_documents=60, seed=3)
    fake = tmp_path / "fake" / "tensorflow"
    fake.mkdir(parents=True)
    marker = tmp_path / "imported_by"
    (fake / "__init__.py").write_text(textwrap.dedent(f"""
        import os
        with open({str(marker)!r}, "a") as f:
            f.write(str(os.getpid()) + "\\n")
        raise ImportError("tensorflow must not be imported by a local create_pretraining_data run")
    """))
    out = tmp_path / "out" / "records.tfrecord"
    script = textwrap.dedent("""
        import sys
        from albert_tf.cli.create_pretraining_data import main
        try:
            main(sys.argv)
        except SystemExit as e:
            code = e.code
        assert "tensorflow" not in sys.modules, "tensorflow imported"
        sys.exit(code)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "fake"), REPO]))
    for workers in (1, 2):
        target = f"{out}@2" if workers == 2 else str(out)
        proc = subprocess.run(
            [sys.executable, "-c", script, f"--input_file={tmp_path / 'corpus.txt'}",
             f"--output_file={target}", f"--spm_model_file={spm_model}", "--dupe_factor=2", "--max_seq_length=64",
             f"--num_workers={workers}", "--chunk_size_mb=0.002"],
            cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        assert not marker.exists(), marker.read_text()
    # the records read back with TensorFlow (in this process), CRCs checked
    shards = sorted(str(p) for p in (tmp_path / "out").glob("records.tfrecord-*"))
    assert len(shards) == 2
    rows = list(parse_examples(shards))
    assert rows and all(len(r["input_ids"]) == 64 for r in rows)
    assert np.isclose(sum(sum(r["masked_lm_weights"]) for r in rows),
                      sum(sum(1 for w in r["masked_lm_weights"] if w) for r in rows))
