"""SQuAD 1.1 and 2.0: ``run_squad``, and ``export_savedmodel --task=squad``.

* ``task``: the job on the shared runner (``SquadTask``, and ``run``: its ``run_trials``);
* ``model``: ``AlbertSquad`` (v1 span head, v2 beam + answer class; the heads declared here, :data:`HEAD_V1` and
  :data:`HEAD_V2`);
* ``scoring``: the official scores and prediction files; ``diagnostics``: the span upper bound
  (``python -m albert_tf.tasks.squad span_upper_bound``);
* ``export``: the raw question + context signature (windows and post-processing in the graph) and token ids;
* ``options``: :class:`SquadOptions` and ``make_config``, plain values;
* ``inputs``: ``check_inputs``, its option checks and the JSON files, read without TensorFlow.

The reader, alignment and windows live in ``albert_tf.data.squad``, post-processing and the official evaluation
scripts in ``albert_tf.evaluation``.

This module is plain Python (``albert_tf.tasks`` says why): the task and the model are imported from their modules
when a run or an export starts.
"""

from __future__ import annotations

from albert_tf.checkpoints.heads import HeadWeight, TaskHead
from albert_tf.data.squad import SquadDataError
from albert_tf.tasks.registry import TaskExport, fine_tuning_export
from albert_tf.tasks.squad.options import SquadOptions, make_config

__all__ = ["HEAD_V1", "HEAD_V2", "TASK", "SquadOptions", "make_config"]

#: run_squad_v1.py's head: ``cls/squad/output_weights`` [2, H] (the Dense kernel [H, 2] transposed) and
#: ``cls/squad/output_bias``; transformers' AlbertForQuestionAnswering ``qa_outputs`` (start = row 0, end = row 1).
HEAD_V1 = TaskHead(
    name="squad_v1",
    weights={
        "cls/squad/output_weights": HeadWeight("squad_output.kernel", (2, "H"), transposed=True,
                                               huggingface="qa_outputs.weight"),
        "cls/squad/output_bias": HeadWeight("squad_output.bias", (2,), huggingface="qa_outputs.bias"),
    },
    huggingface_architecture="AlbertForQuestionAnswering",
    labels_in_config=True,
    when={"version_2_with_negative": False},
    model="albert_tf.tasks.squad.model:AlbertSquad",
)

#: run_squad_v2.py's head: the ``tf.layers.dense`` kernels [in, out] stored as they are (``answer_class/dense_1`` has
#: no bias). transformers has no class for it.
HEAD_V2 = TaskHead(
    name="squad_v2",
    weights={
        "start_logits/dense/kernel": HeadWeight("start_dense.kernel", ("H", 1)),
        "start_logits/dense/bias": HeadWeight("start_dense.bias", (1,)),
        "end_logits/dense_0/kernel": HeadWeight("end_dense_0.kernel", ("2H", "H")),
        "end_logits/dense_0/bias": HeadWeight("end_dense_0.bias", ("H",)),
        "end_logits/LayerNorm/beta": HeadWeight("end_layer_norm.beta", ("H",)),
        "end_logits/LayerNorm/gamma": HeadWeight("end_layer_norm.gamma", ("H",)),
        "end_logits/dense_1/kernel": HeadWeight("end_dense_1.kernel", ("H", 1)),
        "end_logits/dense_1/bias": HeadWeight("end_dense_1.bias", (1,)),
        "answer_class/dense_0/kernel": HeadWeight("answer_dense_0.kernel", ("2H", "H")),
        "answer_class/dense_0/bias": HeadWeight("answer_dense_0.bias", ("H",)),
        "answer_class/dense_1/kernel": HeadWeight("answer_dense_1.kernel", ("H", 1)),
    },
    when={"version_2_with_negative": True},
    model="albert_tf.tasks.squad.model:AlbertSquad",
)

#: The run_squad options that shape the windows, the head and the answers: export_savedmodel takes them as flags.
EXPORT_FLAGS = ("version_2_with_negative", "doc_stride", "max_query_length", "max_answer_length", "n_best_size",
                "start_n_top", "end_n_top", "null_score_diff_threshold")


TASK = TaskExport(
    name="squad",
    description="""a fine-tuned SQuAD model (run_squad's best/ckpt-best or ckpt-N; --version_2_with_negative for
v2). Signatures: serving_default (raw strings question [B], context [B] of any length -> answer, start/end character
offsets into the context, score; v2 also null_score and has_answer at --null_score_diff_threshold; windows of
--max_seq_length with --doc_stride and the official post-processing run in the graph) and serve_token_ids
(input_ids/input_mask/segment_ids [+ p_mask for v2] of windows -> the model's raw outputs).

  export_savedmodel --task=squad --version_2_with_negative --albert_config_file=albert_base_v2 \\
      --spm_model_file=30k-clean.model --max_seq_length=384 --checkpoint=out/squad2/best/ckpt-best \\
      --export_dir=serving/squad2""",
    **fine_tuning_export("albert_tf.tasks.squad.task:SquadTask", SquadOptions, EXPORT_FLAGS),
    errors=(SquadDataError,),
    heads=(HEAD_V1, HEAD_V2),
)

