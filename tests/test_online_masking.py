"""Online masking (``run_pretraining --masked_lm_budget=N``): masks drawn again in the tf.data graph per read.

Records are made from English text (three Gutenberg books and the real 30k-clean SentencePiece model where
``../shared`` is present, else the sample corpus and conftest's substitute model; length 128) with the offline
masker; the unmasked sequence of every instance is captured from the offline masker's input, an oracle independent
of the records. Checked on the online masks: never [CLS]/[SEP]/padding, whole words
only, the documented count, 80/10/10 within binomial tolerance, the n-gram lengths (drawn and as runs of masked
words in the records, measured with ``stats.record_statistics`` like the offline records), exact reconstruction
of the original ids, other masks per epoch, the same masks per seed and across an exact resume, the masking flags
taken from the sidecar, and a short ``run_pretraining --masked_lm_budget=20`` run.
"""

from __future__ import annotations

import collections
import json
import math
import shutil

import numpy as np
import pytest
import tensorflow as tf
from synthetic_records import write_synthetic_records
from test_run_pretraining import PRED, SEQ, VOCAB, base_args, run_cli, step_losses

from albert_tf.data.prepare_text import prepare_files
from albert_tf.data.pretraining import PretrainingDataConfig, TokenizerSpec, create_pretraining_data, instances
from albert_tf.data.pretraining.dataset import (
    online_masking_config,
    pretraining_dataset,
    records_mask_id,
    validate_pretraining_files,
)
from albert_tf.data.pretraining.online_masking import (
    OnlineMaskingConfig,
    add_random_draws,
    mask_batch,
    mask_example,
    masked_token_count,
    masking_key,
    original_ids,
)
from albert_tf.data.pretraining.schema import feature_spec
from albert_tf.data.pretraining.stats import record_statistics

SEQ_LEN, MAX_PRED, PROB, MASK_ID = 128, 20, 0.15, 4
BOOKS = ("tom_sawyer.txt", "alice_in_wonderland.txt", "pride_and_prejudice.txt")


@pytest.fixture(scope="module")
def real(tmp_path_factory, spm_model):
    """Offline records of English text, and the unmasked ids of every instance (captured from the masker's input).

    The three books with 30k-clean where ``../shared`` is present (2,061 instances); else 1,200 documents of the
    sample corpus with the substitute model (about 2,600): every check below is of the masker, on any text and vocab.
    """
    from conftest import shared_data_dir

    from albert_tf.data.sample_corpus import write_sample_corpus

    shared = shared_data_dir()
    books = [shared / "text" / "gutenberg_hobil" / name for name in BOOKS] if shared is not None else []
    spec = TokenizerSpec(spm_model_file=str(spm_model))
    d = tmp_path_factory.mktemp("online_masking")
    corpus = str(d / "corpus.txt")
    if books and all(book.is_file() for book in books):
        prepare_files([str(book) for book in books], corpus, encodings=("utf-8", "iso-8859-1"))
    else:
        write_sample_corpus(corpus, num_documents=1200, seed=0)
    originals: list[tuple[int, ...]] = []
    offline = instances.create_masked_lm_predictions

    def capture(ids, *args):
        originals.append(tuple(ids))
        return offline(ids, *args)

    config = PretrainingDataConfig(max_seq_length=SEQ_LEN, max_predictions_per_seq=MAX_PRED, dupe_factor=1,
                                   masked_lm_prob=PROB, random_seed=7)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(instances, "create_masked_lm_predictions", capture)
        summary = create_pretraining_data([corpus], [str(d / "real.tfrecord")], spec, config, num_workers=1,
                                          log=None)
    assert len(originals) == summary["counts"]["instances"] >= 2000
    return {"dir": d, "files": summary["output_files"], "originals": originals, "vocab_size": spec.build().vocab_size}


def _spec():
    spec = feature_spec(SEQ_LEN, MAX_PRED)
    spec["token_boundary"] = tf.io.FixedLenFeature([SEQ_LEN], tf.int64)
    return spec


