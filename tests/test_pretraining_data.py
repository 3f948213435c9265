"""create_pretraining_data: records read back and checked against independent oracles, determinism, sharding,
sentence-order policies, masking internals and bad input.

Oracles: the tokenizer itself (original ids, start-piece rule), the spec's budget formula, ``tf.io`` parsing with
the spec's feature table, CPython's ``Random.shuffle`` and numpy's ``RandomState.choice``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.data.pretraining import (
    InputError,
    PretrainingDataConfig,
    TokenizerSpec,
    create_pretraining_data,
    resolve_output_files,
)
from albert_tf.data.pretraining.masking import MaskingConfig, NgramSampler, create_masked_lm_predictions, shuffle
from albert_tf.data.pretraining.records import parse_examples
from albert_tf.data.pretraining.vocabulary import LineEncoder
from albert_tf.data.sample_corpus import write_sample_corpus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    write_sample_corpus(str(d / "corpus.txt"), num_documents=120, seed=5)
    return d


@pytest.fixture(scope="module")
def wordpiece_spec(corpus_dir):
    from test_pretraining_data_official import _wordpiece_vocab

    return TokenizerSpec(vocab_file=_wordpiece_vocab(corpus_dir, [str(corpus_dir / "corpus.txt")]))


@pytest.fixture(scope="module")
def spm_spec(spm_model):
    """30k-clean where ``../shared`` is present, else the sample-corpus substitute (conftest ``spm_model``)."""
    return TokenizerSpec(spm_model_file=str(spm_model))


def _sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _documents_as_strings(spec, path):
    """Each document's token ids (original, unmasked) as ' id id id ' strings, tokenized independently."""
    tok = spec.build()
    docs, cur = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = tok.preprocess(line) if tok.sp_model is not None else line.strip()
            if not text:
                if cur:
                    docs.append(cur)
                cur = []
                continue
            cur.extend(tok.encode(text, preprocessed=True))
    if cur:
        docs.append(cur)
    return [" " + " ".join(map(str, d)) + " " for d in docs]


def _span(ids):
    return " " + " ".join(map(str, ids)) + " "


