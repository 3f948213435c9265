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

from albert_tf.checkpoints.heads import declare_head_module
from albert_tf.data.glue import GlueDataError
from albert_tf.lazy import lazy_names
from albert_tf.tasks.glue.options import GlueOptions, make_config
from albert_tf.tasks.registry import TaskExport, fine_tuning_export, register_task

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


#: Its options that ``export_savedmodel --task=classifier`` takes as flags, besides the shared ones.
EXPORT_FLAGS = ("task_name", "threshold_to_export", "export_jit_compile", "export_real_tokens", "bucket_lengths")


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
    **fine_tuning_export("albert_tf.tasks.glue.task:GlueTask", GlueOptions, EXPORT_FLAGS),
    required=("task_name", "albert_config_file", "spm_model_file"),
    errors=(GlueDataError,),
    default=True,
))
