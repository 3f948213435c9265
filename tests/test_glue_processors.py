"""GLUE processors on the real files and the format samples; malformed input; features and cache."""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
from conftest import shared_data_dir, shared_path

from albert_tf.data import glue

# Published GLUE example counts (dataset cards / the shared data README).
REAL_COUNTS = [
    pytest.param("sst-2", "train", 67349, marks=pytest.mark.heavy),  # 67k rows: ~25 s
    ("sst-2", "dev", 872),
    ("sst-2", "test", 1821),
    ("mrpc", "train", 3668),
    ("mrpc", "dev", 408),
    ("mrpc", "test", 1725),
    ("sts-b", "train", 5749),
    ("sts-b", "dev", 1500),
    ("sts-b", "test", 1379),
    ("cola", "train", 8551),
    ("cola", "dev", 1043),
    ("qnli", "dev", 5463),
    ("qnli", "test", 5463),
]


@pytest.mark.parametrize("task,split,count", REAL_COUNTS)
def test_real_files_have_published_counts(task, split, count):
    root = shared_path("glue")
    proc = glue.get_processor(task)
    examples = proc.get_examples(str(root), split)
    assert len(examples) == count
    if split == "test":
        assert all(ex.label is None for ex in examples)
        # Submission index = the file's own index column, 0..N-1 in GLUE's test files.
        assert [ex.guid for ex in examples[:3]] == ["0", "1", "2"]
    elif proc.is_regression:
        assert all(0.0 <= ex.label <= 5.0 for ex in examples)
    else:
        assert {ex.label for ex in examples} <= set(proc.labels)
        assert len({ex.label for ex in examples}) == len(proc.labels)


def test_real_first_rows_by_column_name():
    root = str(shared_path("glue"))
    sts = glue.get_processor("STS-B").get_dev_examples(root)[1]
    assert (sts.text_a, sts.text_b, sts.label) == (
        "A young child is riding a horse.",
        "A child is riding a horse.",
        4.75,
    )
    mrpc = glue.get_processor("mrpc").get_train_examples(root)[0]  # file starts with a UTF-8 BOM + header
    assert mrpc.label == "1" and mrpc.text_a.startswith("Amrozi accused his brother")
    cola = glue.get_processor("cola").get_dev_examples(root)[0]  # no header: first line is data
    assert (cola.text_a, cola.label) == ("The sailors rode the breeze clear of the rocks.", "1")


def _sample_rows(path: str, header: bool) -> int:
    with open(path, encoding="utf-8-sig") as f:
        lines = [line for line in f.read().split("\n") if line]
    return len(lines) - (1 if header else 0)


SAMPLES = [  # task, sample folder, split, file under it, has header
    ("cola", "cola", "train", "CoLA/train.tsv", False),
    ("cola", "cola", "dev", "CoLA/dev.tsv", False),
    ("cola", "cola", "test", "CoLA/test.tsv", True),
    ("mnli", "mnli", "train", "MNLI/train.tsv", True),
    ("mnli", "mnli", "dev", "MNLI/dev_matched.tsv", True),
    ("mnli", "mnli", "test", "MNLI/test_matched.tsv", True),
    ("mnli-mm", "mnli", "dev", "MNLI/dev_mismatched.tsv", True),
    ("mnli-mm", "mnli", "test", "MNLI/test_mismatched.tsv", True),
    ("sst-2", "sst2", "train", "SST-2/train.tsv", True),
    ("sst-2", "sst2", "dev", "SST-2/dev.tsv", True),
    ("sst-2", "sst2", "test", "SST-2/test.tsv", True),
    ("sts-b", "stsb", "train", "SST-B/train.tsv", True),
    ("sts-b", "stsb", "dev", "SST-B/dev.tsv", True),
    ("sts-b", "stsb", "test", "SST-B/test.tsv", True),
    ("qqp", "qqp", "train", "QQP/train.tsv", True),
    ("qqp", "qqp", "dev", "QQP/dev.tsv", True),
    ("qqp", "qqp", "test", "QQP/test.tsv", True),
    ("qnli", "qnli", "train", "QNLI/train.tsv", True),
    ("qnli", "qnli", "dev", "QNLI/dev.tsv", True),
    ("qnli", "qnli", "test", "QNLI/test.tsv", True),
    ("rte", "rte", "train", "RTE/train.tsv", True),
    ("rte", "rte", "dev", "RTE/dev.tsv", True),
    ("rte", "rte", "test", "RTE/test.tsv", True),
    ("wnli", "wnli", "train", "WNLI/train.tsv", True),
    ("wnli", "wnli", "dev", "WNLI/dev.tsv", True),
    ("wnli", "wnli", "test", "WNLI/test.tsv", True),
    ("ax", "ax", "test", "ax.tsv", True),
]


