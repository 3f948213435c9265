"""SQuAD reader and feature conversion (``albert_tf.data.squad``, spec 4.2).

1. Parity with a plain restatement of the official ``convert_examples_to_features`` written here (dense DP matrix,
   back-pointer dict, one alignment per question, no caching), on 50 questions of the real dev subset (answerable
   and impossible) at two window sizes, plus built paragraphs that need the doubled band or fail the 80% rule.
2. Gold spans recovered from the token maps match the gold answers on the real subset.
3. The keyed cache: every input changes the key, a second call reuses the files, the JSON side file round-trips,
   no pickle, ``load_dataset`` dtypes and shapes.
4. Bad input: one line naming the file and the question id, before any tokenisation.
"""

from __future__ import annotations

import collections
import json
import random
import re
import string

import numpy as np
import pytest
from conftest import shared_path

from albert_tf.data import squad
from albert_tf.data.squad.alignment import align_paragraph
from albert_tf.tokenization import FullTokenizer, encode_ids, encode_pieces, preprocess_text

SPIECE = "\u2581"


# ----------------------------------------------------------------------------------------------------------------
# A straight restatement of the official algorithm (squad_utils.convert_examples_to_features), slow on purpose.
# Deliberate difference kept in the library too: piece lengths count characters (the official Python 3 code counts
# UTF-8 bytes for the token maps but characters in the DP).
# ----------------------------------------------------------------------------------------------------------------
def ref_convert_index(index, pos, m=None, is_start=True):
    if index[pos] is not None:
        return index[pos]
    n = len(index)
    rear = pos
    while rear < n - 1 and index[rear] is None:
        rear += 1
    front = pos
    while front > 0 and index[front] is None:
        front -= 1
    assert index[front] is not None or index[rear] is not None
    if index[front] is None:
        if index[rear] >= 1:
            if is_start:
                return 0
            return index[rear] - 1
        return index[rear]
    if index[rear] is None:
        if m is not None and index[front] < m - 1:
            if is_start:
                return index[front] + 1
            return m - 1
        return index[front]
    if is_start:
        if index[rear] > index[front] + 1:
            return index[front] + 1
        return index[rear]
    if index[rear] > index[front] + 1:
        return index[rear] - 1
    return index[front]


def ref_is_max_context(doc_spans, cur_span_index, position):
    best_score = None
    best_span_index = None
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score = score
            best_span_index = span_index
    return cur_span_index == best_span_index


def ref_align(paragraph_text, tok_cat_text, lower):
    """The official _lcs_match loop and backtrack: (score, DP ran twice, orig_to_chartok, chartok_to_orig)."""
    n, m = len(paragraph_text), len(tok_cat_text)
    f = np.zeros((n, m), dtype=np.float32)
    g = {}

    def lcs_match(max_dist):
        f.fill(0)
        g.clear()
        for i in range(n):
            for j in range(i - max_dist, i + max_dist):
                if j >= m or j < 0:
                    continue
                if i > 0:
                    g[(i, j)] = 0
                    f[i, j] = f[i - 1, j]
                if j > 0 and f[i, j - 1] > f[i, j]:
                    g[(i, j)] = 1
                    f[i, j] = f[i, j - 1]
                f_prev = f[i - 1, j - 1] if i > 0 and j > 0 else 0
                if (
                    preprocess_text(paragraph_text[i], lower=lower, remove_space=False) == tok_cat_text[j]
                    and f_prev + 1 > f[i, j]
                ):
                    g[(i, j)] = 2
                    f[i, j] = f_prev + 1

    max_dist = abs(n - m) + 5
    ran_twice = False
    for attempt in range(2):
        lcs_match(max_dist)
        if float(f[n - 1, m - 1]) > 0.8 * n:
            break
        ran_twice = ran_twice or attempt == 0
        max_dist *= 2

    orig_to_chartok_index = [None] * n
    chartok_to_orig_index = [None] * m
    i, j = n - 1, m - 1
    while i >= 0 and j >= 0:
        if (i, j) not in g:
            break
        if g[(i, j)] == 2:
            orig_to_chartok_index[i] = j
            chartok_to_orig_index[j] = i
            i, j = i - 1, j - 1
        elif g[(i, j)] == 1:
            j = j - 1
        else:
            i = i - 1
    return float(f[n - 1, m - 1]), ran_twice, orig_to_chartok_index, chartok_to_orig_index


