"""The order fine-tuning reads its training records in: a sharded cache read in a seed-drawn file order.

A training cache is one seeded permutation of the examples (``data.cache.training_order``). Read as one file through
a 1,000-record buffer, every seed starts from the same part of it, so ``--num_trials`` seeds of a run shorter than an
epoch trained on the same examples (the SST-2 parity run in benchmarks/README.md). Split into files read in an order
drawn from the seed, each seed starts elsewhere; the stream stays deterministic per seed and resumes exactly.
"""

from __future__ import annotations

import os

import pytest
import tensorflow as tf

from albert_tf.data import cache
from albert_tf.data.batching import SHUFFLE_BUFFER, record_dataset

SPEC = {"index": tf.io.FixedLenFeature([], tf.int64)}


def _record(i: int) -> bytes:
    feature = {"index": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _write(folder, count, sharded):
    paths = cache.record_paths(str(folder / "train.tf_record"), count, sharded)
    cache.write_records(paths, (_record(i) for i in range(count)), count)
    return paths


def _stream(paths, seed, batches, batch_size=50):
    ds = record_dataset(paths, SPEC, batch_size, is_training=True, seed=seed)
    return [int(i) for b in ds.take(batches) for i in b["index"].numpy()]


@pytest.mark.parametrize(("count", "sharded", "files"), [
    (10, False, 1), (100_000, False, 1), (0, True, 1), (31, True, 1), (64, True, 2), (100, True, 3),
    (3_668, True, 114), (67_349, True, 128),
])
def test_a_cache_has_one_file_per_32_records_at_most_128(count, sharded, files):
    paths = cache.record_paths("/c/x.tf_record", count, sharded)
    assert len(paths) == files
    assert paths == (["/c/x.tf_record"] if not sharded else
                     [f"/c/x.tf_record-{k:05d}-of-{files:05d}" for k in range(files)])


def test_records_go_to_consecutive_files_and_a_wrong_count_leaves_no_file(tmp_path):
    paths = _write(tmp_path, 100, sharded=True)
    sizes = [sum(1 for _ in tf.data.TFRecordDataset(p)) for p in paths]
    assert sizes == [33, 33, 34]
    read = [int(tf.io.parse_single_example(r, SPEC)["index"]) for r in tf.data.TFRecordDataset(paths)]
    assert read == list(range(100))  # the files in order are the records in order
    for announced, given in ((101, 100), (99, 100)):
        folder = tmp_path / f"bad{announced}"
        folder.mkdir()
        bad = cache.record_paths(str(folder / "t.tf_record"), announced, sharded=True)
        with pytest.raises(ValueError, match=f"records than the {announced} announced"):
            cache.write_records(bad, (_record(i) for i in range(given)), announced)
        assert not [n for n in os.listdir(folder) if ".tmp" in n]  # no temporary file left behind


@pytest.mark.heavy
def test_seeds_start_from_other_records_of_a_sharded_cache(tmp_path):
    """8,000 records: the first 1,600 of four seeds together cover over half the set when the cache is 128 files; as
    one file, the 1,000-record buffer keeps every seed within the first 2,600 records of the same permutation."""
    (tmp_path / "one").mkdir()
    (tmp_path / "sharded").mkdir()
    one = _write(tmp_path / "one", 8_000, sharded=False)
    sharded = _write(tmp_path / "sharded", 8_000, sharded=True)
    assert (len(one), len(sharded)) == (1, 128)
    seeds = (0, 1, 2, 3)
    firsts_one = [_stream(one, seed, 32) for seed in seeds]
    firsts = [_stream(sharded, seed, 32) for seed in seeds]
    assert max(max(f) for f in firsts_one) < 1_600 + SHUFFLE_BUFFER
    assert len(set().union(*firsts)) > 0.5 * 8_000  # 57-61% under four global seeds; one file: < 32.5%
    assert all(len(set(a) & set(b)) < 0.6 * 1_600 for k, a in enumerate(firsts) for b in firsts[k + 1:])
    assert _stream(sharded, 2, 32) == firsts[2]  # a seed gives one stream


@pytest.mark.heavy
@pytest.mark.parametrize(("count", "batch_size"), [(4_000, 50), (311, 16)])
def test_every_epoch_reads_every_record_once(tmp_path, count, batch_size):
    """The stream repeats after the shuffle: each epoch is a permutation of the records, in another file order each
    time. 311 records (the SQuAD v1 parity subset: 9 files, fewer records than the buffer) included: repeated
    before the buffer, an epoch's draws would come from three epochs' records at once."""
    paths = _write(tmp_path, count, sharded=True)
    epochs = 6
    stream = _stream(paths, 7, -(-epochs * count // batch_size), batch_size)
    for k in range(epochs):
        assert sorted(stream[k * count:(k + 1) * count]) == list(range(count)), f"epoch {k}"
    firsts = [[i * len(paths) // count for i in stream[k * count:k * count + 40]] for k in range(epochs)]
    assert len({tuple(f) for f in firsts}) == epochs  # another order each epoch


def test_a_restored_iterator_reads_on_where_the_uninterrupted_one_does(tmp_path):
    paths = _write(tmp_path, 1_000, sharded=True)
    whole = _stream(paths, 3, 50, batch_size=40)  # two epochs
    ds = record_dataset(paths, SPEC, 40, is_training=True, seed=3)
    it = iter(ds)
    head = [int(i) for _ in range(17) for i in next(it)["index"].numpy()]
    saved = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "ckpt" / "it"))
    again = iter(record_dataset(paths, SPEC, 40, is_training=True, seed=3))
    tf.train.Checkpoint(iterator=again).read(saved).assert_consumed()
    tail = [int(i) for _ in range(33) for i in next(again)["index"].numpy()]
    assert head + tail == whole