# ------------------------------------------------------------------------------------------ record read-back
@pytest.mark.heavy
@pytest.mark.parametrize("tokenizer", ["wordpiece", "spm"])
@pytest.mark.parametrize("wwm", [True, False])
def test_records_read_back(tmp_path, corpus_dir, wordpiece_spec, spm_spec, tokenizer, wwm):
    import tensorflow as tf

    spec = wordpiece_spec if tokenizer == "wordpiece" else spm_spec
    tok = spec.build()
    corpus = str(corpus_dir / "corpus.txt")
    seq_len, max_pred = 64, 8
    config = PretrainingDataConfig(max_seq_length=seq_len, max_predictions_per_seq=max_pred, dupe_factor=2,
                                   do_whole_word_mask=wwm, random_seed=3)
    out = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    summary = create_pretraining_data([corpus], out, spec, config, log=None)
    n_inst = summary["counts"]["instances"]
    assert n_inst > 100

    # names, dtypes, lengths: parse with the spec's feature table (fails on any other dtype or length)
    spec_table = {
        "input_ids": tf.io.FixedLenFeature([seq_len], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_len], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_len], tf.int64),
        "token_boundary": tf.io.FixedLenFeature([seq_len], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([max_pred], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([max_pred], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([max_pred], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }
    parsed = list(tf.data.TFRecordDataset(out).map(lambda r: tf.io.parse_single_example(r, spec_table)))
    assert len(parsed) == n_inst

    docs = _documents_as_strings(spec, corpus)
    cls, sep = tok.cls_id, tok.sep_id
    below = 0
    for ex in list(parse_examples(out)):
        assert sorted(ex) == sorted(spec_table)
        ids = np.array(ex["input_ids"])
        n = int(np.sum(ex["input_mask"]))
        assert ex["input_mask"] == [1] * n + [0] * (seq_len - n)
        assert np.all(ids[n:] == 0)
        assert ids[0] == cls and ids[n - 1] == sep
        w = np.array(ex["masked_lm_weights"])
        k = int(w.sum())
        pos = np.array(ex["masked_lm_positions"][:k])
        labels = np.array(ex["masked_lm_ids"][:k])
        assert list(w) == [1.0] * k + [0.0] * (max_pred - k)
        assert ex["masked_lm_positions"][k:] == [0] * (max_pred - k) and ex["masked_lm_ids"][k:] == [0] * (max_pred - k)
        assert list(pos) == sorted(set(pos.tolist()))
        # [CLS]/[SEP] never masked: the first and the last real position, and the middle [SEP]
        original = ids.copy()
        original[pos] = labels
        sep_positions = [i for i in range(1, n) if original[i] == sep]
        assert sep_positions[-1] == n - 1 and len(sep_positions) == 2
        assert 0 not in pos and not set(sep_positions) & set(pos.tolist())
        mid = sep_positions[0]
        assert ex["segment_ids"] == [0] * (mid + 1) + [1] * (n - mid - 1) + [0] * (seq_len - n)
        # budget (spec formula); without whole-word masking every candidate is one token, so it is always met
        budget = min(max_pred, max(1, round(n * 0.15)))
        assert k <= budget
        if not wwm:
            assert k == budget
        below += k < budget
        # masked_lm_ids are the original ids: the restored A and B are contiguous spans of a tokenized document
        a, b = original[1:mid], original[mid + 1:n - 1]
        assert any(_span(a) in d for d in docs) and any(_span(b) in d for d in docs)
        # token_boundary: 1 at [CLS]/[SEP] and exactly at start pieces of the original tokens
        pieces = tok.convert_ids_to_tokens(original[:n].tolist())
        expect = [1 if i in (0, mid, n - 1) or tok.is_start_piece(p) else 0 for i, p in enumerate(pieces)]
        assert ex["token_boundary"] == expect + [0] * (seq_len - n)
    assert below <= 0.05 * n_inst
    sidecar = json.loads(open(summary["metadata_file"], encoding="utf-8").read())
    assert sidecar["counts"]["instances"] == n_inst
    assert sidecar["counts"]["instances_per_output_file"] == [len(list(parse_examples([p]))) for p in out]
    assert sidecar["tokenizer"]["identity"] == tok.identity()
    assert sidecar["flags"]["max_seq_length"] == seq_len


# --------------------------------------------------------------------------------------------- determinism
def test_same_flags_same_bytes_any_num_workers(tmp_path, corpus_dir, wordpiece_spec):
    corpus = str(corpus_dir / "corpus.txt")
    # ~10 kB chunks -> several chunks, so the worker count matters if anything depends on it
    config = PretrainingDataConfig(max_seq_length=64, dupe_factor=2, chunk_size_mb=0.01, shuffle_buffer_size=300)
    hashes = []
    for run, workers in (("a", 1), ("b", 1), ("c", 2)):
        out = str(tmp_path / run / "data.tfrecord@3")
        summary = create_pretraining_data([corpus], out, wordpiece_spec, config, num_workers=workers, log=None)
        assert summary["counts"]["chunks"] > 3
        files = summary["output_files"] + [summary["metadata_file"]]
        hashes.append([_sha(p) for p in files])
    assert hashes[0] == hashes[1] == hashes[2]
    other = PretrainingDataConfig(max_seq_length=64, dupe_factor=2, chunk_size_mb=0.01, shuffle_buffer_size=300,
                                  random_seed=1)
    summary = create_pretraining_data([corpus], str(tmp_path / "d" / "data.tfrecord@3"), wordpiece_spec, other,
                                      log=None)
    assert _sha(summary["output_files"][0]) != hashes[0][0]


def test_output_sharding(tmp_path, corpus_dir, wordpiece_spec):
    assert resolve_output_files("x/out@3") == ["x/out-00000-of-00003", "x/out-00001-of-00003", "x/out-00002-of-00003"]
    assert resolve_output_files("a.tfrecord, b.tfrecord") == ["a.tfrecord", "b.tfrecord"]
    with pytest.raises(InputError):
        resolve_output_files("x/out@0")
    config = PretrainingDataConfig(max_seq_length=64, dupe_factor=1)
    out = [str(tmp_path / f"s{i}.tfrecord") for i in range(3)]
    summary = create_pretraining_data([str(corpus_dir / "corpus.txt")], out, wordpiece_spec, config, log=None)
    counts = [len(list(parse_examples([p]))) for p in out]
    assert sum(counts) == summary["counts"]["instances"] and max(counts) - min(counts) <= 1


# ------------------------------------------------------------------------------------ sentence-order policies
def _pairs(paths, mask_id):
    for ex in parse_examples(paths):
        ids = np.array(ex["input_ids"])
        k = int(np.sum(ex["masked_lm_weights"]))
        ids[np.array(ex["masked_lm_positions"][:k], dtype=int)] = ex["masked_lm_ids"][:k]
        n = int(np.sum(ex["input_mask"]))
        seg = np.array(ex["segment_ids"][:n])
        yield ids[:n], seg, ex["next_sentence_labels"][0]


def _order_in_same_doc(docs, a, b):
    """'ab' if some document has A then B, 'ba' if B then A, None if they are never in one document."""
    sa, sb = _span(a), _span(b)
    found = None
    for d in docs:
        ia, ib = d.find(sa), d.find(sb)
        if ia >= 0 and ib >= 0:
            if d.find(sb, ia + len(sa) - 1) >= 0:
                return "ab"
            found = "ba"
    return found


@pytest.mark.heavy
@pytest.mark.parametrize("policy", ["official", "pure", "nsp", "none"])
def test_sentence_order_policies(tmp_path, corpus_dir, wordpiece_spec, policy):
    corpus = str(corpus_dir / "corpus.txt")
    config = PretrainingDataConfig(max_seq_length=40, dupe_factor=2, sentence_order=policy, masked_lm_prob=0.0)
    out = str(tmp_path / "p.tfrecord")
    create_pretraining_data([corpus], [out], wordpiece_spec, config, log=None)
    tok = wordpiece_spec.build()
    docs = _documents_as_strings(wordpiece_spec, corpus)
    labels, not_same_doc, wrong_order = [], 0, 0
    for ids, seg, label in _pairs([out], tok.mask_id):
        labels.append(label)
        if policy == "none":
            assert label == 0 and not seg.any() and list(ids).count(tok.sep_id) == 1
            continue
        mid = int(np.flatnonzero(ids == tok.sep_id)[0])
        a, b = ids[1:mid], ids[mid + 1:-1]
        order = _order_in_same_doc(docs, a, b)
        if order is None:
            not_same_doc += 1
            assert label == 1  # a random-document negative
        elif label == 0:
            wrong_order += order != "ab"
    share = float(np.mean(labels))
    if policy == "none":
        return
    assert wrong_order == 0
    if policy == "pure":
        assert not_same_doc == 0 and abs(share - 0.5) < 0.06
    else:
        assert not_same_doc > 0  # official keeps random-document negatives for one-segment chunks, nsp has them


# ------------------------------------------------------------------------------------------ packed chunk results
def test_packed_records_give_back_the_records_in_shuffled_order_after_pickling():
    import array
    import pickle

    from albert_tf.data.pretraining.chunks import PackedRecords

    rng = random.Random(3)
    records = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))) for _ in range(200)]
    ends = array.array("Q")
    blob = bytearray()
    for r in records:
        blob += r
        ends.append(len(blob))
    order = list(range(len(records)))
    random.Random(7).shuffle(order)
    packed = pickle.loads(pickle.dumps(PackedRecords(blob, ends, array.array("I", order))))  # as a worker sends it
    out = list(packed)
    assert len(packed) == 200 and out == [records[i] for i in order] and all(type(r) is bytes for r in out)
    assert list(PackedRecords(b"", array.array("Q"), array.array("I"))) == []