def _parse(record):
    example = tf.io.parse_single_example(record, _spec())
    return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in example.items()}


def _config(vocab_size, budget=20, seed=1, **kw) -> OnlineMaskingConfig:
    return OnlineMaskingConfig(budget=budget, vocab_size=vocab_size, max_predictions_per_seq=MAX_PRED,
                               masked_lm_prob=PROB, mask_id=MASK_ID, seed=seed, **kw)


def _online(files, config, epochs=1, batch=128):
    """Records read ``epochs`` times in file order, masked online; (record, masked, draws) numpy dicts per read.

    Built from the public pieces as the reader does (enumerate -> draws -> batch -> mask_batch), keeping each
    record's own features beside its masks.
    """

    def draw(index, record):
        parsed = _parse(record)
        return dict(parsed, original=original_ids(parsed)), add_random_draws(parsed, masking_key(config.seed, index),
                                                                             config)

    d = tf.data.TFRecordDataset(files).repeat(epochs).enumerate().map(draw).batch(batch)
    d = d.map(lambda rec, drawn: (rec, mask_batch(drawn, config), drawn["online_ngram_lengths"]))
    out = []
    for rec, masked, lengths in d.as_numpy_iterator():
        for i in range(len(lengths)):
            out.append(({k: v[i] for k, v in rec.items()}, {k: v[i] for k, v in masked.items()}, lengths[i]))
    return out


def _words(candidate, boundary):
    """Word index per position (-1 off candidates): a word starts at a boundary or after a non-candidate."""
    word, current, previous = np.full(len(candidate), -1), -1, False
    for p, is_candidate in enumerate(candidate):
        if is_candidate:
            if boundary[p] or not previous:
                current += 1
            word[p] = current
        previous = is_candidate
    return word


def _check_one(rec, out, budget, original):
    n = int(rec["input_mask"].sum())
    n_first = int(((rec["segment_ids"] == 0) & (rec["input_mask"] == 1)).sum())
    special = {0, n - 1, n_first - 1}
    candidate = np.array([p < n and p not in special for p in range(SEQ_LEN)])
    weights = out["masked_lm_weights"]
    k = int(weights.sum())
    positions = out["masked_lm_positions"][:k]
    assert list(weights) == [1.0] * k + [0.0] * (MAX_PRED - k)
    assert not out["masked_lm_positions"][k:].any() and not out["masked_lm_ids"][k:].any()
    assert list(positions) == sorted(set(positions.tolist()))
    assert candidate[positions].all()  # never [CLS], [SEP] or padding
    # the labels are the original ids; put back, they give the original sequence
    assert (out["masked_lm_ids"][:k] == original[positions]).all()
    restored = out["input_ids"].copy()
    restored[positions] = out["masked_lm_ids"][:k]
    assert (restored == original).all()
    # whole words: every masked position's word is masked entirely
    word = _words(candidate, rec["token_boundary"])
    masked = np.zeros(SEQ_LEN, bool)
    masked[positions] = True
    for w in set(word[positions].tolist()):
        assert masked[word == w].all()
    # the count: K unless no unmasked word fits what is left of K
    target = masked_token_count(n, budget, MAX_PRED, PROB)
    assert k <= target
    if k < target:
        sizes = collections.Counter(word[candidate & ~masked].tolist())
        assert all(size > target - k for size in sizes.values()), (k, target, sizes)
    return k, target


@pytest.mark.heavy
@pytest.mark.parametrize("budget", [20, 7])
def test_masks_are_whole_words_never_special_and_counted(real, budget):
    reads = _online(real["files"], _config(real["vocab_size"], budget), epochs=1)
    short = 0
    for rec, out, _ in reads:
        k, target = _check_one(rec, out, budget, rec["original"])
        short += k < target
    assert len(reads) == len(real["originals"])
    assert short / len(reads) < 0.01  # fewer than K only where the words left are too long


