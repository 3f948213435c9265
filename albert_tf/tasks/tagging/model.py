"""AlbertTagger: a tag for every position of ALBERT's last layer (named entities and other token tagging).

``sequence_output -> dropout(classifier_dropout, training only) -> logits = x W + b`` at every position, as
transformers' ``AlbertForTokenClassification``: there is no official ALBERT tagging runner. The head is a Keras
``Dense`` named ``output``, stored [H, labels]; in an official-layout checkpoint it is ``output_weights`` [labels, H]
and ``output_bias`` [labels] (the names of ``run_classifier.py``'s head: :data:`~albert_tf.tasks.tagging.HEAD`), in a
transformers one ``classifier.weight`` / ``classifier.bias``. The model keeps its label strings (``labels``, in
output order; part of ``get_config``, so a ``.keras`` file and an export carry them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import keras
from keras import ops

from albert_tf.config import AlbertConfig
from albert_tf.data.tagging import IGNORE
from albert_tf.modeling.encoder import AlbertEncoder, as_config, build_from_preset, encoder_inputs
from albert_tf.modeling.initializers import truncated_normal
from albert_tf.modeling.serialization import RebuiltFromConfig
from albert_tf.tasks.tagging import HEAD

#: The head's initialiser: truncated normal, stddev 0.02 (the official runners' heads; transformers draws its
#: ``classifier`` from a normal of the config's ``initializer_range``, 0.02 in every released config).
HEAD_INITIALIZER_RANGE = 0.02


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTagger(RebuiltFromConfig, keras.Model):
    """Token tagging on ALBERT's last layer.

    Inputs: dict of int32 ``input_ids``, ``input_mask``, ``segment_ids`` [B, S]. Output: the logits, float32
    [B, S, len(labels)]; a word is predicted from its first piece (``albert_tf.data.tagging.features``).
    """

    config_options = ("labels", "classifier_dropout", "sharing")
    #: The head's checkpoint names (declared by the task package).
    task_heads = (HEAD,)

    def __init__(
        self,
        config: AlbertConfig | dict[str, Any],
        labels: Sequence[str],
        classifier_dropout: float = 0.1,
        sharing: str = "all",
        name: str = "albert_tagger",
        **kwargs,
    ):
        config = as_config(config)
        labels = [str(label) for label in labels]
        if len(labels) < 2:
            raise ValueError(f"a tagger needs at least two labels (O and an entity tag), got {labels}")
        if not 0.0 <= float(classifier_dropout) < 1.0:
            raise ValueError(f"classifier_dropout must be in [0, 1), got {classifier_dropout}")
        dtype = kwargs.pop("dtype", None)
        encoder = AlbertEncoder(config, sharing=sharing, name="albert_encoder", dtype=dtype)
        dropout = keras.layers.Dropout(classifier_dropout, name="classifier_dropout", dtype=dtype)
        head = keras.layers.Dense(len(labels), kernel_initializer=truncated_normal(HEAD_INITIALIZER_RANGE),
                                  bias_initializer="zeros", name="output", dtype=dtype)
        inputs = encoder_inputs()
        logits = head(dropout(encoder(inputs)["sequence_output"]))
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)  # float32 under mixed
        super().__init__(inputs=inputs, outputs=logits, name=name, dtype=dtype, **kwargs)
        self.config = config
        self.labels = labels
        self.num_labels = len(labels)
        self.classifier_dropout = float(classifier_dropout)
        self.sharing = sharing
        self.encoder = encoder
        self.dropout_layer = dropout
        self.head = head

    def packed_logits(self, features: Mapping[str, Any], length: Any, training: bool = False, unpadded: bool = True):
        """The logits [N, length, labels] (float32) of the N windows of packed rows (``AlbertEncoder.call_packed``,
        ``albert_tf.data.packing``), each from its ``[CLS]`` (``example_positions``) on: position ``j`` of window
        ``n`` is the packed token ``example_positions[n] + j``. Positions past a window's end read whatever follows
        it (the loss ignores them: their label is ``IGNORE``). ``unpadded=False`` under XLA (``call_packed``)."""
        sequence = self.encoder.call_packed(dict(features), training=training, unpadded=unpadded)["sequence_output"]
        hidden = self.encoder.example_windows(sequence, features["example_positions"], length)
        return ops.cast(self.head(self.dropout_layer(hidden, training=training)), "float32")

    @classmethod
    def for_head(cls, config: AlbertConfig, head: Any, rows: int,
                 labels: Sequence[str] | None = None) -> AlbertTagger:
        """The tagger carrying ``head`` with ``rows`` labels, for a conversion that rebuilds the model from a
        checkpoint's arrays: named ``labels`` where the input names them (a Hugging Face ``id2label``), else
        ``LABEL_<i>`` (an official checkpoint keeps no label names)."""
        if labels is not None and len(labels) == rows:
            return cls(config, labels=list(labels))
        return cls(config, labels=[f"LABEL_{i}" for i in range(rows)])

    @classmethod
    def from_preset(cls, preset: str, /, **kwargs: Any) -> AlbertTagger:
        """A tagger from a preset name: a pretrained preset (``albert_base_v2``, ``albert/albert-base-v2``, ...)
        loads its released encoder weights (fetched and cached on first use; the head stays randomly initialised), a
        model config (``albert_tiny``) is randomly initialised; ``load_weights=False`` builds the config alone.
        ``kwargs`` holding ``AlbertConfig`` fields change the config; the rest go to the constructor (``labels`` is
        required)."""
        return build_from_preset(cls, preset, kwargs)


def tagging_loss_terms(logits, label_ids):
    """Per row [B]: the summed softmax cross-entropy over its labelled positions (``label_ids != IGNORE``) and
    their count."""
    logits = ops.cast(logits, "float32")
    labelled = ops.not_equal(label_ids, IGNORE)
    safe = ops.cast(ops.where(labelled, label_ids, ops.zeros_like(label_ids)), "int32")
    picked = ops.take_along_axis(ops.log_softmax(logits, axis=-1), ops.expand_dims(safe, -1), axis=-1)[..., 0]
    weights = ops.cast(labelled, "float32")
    return -ops.sum(picked * weights, axis=-1), ops.sum(weights, axis=-1)


def tagging_loss(logits, label_ids):
    """The mean cross-entropy over the labelled positions of the batch (transformers'
    ``CrossEntropyLoss(ignore_index=-100)``: every labelled piece weighs the same, whatever its window), and their
    count; 0 for a batch without one."""
    sums, counts = tagging_loss_terms(logits, label_ids)
    count = ops.sum(counts)
    return ops.sum(sums) / ops.maximum(count, 1.0), count
