"""RACE reader, features and cache (spec 4.3, ``albert_tf.data.race``).

* the 10 real passage files (``../shared/data/race``) in both layouts -- one passage per file and ``all.txt`` --
  give the same questions, as many as an independent count; the level filters;
* feature parity with a straight restatement of spec 4.3 written here, at 512/128 and at 128/32 (articles cut),
  with cloze questions and cut articles among the checked cases;
* the keyed cache (every input changes the key, reuse without re-tokenising) and ``load_dataset`` shapes;
* bad input: one line naming the file (and line / question index).
"""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest

from albert_tf.data import race
from tests.conftest import shared_path

LEVELS = ("middle", "high")


@pytest.fixture(scope="module")
def race_root() -> pathlib.Path:
    """The shared folder holding ``RACE/`` (original layout: one JSON passage per ``N.txt``)."""
    return shared_path("race")


@pytest.fixture(scope="module")
def tokenizer():
    from albert_tf.tokenization.full_tokenizer import FullTokenizer

    return FullTokenizer(spm_model_file=str(shared_path("spm", "30k-clean.model")))


def _passage_files(root: pathlib.Path, split: str, level: str) -> list[pathlib.Path]:
    return sorted((root / "RACE" / split / level).glob("*.txt"), key=lambda p: p.name)


