"""RACE multiple choice: ``run_race``, and ``export_savedmodel --task=race``.

* ``task``: the job on the shared runner (accuracy overall and per level in one run);
* ``model``: ``AlbertMultipleChoice``, the encoder and the head declared here (:data:`HEAD`);
* ``export``: the raw-text (article, question, four options) and token-id serving signatures;
* ``options``: :class:`RaceOptions` and ``make_config``, plain values;
* ``inputs``: ``check_inputs``, its option checks and the RACE files, read without TensorFlow.

The reader and features live in ``albert_tf.data.race``, the accuracy per level in ``albert_tf.evaluation``.

This module is plain Python (``albert_tf.tasks`` says why): the task and the model are imported from their modules
when a run or an export starts.
"""

from __future__ import annotations

from albert_tf.checkpoints.heads import HeadWeight, TaskHead
from albert_tf.data.race import RaceDataError
from albert_tf.tasks.race.options import RaceOptions, make_config
from albert_tf.tasks.registry import TaskExport, fine_tuning_export

__all__ = ["HEAD", "TASK", "RaceOptions", "make_config"]

#: run_race.py's head: ``output_weights`` [1, H] (the Dense(1) kernel [H, 1] transposed) and ``output_bias`` [1], at
#: the top level as the GLUE classifier's; transformers' AlbertForMultipleChoice ``classifier``. Its names and shape
#: are a one-label classifier's, so it is never guessed from arrays alone: the model (or --task) names it.
HEAD = TaskHead(
    name="race",
    weights={
        "output_weights": HeadWeight("head.kernel", (1, "H"), transposed=True, huggingface="classifier.weight"),
        "output_bias": HeadWeight("head.bias", (1,), huggingface="classifier.bias"),
    },
    huggingface_architecture="AlbertForMultipleChoice",
    guessed_from_arrays=False,
    model="albert_tf.tasks.race.model:AlbertMultipleChoice",
)


TASK = TaskExport(
    name="race",
    description="""a fine-tuned RACE model (run_race's best/ckpt-best or ckpt-N). Signatures: serving_default (raw
strings article [B], question [B], options [B, 4] -> probabilities [B, 4], answer (the letter A-D), logits; the
features of the training pipeline, --max_seq_length per choice, --max_qa_length question+option tokens kept) and
serve_token_ids (input_ids/input_mask/segment_ids [B, 4, L]).

  export_savedmodel --task=race --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --max_seq_length=512 --max_qa_length=128 --checkpoint=out/race/best/ckpt-best --export_dir=serving/race""",
    **fine_tuning_export("albert_tf.tasks.race.task:RaceTask", RaceOptions, ("max_qa_length",)),
    errors=(RaceDataError,),
    heads=(HEAD,),
)