def test_original_ids_reconstructed_exactly(real):
    """``original_ids`` of the records == the offline masker's input, as multisets over all instances."""
    batches = tf.data.TFRecordDataset(real["files"]).map(_parse).batch(512)
    rebuilt = collections.Counter()
    for batch in batches:
        ids, mask = original_ids(batch).numpy(), batch["input_mask"].numpy()
        for row, m in zip(ids, mask):
            rebuilt[tuple(row[: int(m.sum())].tolist())] += 1
    assert rebuilt == collections.Counter(real["originals"])


def _binomial_ok(hits, total, p, sigmas=4.0):
    return abs(hits / total - p) <= sigmas * math.sqrt(p * (1 - p) / total)


def _write(path, rows):
    def ints(v):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(x) for x in v]))

    with tf.io.TFRecordWriter(path) as writer:
        for row in rows:
            features = {k: ints(v) for k, v in row.items() if k != "masked_lm_weights"}
            features["masked_lm_weights"] = tf.train.Feature(
                float_list=tf.train.FloatList(value=row["masked_lm_weights"].tolist()))
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())


@pytest.mark.heavy
def test_statistics_match_the_offline_masker(real):
    """80/10/10 within binomial tolerance; drawn n-gram lengths ∝ 1/n; masked-word runs as the offline records."""
    reads = _online(real["files"], _config(real["vocab_size"], 20), epochs=3)
    lengths = np.concatenate([draws for _, _, draws in reads])
    for n, p in zip((1, 2, 3), (6 / 11, 3 / 11, 2 / 11)):
        assert _binomial_ok(int((lengths == n).sum()), len(lengths), p), n
    online_file = str(real["dir"] / "online.tfrecord")
    _write(online_file, [dict(out, token_boundary=rec["token_boundary"]) for rec, out, _ in reads])
    online = record_statistics([online_file], MASK_ID, MAX_PRED, PROB)
    offline = record_statistics(real["files"], MASK_ID, MAX_PRED, PROB)
    print("online", json.dumps(online), "\noffline", json.dumps(offline))
    total = online["masked_positions"]
    assert total > 100_000
    shares = online["mask_shares"]
    for name, p in (("mask", 0.8), ("original", 0.1), ("random", 0.1)):
        assert _binomial_ok(round(shares[name] * total), total, p), (name, shares)
    for key in ("1", "2", "3", ">=4"):
        assert abs(online["run_lengths"][key] - offline["run_lengths"][key]) <= 0.02, (key, online, offline)
    assert online["budget"]["over"] == 0
    assert online["budget"]["below"] / online["records"] <= offline["budget"]["below"] / offline["records"]


def _positions(dataset, batches):
    return [b["masked_lm_positions"] for b in dataset.take(batches).as_numpy_iterator()]


@pytest.mark.heavy
def test_epochs_differ_seeds_repeat_and_resume_is_exact(real, tmp_path):
    n, vocab_size = len(real["originals"]), real["vocab_size"]

    def dataset(seed=1):
        return pretraining_dataset(real["files"], 64, SEQ_LEN, MAX_PRED, is_training=True, seed=3,
                                   vocab_size=vocab_size, online_masking=_config(vocab_size, 20, seed=seed))

    # each read of a record is masked anew: the two reads of a record in two epochs differ (almost always)
    reads = collections.defaultdict(list)
    for batch in dataset().take(2 * n // 64).as_numpy_iterator():
        for ids, pos, labels, w in zip(batch["input_ids"], batch["masked_lm_positions"], batch["masked_lm_ids"],
                                       batch["masked_lm_weights"]):
            restored = ids.copy()
            restored[pos[w > 0]] = labels[w > 0]
            reads[restored.tobytes()].append(pos.tobytes())
    twice = [r for r in reads.values() if len(r) == 2]
    assert len(twice) > n // 2
    assert sum(a != b for a, b in twice) / len(twice) > 0.95
    # the same seed gives the same masks, another seed others
    first = _positions(dataset(), 5)
    assert all((a == b).all() for a, b in zip(first, _positions(dataset(), 5)))
    assert not all((a == b).all() for a, b in zip(first, _positions(dataset(seed=2), 5)))
    # an iterator restored from a checkpoint continues with the masks the uninterrupted one draws
    iterator = iter(dataset())
    for _ in range(3):
        next(iterator)
    prefix = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / "it"))
    expected = [next(iterator)["masked_lm_positions"].numpy() for _ in range(3)]
    resumed = iter(dataset())
    tf.train.Checkpoint(iterator=resumed).read(prefix).assert_consumed()
    assert all((a == next(resumed)["masked_lm_positions"].numpy()).all() for a in expected)
    # the model gets what it gets from the records' own masks
    assert dataset().element_spec == pretraining_dataset(real["files"], 64, SEQ_LEN, MAX_PRED, is_training=True,
                                                         vocab_size=vocab_size).element_spec
    # every evaluation masks the held-out records the same way
    evaluation = [pretraining_dataset(real["files"][:1], 64, SEQ_LEN, MAX_PRED, is_training=False,
                                      online_masking=_config(vocab_size, 20)) for _ in range(2)]
    assert all((a == b).all() for a, b in zip(*(_positions(d, 4) for d in evaluation)))


