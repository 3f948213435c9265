"""Token tagging (named entities): ``run_tagging``, and ``export_savedmodel --task=tagging``.

* ``task``: the job on the shared runner (``TaggingTask``, and ``run``: its ``run_trials``);
* ``model``: ``AlbertTagger``, the encoder and the head declared here (:data:`HEAD`);
* ``scoring``: entity precision / recall / F1 as ``conlleval`` computes them, and its input layout;
* ``export``: the raw-sentence signature (entities with character offsets) and token ids;
* ``options``: :class:`TaggingOptions` and ``make_config``, plain values;
* ``inputs``: ``check_inputs``, its option checks and the CoNLL files, read without TensorFlow.

The CoNLL reader and the windows of pieces (no word dropped) live in ``albert_tf.data.tagging``.

This module is plain Python (``albert_tf.tasks`` says why): the task and the model are imported from their modules
when a run or an export starts.
"""

from __future__ import annotations

from albert_tf.checkpoints.heads import HeadWeight, TaskHead
from albert_tf.data.tagging import TaggingDataError
from albert_tf.tasks.registry import TaskExport, fine_tuning_export
from albert_tf.tasks.tagging.options import TaggingOptions, make_config

__all__ = ["HEAD", "TASK", "TaggingOptions", "make_config"]

#: The tagging head: ``output_weights`` [labels, H] (the Dense kernel [H, labels] transposed) and ``output_bias``,
#: named as run_classifier.py's head (there is no official tagging runner); transformers'
#: AlbertForTokenClassification ``classifier``. Its names and shapes are a classifier's, so it is never guessed from
#: arrays alone: the model (or --task) names it.
HEAD = TaskHead(
    name="tagging",
    weights={
        "output_weights": HeadWeight("head.kernel", ("labels", "H"), transposed=True,
                                     huggingface="classifier.weight"),
        "output_bias": HeadWeight("head.bias", ("labels",), huggingface="classifier.bias"),
    },
    huggingface_architecture="AlbertForTokenClassification",
    labels_in_config=True,
    guessed_from_arrays=False,
    model="albert_tf.tasks.tagging.model:AlbertTagger",
)

#: Its options that ``export_savedmodel --task=tagging`` takes as flags, besides the shared ones.
EXPORT_FLAGS = ("labels", "train_file", "tag_scheme", "window_stride")

TASK = TaskExport(
    name="tagging",
    description="""a fine-tuned token tagger (run_tagging's best/ckpt-best or ckpt-N; its labels from its run's
run.json, or --labels, or the --train_file it was trained on). Signatures: serving_default (raw sentences [B],
words split at white space -> per word its tag and character start/end, and the entities: type, text, character
start/end in the sentence; sentences longer than a window are split into overlapping windows in the graph, as in
training) and serve_token_ids (input_ids/input_mask/segment_ids [B, S] -> logits and tag ids per position).

  export_savedmodel --task=tagging --albert_config_file=albert_base_v2 \\
      --spm_model_file=30k-clean.model --max_seq_length=128 --checkpoint=out/wnut17/best/ckpt-best \\
      --export_dir=serving/wnut17""",
    **fine_tuning_export("albert_tf.tasks.tagging.task:TaggingTask", TaggingOptions, EXPORT_FLAGS),
    errors=(TaggingDataError,),
    heads=(HEAD,),
)