def test_chunk_records_are_the_official_shuffle_of_the_created_instances(spm_spec):
    """process_chunk shuffles indices, not records: the same draws and the same permutation as the official
    ``rng.shuffle(instances)`` on the list of records, checked on one chunk against an independent replay."""
    from albert_tf.data.pretraining.chunks import (
        ChunkContext,
        chunk_seeds,
        documents_from_lines,
        new_counters,
        process_chunk,
    )
    from albert_tf.data.pretraining.instances import create_instances_from_document
    from albert_tf.data.pretraining.reading import Chunk

    config = PretrainingDataConfig(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=2, random_seed=11)
    ctx = ChunkContext(config, spm_spec)
    lines = [f"sentence {i} of document {d} says something about {w}." for d, w in enumerate("abcdef")
             for i in range(6)]
    lines = [line if (k + 1) % 6 else line + "\n" for k, line in enumerate(lines)]
    lines = [part for line in lines for part in line.split("\n")]
    chunk = Chunk(4, lines)
    _, packed, counters = process_chunk(chunk, ctx)
    # the replay: the official loop with a plain list of records and random.Random.shuffle
    documents = documents_from_lines(ctx.encoder, lines, new_counters())
    py_seed, np_seed = chunk_seeds(config.random_seed, chunk.index)
    rng = random.Random(py_seed)
    sampler = NgramSampler(np.random.RandomState(np_seed), config.ngram, config.favor_shorter_ngram)
    expected: list[bytes] = []
    rng.shuffle(documents)
    for _ in range(config.dupe_factor):
        for i in range(len(documents)):
            create_instances_from_document(documents, i, ctx.instance_config, rng, sampler,
                                           lambda inst: expected.append(ctx.example_encoder.encode(inst)),
                                           new_counters())
    rng.shuffle(expected)
    assert len(expected) > 10 and list(packed) == expected and counters["instances"] == len(expected)