def _write_all_txt_tree(src: pathlib.Path, dst: pathlib.Path) -> pathlib.Path:
    """A copy of the tree in the official layout: one ``all.txt`` per level folder, one passage per line."""
    for split in ("train", "dev"):
        for level in LEVELS:
            folder = dst / "RACE" / split / level
            folder.mkdir(parents=True)
            lines = [json.dumps(json.loads(p.read_text(encoding="utf-8"))) for p in _passage_files(src, split, level)]
            (folder / "all.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dst


# ------------------------------------------------------------------------------------------------- the reader
def test_both_layouts_read_every_question(race_root, tmp_path):
    all_txt_root = _write_all_txt_tree(race_root, tmp_path / "all_txt")
    for split in ("train", "dev"):
        expected_ids = []
        for level in LEVELS:
            for path in _passage_files(race_root, split, level):
                passage = json.loads(path.read_text(encoding="utf-8"))
                expected_ids += [f"{passage['id']}-{i}" for i in range(len(passage["questions"]))]
        per_file = race.read_race_examples(str(race_root), split)
        assert [e.example_id for e in per_file] == expected_ids
        assert race.read_race_examples(str(all_txt_root), split) == per_file
        assert race.race_source_files(str(all_txt_root), split) == [
            str(all_txt_root / "RACE" / split / level / "all.txt") for level in LEVELS
        ]
        for e in per_file:
            assert len(e.options) == 4 and e.label in (0, 1, 2, 3) and e.level in LEVELS
            assert e.example_id.startswith(e.level)  # RACE ids are "middle13.txt", "high80.txt", ...

        middle = race.read_race_examples(str(race_root), split, middle_only=True)
        high = race.read_race_examples(str(all_txt_root), split, high_only=True)
        assert middle and high and middle + high == per_file
        assert {e.level for e in middle} == {"middle"} and {e.level for e in high} == {"high"}
    assert len(race.read_race_examples(str(race_root), "train")) + len(
        race.read_race_examples(str(race_root), "dev")
    ) == sum(
        len(json.loads(p.read_text(encoding="utf-8"))["questions"]) for p in (race_root / "RACE").glob("*/*/*.txt")
    )


def test_label_and_fields_of_a_known_passage(race_root):
    passage = json.loads((race_root / "RACE" / "dev" / "middle" / "13.txt").read_text(encoding="utf-8"))
    examples = {e.example_id: e for e in race.read_race_examples(str(race_root), "dev", middle_only=True)}
    for i, question in enumerate(passage["questions"]):
        e = examples[f"{passage['id']}-{i}"]
        assert (e.article, e.question, e.options) == (passage["article"], question, tuple(passage["options"][i]))
        assert e.label == "ABCD".index(passage["answers"][i])


def test_all_txt_wins_over_per_file_passages(race_root, tmp_path):
    root = tmp_path / "both"
    shutil.copytree(race_root / "RACE" / "dev", root / "RACE" / "dev")
    first = _passage_files(race_root, "dev", "middle")[0]
    (root / "RACE" / "dev" / "middle" / "all.txt").write_text(first.read_text(encoding="utf-8"), encoding="utf-8")
    examples = race.read_race_examples(str(root), "dev", middle_only=True)
    assert {e.example_id.rsplit("-", 1)[0] for e in examples} == {json.loads(first.read_text())["id"]}


def test_unlabelled_test_split_and_level_flags(tmp_path):
    passage = {"id": "high1.txt", "article": "A b c.", "questions": ["Q?"], "options": [["a", "b", "c", "d"]]}
    _write(tmp_path, "test", "high", "1.txt", json.dumps(passage))
    (example,) = race.read_race_examples(str(tmp_path), "test")  # no middle folder: a warning, not an error
    assert example.label is None and example.level == "high"
    with pytest.raises(race.RaceDataError, match="no RACE data for split 'test'.*middle"):
        race.read_race_examples(str(tmp_path), "test", middle_only=True)
    with pytest.raises(race.RaceDataError, match="at most one"):
        race.read_race_examples(str(tmp_path), "test", middle_only=True, high_only=True)


# ------------------------------------------------------------------------------------------------- features
def _spec_choice(tokenizer, article: str, question: str, option: str, max_seq_length: int, max_qa_length: int):
    """Spec 4.3 restated: one choice's ids / segment ids / mask and whether the article was cut."""
    qa = question.replace("_", option) if "_" in question else question + " " + option
    qa_tokens = tokenizer.tokenize(qa)[-max_qa_length:]
    article_tokens = tokenizer.tokenize(article)
    keep = max_seq_length - 3 - len(qa_tokens)
    cut = len(article_tokens) > keep
    article_tokens = article_tokens[:keep]
    tokens = ["[CLS]", *article_tokens, "[SEP]", *qa_tokens, "[SEP]"]
    segments = [0] * (len(article_tokens) + 2) + [1] * (len(qa_tokens) + 1)
    pad = max_seq_length - len(tokens)
    ids = tokenizer.convert_tokens_to_ids(tokens) + [0] * pad
    return ids, segments + [0] * pad, [1] * len(tokens) + [0] * pad, cut


@pytest.mark.parametrize("max_seq_length,max_qa_length", [(512, 128), (128, 32), (96, 8)])
def test_features_equal_the_spec(race_root, tokenizer, max_seq_length, max_qa_length):
    examples = race.read_race_examples(str(race_root), "dev")
    features = list(race.convert_examples(examples, tokenizer, max_seq_length, max_qa_length))
    cloze = cut = qa_cut = 0
    for example, feature in zip(examples, features, strict=True):
        expected = [
            _spec_choice(tokenizer, example.article, example.question, o, max_seq_length, max_qa_length)
            for o in example.options
        ]
        assert feature.input_ids == sum((e[0] for e in expected), [])
        assert feature.segment_ids == sum((e[1] for e in expected), [])
        assert feature.input_mask == sum((e[2] for e in expected), [])
        assert feature.label == example.label and feature.is_real_example
        assert feature.article_cut == sum(e[3] for e in expected)
        assert race.convert_example(example, tokenizer, max_seq_length, max_qa_length) == feature
        cloze += "_" in example.question
        cut += feature.article_cut > 0
        qa_cut += feature.qa_cut > 0
    assert cloze > 0, "no cloze question among the checked cases"
    if max_seq_length < 512:
        assert cut > 0, "no cut article among the checked cases"
    if max_qa_length < 10:
        assert qa_cut > 0, "no cut question + option among the checked cases"


def test_cut_article_and_cloze_in_a_built_case(tokenizer):
    example = race.RaceExample("x-0", "one two three " * 40, "He _ the ball.", ("kicked", "ate", "b", "c"), 3, "high")
    feature = race.convert_example(example, tokenizer, 32, 8)
    ids = np.array(feature.input_ids).reshape(4, 32)
    qa = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("He kicked the ball."))
    assert feature.article_cut == 4 and feature.label == 3
    assert ids[0, -len(qa) - 1 : -1].tolist() == qa and ids[0, -1] == tokenizer.sep_id and ids[0, 0] == tokenizer.cls_id
    assert np.array(feature.input_mask).reshape(4, 32).all()


