"""A fifth task written outside the package, as a user would add one: token tagging (a label per token).

It touches nothing in ``albert_tf``: its head's checkpoint names (a :class:`~albert_tf.checkpoints.heads.TaskHead`),
a model (the shared encoder + a Dense tagger) that lists the head, a :class:`~albert_tf.training.task.Task` whose
``export`` writes a token-id SavedModel through the shared writer (``write_archive``), its options, and ``TASK``, the
declaration ``export_savedmodel`` and the conversions read. It is registered by one line of a distribution's
metadata, ``toy_tagger = toy_task`` in the ``albert_tf.tasks`` entry-point group; ``tests/test_task_registry.py``
writes that line and exports the task by its ``--task`` name.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

import keras
import numpy as np

from albert_tf.checkpoints.heads import HeadWeight, TaskHead
from albert_tf.config import AlbertConfig
from albert_tf.export.savedmodel import IDS_SIGNATURE, write_archive
from albert_tf.modeling import AlbertEncoder
from albert_tf.tasks.registry import TaskExport
from albert_tf.training import experiment
from albert_tf.training.run_config import define_option_flags, option
from albert_tf.training.task import Task

NAME = "toy_tagger"
INPUTS = ("input_ids", "input_mask", "segment_ids")

#: The tagger's weights under official-style names: [num_tags, H] (the Dense kernel transposed) and [num_tags].
HEAD = TaskHead(
    name=NAME,
    weights={"toy/tagger/output_weights": HeadWeight("tagger.kernel", ("labels", "H"), transposed=True),
             "toy/tagger/output_bias": HeadWeight("tagger.bias", ("labels",))},
)


class ToyTagger(keras.Model):
    """Encoder + one Dense layer over every position: ``num_tags`` logits per token."""

    task_heads = (HEAD,)

    def __init__(self, config: AlbertConfig, num_tags: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config, self.num_tags = config, num_tags
        self.encoder = AlbertEncoder(config)
        self.tagger = keras.layers.Dense(num_tags, name="tagger")

    def call(self, inputs: dict, training: bool = False):
        sequence = self.encoder(inputs, training=training)["sequence_output"]
        return self.tagger(sequence)


class ToyTaggerTask(Task):
    """Only what exporting needs: the model and its SavedModel (training hooks refuse)."""

    name = NAME

    def __init__(self, config: AlbertConfig, num_tags: int) -> None:
        self.albert_config, self.num_tags = config, num_tags

    def build_model(self) -> ToyTagger:
        model = ToyTagger(self.albert_config, self.num_tags)
        model({k: np.zeros((1, 4), np.int32) for k in INPUTS})
        return model

    def build_inputs(self, split: str, global_batch_size: int):
        raise NotImplementedError("the toy task only exports")

    def loss(self, model, features, training):
        raise NotImplementedError("the toy task only exports")

    def eval_outputs(self, model, features):
        raise NotImplementedError("the toy task only exports")

    def aggregate(self, outputs):
        raise NotImplementedError("the toy task only exports")

    def export(self, model: ToyTagger, export_dir: str, step: int, source: str) -> str:
        import tensorflow as tf

        ids = tf.TensorSpec([None, None], tf.int32)

        @tf.function(input_signature=[ids, ids, ids])
        def serve_ids(input_ids, input_mask, segment_ids):
            logits = model({"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids})
            return {"logits": logits, "tags": tf.argmax(logits, axis=-1, output_type=tf.int32)}

        path = os.path.join(export_dir, str(step))
        return write_archive(path, [model], {IDS_SIGNATURE: serve_ids},
                             {"task": NAME, "checkpoint": source, "global_step": step})


@dataclasses.dataclass
class ToyOptions:
    """The toy task's own options: each field declared with ``option`` is also its ``export_savedmodel`` flag."""

    num_tags: int = option(3, "Tags per token.")


def options_from_flags(fv: Any, options_type: type = ToyOptions) -> ToyOptions:
    return options_type(**{f.name: fv[f.name].value for f in dataclasses.fields(options_type)})


def _export(fv: Any) -> str:
    options = options_from_flags(fv)
    task = ToyTaggerTask(AlbertConfig.load(fv.albert_config_file), options.num_tags)
    return experiment.export_checkpoint(task, fv.checkpoint, fv.export_dir)


TASK = TaskExport(
    name=NAME,
    description="a toy token tagger declared outside the package (tests/toy_task.py).",
    define_flags=functools.partial(define_option_flags, ToyOptions),
    export=_export,
    required=("albert_config_file", "spm_model_file"),
    heads=(HEAD,),
)
