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

import functools
from typing import Any

from albert_tf.checkpoints.heads import declare_head_module
from albert_tf.data.race import RaceDataError
from albert_tf.lazy import lazy_names
from albert_tf.tasks.race.options import RaceOptions, make_config
from albert_tf.tasks.registry import TaskExport, register_task
from albert_tf.training.run_config import define_option_flags

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


def _export(fv: Any) -> str:
    from albert_tf.tasks.race.task import export_checkpoint

    return export_checkpoint(
        fv.checkpoint, fv.export_dir, albert_config_file=fv.albert_config_file, spm_model_file=fv.spm_model_file,
        max_seq_length=fv.max_seq_length, max_qa_length=fv.max_qa_length, do_lower_case=fv.do_lower_case,
        sharing=fv.sharing,
    )


TASK = register_task(TaskExport(
    name="race",
    description="""a fine-tuned RACE model (run_race's best/ckpt-best or ckpt-N). Signatures: serving_default (raw
strings article [B], question [B], options [B, 4] -> probabilities [B, 4], answer (the letter A-D), logits; the
features of the training pipeline, --max_seq_length per choice, --max_qa_length question+option tokens kept) and
serve_token_ids (input_ids/input_mask/segment_ids [B, 4, L]).

  export_savedmodel --task=race --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --max_seq_length=512 --max_qa_length=128 --checkpoint=out/race/best/ckpt-best --export_dir=serving/race""",
    define_flags=functools.partial(define_option_flags, RaceOptions, names=("max_qa_length",)),
    export=_export,
    errors=(RaceDataError,),
))