@pytest.mark.parametrize("task,folder,split,fname,header", SAMPLES)
def test_format_samples_every_task(task, folder, split, fname, header):
    base = shared_path("glue", "format_samples", folder)
    path = base / fname
    proc = glue.get_processor(task)
    examples = proc.get_examples(str(base), split)
    assert len(examples) == _sample_rows(str(path), header)
    # Fields by header name (independent of the processor's column indexes).
    if header:
        with open(path, encoding="utf-8") as f:
            lines = [line.split("\t") for line in f.read().split("\n") if line]
        names = lines[0]
        row = dict(zip(names, lines[1], strict=False))
        first = examples[0]
        text_a_col = {"qqp": "question1", "qnli": "question"}.get(
            task, "sentence1" if "sentence1" in names else "sentence"
        )
        assert first.text_a == row[text_a_col]
        if split != "test":
            label_col = {"mnli": "gold_label", "mnli-mm": "gold_label", "qqp": "is_duplicate"}.get(
                task, "score" if task == "sts-b" else "label"
            )
            expected = float(row[label_col]) if task == "sts-b" else row[label_col]
            assert first.label == expected
        else:
            assert first.label is None


def test_mrpc_format_sample_raw_msr_layout():
    """The MRPC sample is the raw Microsoft layout (train/test/dev_ids): split as GLUE's script does."""
    base = str(shared_path("glue", "format_samples", "mrpc"))
    proc = glue.get_processor("mrpc")
    train, dev, test = (proc.get_examples(base, s) for s in ("train", "dev", "test"))
    raw_rows = _sample_rows(os.path.join(base, "MRPC", "train"), header=True)
    dev_ids = _sample_rows(os.path.join(base, "MRPC", "dev_ids"), header=False)
    assert len(dev) == dev_ids and len(train) + len(dev) == raw_rows
    assert len(test) == _sample_rows(os.path.join(base, "MRPC", "test"), header=True)


def test_mrpc_raw_msr_split_equals_released_glue_files(tmp_path):
    """Deriving train/dev from msr_paraphrase_train.txt + dev_ids reproduces GLUE's train.tsv/dev.tsv."""
    real = shared_path("glue", "MRPC")
    raw_dir = tmp_path / "MRPC"
    raw_dir.mkdir()
    for name in ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt", "dev_ids.tsv"):
        os.symlink(real / name, raw_dir / name)
    proc = glue.get_processor("mrpc")
    for split, count in (("train", 3668), ("dev", 408), ("test", 1725)):
        derived = proc.get_examples(str(tmp_path), split)
        released = proc.get_examples(str(real.parent), split)
        assert len(derived) == len(released) == count
        assert [(e.text_a, e.text_b, e.label) for e in derived] == [(e.text_a, e.text_b, e.label) for e in released]


# ---------------------------------------------------------------------- malformed input
def _write(tmp_path, task_dir, name, content: bytes):
    d = tmp_path / task_dir
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(content)
    return str(tmp_path)