def ref_convert(examples, tok, max_seq_length, doc_stride, max_query_length, lower=True):
    """Returns (features as dicts, mismatched qas_ids, qas_ids whose DP ran twice)."""
    sp = tok.sp_model
    out, mismatched, doubled = [], [], []
    unique_id = 1000000000
    for example_index, example in enumerate(examples):
        query_tokens = encode_ids(sp, preprocess_text(example.question_text, lower=lower))
        if len(query_tokens) > max_query_length:
            query_tokens = query_tokens[0:max_query_length]
        paragraph_text = example.paragraph_text
        para_tokens = encode_pieces(sp, preprocess_text(paragraph_text, lower=lower))

        chartok_to_tok_index, tok_start_to_chartok_index, tok_end_to_chartok_index = [], [], []
        char_cnt = 0
        for i, token in enumerate(para_tokens):
            new_token = token.replace(SPIECE, " ")
            chartok_to_tok_index.extend([i] * len(new_token))
            tok_start_to_chartok_index.append(char_cnt)
            char_cnt += len(new_token)
            tok_end_to_chartok_index.append(char_cnt - 1)
        tok_cat_text = "".join(para_tokens).replace(SPIECE, " ")
        n = len(paragraph_text)
        score, ran_twice, orig_to_chartok_index, chartok_to_orig_index = ref_align(paragraph_text, tok_cat_text, lower)
        if ran_twice:
            doubled.append(example.qas_id)
        if all(v is None for v in orig_to_chartok_index) or score < 0.8 * n:
            mismatched.append(example.qas_id)
            continue

        tok_start_to_orig_index, tok_end_to_orig_index = [], []
        for i in range(len(para_tokens)):
            tok_start_to_orig_index.append(
                ref_convert_index(chartok_to_orig_index, tok_start_to_chartok_index[i], n, is_start=True)
            )
            tok_end_to_orig_index.append(
                ref_convert_index(chartok_to_orig_index, tok_end_to_chartok_index[i], n, is_start=False)
            )

        if example.is_impossible:
            tok_start_position = tok_end_position = 0
        else:
            start_position = example.start_position
            end_position = start_position + len(example.orig_answer_text) - 1
            tok_start_position = chartok_to_tok_index[
                ref_convert_index(orig_to_chartok_index, start_position, is_start=True)
            ]
            tok_end_position = chartok_to_tok_index[
                ref_convert_index(orig_to_chartok_index, end_position, is_start=False)
            ]
            assert tok_start_position <= tok_end_position

        all_doc_tokens = [sp.PieceToId(p) for p in para_tokens]
        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
        doc_spans = []
        start_offset = 0
        while start_offset < len(all_doc_tokens):
            length = len(all_doc_tokens) - start_offset
            if length > max_tokens_for_doc:
                length = max_tokens_for_doc
            doc_spans.append((start_offset, length))
            if start_offset + length == len(all_doc_tokens):
                break
            start_offset += min(length, doc_stride)

        for doc_span_index, (span_start, span_length) in enumerate(doc_spans):
            tokens, segment_ids, p_mask, token_is_max_context = [], [], [], {}
            cur_start, cur_end = [], []
            tokens.append(sp.PieceToId("[CLS]"))
            segment_ids.append(0)
            p_mask.append(0)
            for token in query_tokens:
                tokens.append(token)
                segment_ids.append(0)
                p_mask.append(1)
            tokens.append(sp.PieceToId("[SEP]"))
            segment_ids.append(0)
            p_mask.append(1)
            for i in range(span_length):
                split_token_index = span_start + i
                cur_start.append(tok_start_to_orig_index[split_token_index])
                cur_end.append(tok_end_to_orig_index[split_token_index])
                token_is_max_context[len(tokens)] = ref_is_max_context(doc_spans, doc_span_index, split_token_index)
                tokens.append(all_doc_tokens[split_token_index])
                segment_ids.append(1)
                p_mask.append(0)
            tokens.append(sp.PieceToId("[SEP]"))
            segment_ids.append(1)
            p_mask.append(1)
            paragraph_len = len(tokens)
            input_ids = tokens
            input_mask = [1] * len(input_ids)
            while len(input_ids) < max_seq_length:
                input_ids.append(0)
                input_mask.append(0)
                segment_ids.append(0)
                p_mask.append(1)

            span_is_impossible = example.is_impossible
            start_position = end_position = None
            if not span_is_impossible:
                doc_start = span_start
                doc_end = span_start + span_length - 1
                if not (tok_start_position >= doc_start and tok_end_position <= doc_end):
                    start_position = end_position = 0
                    span_is_impossible = True
                else:
                    doc_offset = len(query_tokens) + 2
                    start_position = tok_start_position - doc_start + doc_offset
                    end_position = tok_end_position - doc_start + doc_offset
            if span_is_impossible:
                start_position = end_position = 0
            out.append(
                dict(
                    unique_id=unique_id,
                    example_index=example_index,
                    doc_span_index=doc_span_index,
                    tok_start_to_orig_index=cur_start,
                    tok_end_to_orig_index=cur_end,
                    token_is_max_context=token_is_max_context,
                    input_ids=input_ids,
                    input_mask=input_mask,
                    segment_ids=segment_ids,
                    p_mask=p_mask,
                    paragraph_len=paragraph_len,
                    start_position=start_position,
                    end_position=end_position,
                    is_impossible=span_is_impossible,
                )
            )
            unique_id += 1
    return out, mismatched, doubled


