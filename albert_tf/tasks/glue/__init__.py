"""GLUE classification and regression: ``run_classifier``, and ``export_savedmodel --task=classifier``.

* ``task``: the job on the shared runner (``GlueTask``, and ``run``: its ``run_trials``);
* ``model``: ``AlbertClassifier``, the encoder and the head declared here (:data:`HEAD`);
* ``export``: the raw-text, token-id and tf.Example serving signatures;
* ``options``: :class:`GlueOptions` and ``make_config``, plain values;
* ``inputs``: ``check_inputs``, its option checks and the TSV files, read without TensorFlow.

Readers and features live in ``albert_tf.data.glue``, the metrics in ``albert_tf.evaluation.glue_metrics``.

This module is plain Python (``albert_tf.tasks`` says why): the task and the model are imported from their modules
when a run or an export starts.
"""

from __future__ import annotations

from albert_tf.checkpoints.heads import HeadWeight, TaskHead
from albert_tf.data.glue import GlueDataError
from albert_tf.tasks.glue.options import GlueOptions, make_config
from albert_tf.tasks.registry import TaskExport, fine_tuning_export

__all__ = ["HEAD", "TASK", "GlueOptions", "make_config"]

#: run_classifier.py's head: ``output_weights`` [num_labels, H] (the Dense kernel [H, num_labels] transposed) and
#: ``output_bias``, at the top level of the checkpoint; transformers' AlbertForSequenceClassification ``classifier``,
#: keras-hub's AlbertTextClassifier ``logits``.
HEAD = TaskHead(
    name="classifier",
    weights={
        "output_weights": HeadWeight("head.kernel", ("labels", "H"), transposed=True,
                                     huggingface="classifier.weight", keras_hub="logits/kernel"),
        "output_bias": HeadWeight("head.bias", ("labels",), huggingface="classifier.bias", keras_hub="logits/bias"),
    },
    huggingface_architecture="AlbertForSequenceClassification",
    keras_hub_task="AlbertTextClassifier",
    labels_in_config=True,
    model="albert_tf.tasks.glue.model:AlbertClassifier",
)


#: Its options that ``export_savedmodel --task=classifier`` takes as flags, besides the shared ones.
EXPORT_FLAGS = ("task_name", "threshold_to_export", "export_jit_compile", "bucket_lengths")


TASK = TaskExport(
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
    heads=(HEAD,),
)