def test_wrong_column_count_names_file_line_and_layout(tmp_path):
    root = _write(
        tmp_path, "MRPC", "train.tsv", b"Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\ta\tb\n0\t3\t4\tonly a\n"
    )
    with pytest.raises(glue.GlueDataError) as e:
        glue.get_processor("mrpc").get_train_examples(root)
    msg = str(e.value)
    assert "train.tsv:3" in msg and "4 column(s)" in msg and "#1 String" in msg and "text_b=col 4" in msg


def test_extra_column_is_an_error(tmp_path):
    root = _write(tmp_path, "SST-2", "dev.tsv", b"sentence\tlabel\na film\t1\nstray\ttab\t0\n")
    with pytest.raises(glue.GlueDataError, match=r"dev.tsv:3: 3 columns, expected .*2 tab-separated columns"):
        glue.get_processor("sst-2").get_dev_examples(root)


def test_bad_label_and_bad_score(tmp_path):
    root = _write(tmp_path, "RTE", "train.tsv", b"index\tsentence1\tsentence2\tlabel\n0\ta\tb\tmaybe\n")
    with pytest.raises(glue.GlueDataError, match=r"train.tsv:2: label 'maybe' is not one of \['entailment'"):
        glue.get_processor("rte").get_train_examples(root)
    header = b"index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    root = _write(tmp_path, "STS-B", "dev.tsv", header + b"0\tg\tf\ty\t0\ts\ts\ta\tb\tfive\n")
    with pytest.raises(glue.GlueDataError, match=r"dev.tsv:2: label 'five' is not a number"):
        glue.get_processor("sts-b").get_dev_examples(root)


def test_non_utf8_bytes(tmp_path):
    root = _write(tmp_path, "CoLA", "train.tsv", b"gj04\t1\t\tfine.\ngj04\t0\t*\tcaf\xe9 au lait.\n")
    with pytest.raises(glue.GlueDataError, match=r"CoLA/train.tsv:2: bytes at column \d+ are not UTF-8"):
        glue.get_processor("cola").get_train_examples(root)


def test_unknown_task_lists_known_ones():
    with pytest.raises(glue.GlueDataError) as e:
        glue.get_processor("mnli2")
    for name in ("cola", "mnli", "mnli-mm", "mrpc", "sst-2", "sts-b", "qqp", "qnli", "rte", "wnli", "ax"):
        assert name in str(e.value)
    assert glue.get_processor("SST-2").name == "sst-2"
    assert glue.get_processor("MisMNLI").name == "mnli-mm"  # the official key


def test_missing_file_says_where_it_looked(tmp_path):
    with pytest.raises(glue.GlueDataError, match=r"rte: no train file; looked for .*RTE/train.tsv"):
        glue.get_processor("rte").get_train_examples(str(tmp_path))


def test_qqp_short_rows_are_counted_not_silently_dropped(tmp_path, caplog):
    content = (
        b"id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
        b"1\t1\t2\tq one?\tq two?\t0\n"
        b"2\t3\t4\tbroken row\n"
        b"3\t5\t6\tq five?\tq six?\t1\n"
    )
    root = _write(tmp_path, "QQP", "train.tsv", content)
    proc = glue.get_processor("qqp")
    with caplog.at_level("WARNING"):
        examples = proc.get_train_examples(root)
    assert [e.guid for e in examples] == ["1", "3"]
    assert proc.last_report.skipped_short_rows == 1 and proc.last_report.skipped_lines == [3]
    assert "skipped 1 row(s)" in caplog.text


# ---------------------------------------------------------------------- features, cache, submissions
class WhitespaceTokenizer:
    """A stand-in tokenizer (lower-cased whitespace words, ids by a fixed vocab) for cache logic."""

    def __init__(self, vocab, tag="ws-1"):
        self.vocab = {"[CLS]": 2, "[SEP]": 3, **{w: i + 5 for i, w in enumerate(vocab)}}
        self.tag = tag

    def tokenize(self, text):
        return text.lower().split()

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab.get(t, 1) for t in tokens]

    def identity(self):
        return {"kind": "whitespace", "tag": self.tag}


