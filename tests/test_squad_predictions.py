"""SQuAD post-processing (``albert_tf.evaluation.squad_predictions``) against hand-worked cases of spec 4.2.

Each expected value below is worked out by hand from the official rules (top-n indexes, the span filters, text
cut from the original paragraph, duplicates dropped, softmax n-best, v2 null score = min over windows), not by
running the code under test.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from albert_tf.evaluation.squad_predictions import V1_EMPTY, best_indexes, postprocess, softmax

PARAGRAPH = "The quick brown fox jumps."
# Doc tokens: "The"(0-2) "quick"(4-8) "brown"(10-14) "fox"(16-18) "jumps"(20-24) "."(25)
STARTS = [0, 4, 10, 16, 20, 25]
ENDS = [2, 8, 14, 18, 24, 25]


@dataclasses.dataclass
class Example:
    qas_id: str
    paragraph_text: str = PARAGRAPH


@dataclasses.dataclass
class Window:
    unique_id: int
    example_index: int
    doc_offset: int
    tok_start_to_orig_index: list
    tok_end_to_orig_index: list
    token_is_max_context: dict


def window(uid, example_index=0, doc_offset=3, first=0, count=6, max_context=None):
    """Doc tokens ``first .. first+count-1`` of PARAGRAPH after a 1-token query: [CLS] q [SEP] doc... [SEP]."""
    positions = range(doc_offset, doc_offset + count)
    table = {p: True for p in positions} if max_context is None else {p: p in max_context for p in positions}
    return Window(uid, example_index, doc_offset, STARTS[first : first + count], ENDS[first : first + count], table)


def v1_output(length=12, starts=None, ends=None):
    s = np.full(length, -5.0, np.float32)
    e = np.full(length, -5.0, np.float32)
    for i, v in (starts or {}).items():
        s[i] = v
    for i, v in (ends or {}).items():
        e[i] = v
    return {"start_logits": s, "end_logits": e}


def test_best_indexes_breaks_ties_by_position():
    assert best_indexes([1.0, 3.0, 3.0, 2.0], 3) == [1, 2, 3]
    assert best_indexes([0.0, 0.0, 0.0], 5) == [0, 1, 2]


def test_softmax_is_the_official_max_subtracted_form():
    probs = softmax([1.0, 2.0, 3.0])
    z = math.exp(-2) + math.exp(-1) + 1
    assert probs == pytest.approx([math.exp(-2) / z, math.exp(-1) / z, 1 / z])
    assert softmax([]) == []


def test_v1_best_span_text_comes_from_the_original_paragraph():
    # start at doc token 2 ("brown", position 5), end at doc token 3 ("fox", position 6).
    out = v1_output(starts={5: 4.0}, ends={6: 3.0})
    result = postprocess([Example("q")], [window(1)], {1: out}, version_2_with_negative=False, n_best_size=3)
    assert result.best_text == {"q": "brown fox"}
    nbest = result.nbest["q"]
    assert nbest[0]["text"] == "brown fox" and nbest[0]["start_log_prob"] == 4.0 and nbest[0]["end_log_prob"] == 3.0
    assert sum(n["probability"] for n in nbest) == pytest.approx(1.0)
    assert result.null_scores is None


def test_v1_filters_query_positions_reversed_and_long_spans():
    # The best start is in the query (position 1: not a max-context doc position); the best end is before the
    # second-best start; a long span exceeds max_answer_length=2. What survives: start 4 ("quick") .. end 5.
    out = v1_output(starts={1: 9.0, 7: 8.0, 4: 1.0}, ends={3: 9.0, 5: 2.0, 8: 1.5})
    result = postprocess([Example("q")], [window(1)], {1: out}, version_2_with_negative=False,
                         n_best_size=3, max_answer_length=2)
    # candidates (top-3 starts {1, 7, 4} x top-3 ends {3, 5, 8}): start 7 -> end 8 (length 2, score 9.5);
    # start 4 -> end 5 (length 2, score 3.0); start 4 -> end 8 too long; start 7 -> end 3/5 reversed.
    assert [n["text"] for n in result.nbest["q"]] == ["jumps.", "quick brown"]


def test_v1_start_without_max_context_is_dropped():
    out = v1_output(starts={5: 4.0, 4: 1.0}, ends={6: 3.0})
    w = window(1, max_context={3, 4, 6, 7, 8})  # position 5 has its max context in another window
    result = postprocess([Example("q")], [w], {1: out}, version_2_with_negative=False, n_best_size=2)
    assert result.best_text["q"] == "quick brown fox"


def test_v1_nothing_valid_answers_empty():
    out = v1_output(starts={1: 9.0}, ends={0: 9.0})
    result = postprocess([Example("q")], [window(1)], {1: out}, version_2_with_negative=False, n_best_size=1)
    assert result.best_text == {"q": V1_EMPTY}
    assert result.nbest["q"] == [{"text": V1_EMPTY, "probability": 1.0, "start_log_prob": 0.0, "end_log_prob": 0.0}]


def test_duplicate_texts_across_windows_keep_the_best_score():
    # Window A holds doc tokens 0-3, window B tokens 2-5; both can answer "brown" (doc token 2).
    a = window(1, first=0, count=4, max_context={3, 4})
    b = window(2, first=2, count=4, max_context={3, 4, 5, 6})
    outs = {1: v1_output(starts={5: 1.0}, ends={5: 1.0}), 2: v1_output(starts={3: 2.0}, ends={3: 2.0})}
    # In A position 5 is doc token 2 but has no max context there; in B position 3 is doc token 2 ("brown").
    result = postprocess([Example("q")], [a, b], outs, version_2_with_negative=False, n_best_size=5)
    assert result.best_text["q"] == "brown"
    assert result.nbest["q"][0]["start_log_prob"] == 2.0
    assert [n["text"] for n in result.nbest["q"]].count("brown") == 1


def v2_output(starts, ends, cls, k1=2, k2=2):
    """``starts``: [(index, log_prob)] * k1; ``ends``: [(index, log_prob)] * (k1*k2) in the official order."""
    return {
        "start_top_index": np.array([s for s, _ in starts], np.int32),
        "start_top_log_probs": np.array([p for _, p in starts], np.float32),
        "end_top_index": np.array([e for e, _ in ends], np.int32),
        "end_top_log_probs": np.array([p for _, p in ends], np.float32),
        "cls_logits": np.float32(cls),
    }


def test_v2_beam_order_and_null_score_is_the_min_over_windows():
    # Start i pairs with ends i*k2 .. i*k2+k2-1. Start 0 (position 4 "quick") with end 5 ("brown") -> -0.5;
    # start 1 (position 2: the query's [SEP], rejected as before the document).
    out_a = v2_output([(4, -0.2), (2, -0.1)], [(5, -0.3), (4, -1.0), (6, 0.0), (7, 0.0)], cls=1.5)
    out_b = v2_output([(0, -0.1), (0, -0.1)], [(0, 0.0)] * 4, cls=-0.7)
    examples = [Example("q")]
    windows = [window(1), window(2)]
    result = postprocess(examples, windows, {1: out_a, 2: out_b}, version_2_with_negative=True,
                         start_n_top=2, end_n_top=2, n_best_size=5)
    assert [n["text"] for n in result.nbest["q"]] == ["quick brown", "quick"]
    assert result.nbest["q"][0]["start_log_prob"] == pytest.approx(-0.2)
    assert result.nbest["q"][0]["end_log_prob"] == pytest.approx(-0.3)
    assert result.null_scores == {"q": pytest.approx(-0.7)}
    assert result.answers(None) == {"q": "quick brown"}
    assert result.answers(-0.7) == {"q": ""}  # score >= threshold -> no answer
    assert result.answers(-0.69) == {"q": "quick brown"}


def test_v2_without_candidates_answers_empty_text():
    out = v2_output([(0, 0.0), (1, -1.0)], [(0, 0.0)] * 4, cls=-3.0)
    result = postprocess([Example("q")], [window(1)], {1: out}, version_2_with_negative=True,
                         start_n_top=2, end_n_top=2)
    assert result.best_text == {"q": ""}
    assert result.nbest["q"][0]["start_log_prob"] == -1e6


def test_questions_without_windows_and_with_missing_outputs():
    examples = [Example("aligned"), Example("mismatch"), Example("partial")]
    windows = [window(1, example_index=0), window(2, example_index=2), window(3, example_index=2)]
    outs = {1: v2_output([(4, 0.0), (4, 0.0)], [(4, 0.0)] * 4, cls=-1.0),
            2: v2_output([(4, 0.0), (4, 0.0)], [(4, 0.0)] * 4, cls=-1.0)}  # window 3 missing
    result = postprocess(examples, windows, outs, version_2_with_negative=True, start_n_top=2, end_n_top=2)
    assert set(result.best_text) == {"aligned", "mismatch"}  # "partial" is left out, not half-answered
    assert result.null_scores["mismatch"] == 1e6  # the official initial null score: no window
    assert result.answers(0.0)["mismatch"] == ""
    v1 = postprocess(examples[:2], windows[:1], {1: v1_output(starts={4: 1.0}, ends={4: 1.0})},
                     version_2_with_negative=False)
    assert v1.best_text == {"aligned": "quick", "mismatch": V1_EMPTY}