# ----------------------------------------------------------------------------------------------------------------
# Fixtures
# ----------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tokenizer_30k():
    return FullTokenizer(spm_model_file=str(shared_path("spm", "30k-clean.model")))


@pytest.fixture(scope="module")
def subset_a():
    return str(shared_path("squad", "dev-v2.0-subset-a.json"))


@pytest.fixture(scope="module")
def any_tokenizer(spm_model):
    return FullTokenizer(spm_model_file=str(spm_model))


_BODY = (
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region in "
    "France. They were descended from Norse raiders and pirates from Denmark, Iceland and Norway."
)


def _built_example(qas_id: str, ligatures: int) -> squad.SquadExample:
    """A paragraph whose alignment drifts: ``ligatures`` x "ﬁ" (NFKD -> "fi", one character more in the pieces)
    at the start and as many extra spaces (collapsed by preprocess_text) near the end, so |n - m| stays small
    while the path leaves the first band. 8 needs the doubled band; 40 fails the 80% rule."""
    context = " ".join(["\ufb01"] * ligatures) + " " + _BODY + " " * (ligatures + 1) + "The end of the story."
    answer = "Normandy"
    return squad.SquadExample(
        qas_id, "Where did the Normans live?", context, (answer,), answer, context.index(answer), False
    )


def _as_dict(feature: squad.SquadFeature) -> dict:
    d = {k: getattr(feature, k) for k in (
        "unique_id", "example_index", "doc_span_index", "tok_start_to_orig_index", "tok_end_to_orig_index",
        "token_is_max_context", "input_ids", "input_mask", "segment_ids", "p_mask", "paragraph_len",
        "start_position", "end_position", "is_impossible",
    )}  # fmt: skip
    return d


# ----------------------------------------------------------------------------------------------------------------
# 1. Parity with the restatement
# ----------------------------------------------------------------------------------------------------------------
@pytest.mark.heavy
@pytest.mark.parametrize("max_seq_length,doc_stride", [(384, 128), (128, 64)])
def test_parity_with_official_restatement(tokenizer_30k, subset_a, max_seq_length, doc_stride):
    examples = squad.read_squad_examples(subset_a, is_training=True, version_2_with_negative=True)
    chosen = examples[::12][:50]
    assert len(chosen) == 50 and 10 <= sum(e.is_impossible for e in chosen) <= 40
    chosen += [_built_example("built-doubled", 8), _built_example("built-mismatch", 40)]

    ours, report = squad.convert_examples_to_features(
        chosen, tokenizer_30k, max_seq_length, doc_stride, 64, is_training=True
    )
    ref, ref_mismatched, ref_doubled = ref_convert(chosen, tokenizer_30k, max_seq_length, doc_stride, 64)

    assert report.mismatched == ref_mismatched == ["built-mismatch"]
    assert report.doubled_band == ref_doubled == ["built-doubled", "built-mismatch"]
    lines = report.log_lines("dev.json")
    assert any(line.startswith("dev.json: question built-mismatch:") and "80%" in line for line in lines)
    assert squad.ConversionReport.from_json(json.loads(json.dumps(report.to_json()))) == report
    assert len(ours) == len(ref) == report.num_features
    if max_seq_length == 128:
        assert any(f.doc_span_index > 0 for f in ours), "windows must matter at 128"
    for a, b in zip(ours, ref):
        assert _as_dict(a) == b, f"feature {b['unique_id']} (example {chosen[b['example_index']].qas_id}) differs"
        assert a.doc_offset == a.input_ids.index(tokenizer_30k.sep_id) + 1

    # Prediction mode: same windows, and the same gold positions (computed for every labelled question).
    pred, _ = squad.convert_examples_to_features(
        chosen, tokenizer_30k, max_seq_length, doc_stride, 64, is_training=False
    )
    assert [_as_dict(f) for f in pred] == ref