def test_convert_example_truncates_and_packs_as_official():
    """Pair truncation pops from the longer side (b on ties); an empty text_b is a single segment."""
    proc = glue.get_processor("rte")
    tok = WhitespaceTokenizer([f"w{i}" for i in range(30)])
    a = " ".join(f"w{i}" for i in range(10))  # ids 5..14
    b = " ".join(f"w{i}" for i in range(20, 24))  # ids 25..28
    f = glue.convert_example(glue.InputExample("0", a, b, "entailment"), proc, 11, tok)  # room for 8 tokens
    assert f.input_ids == [2, 5, 6, 7, 8, 3, 25, 26, 27, 28, 3]  # a 10 -> 4, b 4 kept
    assert f.segment_ids == [0] * 6 + [1] * 5 and f.label_id == 0
    five = " ".join(f"w{i}" for i in range(5))
    f = glue.convert_example(glue.InputExample("0", five, five, "not_entailment"), proc, 10, tok)  # room 7: 4+3
    assert f.input_ids == [2, 5, 6, 7, 8, 3, 5, 6, 7, 3] and f.label_id == 1
    f = glue.convert_example(glue.InputExample("0", "w0 w1", "", "entailment"), proc, 6, tok)
    assert f.input_ids == [2, 5, 6, 3, 0, 0] and f.input_mask == [1, 1, 1, 1, 0, 0] and f.segment_ids == [0] * 6
    long = " ".join(f"w{i}" for i in range(9))
    f = glue.convert_example(glue.InputExample("0", long, None, None), glue.get_processor("cola"), 6, tok)
    assert f.input_ids == [2, 5, 6, 7, 8, 3] and f.label_id == 0


def _read_records(path, seq_len, regression):
    import tensorflow as tf

    spec = glue.feature_spec(seq_len, regression)
    return [
        {k: v.numpy() for k, v in tf.io.parse_single_example(r, spec).items()} for r in tf.data.TFRecordDataset(path)
    ]


def test_cache_is_keyed_by_everything_that_affects_features(tmp_path):
    data = tmp_path / "data"
    root = _write(data, "RTE", "train.tsv", b"index\tsentence1\tsentence2\tlabel\n0\tA b c\td e\tnot_entailment\n")
    proc = glue.get_processor("rte")
    tok = WhitespaceTokenizer(["a", "b", "c", "d"])
    cache = str(tmp_path / "cache")
    first = glue.cached_features(proc, root, "train", tok, 8, cache)
    assert not first.reused and first.num_examples == 1
    recs = _read_records(first.record_files, 8, False)
    assert recs[0]["input_ids"].tolist() == [2, 5, 6, 7, 3, 8, 1, 3]
    assert recs[0]["segment_ids"].tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert recs[0]["label_ids"] == 1 and recs[0]["is_real_example"] == 1
    again = glue.cached_features(proc, root, "train", tok, 8, cache)
    assert again.reused and again.record_files == first.record_files
    # Each change gives a new file (never a stale cache).
    other = {
        tuple(glue.cached_features(proc, root, "train", tok, 16, cache).record_files),
        tuple(glue.cached_features(proc, root, "train", WhitespaceTokenizer(["a"], tag="ws-2"), 8, cache).record_files),
    }
    _write(data, "RTE", "train.tsv", b"index\tsentence1\tsentence2\tlabel\n0\tA b c\td\tnot_entailment\n")
    changed = glue.cached_features(proc, root, "train", tok, 8, cache)
    assert not changed.reused
    assert len(other | {tuple(first.record_files), tuple(changed.record_files)}) == 4
    assert _read_records(changed.record_files, 8, False)[0]["input_ids"].tolist() == [2, 5, 6, 7, 3, 8, 3, 0]