def test_official_field_preprocessing_before_the_cloze_test(tokenizer):
    """A full-width low line becomes "_" under NFKD: as the official (which pre-processes each field first), the
    question is a cloze question; the option fills the blank."""
    example = race.RaceExample("x-0", "Text.", "He \uff3f home.", ("went", "b", "c", "d"), None, "middle")
    feature = race.convert_example(example, tokenizer, 32, 16)
    article = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("Text."))
    qa = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("he went home."))
    assert feature.input_ids[:32][: len(article) + len(qa) + 3] == [2, *article, 3, *qa, 3]
    assert feature.label == race.UNLABELLED


def test_lengths_are_checked(tokenizer):
    example = race.RaceExample("x-0", "a", "q", ("a", "b", "c", "d"), 0, "middle")
    for seq, qa in ((16, 14), (16, 0)):
        with pytest.raises(ValueError, match="max_qa_length"):
            race.convert_example(example, tokenizer, seq, qa)


# ------------------------------------------------------------------------------------------------- cache and tf.data
def test_cache_key_reuse_and_dataset(race_root, tokenizer, tmp_path, monkeypatch):
    from albert_tf.tokenization.full_tokenizer import FullTokenizer

    data = tmp_path / "data"
    shutil.copytree(race_root / "RACE" / "dev", data / "RACE" / "dev")
    cache = str(tmp_path / "cache")
    first = race.cached_features(str(data), "dev", tokenizer, 64, 16, cache)
    assert not first.reused and first.num_examples == len(first.examples) > 0
    assert first.report["questions"] == first.num_examples and first.report["articles_cut"] == first.num_examples

    def no_conversion(*args, **kwargs):
        raise AssertionError("the cache should have been reused")

    with monkeypatch.context() as m:
        m.setattr(race.cache, "convert_examples", no_conversion)
        again = race.cached_features(str(data), "dev", tokenizer, 64, 16, cache)
    assert again.reused and again.key == first.key and again.record_files == first.record_files

    keys = {first.key}
    for kwargs in (
        {"max_seq_length": 72},
        {"max_qa_length": 12},
        {"middle_only": True},
        {"high_only": True},
        {"shuffle": True},
        {"tokenizer": FullTokenizer(spm_model_file=str(shared_path("spm", "30k-clean.model")), do_lower_case=False)},
    ):
        args = {"tokenizer": tokenizer, "max_seq_length": 64, "max_qa_length": 16, **kwargs}
        other = race.cached_features(str(data), "dev", cache_dir=cache, **args)
        assert not other.reused and other.key not in keys, kwargs
        keys.add(other.key)
    shuffled = race.cached_features(str(data), "dev", tokenizer, 64, 16, cache, shuffle=True)
    assert shuffled.reused and sorted(e.example_id for e in shuffled.examples) == sorted(
        e.example_id for e in first.examples) and [e.example_id for e in shuffled.examples] != [
        e.example_id for e in first.examples]
    records = race.load_dataset(shuffled.record_files, 64, 1, is_training=False)
    labels = [int(b["label_ids"].numpy()[0]) for b in records]
    assert labels == [e.label for e in shuffled.examples]  # the examples come in record order
    changed = data / "RACE" / "dev" / "high" / "73.txt"
    passage = json.loads(changed.read_text(encoding="utf-8"))
    passage["article"] += " One more sentence."
    changed.write_text(json.dumps(passage), encoding="utf-8")
    edited = race.cached_features(str(data), "dev", tokenizer, 64, 16, cache)
    assert not edited.reused and edited.key not in keys

    expected = list(race.convert_examples(first.examples, tokenizer, 64, 16))
    batches = list(race.load_dataset(first.record_files, 64, batch_size=5, is_training=False))
    assert [int(b["label_ids"].shape[0]) for b in batches] == [5] * (len(expected) // 5) + (
        [len(expected) % 5] if len(expected) % 5 else []
    )
    b = batches[0]
    for name in ("input_ids", "input_mask", "segment_ids"):
        assert b[name].shape == (5, 4, 64) and b[name].dtype.name == "int32"
        got = np.concatenate([x[name].numpy() for x in batches])
        assert (got == np.array([getattr(f, name) for f in expected]).reshape(-1, 4, 64)).all()
    assert b["label_ids"].dtype.name == "int32" and b["is_real_example"].numpy().tolist() == [1] * 5
    assert np.concatenate([x["label_ids"].numpy() for x in batches]).tolist() == [f.label for f in expected]

    train = race.load_dataset(first.record_files, 64, batch_size=4, is_training=True, seed=3)
    shapes = [tuple(x["input_ids"].shape) for x in train.take(len(expected))]  # repeats past one epoch
    assert set(shapes) == {(4, 4, 64)}