def test_alignment_is_done_once_per_paragraph(tokenizer_30k, subset_a, monkeypatch):
    import albert_tf.data.squad.alignment as alignment

    calls = []
    real = alignment.align_paragraph
    monkeypatch.setattr(alignment, "align_paragraph", lambda *a, **k: calls.append(1) or real(*a, **k))
    examples = squad.read_squad_examples(subset_a, is_training=False)
    squad.convert_examples_to_features(examples, tokenizer_30k, 384, 128, 64, is_training=False)
    assert len(calls) == len({e.paragraph_text for e in examples}) < len(examples)


def test_convert_index_matches_restatement_exhaustively():
    import itertools

    for size in range(1, 5):
        for values in itertools.product([None, 0, 1, 2, 4], repeat=size):
            if all(v is None for v in values):
                continue
            for pos, m, is_start in itertools.product(range(size), (None, 1, 3, 6), (True, False)):
                got = squad.convert_index(list(values), pos, m, is_start)
                assert got == ref_convert_index(list(values), pos, m, is_start), (values, pos, m, is_start)


def test_alignment_matches_restatement_on_adversarial_strings():
    """Random paragraphs over a tiny alphabet (many ties in the DP) against random edits of themselves, split into
    pieces: scores, band doubling, mismatches and every index map equal the official loop's."""
    rng = random.Random(7)
    alphabet = "ab \ufb01\u00e9A"
    normalize = lambda c: preprocess_text(c, lower=True, remove_space=False)
    seen = collections.Counter()
    for _ in range(300):
        paragraph = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        edited = list(preprocess_text(paragraph, lower=True, remove_space=False).replace(" ", SPIECE))
        for _ in range(rng.randint(0, 12)):
            k = rng.randrange(len(edited) + 1)
            if rng.random() < 0.5 and edited:
                del edited[min(k, len(edited) - 1)]
            else:
                edited.insert(k, rng.choice("ab" + SPIECE))
        cuts = sorted(rng.sample(range(1, len(edited)), min(len(edited) - 1, rng.randint(0, 8)))) if edited else []
        pieces = ["".join(edited[a:b]) for a, b in zip([0, *cuts], [*cuts, len(edited)])] if edited else []
        tok_text = "".join(pieces).replace(SPIECE, " ")
        ours = align_paragraph(paragraph, pieces, normalize)
        if not tok_text:
            assert ours.mismatched
            continue
        score, ran_twice, orig_to_chartok, chartok_to_orig = ref_align(paragraph, tok_text, True)
        assert (ours.score, ours.doubled_band) == (score, ran_twice), (paragraph, pieces)
        assert ours.orig_to_chartok_index == orig_to_chartok, (paragraph, pieces)
        mismatched = all(v is None for v in orig_to_chartok) or score < 0.8 * len(paragraph)
        assert ours.mismatched == mismatched
        seen[(ran_twice, mismatched)] += 1
        if mismatched:
            continue
        starts, ends, char_cnt = [], [], 0
        for piece in pieces:
            starts.append(ref_convert_index(chartok_to_orig, char_cnt, len(paragraph), is_start=True))
            char_cnt += len(piece)
            ends.append(ref_convert_index(chartok_to_orig, char_cnt - 1, len(paragraph), is_start=False))
        assert (ours.tok_start_to_orig_index, ours.tok_end_to_orig_index) == (starts, ends)
    assert len(seen) >= 3, seen  # aligned, doubled band and mismatched cases all occur


# ----------------------------------------------------------------------------------------------------------------
# 2. Gold spans on the real subset
# ----------------------------------------------------------------------------------------------------------------
def _normalize_answer(s: str) -> str:
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