def test_release_free_memory_runs_where_glibc_is():
    import platform

    from albert_tf.data.pretraining.memory import release_free_memory

    done = release_free_memory()
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert done is True
    else:
        assert done in (True, False)


# ------------------------------------------------------------------------------------------ masking internals
@pytest.mark.parametrize("size", [0, 1, 2, 3, 7, 64, 129, 1000, 5000])
def test_fast_shuffle_is_random_shuffle(size):
    for seed in range(5):
        a, b = random.Random(seed), random.Random(seed)
        x, y = list(range(size)), list(range(size))
        a.shuffle(x)
        shuffle(y, b)
        assert x == y and a.random() == b.random()
        c, d = random.Random(seed), random.Random(seed)
        shuffle(list(range(size)), c, consume_only=True)  # the draws of a shuffle, without the permutation
        d.shuffle(list(range(size)))
        assert c.getstate() == d.getstate()


def test_ngram_sampler_is_numpy_choice():
    for favor in (True, False):
        ref = np.random.RandomState(42)
        p = 1.0 / np.arange(1, 4)
        p /= p.sum()
        if not favor:
            p = p[::-1]
        expect = [int(ref.choice(np.arange(1, 4), p=p / p.sum())) for _ in range(10000)]
        sampler = NgramSampler(np.random.RandomState(42), 3, favor)
        assert [sampler.draw() for _ in range(10000)] == expect


class _SpySampler(NgramSampler):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.drawn = []

    def draw(self):
        n = super().draw()
        self.drawn.append(n)
        return n


@pytest.mark.parametrize("favor", [True, False])
def test_masker_samples_ngram_lengths_one_over_n(favor):
    """The lengths the masker samples (before the budget shortens them) follow p(n) ∝ 1/n within ±2 points."""
    rng = random.Random(0)
    vocab = 200
    start_table = [1 if i % 3 else 0 for i in range(vocab)]  # ids divisible by 3 continue a word
    cfg = MaskingConfig(start_table=start_table, mask_id=4, random_word_ids=list(range(vocab)),
                        masked_lm_prob=0.15, max_predictions_per_seq=20)
    sampler = _SpySampler(np.random.RandomState(1), 3, favor)
    while len(sampler.drawn) < 30000:
        n = rng.randint(10, 128)
        ids = [2] + [rng.randrange(5, vocab) for _ in range(n - 2)] + [3]
        res = create_masked_lm_predictions(ids, (0, n - 1), cfg, rng, sampler)
        assert len(res.positions) <= min(20, max(1, round(n * 0.15)))
    shares = np.bincount(sampler.drawn, minlength=4)[1:] / len(sampler.drawn)
    expect = np.array([6, 3, 2]) / 11 if favor else np.array([2, 3, 6]) / 11
    assert np.all(np.abs(shares - expect) < 0.02), shares


def test_masking_80_10_10_and_whole_words():
    rng = random.Random(5)
    vocab = 1000
    start_table = [1 if i % 2 else 0 for i in range(vocab)]  # even ids continue a word
    cfg = MaskingConfig(start_table=start_table, mask_id=4, random_word_ids=list(range(vocab)),
                        masked_lm_prob=0.15, max_predictions_per_seq=20)
    sampler = NgramSampler(np.random.RandomState(0), 3)
    counts = np.zeros(3)
    for _ in range(3000):
        ids = [2] + [rng.randrange(5, vocab) for _ in range(100)] + [3]
        res = create_masked_lm_predictions(ids, (0, 101), cfg, rng, sampler)
        masked = set(res.positions)
        for p in res.positions:
            out = res.output_ids[p]
            counts[0 if out == 4 else 1 if out == ids[p] else 2] += 1
        # whole words: a continuation piece is masked exactly when its word's start piece is
        for p in range(2, 101):
            if not start_table[ids[p]]:
                assert (p in masked) == (p - 1 in masked)
    shares = counts / counts.sum()
    assert np.all(np.abs(shares - [0.8, 0.1, 0.1]) < 0.01), shares


