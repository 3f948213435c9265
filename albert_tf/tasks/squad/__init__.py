"""SQuAD 1.1 and 2.0: ``run_squad``, and ``export_savedmodel --task=squad``.

* ``task``: the job on the shared runner (:class:`SquadTask`, ``run``, ``export_checkpoint``);
* ``model``: :class:`~albert_tf.tasks.squad.model.AlbertSquad` (v1 span head, v2 beam + answer class) and the two
  heads' checkpoint names;
* ``scoring``: the official scores and prediction files; ``diagnostics``: the span upper bound
  (``python -m albert_tf.tasks.squad span_upper_bound``);
* ``export``: the raw question + context signature (windows and post-processing in the graph) and token ids;
* ``options``: :class:`SquadOptions` and ``make_config``, plain values;
* ``inputs``: ``check_inputs``, its option checks and the JSON files, read without TensorFlow.

The reader, alignment and windows live in ``albert_tf.data.squad``, post-processing and the official evaluation
scripts in ``albert_tf.evaluation``.

Its task and model are imported on first use (``albert_tf.tasks`` says why).
"""

from __future__ import annotations

from albert_tf.checkpoints.heads import declare_head_module
from albert_tf.data.squad import SquadDataError
from albert_tf.lazy import lazy_names
from albert_tf.tasks.registry import TaskExport, fine_tuning_export, register_task
from albert_tf.tasks.squad.options import SquadOptions, make_config

# Public name -> the module of this package that defines it.
_LAZY = {
    "AlbertSquad": ".model",
    "SquadTask": ".task",
    "export_checkpoint": ".task",
    "run": ".task",
    "score": ".scoring",
    "span_upper_bound": ".diagnostics",
}

__all__ = ["TASK", "SquadOptions", "make_config", *_LAZY]
__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())

declare_head_module(f"{__name__}.model")

#: The run_squad options that shape the windows, the head and the answers: export_savedmodel takes them as flags.
EXPORT_FLAGS = ("version_2_with_negative", "doc_stride", "max_query_length", "max_answer_length", "n_best_size",
                "start_n_top", "end_n_top", "null_score_diff_threshold")


TASK = register_task(TaskExport(
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
))