@pytest.mark.parametrize("max_seq_length,doc_stride", [(384, 128), (128, 64)])
def test_gold_spans_recover_the_answers(tokenizer_30k, subset_a, max_seq_length, doc_stride):
    examples = squad.read_squad_examples(subset_a, is_training=False)
    features, report = squad.convert_examples_to_features(
        examples, tokenizer_30k, max_seq_length, doc_stride, 64, is_training=False
    )
    assert report.mismatched == [] and report.unmapped_answers == []
    recovered = collections.defaultdict(list)
    for f in features:
        ex = examples[f.example_index]
        assert f.is_impossible is not None
        if ex.is_impossible:
            assert (f.start_position, f.end_position, f.is_impossible) == (0, 0, True)
            continue
        if f.is_impossible:
            assert f.start_position == f.end_position == 0
            continue
        s, e = f.start_position - f.doc_offset, f.end_position - f.doc_offset
        recovered[ex.qas_id].append(ex.paragraph_text[f.tok_start_to_orig_index[s] : f.tok_end_to_orig_index[e] + 1])
    answerable = [e for e in examples if not e.is_impossible]
    assert len(answerable) == 293
    misses = [
        (e.qas_id, e.orig_answer_text, recovered.get(e.qas_id))
        for e in answerable
        if not recovered.get(e.qas_id)
        or any(_normalize_answer(t) != _normalize_answer(e.orig_answer_text) for t in recovered[e.qas_id])
    ]
    print(f"gold spans: {len(answerable) - len(misses)}/{len(answerable)} recovered; misses: {misses}")
    assert len(misses) <= len(answerable) // 100, misses


def test_reader_on_real_files(subset_a):
    examples = squad.read_squad_examples(subset_a, is_training=False, version_2_with_negative=True)
    assert len(examples) == 626 and sum(e.is_impossible for e in examples) == 333
    first = examples[0]
    assert first.answers == ("France",) * 4 and first.orig_answer_text == "France" and first.start_position == 159
    impossible = next(e for e in examples if e.is_impossible)
    assert (impossible.answers, impossible.orig_answer_text, impossible.start_position) == ((), "", -1)
    data = squad.read_squad_json(subset_a)
    assert sum(len(p["qas"]) for a in data for p in a["paragraphs"]) == 626
    small = squad.read_squad_examples(str(shared_path("squad", "dev-v2.0-small.json")), is_training=False)
    assert len(small) == 14


# ----------------------------------------------------------------------------------------------------------------
# 3. Cache, side file, tf.data
# ----------------------------------------------------------------------------------------------------------------
def _write_squad(path, questions_per_paragraph=3, paragraphs=4, *, extra=None) -> str:
    rng = random.Random(0)
    words = "the river flows north through a green valley where farmers grow wheat and barley every year".split()
    data = []
    for p in range(paragraphs):
        context = " ".join(rng.choice(words) for _ in range(60)) + f" The answer number {p} is here."
        qas = []
        for q in range(questions_per_paragraph):
            answer = f"answer number {p}"
            qas.append(
                {
                    "id": f"p{p}q{q}",
                    "question": f"What is the answer {q} of paragraph {p}?",
                    "answers": [{"text": answer, "answer_start": context.index(answer)}],
                    "is_impossible": False,
                }
            )
        qas.append({"id": f"p{p}-none", "question": "Who is the king?", "answers": [], "is_impossible": True})
        data.append({"title": f"t{p}", "paragraphs": [{"context": context, "qas": qas}]})
    if extra is not None:
        data[0]["paragraphs"][0]["qas"].append(extra)
    path.write_text(json.dumps({"version": "v2.0", "data": data}), encoding="utf-8")
    return str(path)


