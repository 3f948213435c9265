"""SQuAD scoring against the official evaluation scripts.

References:

1. ``_Official*`` below: a literal restatement of the functions of ``evaluate-v1.1.py`` and
   ``evaluate-v2.0.py`` (and of ALBERT ``squad_utils.evaluate_v2``'s two-pass flow), kept as close to the
   official text as possible, used as the oracle on hand-built and random cases. Results must be *equal*
   (``==`` on floats: same summation order), not approximately equal.
2. Checked once by hand against ``transformers.data.metrics.squad_metrics`` of transformers 4.46 (another port
   of the v2.0 script; removed in transformers 5, the version pinned here, so no test depends on it): equal on
   every case, except that its ``squad_evaluate`` always adds the ``best_*`` keys.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import random
import re
import string

import pytest
from conftest import shared_path

from albert_tf.evaluation import squad_metrics as sm

# ----------------------------------------------------------------------------------------------------------
# Reference 1: the official scripts, restated literally (file I/O, argparse and plotting left out)
# ----------------------------------------------------------------------------------------------------------


class _OfficialV1:
    """evaluate-v1.1.py"""

    @staticmethod
    def normalize_answer(s):
        def remove_articles(text):
            return re.sub(r"\b(a|an|the)\b", " ", text)

        def white_space_fix(text):
            return " ".join(text.split())

        def remove_punc(text):
            exclude = set(string.punctuation)
            return "".join(ch for ch in text if ch not in exclude)

        def lower(text):
            return text.lower()

        return white_space_fix(remove_articles(remove_punc(lower(s))))

    @classmethod
    def f1_score(cls, prediction, ground_truth):
        prediction_tokens = cls.normalize_answer(prediction).split()
        ground_truth_tokens = cls.normalize_answer(ground_truth).split()
        common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
        num_same = sum(common.values())
        if num_same == 0:
            return 0
        precision = 1.0 * num_same / len(prediction_tokens)
        recall = 1.0 * num_same / len(ground_truth_tokens)
        f1 = (2 * precision * recall) / (precision + recall)
        return f1

    @classmethod
    def exact_match_score(cls, prediction, ground_truth):
        return cls.normalize_answer(prediction) == cls.normalize_answer(ground_truth)

    @staticmethod
    def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
        scores_for_ground_truths = []
        for ground_truth in ground_truths:
            score = metric_fn(prediction, ground_truth)
            scores_for_ground_truths.append(score)
        return max(scores_for_ground_truths)

    @classmethod
    def evaluate(cls, dataset, predictions):
        f1 = exact_match = total = 0
        for article in dataset:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    total += 1
                    if qa["id"] not in predictions:
                        continue  # 'Unanswered question ... will receive score 0.' on stderr
                    ground_truths = list(map(lambda x: x["text"], qa["answers"]))
                    prediction = predictions[qa["id"]]
                    exact_match += cls.metric_max_over_ground_truths(cls.exact_match_score, prediction, ground_truths)
                    f1 += cls.metric_max_over_ground_truths(cls.f1_score, prediction, ground_truths)
        exact_match = 100.0 * exact_match / total
        f1 = 100.0 * f1 / total
        return {"exact_match": exact_match, "f1": f1}


class _OfficialV2:
    """evaluate-v2.0.py"""

    @staticmethod
    def make_qid_to_has_ans(dataset):
        qid_to_has_ans = {}
        for article in dataset:
            for p in article["paragraphs"]:
                for qa in p["qas"]:
                    qid_to_has_ans[qa["id"]] = bool(qa["answers"])
        return qid_to_has_ans

    @staticmethod
    def normalize_answer(s):
        def remove_articles(text):
            regex = re.compile(r"\b(a|an|the)\b", re.UNICODE)
            return re.sub(regex, " ", text)

        def white_space_fix(text):
            return " ".join(text.split())

        def remove_punc(text):
            exclude = set(string.punctuation)
            return "".join(ch for ch in text if ch not in exclude)

        def lower(text):
            return text.lower()

        return white_space_fix(remove_articles(remove_punc(lower(s))))

    @classmethod
    def get_tokens(cls, s):
        if not s:
            return []
        return cls.normalize_answer(s).split()

    @classmethod
    def compute_exact(cls, a_gold, a_pred):
        return int(cls.normalize_answer(a_gold) == cls.normalize_answer(a_pred))

    @classmethod
    def compute_f1(cls, a_gold, a_pred):
        gold_toks = cls.get_tokens(a_gold)
        pred_toks = cls.get_tokens(a_pred)
        common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
        num_same = sum(common.values())
        if len(gold_toks) == 0 or len(pred_toks) == 0:
            # If either is no-answer, then F1 is 1 if they agree, 0 otherwise
            return int(gold_toks == pred_toks)
        if num_same == 0:
            return 0
        precision = 1.0 * num_same / len(pred_toks)
        recall = 1.0 * num_same / len(gold_toks)
        f1 = (2 * precision * recall) / (precision + recall)
        return f1

    @classmethod
    def get_raw_scores(cls, dataset, preds):
        exact_scores = {}
        f1_scores = {}
        for article in dataset:
            for p in article["paragraphs"]:
                for qa in p["qas"]:
                    qid = qa["id"]
                    gold_answers = [a["text"] for a in qa["answers"] if cls.normalize_answer(a["text"])]
                    if not gold_answers:
                        # For unanswerable questions, only correct answer is empty string
                        gold_answers = [""]
                    if qid not in preds:
                        continue  # 'Missing prediction for %s' on stdout
                    a_pred = preds[qid]
                    # Take max over all gold answers
                    exact_scores[qid] = max(cls.compute_exact(a, a_pred) for a in gold_answers)
                    f1_scores[qid] = max(cls.compute_f1(a, a_pred) for a in gold_answers)
        return exact_scores, f1_scores

    @staticmethod
    def apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh):
        new_scores = {}
        for qid, s in scores.items():
            pred_na = na_probs[qid] > na_prob_thresh
            if pred_na:
                new_scores[qid] = float(not qid_to_has_ans[qid])
            else:
                new_scores[qid] = s
        return new_scores

    @staticmethod
    def make_eval_dict(exact_scores, f1_scores, qid_list=None):
        if not qid_list:
            total = len(exact_scores)
            return collections.OrderedDict(
                [
                    ("exact", 100.0 * sum(exact_scores.values()) / total),
                    ("f1", 100.0 * sum(f1_scores.values()) / total),
                    ("total", total),
                ]
            )
        else:
            total = len(qid_list)
            return collections.OrderedDict(
                [
                    ("exact", 100.0 * sum(exact_scores[k] for k in qid_list) / total),
                    ("f1", 100.0 * sum(f1_scores[k] for k in qid_list) / total),
                    ("total", total),
                ]
            )

    @staticmethod
    def merge_eval(main_eval, new_eval, prefix):
        for k in new_eval:
            main_eval["%s_%s" % (prefix, k)] = new_eval[k]  # noqa: UP031 (official text)

    @staticmethod
    def find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
        num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
        cur_score = num_no_ans
        best_score = cur_score
        best_thresh = 0.0
        qid_list = sorted(na_probs, key=lambda k: na_probs[k])
        for _i, qid in enumerate(qid_list):
            if qid not in scores:
                continue
            if qid_to_has_ans[qid]:
                diff = scores[qid]
            else:
                if preds[qid]:
                    diff = -1
                else:
                    diff = 0
            cur_score += diff
            if cur_score > best_score:
                best_score = cur_score
                best_thresh = na_probs[qid]
        return 100.0 * best_score / len(scores), best_thresh

    @classmethod
    def find_all_best_thresh(cls, main_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans):
        best_exact, exact_thresh = cls.find_best_thresh(preds, exact_raw, na_probs, qid_to_has_ans)
        best_f1, f1_thresh = cls.find_best_thresh(preds, f1_raw, na_probs, qid_to_has_ans)
        main_eval["best_exact"] = best_exact
        main_eval["best_exact_thresh"] = exact_thresh
        main_eval["best_f1"] = best_f1
        main_eval["best_f1_thresh"] = f1_thresh

    @classmethod
    def main(cls, dataset, preds, na_prob_file=None, na_prob_thresh=1.0):
        """main() with the JSON files already loaded; ``na_prob_file`` is the loaded na_prob dict."""
        if na_prob_file is not None:
            na_probs = na_prob_file
        else:
            na_probs = {k: 0.0 for k in preds}
        qid_to_has_ans = cls.make_qid_to_has_ans(dataset)  # maps qid to True/False
        has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
        no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
        exact_raw, f1_raw = cls.get_raw_scores(dataset, preds)
        exact_thresh = cls.apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
        f1_thresh = cls.apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
        out_eval = cls.make_eval_dict(exact_thresh, f1_thresh)
        if has_ans_qids:
            has_ans_eval = cls.make_eval_dict(exact_thresh, f1_thresh, qid_list=has_ans_qids)
            cls.merge_eval(out_eval, has_ans_eval, "HasAns")
        if no_ans_qids:
            no_ans_eval = cls.make_eval_dict(exact_thresh, f1_thresh, qid_list=no_ans_qids)
            cls.merge_eval(out_eval, no_ans_eval, "NoAns")
        if na_prob_file is not None:
            cls.find_all_best_thresh(out_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans)
        return out_eval

    @classmethod
    def albert_evaluate_v2(cls, prediction_json, write_predictions_v2):
        """ALBERT squad_utils.evaluate_v2; ``write_predictions_v2(threshold) -> (predictions, na_probs)``."""
        null_score_diff_threshold = None
        predictions, na_probs = write_predictions_v2(null_score_diff_threshold)
        na_prob_thresh = 1.0  # default value taken from the eval script
        qid_to_has_ans = cls.make_qid_to_has_ans(prediction_json)
        exact_raw, f1_raw = cls.get_raw_scores(prediction_json, predictions)
        exact_thresh = cls.apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
        f1_thresh = cls.apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
        out_eval = cls.make_eval_dict(exact_thresh, f1_thresh)
        cls.find_all_best_thresh(out_eval, predictions, exact_raw, f1_raw, na_probs, qid_to_has_ans)
        null_score_diff_threshold = out_eval["best_f1_thresh"]

        predictions, na_probs = write_predictions_v2(null_score_diff_threshold)
        qid_to_has_ans = cls.make_qid_to_has_ans(prediction_json)
        exact_raw, f1_raw = cls.get_raw_scores(prediction_json, predictions)
        exact_thresh = cls.apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
        f1_thresh = cls.apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
        out_eval = cls.make_eval_dict(exact_thresh, f1_thresh)
        out_eval["null_score_diff_threshold"] = null_score_diff_threshold
        return out_eval


# ----------------------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------------------


def _qa(qid, *golds, impossible=None):
    impossible = (not golds) if impossible is None else impossible
    return {
        "id": qid,
        "question": f"question {qid}?",
        "answers": [{"text": g, "answer_start": 0} for g in golds],
        "is_impossible": impossible,
    }


def _dataset(*qas, per_paragraph=3):
    """The official ``data`` list: one article, ``per_paragraph`` questions per paragraph."""
    paragraphs = [
        {"context": "context", "qas": list(qas[i : i + per_paragraph])} for i in range(0, len(qas), per_paragraph)
    ]
    return [{"title": "T", "paragraphs": paragraphs}]


def _quiet(fn, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return fn(*args, **kwargs)


O1, O2 = _OfficialV1, _OfficialV2

# Normalisation corner cases: articles, punctuation, Unicode (accents, curly quotes, dashes, CJK, NBSP,
# special case-folding), word boundaries.
TEXTS = [
    "",
    " ",
    "the",
    "The",
    "a an the",
    "A.",
    "(the)",
    "the Eiffel Tower",
    "Eiffel Tower",
    "The Eiffel Tower!",
    "eiffel   tower",
    "Eiffel-Tower",
    "theater",
    "another",
    "an-other",
    "the-end",
    "a1",
    "U.S.A.",
    "usa",
    "rock'n'roll",
    "Smith, John",
    "smith john",
    "Café",
    "café",
    "cafe",
    "naïve a",
    "a naïve",
    "à a",
    "théâtre",
    "“Paris”",
    "Paris",
    "‘the’ Paris",
    "1889–1890",
    "1889-1890",
    "18891890",
    "—",
    "…",
    "東京タワー",
    "東京タワー。",
    "the 東京",
    "東京 the タワー",
    "the\u00a0tower",
    "tower\u3000the",
    "İstanbul",
    "STRASSE",
    "straße",
    "Denver Broncos",
    "the Denver Broncos",
    "Broncos",
    "denver",
    "tower tower",
    "tower",
    "the Eiffel Tower in Paris",
    "10th and 11th centuries",
    "the 10th century",
    "$1,000",
    "1000",
    "a_b",
    "a b",
]


def test_normalize_answer_hand_built():
    expected = {
        "": "",
        "the": "",
        "a an the": "",
        "(the)": "",
        "the Eiffel Tower": "eiffel tower",
        "The Eiffel Tower!": "eiffel tower",
        "Eiffel-Tower": "eiffeltower",
        "theater": "theater",
        "an-other": "another",  # punctuation goes first, so "an-other" is one word
        "the-end": "theend",
        "U.S.A.": "usa",
        "rock'n'roll": "rocknroll",
        "Café": "café",  # accents are kept
        "naïve a": "naïve",
        "à a": "à",
        "“Paris”": "“paris”",  # curly quotes are not string.punctuation
        "‘the’ Paris": "‘ ’ paris",  # ... they are not word characters either: the article between them goes
        "1889–1890": "1889–1890",  # en dash kept, ASCII hyphen removed:
        "1889-1890": "18891890",
        "東京タワー。": "東京タワー。",  # CJK full stop kept
        "the 東京": "東京",
        "東京 the タワー": "東京 タワー",
        "the\u00a0tower": "tower",  # NBSP is whitespace for str.split
        "tower\u3000the": "tower",
        "$1,000": "1000",
        "a_b": "ab",  # "_" is in string.punctuation (and "ab" is no article)
    }
    for text, norm in expected.items():
        assert sm.normalize_answer(text) == norm, text
    for text in TEXTS:
        assert sm.normalize_answer(text) == O1.normalize_answer(text) == O2.normalize_answer(text), text


def test_pair_scores_hand_built():
    # articles
    assert sm.exact_match_score("the Eiffel Tower", "Eiffel Tower") == 1.0
    assert sm.f1_score_v1("the Eiffel Tower", "Eiffel Tower") == 1.0
    assert sm.f1_score_v2("the Eiffel Tower", "Eiffel Tower") == 1.0
    # punctuation and case
    assert sm.exact_match_score("Smith, John", "smith john") == 1.0
    # partial overlap: pred [eiffel tower in paris] vs gold [eiffel tower]: p = 1/2, r = 1, f1 = 2/3
    assert sm.f1_score_v1("the Eiffel Tower in Paris", "Eiffel Tower") == pytest.approx(2 / 3, abs=1e-15)
    assert sm.exact_match_score("the Eiffel Tower in Paris", "Eiffel Tower") == 0.0
    # Counter intersection: a repeated token counts once per occurrence in the gold
    assert sm.f1_score_v2("tower tower", "tower") == pytest.approx(2 / 3, abs=1e-15)
    # unicode: accents and non-ASCII punctuation are significant
    assert sm.exact_match_score("Café", "café") == 1.0
    assert sm.exact_match_score("café", "cafe") == 0.0
    assert sm.exact_match_score("“Paris”", "Paris") == 0.0
    assert sm.f1_score_v2("“Paris”", "Paris") == 0.0
    assert sm.exact_match_score("1889–1890", "1889-1890") == 0.0
    assert sm.exact_match_score("東京タワー", "東京タワー。") == 0.0
    assert sm.exact_match_score("the 東京", "東京") == 1.0
    # empty sides: v1 gives 0 even when both are empty, v2 gives 1 when both are empty
    assert sm.f1_score_v1("", "") == 0.0
    assert sm.f1_score_v2("", "") == 1.0
    assert sm.f1_score_v2("the", "") == 1.0  # "the" normalises to nothing
    assert sm.f1_score_v2("", "Paris") == sm.f1_score_v2("Paris", "") == 0.0
    assert sm.exact_match_score("", "") == 1.0
    for pred in TEXTS:
        for gold in TEXTS:
            assert sm.exact_match_score(pred, gold) == float(O1.exact_match_score(pred, gold))
            assert sm.exact_match_score(pred, gold) == O2.compute_exact(gold, pred)
            assert sm.f1_score_v1(pred, gold) == O1.f1_score(pred, gold), (pred, gold)
            assert sm.f1_score_v2(pred, gold) == O2.compute_f1(gold, pred), (pred, gold)
            assert isinstance(sm.f1_score_v2(pred, gold), float)


# ----------------------------------------------------------------------------------------------------------
# v1.1
# ----------------------------------------------------------------------------------------------------------


def test_evaluate_v1_hand_built_and_missing():
    data = _dataset(
        _qa("q1", "Denver Broncos", "Broncos", "the Denver Broncos"),  # several golds: max taken
        _qa("q2", "Eiffel Tower"),
        _qa("q3", "Paris"),
        _qa("q4", "France"),  # missing prediction
    )
    preds = {"q1": "Denver", "q2": "the Eiffel Tower", "q3": "", "extra": "ignored"}
    # q1: EM 0, F1 max(2/3, 0, 2/3) = 2/3; q2: 1/1; q3 (empty prediction): 0/0; q4: missing -> 0/0
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        out = sm.evaluate_v1(data, preds)
    assert "Unanswered question q4 will receive score 0." in err.getvalue()
    assert out["total"] == 4 and out["missing"] == 1
    assert out["exact_match"] == 100.0 * 1 / 4
    assert out["f1"] == pytest.approx(100.0 * (2 / 3 + 1) / 4)
    ref = O1.evaluate(data, preds)
    assert out["exact_match"] == ref["exact_match"] and out["f1"] == ref["f1"]


def test_evaluate_v1_gold_normalising_to_empty():
    # v1.1 keeps such a gold: an empty prediction matches it exactly (EM 1) but has F1 0
    data = _dataset(_qa("q1", "."), _qa("q2", "the", "Paris"))
    preds = {"q1": "", "q2": ""}
    out = sm.evaluate_v1(data, preds)
    assert out["exact_match"] == 100.0 and out["f1"] == 0.0
    ref = O1.evaluate(data, preds)
    assert (out["exact_match"], out["f1"]) == (ref["exact_match"], ref["f1"])


def test_evaluate_v1_needs_gold_answers_and_questions():
    data = _dataset(_qa("q1", "Paris"), _qa("q2"))
    with pytest.raises(ValueError, match="answerable_subset"):
        sm.evaluate_v1(data, {"q1": "Paris", "q2": ""})
    with pytest.raises(ValueError):  # the official script: max() of an empty sequence
        O1.evaluate(data, {"q1": "Paris", "q2": ""})
    # an unanswerable question without a prediction is only "missing"
    assert _quiet(sm.evaluate_v1, data, {"q1": "Paris"})["exact_match"] == 50.0
    sub = sm.answerable_subset(data)
    assert [qa["id"] for a in sub for p in a["paragraphs"] for qa in p["qas"]] == ["q1"]
    expected = {"exact_match": 100.0, "f1": 100.0, "total": 1, "missing": 0}
    assert sm.evaluate_v1(sub, {"q1": "Paris", "q2": ""}) == expected
    with pytest.raises(ValueError):
        sm.evaluate_v1([], {})


def test_answerable_subset_is_a_copy():
    data = _dataset(_qa("q1", "Paris"), _qa("q2"), _qa("q3", "x"), per_paragraph=2)
    before = json.dumps(data)
    sub = sm.answerable_subset(data)
    assert json.dumps(data) == before
    sub[0]["paragraphs"][0]["qas"][0]["answers"][0]["text"] = "changed"
    sub[0]["title"] = "changed"
    assert json.dumps(data) == before
    assert len(sub[0]["paragraphs"]) == 2 and sub[0]["paragraphs"][0]["context"] == "context"
    assert sm.has_answer_map(sub) == {"q1": True, "q3": True}


# ----------------------------------------------------------------------------------------------------------
# v2.0
# ----------------------------------------------------------------------------------------------------------


def _v2_case():
    data = _dataset(
        _qa("a1", "the Eiffel Tower", "Eiffel Tower"),
        _qa("a2", "Denver Broncos", "Broncos"),
        _qa("a3", "the", "Paris"),  # "the" normalises to "" and is dropped: only "Paris" counts
        _qa("a4", "."),  # answerable per has_ans, but its only gold normalises to "": gold becomes [""]
        _qa("n1"),
        _qa("n2"),
        _qa("a5", "東京タワー"),
    )
    preds = {
        "a1": "Eiffel Tower",  # 1 / 1
        "a2": "Denver",  # 0 / max(2/3, 0)
        "a3": "",  # empty prediction for an answerable question: 0 / 0
        "a4": "",  # matches the [""] gold: 1 / 1
        "n1": "",  # empty prediction for an impossible question: 1 / 1
        "n2": "Paris",  # non-empty: 0 / 0
        "a5": "東京タワー。",  # CJK full stop is kept: 0 / 0
    }
    return data, preds


def test_evaluate_v2_hand_built():
    data, preds = _v2_case()
    assert sm.has_answer_map(data) == {
        "a1": True, "a2": True, "a3": True, "a4": True, "n1": False, "n2": False, "a5": True
    }  # fmt: skip
    exact, f1 = sm.raw_scores_v2(data, preds)
    assert exact == {"a1": 1, "a2": 0, "a3": 0, "a4": 1, "n1": 1, "n2": 0, "a5": 0}
    assert f1 == pytest.approx({"a1": 1, "a2": 2 / 3, "a3": 0, "a4": 1, "n1": 1, "n2": 0, "a5": 0})
    out = sm.evaluate_v2(data, preds)
    assert list(out) == ["exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total", "NoAns_exact",
                         "NoAns_f1", "NoAns_total"]  # fmt: skip
    assert out["total"] == 7 and out["HasAns_total"] == 5 and out["NoAns_total"] == 2
    assert out["exact"] == 100.0 * 3 / 7
    assert out["f1"] == pytest.approx(100.0 * (3 + 2 / 3) / 7)
    assert out["HasAns_exact"] == 100.0 * 2 / 5 and out["NoAns_exact"] == 50.0
    assert out == O2.main(data, preds)


def test_evaluate_v2_na_prob_threshold():
    data, preds = _v2_case()
    na = {"a1": 0.2, "a2": 0.5, "a3": 0.9, "a4": 0.1, "n1": 0.3, "n2": 0.6, "a5": 0.5}
    # threshold exactly at a value: 0.5 is not > 0.5, so a2 and a5 keep their answers
    out = sm.evaluate_v2(data, preds, na, na_prob_thresh=0.5)
    # predicted no-answer (> 0.5): a3 (answerable -> 0), n2 (unanswerable -> 1)
    assert out["exact"] == 100.0 * 4 / 7
    assert out == O2.main(data, preds, na, 0.5)
    thresholded = sm.apply_no_ans_threshold({"a2": 0.25, "n2": 0.0, "a3": 1.0}, na, sm.has_answer_map(data), 0.5)
    assert thresholded == {"a2": 0.25, "n2": 1.0, "a3": 0.0}
    assert list(thresholded) == ["a2", "n2", "a3"]
    # a negative threshold without na_probs: every question is predicted unanswerable (all-zero na_probs)
    out = sm.evaluate_v2(data, preds, na_prob_thresh=-1.0)
    assert out["exact"] == out["f1"] == 100.0 * 2 / 7
    assert out == O2.main(data, preds, None, -1.0)
    with pytest.raises(KeyError, match="a5"):
        sm.evaluate_v2(data, preds, {k: v for k, v in na.items() if k != "a5"})


def test_evaluate_v2_best_thresh_keys():
    data, preds = _v2_case()
    na = {"a1": 0.2, "a2": 0.5, "a3": 0.9, "a4": 0.1, "n1": 0.3, "n2": 0.6, "a5": 0.5}
    out = sm.evaluate_v2(data, preds, na)
    assert list(out)[-4:] == ["best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"]
    # exact walk, start 2 (n1, n2): a4 +1 -> 3 @0.1 (best), a1 +1 -> 4 @0.2 (best), n1 0, a2 0, a5 0, n2 -1, a3 0
    assert (out["best_exact"], out["best_exact_thresh"]) == (100.0 * 4 / 7, 0.2)
    # f1 walk: ..., 4 @0.2, n1 0, a2 +2/3 -> 4.67 @0.5 (best), a5 0, n2 -1, a3 0
    assert out["best_f1"] == pytest.approx(100.0 * (4 + 2 / 3) / 7) and out["best_f1_thresh"] == 0.5
    assert out == O2.main(data, preds, na)


def test_find_best_thresh_ties():
    has_ans = {"q1": True, "q2": False, "q3": True}
    preds = {"q1": "x", "q2": "x", "q3": "x"}
    scores = {"q1": 1, "q2": 0, "q3": 1}
    # equal best reached twice: start 1; q1 -> 2 (best @0.1); q2 -> 1; q3 -> 2 (not > 2): the first is kept
    na = {"q1": 0.1, "q2": 0.2, "q3": 0.3}
    assert sm.find_best_thresh(preds, scores, na, has_ans) == (100.0 * 2 / 3, 0.1)
    # equal na_probs: the order of the na_probs dict decides (stable sort), exactly as the script
    two = {"q1": True, "q2": False}
    s2 = {"q1": 1, "q2": 0}
    p2 = {"q1": "x", "q2": "x"}
    assert sm.find_best_thresh(p2, s2, {"q1": 0.5, "q2": 0.5}, two) == (100.0, 0.5)  # 1 -> 2 -> 1
    assert sm.find_best_thresh(p2, s2, {"q2": 0.5, "q1": 0.5}, two) == (50.0, 0.0)  # 1 -> 0 -> 1
    for na2 in ({"q1": 0.5, "q2": 0.5}, {"q2": 0.5, "q1": 0.5}):
        assert sm.find_best_thresh(p2, s2, na2, two) == O2.find_best_thresh(p2, s2, na2, two)
    # several qids with equal na_prob, empty predictions for the unanswerable ones count 0
    has = {"a": True, "b": False, "c": True, "d": False}
    preds = {"a": "x", "b": "", "c": "x", "d": "y"}
    scores = {"a": 0.5, "b": 1, "c": 1, "d": 0}
    na = {"d": 0.3, "a": 0.3, "b": 0.3, "c": 0.7}  # d -1, a +0.5, b 0, c +1: 2 -> 1 -> 1.5 -> 1.5 -> 2.5 @0.7
    assert sm.find_best_thresh(preds, scores, na, has) == (100.0 * 2.5 / 4, 0.7)
    # no improvement at all: score of answering nothing, threshold 0.0
    assert sm.find_best_thresh({"q2": "x"}, {"q2": 0}, {"q2": 3.0}, {"q2": False}) == (100.0, 0.0)
    # ids without a score are skipped (missing prediction, or not in the dataset), but a missing unanswerable
    # question still counts in the starting score; the percentage is over the scored ids
    has = {"a": True, "m": False, "n": False}
    args = ({"a": "x", "n": ""}, {"a": 1, "n": 1}, {"zz": -5.0, "m": 0.0, "a": 1.0, "n": 2.0}, has)
    assert sm.find_best_thresh(*args) == O2.find_best_thresh(*args) == (100.0 * 3 / 2, 1.0)
    with pytest.raises(ValueError):
        sm.find_best_thresh({}, {}, {}, {})


def test_evaluate_v2_missing_predictions():
    data, preds = _v2_case()
    del preds["a2"], preds["n2"]
    out_buf = io.StringIO()
    with contextlib.redirect_stdout(out_buf):
        exact, f1 = sm.raw_scores_v2(data, preds)
    assert "Missing prediction for a2" in out_buf.getvalue() and "Missing prediction for n2" in out_buf.getvalue()
    assert (exact, f1) == _quiet(O2.get_raw_scores, data, preds)
    out = _quiet(sm.evaluate_v2, data, preds)
    # skipped, not counted as 0: the total is the number of predicted questions
    assert out["total"] == 5 and out["exact"] == 100.0 * 3 / 5
    ref = _quiet(O2.make_eval_dict, exact, f1)
    assert [out[k] for k in ("exact", "f1", "total")] == list(ref.values())
    # the script itself crashes in its HasAns breakdown (KeyError); here each breakdown covers the
    # predicted questions of its class
    with pytest.raises(KeyError):
        _quiet(O2.main, data, preds)
    assert out["HasAns_total"] == 4 and out["NoAns_total"] == 1 and out["NoAns_exact"] == 100.0
    with pytest.raises(ValueError):
        _quiet(sm.evaluate_v2, data, {})


# ----------------------------------------------------------------------------------------------------------
# Random cases against the restated official scripts
# ----------------------------------------------------------------------------------------------------------

_WORDS = ["the", "a", "an", "The", "A", "Eiffel", "tower", "Tower", "Paris", "paris,", "1889", "“quoted”",
          "café", "Café", "naïve", "東京", "タワー", "–", "—", "...", "!", "'s", "x-ray", "x", "theatre", "another",
          "İstanbul", "straße", "the.", "(the)", "élan", "an.", "über", "北京", "。", "“", "1,000"]  # fmt: skip
_SEPS = [" ", " ", " ", "", "  ", "\t", "-", ", ", "\u00a0"]


def _random_text(rng: random.Random, max_words: int = 5) -> str:
    n = rng.randint(0, max_words)
    out = ""
    for i in range(n):
        out += (rng.choice(_SEPS) if i else "") + rng.choice(_WORDS)
    return out


def _random_problem(rng: random.Random, allow_missing: bool):
    n = rng.randint(1, 25)
    qas = []
    for i in range(n):
        qid = f"q{i}" if rng.random() > 0.05 else f"q{rng.randrange(max(i, 1))}"  # rare duplicate ids
        if rng.random() < 0.35:
            qas.append(_qa(qid))
        else:
            golds = [_random_text(rng) for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.1:
                golds = ["the"]  # normalises to ""
            qas.append(_qa(qid, *golds))
    data = _dataset(*qas, per_paragraph=rng.randint(1, 4))
    preds = {}
    for qa in qas:
        r = rng.random()
        if allow_missing and r < 0.1:
            continue
        if r < 0.35 and qa["answers"]:
            preds[qa["id"]] = rng.choice(qa["answers"])["text"]
        elif r < 0.55:
            preds[qa["id"]] = ""
        else:
            preds[qa["id"]] = _random_text(rng)
    if rng.random() < 0.3:
        preds["not-in-dataset"] = "x"
    values = [0.0, 0.1, 0.5, 0.5, 1.0, 1.5, -0.3]
    ids = list(preds) + ([qa["id"] for qa in qas] if rng.random() < 0.5 else [])
    rng.shuffle(ids)
    na = {qid: (rng.choice(values) if rng.random() < 0.7 else rng.uniform(-3, 3)) for qid in ids}
    thresh = rng.choice([1.0, 0.5, 0.0, -1.0, 0.1, rng.uniform(-2, 2)])
    return data, preds, na, thresh


@pytest.mark.parametrize("seed", range(300))
def test_random_cases_match_official(seed):
    rng = random.Random(seed)
    data, preds, na, thresh = _random_problem(rng, allow_missing=seed % 2 == 1)
    has_ans = sm.has_answer_map(data)
    assert has_ans == O2.make_qid_to_has_ans(data)
    assert list(has_ans) == list(O2.make_qid_to_has_ans(data))

    raw = _quiet(sm.raw_scores_v2, data, preds)
    raw_ref = _quiet(O2.get_raw_scores, data, preds)
    assert raw == raw_ref and [list(d) for d in raw] == [list(d) for d in raw_ref]
    if raw[0]:
        for scores in raw:
            assert sm.find_best_thresh(preds, scores, na, has_ans) == O2.find_best_thresh(preds, scores, na, has_ans)
        assert sm.apply_no_ans_threshold(raw[0], na, has_ans, thresh) == O2.apply_no_ans_threshold(
            raw[0], na, has_ans, thresh
        )

    missing = any(qa["id"] not in preds for a in data for p in a["paragraphs"] for qa in p["qas"])
    if not missing:
        assert sm.evaluate_v2(data, preds) == O2.main(data, preds)
        assert sm.evaluate_v2(data, preds, na, thresh) == O2.main(data, preds, na, thresh)
        assert sm.evaluate_v2(data, preds, None, thresh) == O2.main(data, preds, None, thresh)

    sub = sm.answerable_subset(data)
    if any(qa for a in sub for p in a["paragraphs"] for qa in p["qas"]):
        out = _quiet(sm.evaluate_v1, sub, preds)
        ref = _quiet(O1.evaluate, sub, preds)
        assert (out["exact_match"], out["f1"]) == (ref["exact_match"], ref["f1"])


@pytest.mark.parametrize("seed", range(50))
def test_albert_two_pass_flow_matches_official(seed):
    rng = random.Random(1000 + seed)
    data, preds, _, _ = _random_problem(rng, allow_missing=False)
    best_texts = {qid: text or _random_text(rng, 2) for qid, text in preds.items()}
    logits = {qid: rng.choice([-2.0, -0.5, 0.0, 0.7, 1.0, 1.3, 2.5]) + rng.choice([0.0, rng.uniform(-1, 1)])
              for qid in best_texts}  # fmt: skip

    def predict(threshold):
        return sm.null_threshold_predictions(best_texts, logits, threshold)

    def write_predictions_v2(null_score_diff_threshold):  # the official final choice, restated
        all_predictions = {}
        for qid, text in best_texts.items():
            score_diff = logits[qid]
            if null_score_diff_threshold is None or score_diff < null_score_diff_threshold:
                all_predictions[qid] = text
            else:
                all_predictions[qid] = ""
        return all_predictions, dict(logits)

    assert predict(None) == best_texts
    out = _quiet(sm.evaluate_v2_albert, data, predict, logits)
    assert out == _quiet(O2.albert_evaluate_v2, data, write_predictions_v2)
    assert list(out) == ["exact", "f1", "total", "null_score_diff_threshold"]


def test_null_threshold_predictions_is_strict():
    texts = {"a": "x", "b": "y", "c": "z"}
    odds = {"a": -1.0, "b": 0.5, "c": 2.0}
    assert sm.null_threshold_predictions(texts, odds, None) == texts
    assert sm.null_threshold_predictions(texts, odds, 0.5) == {"a": "x", "b": "", "c": ""}
    assert sm.null_threshold_predictions(texts, odds, 0.51) == {"a": "x", "b": "y", "c": ""}


# ----------------------------------------------------------------------------------------------------------
# Real SQuAD v2.0 dev questions
# ----------------------------------------------------------------------------------------------------------


def _load(name):
    with open(shared_path("squad", name), encoding="utf-8") as f:
        return json.load(f)["data"]


def test_real_dev_small():
    data = _load("dev-v2.0-small.json")
    has_ans = sm.has_answer_map(data)
    n_no = sum(1 for v in has_ans.values() if not v)
    assert len(has_ans) > n_no > 0

    empty = {qid: "" for qid in has_ans}
    out = sm.evaluate_v2(data, empty)
    assert out["exact"] == out["f1"] == 100.0 * n_no / len(has_ans)
    assert out["NoAns_exact"] == 100.0 and out["HasAns_exact"] == out["HasAns_f1"] == 0.0
    assert out == O2.main(data, empty)

    first = {qa["id"]: (qa["answers"][0]["text"] if qa["answers"] else "")
             for a in data for p in a["paragraphs"] for qa in p["qas"]}  # fmt: skip
    out = sm.evaluate_v2(data, first)
    assert out["exact"] == out["f1"] == 100.0 and out["total"] == len(has_ans)
    assert sm.evaluate_v1(sm.answerable_subset(data), first)["exact_match"] == 100.0

    # with na_probs: answering the answerable ones (na 0) and wrongly the others (na 1) is best at 0.0
    wrong = {qid: (text or "wrong answer") for qid, text in first.items()}
    na = {qid: 0.0 if has_ans[qid] else 1.0 for qid in has_ans}
    out = sm.evaluate_v2(data, wrong, na)
    assert out["exact"] == 100.0 * (len(has_ans) - n_no) / len(has_ans)
    assert (out["best_exact"], out["best_exact_thresh"], out["best_f1"], out["best_f1_thresh"]) == (100, 0, 100, 0)
    assert out == O2.main(data, wrong, na)
    out = sm.evaluate_v2(data, wrong, na, na_prob_thresh=0.5)  # the threshold turns the wrong ones into ""
    assert out["exact"] == 100.0


@pytest.mark.parametrize("seed", range(3))
def test_real_dev_subset_random_predictions(seed):
    data = _load("dev-v2.0-subset-a.json")
    rng = random.Random(seed)
    preds, na = {}, {}
    for a in data:
        for p in a["paragraphs"]:
            words = p["context"].split()
            for qa in p["qas"]:
                r = rng.random()
                if r < 0.3 and qa["answers"]:
                    preds[qa["id"]] = rng.choice(qa["answers"])["text"]
                elif r < 0.5:
                    preds[qa["id"]] = ""
                else:
                    i = rng.randrange(len(words))
                    preds[qa["id"]] = " ".join(words[i : i + rng.randint(1, 6)])
                na[qa["id"]] = round(rng.uniform(-4, 4), 1)  # rounding makes ties
    assert sm.evaluate_v2(data, preds, na) == O2.main(data, preds, na)
    assert sm.evaluate_v2(data, preds, na, 0.3) == O2.main(data, preds, na, 0.3)
    sub = sm.answerable_subset(data)
    out = sm.evaluate_v1(sub, preds)
    ref = O1.evaluate(sub, preds)
    assert (out["exact_match"], out["f1"]) == (ref["exact_match"], ref["f1"])