# ------------------------------------------------------------------------------------------- tokenization
def test_line_encoder_equals_tokenizer_on_text(spm_spec):
    from conftest import english_lines, shared_data_dir

    tok = spm_spec.build()
    enc = LineEncoder(tok)
    lines = []
    shared = shared_data_dir()
    if shared is not None and (shared / "text").is_dir():  # real books of every source, undecodable bytes replaced
        for path in sorted((shared / "text").glob("*/*.txt"))[::7]:
            data = path.read_bytes().decode("utf-8", "replace").split("\n")
            lines.extend(data[:400])
    else:  # a fresh clone: the sample corpus's sentences
        lines = english_lines(2000)
    lines += ["In 1999,2000, and 2001, we had 3,5, and 7,", "a1,b2,", "Ünïcödé  \t tëxt\x1f here", "\x00\x01", "  "]
    ids, empty = enc.encode_lines(lines)
    for line, got in zip(lines, ids, strict=True):
        assert enc.preprocess(line) == tok.preprocess(line)
        pre = tok.preprocess(line)
        if not pre:
            assert got is None
        else:
            assert got == tok.encode(pre, preprocessed=True), line
    assert empty == sum(1 for g in ids if g == [])
    # the start-piece table is the tokenizer's rule over the vocabulary
    for i in range(0, tok.vocab_size, 97):
        assert enc.start_table[i] == int(tok.is_start_piece(tok.convert_ids_to_tokens([i])[0]))


# -------------------------------------------------------------------------------------------------- bad input
def _make(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


@pytest.mark.heavy
def test_bad_inputs_clear_errors_and_counted_skips(tmp_path, corpus_dir, wordpiece_spec):
    good = str(corpus_dir / "corpus.txt")
    config = PretrainingDataConfig(max_seq_length=64, dupe_factor=1)
    out = [str(tmp_path / "o.tfrecord")]
    # undecodable bytes: file, line and byte offset
    bad = _make(tmp_path, "latin.txt", b"first line\nna\xefve caf\xe9\n")
    with pytest.raises(InputError, match=r"latin\.txt: line 2, byte offset 13: .*--input_encoding"):
        create_pretraining_data([good, bad], out, wordpiece_spec, config, log=None)
    ok = PretrainingDataConfig(max_seq_length=64, dupe_factor=1, input_encoding="iso-8859-1")
    assert create_pretraining_data([bad], out, wordpiece_spec, ok, log=None)["counts"]["documents"] == 1
    # empty file and blank-only file among good ones: counted, not fatal
    empty = _make(tmp_path, "empty.txt", b"")
    blank = _make(tmp_path, "blank.txt", b"\n  \n\t\n\n")
    summary = create_pretraining_data([empty, good, blank], out, wordpiece_spec, config, log=None)
    assert summary["counts"]["empty_files"] == 1 and summary["counts"]["blank_only_files"] == 1
    assert summary["counts"]["instances"] > 0
    # nothing but empty/blank files: a clear error before any work
    with pytest.raises(InputError, match="no text in the input"):
        create_pretraining_data([empty, blank], out, wordpiece_spec, config, log=None)
    # a 1 MB single line (one huge segment): truncated into instances, no error
    huge = _make(tmp_path, "huge.txt", (("the quick brown fox jumps over the lazy dog " * 23300)[:1 << 20]).encode())
    summary = create_pretraining_data([huge, good], out, wordpiece_spec, config, log=None)
    assert summary["counts"]["instances"] > 0
    # missing tokenizer files / globs
    with pytest.raises(InputError, match="spm_model_file=.*not found"):
        create_pretraining_data([good], out, TokenizerSpec(spm_model_file=str(tmp_path / "nope.model")), config,
                                log=None)
    with pytest.raises(InputError, match="give --spm_model_file"):
        create_pretraining_data([good], out, TokenizerSpec(), config, log=None)
    with pytest.raises(InputError, match="matches no file"):
        create_pretraining_data(str(tmp_path / "missing*.txt"), out, wordpiece_spec, config, log=None)


def test_empty_documents_counted(tmp_path, wordpiece_spec):
    # a document whose only line has no tokens (control characters) is an empty document, skipped and counted
    path = _make(tmp_path, "c.txt", b"the old town .\nthe market .\n\n\x01\x02\n\n\n\nthe harbor .\nthe park .\n")
    summary = create_pretraining_data([path], [str(tmp_path / "o.tfrecord")], wordpiece_spec,
                                      PretrainingDataConfig(max_seq_length=32, dupe_factor=1), log=None)
    c = summary["counts"]
    assert c["documents"] == 2 and c["empty_documents"] == 1 and c["lines_without_tokens"] == 1


@pytest.mark.parametrize("args,expect", [
    (["--spm_model_file={tmp}/missing.model"], "spm_model_file=.*missing.model: file not found"),
    (["--spm_model_file={spm}", "--input_file={tmp}/latin.txt"], "latin.txt: line 1, byte offset 3"),
    (["--vocab_file={tmp}/missing.txt"], "vocab_file=.*: file not found"),
])
def test_cli_errors_are_one_line(tmp_path, args, expect, spm_model):
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    (tmp_path / "ok.txt").write_text("a b c\n")
    argv = [sys.executable, os.path.join(ROOT, "create_pretraining_data.py"), f"--input_file={tmp_path}/ok.txt",
            f"--output_file={tmp_path}/o.tfrecord"]
    argv += [a.format(tmp=tmp_path, spm=spm_model) for a in args]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    import re

    assert re.search(expect, r.stderr), r.stderr


@pytest.mark.heavy
def test_help_mentions_streaming_difference():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "create_pretraining_data.py"), "--help"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode in (0, 1)  # absl exits 1 after --help
    assert "shuffles all instances globally" in r.stdout and "--sentence_order" in r.stdout
    assert "--num_workers" in r.stdout and "--spm_model_file" in r.stdout


