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

from typing import Any

from albert_tf.checkpoints.heads import declare_head_module
from albert_tf.data.squad import SquadDataError
from albert_tf.lazy import lazy_names
from albert_tf.tasks.registry import TaskExport, register_task
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

#: The run_squad flags that shape the windows, the head and the answers: export_savedmodel takes them with
#: run_squad's names and defaults (:class:`SquadOptions`).
EXPORT_OPTIONS = (
    ("version_2_with_negative", "SQuAD 2.0 head (beam + answer class)."),
    ("doc_stride", "Tokens between the starts of two context windows."),
    ("max_query_length", "Question tokens kept."),
    ("max_answer_length", "Longest answer, in tokens."),
    ("n_best_size", "v1: start and end candidates per window."),
    ("start_n_top", "v2 beam: start positions kept."),
    ("end_n_top", "v2 beam: end positions kept per start."),
    ("null_score_diff_threshold", "v2: has_answer = null_score < this threshold."),
)


def _define_export_flags(fv: Any) -> None:
    from absl import flags

    defaults = SquadOptions()
    define = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float}
    for name, help_text in EXPORT_OPTIONS:
        if name not in fv:
            default = getattr(defaults, name)
            define[type(default)](name, default, help_text, flag_values=fv)


def _export(fv: Any) -> str:
    from albert_tf.tasks.squad.task import export_checkpoint

    return export_checkpoint(
        fv.checkpoint, fv.export_dir, albert_config_file=fv.albert_config_file, spm_model_file=fv.spm_model_file,
        max_seq_length=fv.max_seq_length, do_lower_case=fv.do_lower_case, sharing=fv.sharing,
        **{name: fv[name].value for name, _ in EXPORT_OPTIONS},
    )


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
    define_flags=_define_export_flags,
    export=_export,
    errors=(SquadDataError,),
))
