"""The pretraining input pipeline (spec 3.2): layout, int32 cast, determinism under a seed, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from synthetic_records import write_synthetic_records

from albert_tf.data.pretraining.dataset import (
    PretrainingDataError,
    pretraining_dataset,
    validate_pretraining_files,
)
from albert_tf.data.pretraining.record_files import expand_globs

SEQ, PRED = 24, 4


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    return [
        write_synthetic_records(str(d / f"part-{i}.tfrecord"), 40, SEQ, PRED, 500, seed=i, full_predictions=False)
        for i in range(3)
    ]


def first_batches(files, seed, n=4, batch=8):
    ds = pretraining_dataset(files, batch, SEQ, PRED, is_training=True, seed=seed, vocab_size=500)
    return [{k: v.numpy() for k, v in b.items()} for b in ds.take(n)]


def test_layout_and_dtypes(files):
    batch = first_batches(files, seed=1, n=1)[0]
    assert batch["input_ids"].dtype == np.int32 and batch["input_ids"].shape == (8, SEQ)
    assert batch["masked_lm_positions"].shape == (8, PRED) and batch["masked_lm_ids"].dtype == np.int32
    assert batch["masked_lm_weights"].dtype == np.float32
    assert batch["next_sentence_labels"].shape == (8, 1)
    # masked positions hold [MASK]=4 where the weight is 1, and point inside the real tokens
    rows = np.arange(8)[:, None]
    real = batch["masked_lm_weights"] > 0
    assert np.all(batch["input_ids"][rows, batch["masked_lm_positions"]][real] == 4)
    assert np.all(batch["input_mask"][rows, batch["masked_lm_positions"]][real] == 1)


def test_deterministic_under_seed_and_seed_matters(files):
    a, b, c = first_batches(files, 7), first_batches(files, 7), first_batches(files, 8)
    for x, y in zip(a, b):
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])
    assert any(not np.array_equal(x["input_ids"], z["input_ids"]) for x, z in zip(a, c))


def test_training_repeats_and_covers_every_file(files):
    ids = set()
    for batch in first_batches(files, 3, n=60, batch=8):  # 480 reads of 120 records: repeats
        ids.update(map(tuple, batch["input_ids"].tolist()))
    assert len(ids) == 120


def test_eval_reads_every_record_once_in_order(files):
    """Evaluation keeps the last partial batch (the trainer pads it), unlike the official drop_remainder."""
    sizes = [int(b["input_ids"].shape[0]) for b in pretraining_dataset(files, 16, SEQ, PRED, is_training=False)]
    assert sizes == [16] * 7 + [8]


def test_validation_errors(tmp_path, files):
    with pytest.raises(PretrainingDataError, match="no file matches"):
        expand_globs(str(tmp_path / "missing-*.tfrecord"))
    with pytest.raises(PretrainingDataError, match="is empty"):
        expand_globs(" , ")
    with pytest.raises(PretrainingDataError, match=r"--input_file=.* is a directory; give its record files, e\.g\. "):
        expand_globs(str(tmp_path))
    with pytest.raises(PretrainingDataError, match=r"part-0.tfrecord: record 0: 'input_ids' has 24 values"):
        validate_pretraining_files(files, 32, PRED, 500)
    with pytest.raises(PretrainingDataError, match="vocab_size is 100"):
        validate_pretraining_files(files, SEQ, PRED, 100)
    truncated = tmp_path / "cut.tfrecord"
    truncated.write_bytes(open(files[0], "rb").read()[:50])
    with pytest.raises(PretrainingDataError, match="cut.tfrecord: record 0: truncated"):
        validate_pretraining_files([str(truncated)], SEQ, PRED, 500)
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    with pytest.raises(PretrainingDataError, match="holds no records"):
        validate_pretraining_files([str(empty)], SEQ, PRED, 500)
    assert validate_pretraining_files(files, SEQ, PRED, 500) == 120


def test_pipeline_asserts_ids_below_vocab_size(files):
    ds = pretraining_dataset(files, 8, SEQ, PRED, is_training=True, seed=1, vocab_size=6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="vocab_size 6"):
        next(iter(ds))
