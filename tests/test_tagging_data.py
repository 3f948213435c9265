"""Token tagging's data and scores: the CoNLL column reader on WNUT 2017 and on every layout and mistake it must
tell apart, the IOB1 / BIOES -> IOB2 conversion, and the entity scores against seqeval's (an independent
implementation of conlleval's chunking)."""

from __future__ import annotations

import random

import pytest

from albert_tf.data.tagging import (
    IGNORE,
    Repairs,
    TaggingDataError,
    check_scheme,
    detect_scheme,
    entity_spans,
    labels_of,
    read_conll,
    sentence_windows,
    to_iob2,
)
from albert_tf.tasks.tagging.scoring import conlleval_lines, score

WNUT = "ner/wnut17"


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "a.conll"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_wnut17_reads_as_published(shared_data):
    """The published counts: 3,394 training and 1,009 dev sentences, six entity types in IOB2, 62,730 and 15,733
    words; both separators (empty and tab-only lines) end sentences."""
    train = read_conll(str(shared_data / WNUT / "wnut17train.conll"))
    dev = read_conll(str(shared_data / WNUT / "emerging.dev.conll"))
    assert (len(train), len(dev)) == (3394, 1009)
    assert (sum(len(s.words) for s in train), sum(len(s.words) for s in dev)) == (62730, 15733)
    assert detect_scheme(train) == detect_scheme(dev) == "iob2"
    check_scheme(train, "iob2", "train")
    labels = labels_of(s.tags for s in train)
    assert labels[0] == "O" and len(labels) == 13
    assert {label[2:] for label in labels[1:]} == {"corporation", "creative-work", "group", "location", "person",
                                                   "product"}
    repairs = Repairs()
    assert all(to_iob2(s.tags, "iob2", repairs, "train", s.line) == s.tags for s in train) and repairs.count == 0
    assert train[0].line == 1 and all(len(s.words) == len(s.tags) for s in train)


def test_separators_docstart_spaces_and_line_numbers(tmp_path):
    path = _write(tmp_path, "-DOCSTART- -X- O O\n\nEU B-ORG\nrejects O\n \t \nGerman\tB-MISC\ncall I-MISC\n\n\n"
                             "Peter NNP B-PER\n")
    sentences = read_conll(path)
    assert [(s.words, s.tags, s.line) for s in sentences] == [
        (("EU", "rejects"), ("B-ORG", "O"), 3), (("German", "call"), ("B-MISC", "I-MISC"), 6),
        (("Peter",), ("B-PER",), 10)]


@pytest.mark.parametrize(("text", "message"), [
    ("EU B-ORG\nrejects\n", "a.conll:2: 'rejects' has no tag column"),
    ("", "a.conll: no sentence"),
    ("\n \n\t\n", "a.conll: no sentence"),
])
def test_unreadable_files_are_one_line_naming_file_and_line(tmp_path, text, message):
    with pytest.raises(TaggingDataError, match=message):
        read_conll(_write(tmp_path, text))


def test_binary_file_is_refused(tmp_path):
    path = tmp_path / "a.conll"
    path.write_bytes(b"EU\tB-ORG\n\xff\xfe\tO\n")
    with pytest.raises(TaggingDataError, match="a.conll: not UTF-8 text"):
        read_conll(str(path))


def test_a_tag_outside_the_scheme_names_its_line(tmp_path):
    path = _write(tmp_path, "EU B-ORG\nrejects O\n\nGerman S-MISC\n")
    sentences = read_conll(path)
    with pytest.raises(TaggingDataError, match=r"a.conll:4: tag 'S-MISC' is not IOB2 \(expected O, B-TYPE, I-TYPE\)"):
        check_scheme(sentences, "iob2", path)
    check_scheme(sentences, "bioes", path)
    with pytest.raises(TaggingDataError, match="a.conll:1: tag 'X' is not BIOES"):
        check_scheme(read_conll(_write(tmp_path, "EU X\n")), "bioes", path)