# ------------------------------------------------------------------------------- sample corpus, prepare_text
def test_sample_corpus_is_deterministic_and_ordered(tmp_path):
    from albert_tf.data.sample_corpus import generate_documents

    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    write_sample_corpus(str(a), num_documents=50, seed=1)
    write_sample_corpus(str(b), num_documents=50, seed=1)
    assert a.read_bytes() == b.read_bytes()
    blocks = a.read_text(encoding="utf-8").strip("\n").split("\n\n")
    assert len(blocks) == 50 and all(len(block.split("\n")) >= 6 for block in blocks)
    # sentence order carries signal: the clock times inside a document strictly increase
    for doc in generate_documents(200, seed=2):
        hours = [int(w) for s in doc for w in s.replace(",", " ").split() if w.isdigit() and f"{w} o'clock" in s]
        assert hours == sorted(hours) and len(set(hours)) == len(hours)


def test_prepare_text(tmp_path):
    from albert_tf.data.prepare_text import prepare_files, split_sentences

    assert split_sentences("Mr. Smith went to Washington. He said \"Hi!\" Then J. R. wrote.  In 1945, it ended? Yes.") \
        == ["Mr. Smith went to Washington.", "He said \"Hi!\"", "Then J. R. wrote.", "In 1945, it ended?", "Yes."]
    (tmp_path / "a.txt").write_text("Title line\n\nFirst sentence of a\nwrapped paragraph. Second one.\n\n\n", "utf-8")
    (tmp_path / "b.txt").write_bytes("Caf\xe9 au lait. Tr\xe8s bien.\n".encode("iso-8859-1"))
    (tmp_path / "c.txt").write_text("\n\n", "utf-8")
    files = [str(tmp_path / n) for n in ("a.txt", "b.txt", "c.txt")]
    with pytest.raises(ValueError, match=r"b\.txt: cannot decode .*byte offset 3"):
        prepare_files(files, str(tmp_path / "out.txt"))
    counts = prepare_files(files, str(tmp_path / "out.txt"), encodings=("utf-8", "iso-8859-1"))
    assert counts["documents"] == 2 and counts["skipped_documents"] == 1
    assert counts["encodings"] == {"utf-8": 2, "iso-8859-1": 1}
    assert (tmp_path / "out.txt").read_text("utf-8") == (
        "Title line\nFirst sentence of a wrapped paragraph.\nSecond one.\n\nCafé au lait.\nTrès bien.\n")
