"""The span upper bound of ``run_squad``'s pipeline: the score of perfect logits through its features and
post-processing, i.e. what tokenization, alignment, windowing and post-processing lose before any model does.

``python -m albert_tf.tasks.squad span_upper_bound --predict_file=F --spm_model_file=M``; its flags take
``run_squad``'s defaults (:class:`~albert_tf.tasks.squad.task.SquadOptions`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from albert_tf.data import squad as squad_data
from albert_tf.evaluation import squad_metrics
from albert_tf.evaluation.squad_predictions import is_max_context, postprocess
from albert_tf.files import write_text_atomic
from albert_tf.tasks.squad.options import SquadOptions
from albert_tf.tasks.squad.scoring import restrict_dataset
from albert_tf.tokenization import FullTokenizer
from albert_tf.training.task import TaskError

#: run_squad's defaults, which the diagnostic's arguments and flags take.
_DEFAULTS = SquadOptions()


def gold_outputs(feature: Any, version_2_with_negative: bool, max_seq_length: int, start_n_top: int = 5,
                 end_n_top: int = 5) -> dict[str, np.ndarray]:
    """Model outputs of one window that peak at its gold token span (at ``[CLS]`` when the window has no answer).

    v1: logits 10 at the gold start/end, 0 elsewhere. v2: the beam's first entry is the gold span with
    log-probability 0, every other beam entry points at ``[CLS]`` (which the post-processing rejects), and
    ``cls_logits`` is -10 for a window holding the answer, +10 otherwise.
    """
    if feature.start_position is None:
        raise ValueError(f"window {feature.unique_id} has no gold span: the question has no answer in the file")
    start, end = int(feature.start_position), int(feature.end_position)
    answered = not feature.is_impossible and start > 0
    if not version_2_with_negative:
        start_logits = np.zeros(max_seq_length, np.float32)
        end_logits = np.zeros(max_seq_length, np.float32)
        start_logits[start] = end_logits[end] = 10.0
        return {"start_logits": start_logits, "end_logits": end_logits}
    start_top_index = np.zeros(start_n_top, np.int32)
    start_top_log_probs = np.full(start_n_top, -20.0, np.float32)
    end_top_index = np.zeros(start_n_top * end_n_top, np.int32)
    end_top_log_probs = np.full(start_n_top * end_n_top, -20.0, np.float32)
    start_top_index[0], end_top_index[0] = start, end
    start_top_log_probs[0] = end_top_log_probs[0] = 0.0
    return {
        "start_top_index": start_top_index,
        "start_top_log_probs": start_top_log_probs,
        "end_top_index": end_top_index,
        "end_top_log_probs": end_top_log_probs,
        "cls_logits": np.float32(-10.0 if answered else 10.0),
    }


def span_upper_bound(
    predict_file: str,
    spm_model_file: str,
    *,
    version_2_with_negative: bool = False,
    max_seq_length: int = _DEFAULTS.max_seq_length,
    doc_stride: int = _DEFAULTS.doc_stride,
    max_query_length: int = _DEFAULTS.max_query_length,
    do_lower_case: bool = True,
    n_best_size: int = _DEFAULTS.n_best_size,
    max_answer_length: int = _DEFAULTS.max_answer_length,
    output_file: str | None = None,
) -> dict[str, Any]:
    """What tokenization, alignment, windowing and post-processing lose, measured with perfect logits.

    Builds the prediction features exactly as ``run_squad --do_predict`` does, gives each window the outputs of
    :func:`gold_outputs`, runs the same post-processing (v2: null threshold 0, between the -10 / +10 answer-class
    logits) and scores the answers with the official scripts: evaluate-v2.0, or evaluate-v1.1 over the answerable
    questions. Returns the scores, the alignment report and every question that misses (not an exact match) with
    the reason; writes the answers to ``output_file`` when given.
    """
    squad_data.check_window_settings(max_seq_length, doc_stride, max_query_length)
    tokenizer = FullTokenizer(do_lower_case=do_lower_case, spm_model_file=spm_model_file)
    dataset = squad_data.read_squad_json(predict_file)
    examples = squad_data.read_squad_examples(predict_file, False, version_2_with_negative, dataset=dataset)
    features, report = squad_data.convert_examples_to_features(
        examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training=False,
        do_lower_case=do_lower_case,
    )
    unlabelled = [e.qas_id for e in examples if e.orig_answer_text is None]
    if unlabelled:
        raise TaskError(f"{predict_file}: question {unlabelled[0]} has no gold answer (and is not marked "
                        "is_impossible): the span upper bound needs labelled data")
    outputs = {f.unique_id: gold_outputs(f, version_2_with_negative, max_seq_length) for f in features}
    predictions = postprocess(
        examples, features, outputs, version_2_with_negative=version_2_with_negative, n_best_size=n_best_size,
        max_answer_length=max_answer_length, start_n_top=5, end_n_top=5,
    )
    answers = predictions.answers(0.0)
    if version_2_with_negative:  # the official v2.0 script on the written predictions file
        scores = squad_metrics.evaluate_v2(restrict_dataset(dataset, set(answers)), answers)
    else:  # the official v1.1 script over the answerable questions
        scores = squad_metrics.evaluate_v1(squad_metrics.answerable_subset(dataset), answers)
    misses = _misses(examples, features, answers, report, version_2_with_negative, max_answer_length)
    if output_file:
        from albert_tf import files as _fs

        _fs.makedirs_for(output_file)
        write_text_atomic(output_file, json.dumps(answers, indent=4, ensure_ascii=False) + "\n")
    return {
        "predict_file": predict_file,
        "version_2_with_negative": version_2_with_negative,
        "max_seq_length": max_seq_length,
        "doc_stride": doc_stride,
        "max_query_length": max_query_length,
        "num_questions": len(examples),
        "num_features": len(features),
        "scores": scores,
        "report": report.to_json(),
        "misses": misses,
    }


def _misses(
    examples, features, answers: dict[str, str], report, version_2: bool, max_answer_length: int
) -> list[dict[str, str]]:
    """Questions whose answer is not an exact match of a gold answer, each with why."""
    windows: dict[int, list[Any]] = {}
    for f in features:
        windows.setdefault(f.example_index, []).append(f)
    mismatched = set(report.mismatched)
    out = []
    for index, example in enumerate(examples):
        golds = list(example.answers) or [""]
        if not version_2 and not example.answers:
            continue  # v1 scores the answerable questions only
        answer = answers.get(example.qas_id, "")
        if max(squad_metrics.exact_match_score(answer, g) for g in golds):
            continue
        mine = windows.get(index, [])
        if example.qas_id in mismatched:
            reason = "alignment failed the 80% rule: the question has no window"
        elif not any(not f.is_impossible and f.start_position for f in mine):
            reason = "no window holds the whole answer span"
        elif not any(
            not f.is_impossible and f.start_position and is_max_context(f, f.start_position) for f in mine
        ):
            reason = "the answer's start token has its maximal context in a window that does not hold the whole answer"
        elif all(f.end_position - f.start_position + 1 > max_answer_length for f in mine if f.start_position):
            length = min(f.end_position - f.start_position + 1 for f in mine if f.start_position)
            reason = f"the answer is {length} tokens, longer than --max_answer_length={max_answer_length}"
        else:
            reason = "the text recovered from the token span differs from the gold answer (tokenization/alignment)"
        out.append({"id": example.qas_id, "prediction": answer, "gold": golds[0], "reason": reason})
    return out


def upper_bound_main(argv: Sequence[str]) -> int:
    """``python -m albert_tf.tasks.squad span_upper_bound --predict_file=F --spm_model_file=M ...``."""
    from absl import flags

    fv = flags.FlagValues()
    flags.DEFINE_string("predict_file", None, "SQuAD JSON with gold answers (v1.1 or v2.0 layout).", flag_values=fv)
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model of the tokenizer.", flag_values=fv)
    flags.DEFINE_bool("version_2_with_negative", False, "v2 post-processing and scoring (else v1.1 over the "
                      "answerable questions).", flag_values=fv)
    flags.DEFINE_integer("max_seq_length", _DEFAULTS.max_seq_length, "As run_squad.", flag_values=fv)
    flags.DEFINE_integer("doc_stride", _DEFAULTS.doc_stride, "As run_squad.", flag_values=fv)
    flags.DEFINE_integer("max_query_length", _DEFAULTS.max_query_length, "As run_squad.", flag_values=fv)
    flags.DEFINE_bool("do_lower_case", True, "As run_squad.", flag_values=fv)
    flags.DEFINE_integer("n_best_size", _DEFAULTS.n_best_size, "As run_squad.", flag_values=fv)
    flags.DEFINE_integer("max_answer_length", _DEFAULTS.max_answer_length, "As run_squad.", flag_values=fv)
    flags.DEFINE_string("output_file", None, "Write the answers (predictions.json layout) here.", flag_values=fv)
    usage = (
        "usage: python -m albert_tf.tasks.squad span_upper_bound --predict_file=F --spm_model_file=M "
        "[--version_2_with_negative] [--max_seq_length=384 --doc_stride=128 --max_query_length=64] "
        "[--output_file=predictions.json]\n\nThe span upper bound: the score of perfect logits through run_squad's "
        "features and post-processing (what tokenization, alignment, windowing and post-processing lose). "
        "Prints the scores and every missed question as JSON.\n"
    )
    args = list(argv)
    if len(args) < 2 or args[1] != "span_upper_bound" or any(a in ("--help", "-h") for a in args):
        print(usage + fv.get_help(), file=sys.stdout if "--help" in args or "-h" in args else sys.stderr)
        return 0 if ("--help" in args or "-h" in args) else 2
    try:
        from albert_tf import files as _fs

        for arg in args[2:]:
            problem = _fs.flagfile_problem(arg.split("=", 1)[1]) if arg.startswith("--flagfile=") else None
            if problem:
                raise ValueError(problem)
        fv([args[0], *args[2:]])
        for name in ("predict_file", "spm_model_file"):
            if not fv[name].value:
                raise TaskError(f"--{name} is required")
        result = span_upper_bound(
            fv.predict_file,
            fv.spm_model_file,
            version_2_with_negative=fv.version_2_with_negative,
            max_seq_length=fv.max_seq_length,
            doc_stride=fv.doc_stride,
            max_query_length=fv.max_query_length,
            do_lower_case=fv.do_lower_case,
            n_best_size=fv.n_best_size,
            max_answer_length=fv.max_answer_length,
            output_file=fv.output_file,
        )
    except (flags.Error, ValueError, OSError) as e:
        what = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) and e.filename else str(e)
        if isinstance(e, flags.Error):
            from albert_tf import files as _fs

            what = _fs.flagfile_holding(what, args[2:]) + what
        print(f"error: span_upper_bound: {what}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0
