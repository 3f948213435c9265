"""GLUE classification and regression: ``run_classifier``, and ``export_savedmodel --task=classifier``.

* ``task``: the job on the shared runner (:class:`GlueTask`, ``run``, ``export_checkpoint``);
* ``model``: :class:`~albert_tf.tasks.glue.model.AlbertClassifier` and its head's checkpoint names;
* ``export``: the raw-text, token-id and tf.Example serving signatures;
* ``options``: :class:`GlueOptions` and ``make_config``, plain values;
* ``inputs``: ``check_inputs``, its option checks and the TSV files, read without TensorFlow.

Readers and features live in ``albert_tf.data.glue``, the metrics in ``albert_tf.evaluation.glue_metrics``.

Its task and model are imported on first use (``albert_tf.tasks`` says why).
"""

from __future__ import annotations

import math
from typing import Any

from albert_tf.checkpoints.heads import declare_head_module
from albert_tf.data.batching import DEFAULT_BUCKET_LENGTHS
from albert_tf.data.glue import GlueDataError
from albert_tf.lazy import lazy_names
from albert_tf.tasks.glue.options import GlueOptions, make_config
from albert_tf.tasks.registry import TaskExport, register_task

# Public name -> the module of this package that defines it.
_LAZY = {
    "AlbertClassifier": ".model",
    "GlueTask": ".task",
    "export_checkpoint": ".task",
    "run": ".task",
}

__all__ = ["TASK", "GlueOptions", "make_config", *_LAZY]
__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())

declare_head_module(f"{__name__}.model")


def _define_export_flags(fv: Any) -> None:
    from absl import flags

    if "task_name" not in fv:
        flags.DEFINE_string("task_name", None, "GLUE task the checkpoint was fine-tuned on (labels, pair or single).",
                            flag_values=fv)
    if "threshold_to_export" not in fv:
        flags.DEFINE_float("threshold_to_export", float("nan"),
                           "Also return this float scalar as 'threshold' (NaN: none).", flag_values=fv)
    if "export_jit_compile" not in fv:
        flags.DEFINE_bool("export_jit_compile", False,
                          "Run the model's forward under XLA in every signature (same outputs; lower CPU latency at "
                          "batch 1; the first request of each shape compiles).", flag_values=fv)
    if "export_real_tokens" not in fv:
        flags.DEFINE_bool("export_real_tokens", False,
                          "In the raw-text and tf.Example signatures send only each request's real tokens "
                          "through the embeddings, projections and FFN (same outputs; the padding of a mixed-length "
                          "batch costs no dense-layer work). Not with --export_jit_compile: XLA cannot compile a "
                          "data-dependent token count.", flag_values=fv)
    if "bucket_lengths" not in fv:
        flags.DEFINE_string("bucket_lengths", DEFAULT_BUCKET_LENGTHS,
                            "In-graph length bucketing of the raw-text and tf.Example signatures: a request is cut "
                            "to its longest real sequence rounded up to the next of these lengths (capped at "
                            "--max_seq_length); same outputs to float rounding (serve_token_ids runs at the length "
                            "sent). 'none': pad every request to --max_seq_length (the official export).",
                            flag_values=fv)


def _export(fv: Any) -> str:
    from albert_tf.tasks.glue.task import export_checkpoint

    threshold = fv.threshold_to_export
    return export_checkpoint(
        fv.checkpoint, fv.export_dir, task_name=fv.task_name, albert_config_file=fv.albert_config_file,
        spm_model_file=fv.spm_model_file, max_seq_length=fv.max_seq_length, do_lower_case=fv.do_lower_case,
        sharing=fv.sharing, threshold_to_export=None if math.isnan(threshold) else threshold,
        export_jit_compile=fv.export_jit_compile, export_real_tokens=fv.export_real_tokens,
        bucket_lengths=fv.bucket_lengths,
    )


TASK = register_task(TaskExport(
    name="classifier",
    description="""a fine-tuned GLUE classifier (run_classifier's best/ckpt-best or ckpt-N). Signatures:
serving_default (raw strings text_a [+ text_b for pair tasks] -> probabilities, label, label_id, logits; or score
for STS-B), serve_token_ids (input_ids/input_mask/segment_ids) and serve_tf_examples (the official
serialized_example receiver). Each request is cut in the graph to its longest real sequence rounded up to a
--bucket_lengths length (same outputs; 'none' pads to --max_seq_length).

  export_savedmodel --task=classifier --task_name=MRPC --albert_config_file=albert_base_v2 \\
      --spm_model_file=30k-clean.model --max_seq_length=128 --checkpoint=out/mrpc/best/ckpt-best \\
      --export_dir=serving/mrpc""",
    define_flags=_define_export_flags,
    export=_export,
    required=("task_name", "albert_config_file", "spm_model_file"),
    errors=(GlueDataError,),
    default=True,
))