def test_regression_features_keep_float_labels(tmp_path):
    header = b"index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    root = _write(tmp_path, "STS-B", "train.tsv", header + b"0\tg\tf\ty\t0\ts\ts\ta\tb\t3.8\n")
    split = glue.cached_features(
        glue.get_processor("sts-b"), root, "train", WhitespaceTokenizer(["a", "b"]), 6, str(tmp_path / "c")
    )
    rec = _read_records(split.record_files, 6, True)[0]
    assert rec["label_ids"] == pytest.approx(3.8)


def test_a_training_cache_is_written_in_one_seeded_permutation_of_a_sorted_file(tmp_path):
    """STS-B's train.tsv is sorted by genre; read through a 1,000-record shuffle buffer in file order, batches came
    from one genre at a time (benchmarks/README.md, fine-tuning parity). Shuffled, the records are the examples in
    random.Random(12345)'s permutation, every genre from the start; ``shuffle=False`` keeps the file's order."""
    header = b"index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    rows = [f"{i}\t{'captions' if i < 100 else 'news'}\tf\ty\t{i}\ts\ts\ta\tb\t{i / 100:.2f}\n" for i in range(200)]
    root = _write(tmp_path, "STS-B", "train.tsv", header + "".join(rows).encode())
    proc, tok, cache = glue.get_processor("sts-b"), WhitespaceTokenizer(["a", "b"]), str(tmp_path / "c")
    in_file_order = glue.cached_features(proc, root, "train", tok, 6, cache)
    shuffled = glue.cached_features(proc, root, "train", tok, 6, cache, shuffle=True)
    assert shuffled.record_files != in_file_order.record_files and shuffled.key["order"] == "shuffled-12345"
    file_scores = [float(r["label_ids"]) for r in _read_records(in_file_order.record_files, 6, True)]
    scores = [float(r["label_ids"]) for r in _read_records(shuffled.record_files, 6, True)]
    assert file_scores == pytest.approx([i / 100 for i in range(200)])
    assert scores == pytest.approx([float(e.label) for e in shuffled.examples])  # examples come in record order
    assert sorted(scores) == pytest.approx(file_scores) and scores != pytest.approx(file_scores)
    expected = list(range(200))
    random.Random(12345).shuffle(expected)  # the official run_squad's shuffle of training examples
    assert scores == pytest.approx([i / 100 for i in expected])
    assert min(scores[:40]) < 1.0 < max(scores[:40])  # both genres in the first window
    # The permutation is split into consecutive files (one per 32 records) that training reads in a seeded order;
    # the file's order stays one file, as the official layout.
    assert len(in_file_order.record_files) == 1 and in_file_order.key["layout"] == "one-file"
    assert [os.path.basename(p)[-15:] for p in shuffled.record_files] == [f"-{k:05d}-of-00006" for k in range(6)]
    base = shuffled.record_files[0][: -len("-00000-of-00006")]
    with open(base + ".json", encoding="utf-8") as f:
        assert json.load(f)["record_files"] == [os.path.basename(p) for p in shuffled.record_files]
    os.remove(shuffled.record_files[3])  # a cache missing a file is written again, not read short
    again = glue.cached_features(proc, root, "train", tok, 6, cache, shuffle=True)
    assert not again.reused and again.record_files == shuffled.record_files
    assert [float(r["label_ids"]) for r in _read_records(again.record_files, 6, True)] == pytest.approx(scores)
    assert glue.cached_features(proc, root, "train", tok, 6, cache, shuffle=True).reused
    assert glue.cached_features(proc, root, "train", tok, 6, cache, shuffle=True).reused