def test_cache_key_reuse_side_file_and_dataset(tmp_path, any_tokenizer, spm_model, monkeypatch):
    import tensorflow as tf

    import albert_tf.data.squad.cache as cache_mod

    squad_file = _write_squad(tmp_path / "train.json")
    cache_dir = str(tmp_path / "cache")
    calls = []
    real = cache_mod.convert_examples_to_features
    monkeypatch.setattr(cache_mod, "convert_examples_to_features", lambda *a, **k: calls.append(1) or real(*a, **k))

    args = dict(max_seq_length=64, doc_stride=16, max_query_length=16, is_training=True, version_2_with_negative=True)
    first = squad.cached_features(squad_file, any_tokenizer, cache_dir=cache_dir, **args)
    assert not first.reused and len(calls) == 1 and first.num_features == len(first.features) > 16
    second = squad.cached_features(squad_file, any_tokenizer, cache_dir=cache_dir, **args)
    assert second.reused and len(calls) == 1, "same key: no re-tokenisation"
    assert (second.record_files, second.meta_file) == (first.record_files, first.meta_file)
    assert second.report == first.report and second.report.num_examples == 16
    strip = lambda f: {**_as_dict(f), "doc_offset": f.doc_offset, "input_ids": [], "input_mask": [],
                       "segment_ids": [], "p_mask": []}  # fmt: skip
    assert [strip(f) for f in second.features] == [strip(f) for f in first.features]
    assert second.features[0].input_ids == []
    (tmp_path / "cache" / first.meta_file.rsplit("/", 1)[-1]).write_text("{not json", encoding="utf-8")
    rebuilt = squad.cached_features(squad_file, any_tokenizer, cache_dir=cache_dir, **args)
    assert not rebuilt.reused and len(calls) == 2 and rebuilt.meta_file == first.meta_file

    # Training examples are shuffled with random.Random(12345) before conversion (official run_squad).
    in_file = squad.read_squad_examples(squad_file, is_training=True, version_2_with_negative=True)
    random.Random(12345).shuffle(in_file)
    assert [e.qas_id for e in first.examples] == [e.qas_id for e in in_file]

    # JSON side file, no pickle.
    meta = json.loads((tmp_path / "cache" / first.meta_file.rsplit("/", 1)[-1]).read_text(encoding="utf-8"))
    assert meta["key"]["tokenizer"] == any_tokenizer.identity() and len(meta["features"]) == first.num_features
    assert not [p for p in (tmp_path / "cache").iterdir() if p.suffix in (".pkl", ".pickle") or ".tmp" in p.name]

    # Every input changes the key (and so the file names).
    variants = [
        dict(args, max_seq_length=80),
        dict(args, doc_stride=24),
        dict(args, max_query_length=12),
        dict(args, is_training=False),
        dict(args, do_lower_case=False),
        dict(args, is_training=False, version_2_with_negative=False),
    ]
    names = {tuple(first.record_files)}
    for v in variants:
        names.add(tuple(squad.cached_features(squad_file, any_tokenizer, cache_dir=cache_dir, **v).record_files))
    other_tok = FullTokenizer(spm_model_file=str(spm_model), official_digit_comma=False)
    names.add(tuple(squad.cached_features(squad_file, other_tok, cache_dir=cache_dir, **args).record_files))
    changed = _write_squad(tmp_path / "train.json", questions_per_paragraph=2)
    names.add(tuple(squad.cached_features(changed, any_tokenizer, cache_dir=cache_dir, **args).record_files))
    assert len(names) == len(variants) + 3

    # tf.data: dtypes, shapes, training labels.
    ds = squad.load_dataset(first.record_files, 64, batch_size=4, is_training=True, seed=1)
    batch = next(iter(ds))
    assert set(batch) == {"unique_ids", "input_ids", "input_mask", "segment_ids", "p_mask", "start_positions",
                          "end_positions", "is_impossible"}  # fmt: skip
    assert all(t.dtype == tf.int32 for t in batch.values())
    assert batch["input_ids"].shape == (4, 64) and batch["unique_ids"].shape == (4,)
    predict = squad.cached_features(squad_file, any_tokenizer, cache_dir=cache_dir, **dict(args, is_training=False))
    rows = list(squad.load_dataset(predict.record_files, 64, batch_size=5, is_training=False))
    ids = np.concatenate([r["unique_ids"].numpy() for r in rows])
    assert ids.tolist() == [f.unique_id for f in predict.features] and "start_positions" not in rows[0]
    assert ids[0] == 1000000000
    first_ids = rows[0]["input_ids"].numpy()[0].tolist()
    fresh, _ = squad.convert_examples_to_features(predict.examples, any_tokenizer, 64, 16, 16, is_training=False)
    assert first_ids == fresh[0].input_ids


def test_wordpiece_tokenizer_is_refused(wordpiece_vocab):
    tok = FullTokenizer(vocab_file=str(wordpiece_vocab))
    ex = _built_example("q", 0)
    with pytest.raises(squad.SquadDataError, match="SentencePiece"):
        squad.convert_examples_to_features([ex], tok, 128, 64, 16, is_training=True)