def test_schemes_convert_to_iob2():
    # IOB1 (CoNLL 2003's files): I- begins an entity, B- only one right after an entity of the same type
    iob1 = ("I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG")
    assert to_iob2(iob1, "iob1") == ("B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG")
    bioes = ("S-PER", "B-LOC", "I-LOC", "E-LOC", "O", "B-ORG", "E-ORG", "S-ORG")
    assert to_iob2(bioes, "bioes") == ("B-PER", "B-LOC", "I-LOC", "I-LOC", "O", "B-ORG", "I-ORG", "B-ORG")
    # an I- that continues no entity of its type is the start of a new one (conlleval), counted as a repair
    repairs = Repairs()
    assert to_iob2(("O", "I-PER", "B-LOC", "I-PER"), "iob2", repairs, "f", 10) == ("O", "B-PER", "B-LOC", "B-PER")
    assert repairs.count == 2 and repairs.first == "f:11: I-PER after O"


def test_detect_scheme():
    def sentences(*tag_lists):
        return [type("S", (), {"tags": tags})() for tags in tag_lists]

    assert detect_scheme(sentences(("I-PER", "O"), ("I-LOC", "B-LOC"))) == "iob1"
    assert detect_scheme(sentences(("B-PER", "I-PER"), ("O",))) == "iob2"
    assert detect_scheme(sentences(("B-PER", "E-PER"),)) == "bioes"
    assert detect_scheme(sentences(("I-PER",), ("B-LOC",))) == "iob2"  # a B- that begins an entity: IOB2 repaired


def test_entity_spans_read_chunks_as_conlleval():
    assert entity_spans(("B-PER", "I-PER", "O", "I-LOC", "I-LOC", "B-LOC", "I-ORG")) == [
        ("PER", 0, 2), ("LOC", 3, 5), ("LOC", 5, 6), ("ORG", 6, 7)]
    assert entity_spans(("O", "O")) == []


def _noisy(tags: tuple[str, ...], labels: list[str], rng: random.Random) -> list[str]:
    """Predictions that are right most of the time and wrong in every way a model can be (wrong type, wrong span,
    an I- after O, a missed or invented entity)."""
    return [rng.choice(labels) if rng.random() < 0.15 else tag for tag in tags]


def test_scores_equal_seqeval_on_the_dev_file(shared_data):
    """Overall and per-type precision, recall and F1 equal seqeval's (its default mode reads chunks as conlleval
    does) to every digit, and token accuracy equals seqeval's accuracy_score."""
    seqeval = pytest.importorskip("seqeval.metrics")
    dev = read_conll(str(shared_data / WNUT / "emerging.dev.conll"))
    labels = labels_of(s.tags for s in dev)
    rng = random.Random(7)
    gold = [list(s.tags) for s in dev]
    predicted = [_noisy(s.tags, labels, rng) for s in dev]
    ours = score(gold, predicted)
    assert ours["precision"] == seqeval.precision_score(gold, predicted)
    assert ours["recall"] == seqeval.recall_score(gold, predicted)
    assert ours["f1"] == seqeval.f1_score(gold, predicted)
    assert ours["accuracy"] == seqeval.accuracy_score(gold, predicted)
    report = seqeval.classification_report(gold, predicted, output_dict=True, zero_division=0)
    assert set(ours["per_type"]) == set(report) - {"micro avg", "macro avg", "weighted avg"}
    for kind, mine in ours["per_type"].items():
        assert (mine["precision"], mine["recall"], mine["f1"]) == (
            report[kind]["precision"], report[kind]["recall"], report[kind]["f1-score"]), kind
        assert mine["entities"] == report[kind]["support"]
    assert 0.3 < ours["f1"] < 0.9 and ours["entities"] == report["micro avg"]["support"]
    # a constant "O" finds nothing: F1 0 (the baseline)
    assert score(gold, [["O"] * len(t) for t in gold])["f1"] == 0.0