def test_submission_rows_labels_and_clipped_scores(tmp_path):
    ex = [glue.InputExample(str(i), "x") for i in range(3)]
    rows = glue.submission_rows(glue.get_processor("qnli"), ex, np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.4]]))
    assert rows == [("0", "entailment"), ("1", "not_entailment"), ("2", "entailment")]
    rows = glue.submission_rows(glue.get_processor("sts-b"), ex, np.array([[-0.7], [2.345], [6.1]]))
    assert rows == [("0", "0.000"), ("1", "2.345"), ("2", "5.000")]
    out = tmp_path / "STS-B.tsv"
    glue.write_submission(str(out), rows)
    assert out.read_text().splitlines() == ["index\tprediction", "0\t0.000", "1\t2.345", "2\t5.000"]


def _mrpc_dev_or_sample_pairs(n):
    """The first ``n`` MRPC dev pairs where ``../shared`` is present, else pairs of the sample corpus's sentences."""
    base = shared_data_dir()
    if base is not None and (base / "glue" / "MRPC").is_dir():
        return glue.get_processor("mrpc").get_dev_examples(str(base / "glue"))[:n]
    from albert_tf.data.sample_corpus import generate_documents

    docs = generate_documents(n, seed=0)
    return [glue.InputExample(str(i), d[0], d[1], str(i % 2)) for i, d in enumerate(docs)]


def test_features_match_sentencepiece_reference(spm_model):
    """Sentence pairs through the project tokenizer + packing == python sentencepiece on the restated recipe.

    MRPC dev pairs and 30k-clean where ``../shared`` is present, else sample-corpus pairs and the substitute model.
    Reference: ``preprocess_text`` restated for plain ASCII text (collapse whitespace, lower-case), ids from the
    sentencepiece library directly, ``[CLS]=2 a [SEP]=3 b [SEP]=3``, pair truncation restated from spec 4.1.
    Rows with a digit before a comma (the official re-encoding quirk) or non-ASCII text are left out.
    """
    import re

    import sentencepiece as spm

    from albert_tf.tokenization import FullTokenizer

    model = str(spm_model)
    sp = spm.SentencePieceProcessor(model_file=model)
    tok = FullTokenizer(spm_model_file=model)
    proc = glue.get_processor("mrpc")
    checked = 0
    for ex in _mrpc_dev_or_sample_pairs(80):
        text = ex.text_a + ex.text_b
        if re.search(r"\d,", text) or not text.isascii():
            continue
        a = sp.encode(" ".join(ex.text_a.split()).lower())
        b = sp.encode(" ".join(ex.text_b.split()).lower())
        while len(a) + len(b) > 40 - 3:
            (a if len(a) > len(b) else b).pop()
        ids = [2, *a, 3, *b, 3]
        want = ids + [0] * (40 - len(ids))
        got = glue.convert_example(ex, proc, 40, tok)
        assert got.input_ids == want
        assert got.segment_ids == [0] * (len(a) + 2) + [1] * (len(b) + 1) + [0] * (40 - len(ids))
        assert got.label_id == int(ex.label)
        checked += 1
    assert checked > 40


def test_wordpiece_features_for_chinese_models():
    """--spm_model_file='' path: WordPiece ids with [CLS]=101 / [SEP]=102 of the Chinese vocab."""
    from albert_tf.tokenization import FullTokenizer

    vocab_path = shared_path("spm", "chinese-wordpiece-vocab.txt")
    with open(vocab_path, encoding="utf-8") as f:
        vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
    tok = FullTokenizer(vocab_file=str(vocab_path), do_lower_case=True)
    ex = glue.InputExample("0", "模型很小", "但是很强", "1")
    f = glue.convert_example(ex, glue.get_processor("sst-2"), 12, tok)
    want = [
        vocab["[CLS]"],
        *(vocab[c] for c in "模型很小"),
        vocab["[SEP]"],
        *(vocab[c] for c in "但是很强"),
        vocab["[SEP]"],
    ]
    assert want[0] == 101 and want[5] == 102
    assert f.input_ids == want + [0] * (12 - len(want)) and f.label_id == 1