@pytest.mark.heavy
def test_a_task_masks_training_online_and_can_evaluate_on_the_records_own_masks(real):
    """``online_masking_eval=False`` (the reproduction's static-vs-dynamic comparison): training reads new masks,
    evaluation the records' own, so runs with and without dynamic masking are scored on the same masked tokens."""
    from albert_tf.config import AlbertConfig
    from albert_tf.tasks.pretraining.task import PretrainingTask
    from albert_tf.training.task import EVAL, TRAIN

    config = AlbertConfig.from_name("albert_tiny").replace(vocab_size=real["vocab_size"])
    masking = _config(real["vocab_size"], 20)

    def positions(task, split):
        return _positions(task.build_inputs(split, 64), 3)

    def same(a, b):
        return all((x == y).all() for x, y in zip(a, b))

    def task(**kw):
        return PretrainingTask(config, real["files"], real["files"][:1], SEQ_LEN, MAX_PRED, seed=3, **kw)

    static, dynamic = task(), task(online_masking=masking, online_masking_eval=False)
    assert same(positions(static, EVAL), positions(dynamic, EVAL))
    assert not same(positions(static, TRAIN), positions(dynamic, TRAIN))
    assert not same(positions(static, EVAL), positions(task(online_masking=masking), EVAL))  # run_pretraining's


def test_masking_flags_from_the_sidecar_and_mask_id_from_the_records(real, tmp_path):
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in real["files"]:
        shutil.copy(path, copy)
    sidecar = json.loads(open(real["files"][0] + ".json").read())
    sidecar["flags"].update(masked_lm_prob=0.1, ngram=2)
    (copy / "real.tfrecord.json").write_text(json.dumps(sidecar))
    files = [str(copy / "real.tfrecord")]
    vocab_size = real["vocab_size"]
    validate_pretraining_files(files, SEQ_LEN, MAX_PRED, vocab_size, token_boundary=True)
    assert records_mask_id(files) == MASK_ID
    config = online_masking_config(files, 20, vocab_size, MAX_PRED, seed=5)
    assert (config.masked_lm_prob, config.ngram, config.mask_id, config.seed) == (0.1, 2, MASK_ID, 5)
    assert online_masking_config(files, 20, vocab_size, MAX_PRED, seed=5, masked_lm_prob=0.2).masked_lm_prob == 0.2
    # a sidecar-recorded 0 (records made without masks) is no recipe: the official 0.15
    sidecar["flags"]["masked_lm_prob"] = 0.0
    (copy / "real.tfrecord.json").write_text(json.dumps(sidecar))
    assert online_masking_config(files, 20, vocab_size, MAX_PRED, seed=5).masked_lm_prob == 0.15