def test_conlleval_layout():
    lines = conlleval_lines([("New", "York"), ("hi there",)], [("B-LOC", "I-LOC"), ("O",)],
                            [("B-LOC", "O"), ("O",)])
    assert lines == ["New B-LOC B-LOC", "York I-LOC O", "", "hi_there O O", ""]


class _PieceTokenizer:
    """A stand-in tokenizer: a word of n letters is ceil(n / 3) pieces, ids from a growing table."""

    special_tokens = {"unk": "<unk>"}
    cls_id, sep_id = 2, 3

    def __init__(self) -> None:
        self.ids: dict[str, int] = {"<unk>": 1}

    def tokenize(self, word: str) -> list[str]:
        return [word[i:i + 3] for i in range(0, len(word), 3)]

    def convert_tokens_to_ids(self, pieces: list[str]) -> list[int]:
        return [self.ids.setdefault(p, len(self.ids) + 4) for p in pieces]


def test_no_word_is_dropped_from_a_long_sentence():
    """300 words of 1 to 3 pieces through max_seq_length=64: overlapping windows of at most 64 positions, every
    word scored from exactly one window (where it has the most context), its label on its first piece only."""
    rng = random.Random(3)
    words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 9))) for _ in range(300)]
    labels = [rng.randint(0, 4) for _ in words]
    windows = sentence_windows(_PieceTokenizer(), words, labels, 64)
    assert len(windows) > 1 and all(len(w.input_ids) <= 64 for w in windows)
    scored = [i for w in windows for i in w.word_index if i >= 0]
    assert sorted(scored) == list(range(300))
    for window in windows:
        assert window.input_ids[0] == 2 and window.input_ids[-1] == 3
        for position, word in enumerate(window.word_index):
            if word >= 0:
                assert window.label_ids[position] == labels[word]
    # a word's later pieces carry no label; with label_all_pieces they carry the continued label
    one = sentence_windows(_PieceTokenizer(), ["abcdefg"], [1], 64)[0]
    assert one.label_ids == (IGNORE, 1, IGNORE, IGNORE, IGNORE)
    every = sentence_windows(_PieceTokenizer(), ["abcdefg"], [1], 64, label_all_pieces=True, continuation=[0, 2, 2])
    assert every[0].label_ids == (IGNORE, 1, 2, 2, IGNORE)
    # a word the tokenizer turns into nothing keeps a position (the unknown piece)
    empty = sentence_windows(_PieceTokenizer(), ["ab", "", "cd"], [0, 1, 0], 16)[0]
    assert empty.input_ids[2] == 1 and empty.word_index == (-1, 0, 1, 2, -1)


def test_each_word_is_scored_where_it_has_the_most_context():
    words = [f"w{i:02d}" for i in range(20)]  # one piece each
    windows = sentence_windows(_PieceTokenizer(), words, None, 12, stride=5)  # 10 pieces a window
    assert [w.start for w in windows] == [0, 5, 10]
    owner = {i: n for n, w in enumerate(windows) for i in w.word_index if i >= 0}
    # piece 7: window 0 (left 7, right 2) or window 1 (left 2, right 7): tie -> the earlier; piece 8 -> window 1
    assert (owner[0], owner[4], owner[7], owner[8], owner[12], owner[13], owner[19]) == (0, 0, 0, 1, 1, 2, 2)
    assert all(w.label_ids is None for w in windows)


def test_wnut17_dev_sentences_in_windows(shared_data, spm_model):
    """With the SentencePiece tokenizer every dev word keeps its first piece, and at max_seq_length 32 the long
    sentences are windowed with every word scored once."""
    from albert_tf.tokenization.full_tokenizer import FullTokenizer

    tokenizer = FullTokenizer(spm_model_file=str(spm_model))
    dev = read_conll(str(shared_data / WNUT / "emerging.dev.conll"))
    windowed = 0
    for sentence in dev:
        windows = sentence_windows(tokenizer, sentence.words, [0] * len(sentence.words), 32)
        windowed += len(windows) > 1
        assert sorted(i for w in windows for i in w.word_index if i >= 0) == list(range(len(sentence.words)))
    assert 0 < windowed < len(dev)
