"""Golden parity: every case of the official tokenizer's outputs (../shared/reference/official-tokenizer-golden.jsonl,
copied to tests/data so the model-free cases run in a fresh clone).

The golden file was produced by the official ``tokenization.py`` (preprocess_text + encode_pieces + PieceToId for the
English 30k-clean SentencePiece model, BasicTokenizer + WordPiece for the Chinese vocab). It is authoritative over
the spec prose. Every case must match exactly, in the Python tokenizer and (SentencePiece cases) in the graph.
"""

from __future__ import annotations

import json

import pytest
from conftest import golden_cases, shared_path, shared_reference

from albert_tf.tokenization import FullTokenizer, preprocess_text

MODELS = {"30k-clean": ("spm", "30k-clean.model"), "chinese-wordpiece": ("wordpiece", "chinese-wordpiece-vocab.txt")}


def _cases() -> list[dict]:
    return golden_cases()


def test_golden_copy_is_the_reference():
    with open(shared_reference("official-tokenizer-golden.jsonl"), encoding="utf-8") as f:
        assert [json.loads(line) for line in f if line.strip()] == golden_cases()


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_golden_preprocess_text_every_case(do_lower_case):
    """The official preprocess_text (whitespace, NFKD, combining marks dropped, optional lower) needs no model."""
    cases = [c for c in _cases() if "preprocessed" in c and c["do_lower_case"] == do_lower_case]
    assert len(cases) > 100
    bad = [(c["text"], c["preprocessed"]) for c in cases
           if preprocess_text(c["text"], lower=do_lower_case) != c["preprocessed"]]
    assert not bad, f"{len(bad)} of {len(cases)} differ, first: {bad[:3]}"


def _tokenizer(model: str, do_lower_case: bool) -> FullTokenizer:
    kind, name = MODELS[model]
    path = shared_path("spm", name)
    if kind == "spm":
        return FullTokenizer(spm_model_file=path, do_lower_case=do_lower_case)
    return FullTokenizer(vocab_file=path, do_lower_case=do_lower_case)


def test_golden_file_shape():
    cases = _cases()
    assert len(cases) == 304
    assert {c["model"] for c in cases} == set(MODELS)
    assert {c["do_lower_case"] for c in cases} == {True, False}


def test_golden_python_every_case_matches():
    tokenizers: dict = {}
    failures = []
    cases = _cases()
    for n, case in enumerate(cases):
        key = (case["model"], case["do_lower_case"])
        if key not in tokenizers:
            tokenizers[key] = _tokenizer(*key)
        tok = tokenizers[key]
        if "preprocessed" in case:
            pre = preprocess_text(case["text"], lower=case["do_lower_case"])
            if pre != case["preprocessed"]:
                failures.append((n, "preprocessed", pre, case["preprocessed"]))
                continue
        pieces = tok.tokenize(case["text"])
        ids = tok.convert_tokens_to_ids(pieces)
        if pieces != case["pieces"] or ids != case["ids"]:
            failures.append((n, "pieces/ids", pieces, case["pieces"]))
    assert not failures, f"{len(failures)} of {len(cases)} golden cases differ, first: {failures[:3]}"


def test_golden_preprocessed_path_is_the_official_tokenize():
    """tokenize(preprocessed=True) on the golden pre-processed text is exactly the official FullTokenizer.tokenize."""
    for do_lower_case in (True, False):
        tok = _tokenizer("30k-clean", do_lower_case)
        for case in _cases():
            if case["model"] == "30k-clean" and case["do_lower_case"] == do_lower_case:
                assert tok.tokenize(case["preprocessed"], preprocessed=True) == case["pieces"]


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_golden_in_graph_every_case_matches(do_lower_case):
    tf = pytest.importorskip("tensorflow")
    from albert_tf.tokenization import AlbertPreprocessor

    cases = [c for c in _cases() if c["model"] == "30k-clean" and c["do_lower_case"] == do_lower_case]
    layer = AlbertPreprocessor(shared_path("spm", "30k-clean.model"), max_seq_length=8, do_lower_case=do_lower_case)
    texts = tf.constant([c["text"] for c in cases])
    pre = [p.decode("utf-8") for p in layer.preprocess(texts).numpy()]
    ids = layer.tokenize(texts).to_list()
    bad = [(c["text"], p, i) for c, p, i in zip(cases, pre, ids) if p != c["preprocessed"] or i != c["ids"]]
    assert not bad, f"{len(bad)} of {len(cases)} differ in the graph, first: {bad[:3]}"


def test_golden_in_graph_wordpiece_cases():
    tf = pytest.importorskip("tensorflow")
    from albert_tf.tokenization import AlbertPreprocessor

    cases = [c for c in _cases() if c["model"] == "chinese-wordpiece"]
    assert cases
    for do_lower_case in {c["do_lower_case"] for c in cases}:
        subset = [c for c in cases if c["do_lower_case"] == do_lower_case]
        layer = AlbertPreprocessor(
            vocab_file=shared_path("spm", "chinese-wordpiece-vocab.txt"), max_seq_length=8, do_lower_case=do_lower_case
        )
        ids = layer.tokenize(tf.constant([c["text"] for c in subset])).to_list()
        assert ids == [c["ids"] for c in subset]