# ------------------------------------------------------------------------------------------------- bad input
def _write(root: pathlib.Path, split: str, level: str, name: str, text: str | bytes) -> pathlib.Path:
    folder = root / "RACE" / split / level
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


GOOD = {
    "id": "middle1.txt",
    "article": "Tom has a dog.",
    "questions": ["What does Tom have?", "Tom has a _ ."],
    "options": [["a cat", "a dog", "a bird", "a fish"], ["dog", "cat", "cow", "pig"]],
    "answers": ["B", "A"],
}


def _bad(**changes):
    passage = {**GOOD, **changes}
    return json.dumps({k: v for k, v in passage.items() if v is not None})


@pytest.mark.parametrize(
    "content,message",
    [
        (_bad(options=[["a cat", "a dog", "a bird"], ["dog", "cat", "cow", "pig"]]), "question 0: expected 4 options"),
        (_bad(answers=["B", "E"]), "question 1: answer 'E' is not one of A, B, C, D"),
        (_bad(article=None), "passage without 'article'"),
        (_bad(answers=None), "passage without 'answers'"),
        (_bad(answers=["B"]), "list lengths disagree"),
        (_bad(options=[["a", "b", "c", "d"], ["a", 2, "c", "d"]]), "question 1: every option must be a string"),
        ('{"id": "middle1.txt", "article": ', "line 1: not JSON"),
        (GOOD["article"].encode() + b"\xff\xfe", "line 1: not UTF-8"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_bad_passage_file_is_one_line_naming_the_file(tmp_path, content, message):
    path = _write(tmp_path, "dev", "middle", "1.txt", content)
    with pytest.raises(race.RaceDataError) as info:
        race.read_race_examples(str(tmp_path), "dev")
    text = str(info.value)
    assert "\n" not in text and str(path) in text and message in text, text


def test_bad_line_of_all_txt_is_named(tmp_path):
    lines = [json.dumps(GOOD), json.dumps({**GOOD, "id": "middle2.txt"}), "{not json"]
    path = _write(tmp_path, "train", "high", "all.txt", "\n".join(lines) + "\n")
    with pytest.raises(race.RaceDataError, match=rf"^{path}: line 3: not JSON"):
        race.read_race_examples(str(tmp_path), "train")
    lines[2] = json.dumps({**GOOD, "id": "middle3.txt", "options": [["a", "b", "c", "d"], ["a", "b"]]})
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(race.RaceDataError, match=rf"^{path}: line 3: question 1: expected 4 options, got 2$"):
        race.read_race_examples(str(tmp_path), "train")
    lines[2] = json.dumps(GOOD)
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(race.RaceDataError, match=rf"^{path}: line 3: passage id 'middle1.txt' already read"):
        race.read_race_examples(str(tmp_path), "train")
    path.write_bytes(b"\n".join(line.encode() for line in lines[:2]) + b"\n\x80\n")
    with pytest.raises(race.RaceDataError, match=rf"^{path}: line 3: not UTF-8"):
        race.read_race_examples(str(tmp_path), "train")


def test_empty_split_names_the_folders(tmp_path):
    (tmp_path / "RACE" / "dev" / "middle").mkdir(parents=True)
    with pytest.raises(race.RaceDataError) as info:
        race.read_race_examples(str(tmp_path), "dev")
    text = str(info.value)
    assert "\n" not in text and "no RACE data for split 'dev'" in text
    assert str(tmp_path / "RACE" / "dev" / "middle") in text and str(tmp_path / "RACE" / "dev" / "high") in text


def test_bad_input_fails_before_tokenisation(tmp_path, tokenizer, monkeypatch):
    _write(tmp_path, "dev", "middle", "1.txt", json.dumps(GOOD))
    _write(tmp_path, "dev", "middle", "2.txt", _bad(id="middle2.txt", answers=["B", "a"]))
    monkeypatch.setattr(race.cache, "convert_examples", lambda *a, **k: pytest.fail("tokenised before validation"))
    with pytest.raises(race.RaceDataError, match="2.txt: line 1: question 1: answer 'a'"):
        race.cached_features(str(tmp_path), "dev", tokenizer, 64, 16, str(tmp_path / "cache"))
