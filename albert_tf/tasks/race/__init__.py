"""RACE multiple choice: ``run_race``, and ``export_savedmodel --task=race``.

* ``task``: the job on the shared runner (accuracy overall and per level in one run);
* ``model``: :class:`~albert_tf.tasks.race.model.AlbertMultipleChoice` and its head's checkpoint names;
* ``export``: the raw-text (article, question, four options) and token-id serving signatures;
* ``options``: :class:`RaceOptions` and ``make_config``, plain values;
* ``inputs``: ``check_inputs``, its option checks and the RACE files, read without TensorFlow.

The reader and features live in ``albert_tf.data.race``, the accuracy per level in ``albert_tf.evaluation``.

Its task and model are imported on first use (``albert_tf.tasks`` says why).
"""

from __future__ import annotations

from albert_tf.checkpoints.heads import declare_head_module
from albert_tf.data.race import RaceDataError
from albert_tf.lazy import lazy_names
from albert_tf.tasks.race.options import RaceOptions, make_config
from albert_tf.tasks.registry import TaskExport, fine_tuning_export, register_task

# Public name -> the module of this package that defines it.
_LAZY = {
    "AlbertMultipleChoice": ".model",
    "RaceTask": ".task",
    "export_checkpoint": ".task",
    "run": ".task",
}

__all__ = ["TASK", "RaceOptions", "make_config", *_LAZY]
__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())

declare_head_module(f"{__name__}.model")


TASK = register_task(TaskExport(
    name="race",
    description="""a fine-tuned RACE model (run_race's best/ckpt-best or ckpt-N). Signatures: serving_default (raw
strings article [B], question [B], options [B, 4] -> probabilities [B, 4], answer (the letter A-D), logits; the
features of the training pipeline, --max_seq_length per choice, --max_qa_length question+option tokens kept) and
serve_token_ids (input_ids/input_mask/segment_ids [B, 4, L]).

  export_savedmodel --task=race --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --max_seq_length=512 --max_qa_length=128 --checkpoint=out/race/best/ckpt-best --export_dir=serving/race""",
    **fine_tuning_export("albert_tf.tasks.race.task:RaceTask", RaceOptions, ("max_qa_length",)),
    errors=(RaceDataError,),
))