def test_mask_example_on_a_tiny_sequence():
    """[CLS] a b ##c [SEP] d [SEP]: at most the budget, whole words, the same masks for the same key."""
    features = {
        "input_ids": tf.constant([2, 10, 11, 12, 3, 13, 3, 0], tf.int32),
        "input_mask": tf.constant([1, 1, 1, 1, 1, 1, 1, 0], tf.int32),
        "segment_ids": tf.constant([0, 0, 0, 0, 0, 1, 1, 0], tf.int32),
        "token_boundary": tf.constant([1, 1, 1, 0, 1, 1, 1, 0], tf.int32),
        "masked_lm_positions": tf.constant([0, 0], tf.int32),
        "masked_lm_ids": tf.constant([0, 0], tf.int32),
        "masked_lm_weights": tf.constant([0.0, 0.0]),
        "next_sentence_labels": tf.constant([1], tf.int32),
    }
    config = OnlineMaskingConfig(budget=2, vocab_size=20, max_predictions_per_seq=2, masked_lm_prob=1.0)
    masker = tf.function(lambda counter: mask_example(features, masking_key(9, counter), config))
    seen = set()
    for counter in range(200):
        out = {k: v.numpy() for k, v in masker(tf.constant(counter, tf.int64)).items()}
        k = int(out["masked_lm_weights"].sum())
        positions = tuple(out["masked_lm_positions"][:k].tolist())
        assert k == 2 and set(positions) <= {1, 2, 3, 5}
        assert (2 in positions) == (3 in positions)  # "b ##c" is one word
        seen.add(positions)
        again = masker(tf.constant(counter, tf.int64))
        assert (again["masked_lm_positions"].numpy() == out["masked_lm_positions"]).all()
    assert seen == {(1, 5), (2, 3)}  # "a b ##c" would be 3 > K tokens


# ---------------------------------------------------------------------- run_pretraining --masked_lm_budget
@pytest.mark.heavy
def test_run_pretraining_with_masked_lm_budget(tmp_path):
    train = write_synthetic_records(str(tmp_path / "train.tfrecord"), 64, SEQ, PRED, VOCAB, seed=0)
    heldout = write_synthetic_records(str(tmp_path / "heldout.tfrecord"), 16, SEQ, PRED, VOCAB, seed=1)
    result = run_cli(base_args(train, tmp_path / "out", steps=4, batch=8, masked_lm_budget=20, do_eval="true",
                               eval_input_file=heldout, eval_batch_size=8))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "online masking: at most 20 masked tokens per sequence, masked_lm_prob 0.15" in result.stderr
    assert len(step_losses(result.stdout, "mlm_loss")) == 4
    assert "masked_lm_accuracy = " in (tmp_path / "out" / "eval_results.txt").read_text()


def test_flags_reach_the_task_and_a_negative_budget_is_refused_before_any_work(tmp_path):
    from absl import flags

    from albert_tf.cli import flags as shared
    from albert_tf.cli.run_pretraining import define_flags, expected_errors
    from albert_tf.tasks import pretraining
    from albert_tf.tasks.pretraining import task as pretraining_task

    fv = flags.FlagValues()
    define_flags(fv)
    fv(["prog"])
    defaults = pretraining.make_config(**shared.option_values(fv)).task
    assert (defaults.masked_lm_budget, defaults.masked_lm_prob) == (0, None)
    fv(["prog", "--masked_lm_budget=20", "--masked_lm_prob=0.2"])
    task = pretraining.make_config(**shared.option_values(fv)).task
    assert (task.masked_lm_budget, task.masked_lm_prob) == (20, 0.2)
    config = pretraining.make_config(albert_config_file="albert_tiny", input_file=str(tmp_path / "none-*"),
                                     output_dir=str(tmp_path / "out"), masked_lm_budget=-1)
    with pytest.raises(expected_errors(), match=r"^--masked_lm_budget=-1 is out of range: it must be >= 0 \("):
        pretraining_task.run(config)
    config.task.masked_lm_budget = 0
    config.task.masked_lm_prob = 0.2
    with pytest.raises(expected_errors(), match=r"^--masked_lm_prob is read only with --masked_lm_budget > 0"):
        pretraining_task.run(config)
    assert not (tmp_path / "out").exists()