# ----------------------------------------------------------------------------------------------------------------
# 4. Bad input
# ----------------------------------------------------------------------------------------------------------------
def _one_line_error(path, is_training=True, v2=True) -> str:
    with pytest.raises(squad.SquadDataError) as info:
        squad.read_squad_examples(str(path), is_training=is_training, version_2_with_negative=v2)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


@pytest.mark.parametrize(
    "content,expected",
    [
        ('[["a", "b", "0"]]', "not a SQuAD file"),
        ('{"foo": 1}', "not a SQuAD file"),
        ("sentence\tlabel\nhello\t1\n", "not JSON"),
        ('{"data": [{"paragraphs": [{"qas": []}]}]}', "without a 'context'"),
        ('{"data": [{"paragraphs": [{"context": "x", "qas": [{"question": "q"}]}]}]}', "without an 'id'"),
        ('{"data": [{"paragraphs": [{"context": "x", "qas": [{"id": "q1"}]}]}]}', "question q1: no 'question'"),
    ],
)
def test_not_squad(tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    assert expected in _one_line_error(path)


def test_not_utf8(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes('{"data": [{"paragraphs": [{"context": "caf\u00e9", "qas": []}]}]}'.encode("latin-1"))
    assert "not UTF-8" in _one_line_error(path)


def test_question_errors_name_the_question(tmp_path):
    missing = _write_squad(tmp_path / "missing.json", extra={"id": "no-answers", "question": "Why?"})
    message = _one_line_error(missing)
    assert "question no-answers" in message and "answers" in message
    squad.read_squad_examples(missing, is_training=False)  # prediction: unlabeled, fine

    bad_start = _write_squad(
        tmp_path / "start.json",
        extra={"id": "wrong-start", "question": "Why?", "answers": [{"text": "river flows", "answer_start": 3}]},
    )
    message = _one_line_error(bad_start)
    assert "question wrong-start" in message and "'river flows'" in message
    predicted = squad.read_squad_examples(bad_start, is_training=False)
    assert next(e for e in predicted if e.qas_id == "wrong-start").answers == ("river flows",)

    not_int = _write_squad(
        tmp_path / "notint.json",
        extra={"id": "str-start", "question": "Why?", "answers": [{"text": "river", "answer_start": "3"}]},
    )
    assert "question str-start" in _one_line_error(not_int) and "integer" in _one_line_error(not_int)
    unlabeled = next(e for e in squad.read_squad_examples(not_int, is_training=False) if e.qas_id == "str-start")
    assert (unlabeled.orig_answer_text, unlabeled.start_position, unlabeled.answers) == (None, None, ("river",))

    dup = _write_squad(tmp_path / "dup.json", extra={"id": "p0q0", "question": "Again?", "answers": []})
    assert "question p0q0: duplicate id" in _one_line_error(dup, is_training=False)

    v2_in_v1 = _write_squad(tmp_path / "v2.json")
    message = _one_line_error(v2_in_v1, v2=False)
    assert "question p0-none" in message and "version_2_with_negative" in message


def test_long_question_is_truncated_and_reported(any_tokenizer):
    question = "What " + "very " * 80 + "long question is this?"
    context = "A short paragraph about a very long question and its answer, which is here."
    ex = squad.SquadExample("long-q", question, context, ("here",), "here", context.index("here"), False)
    features, report = squad.convert_examples_to_features([ex], any_tokenizer, 64, 16, 20, is_training=True)
    assert report.truncated_queries == ["long-q"] and features
    assert all(f.doc_offset == 22 for f in features)
    assert any("question long-q" in line and "max_query_length" in line for line in report.log_lines("f.json"))


@pytest.mark.parametrize(
    "max_seq_length,doc_stride,max_query_length,match",
    [(67, 16, 64, "max_seq_length .*max_query_length"), (68, 0, 64, "doc_stride")],
)
def test_bad_settings(any_tokenizer, max_seq_length, doc_stride, max_query_length, match):
    ex = _built_example("q", 0)
    with pytest.raises(ValueError, match=match):
        squad.convert_examples_to_features([ex], any_tokenizer, max_seq_length, doc_stride, max_query_length, True)
    squad.convert_examples_to_features([ex], any_tokenizer, 68, 1, 64, True)
