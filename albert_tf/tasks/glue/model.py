"""AlbertClassifier: the official ``run_classifier.py`` model (``classifier_utils.py: create_model``).

``pooled_output -> dropout(classifier_dropout, training only) -> logits = x W + b``, with
``num_labels = 1`` meaning regression (STS-B: the squeezed logit is the score, mean squared
error). The head is a Keras ``Dense`` named ``output``; its kernel is stored [H, num_labels]
while the official checkpoint holds ``output_weights`` [num_labels, H] (used with
``transpose_b``) and ``output_bias`` [num_labels] at the top level of the graph, so
``albert_tf.checkpoints.names`` maps them with a transpose.

The official dropout keep-probability is hard-coded to 0.9; here it is ``classifier_dropout``
(default 0.1, the official value). The head initialiser is the official
``truncated_normal(stddev=0.02)`` (not the config's ``initializer_range``, as the official).

The model's output is the logits tensor alone, as Keras expects of a classifier, so
``compile(loss=SparseCategoricalCrossentropy(from_logits=True))`` + ``fit`` on ``(features, label)``
works unchanged. ``return_pooled_output=True`` makes it the dict ``{"logits", "pooled_output"}``;
:func:`classifier_logits` reads the logits from either form.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import keras
from keras import ops

from albert_tf.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder, as_config, build_from_preset, encoder_inputs
from albert_tf.modeling.initializers import truncated_normal
from albert_tf.modeling.serialization import RebuiltFromConfig
from albert_tf.tasks.glue import HEAD

HEAD_INITIALIZER_RANGE = 0.02  # classifier_utils.create_model: tf.truncated_normal_initializer(stddev=0.02)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertClassifier(RebuiltFromConfig, keras.Model):
    """Sentence(-pair) classification or regression on ALBERT's pooled output.

    Inputs: dict of int32 ``input_ids``, ``input_mask``, ``segment_ids`` [B, S].
    Output: the logits, float32 [B, num_labels] (``num_labels = 1``: the regression score), so the
    model trains with plain ``compile(loss=SparseCategoricalCrossentropy(from_logits=True))`` (or
    ``"mse"`` for regression) and ``fit``. With ``return_pooled_output=True`` the output is instead the
    dict ``{"logits": [B, num_labels], "pooled_output": [B, H]}`` (then give the loss as
    ``{"logits": loss}``). The option only selects outputs: the variables, and so every checkpoint and
    ``.keras`` file, are the same either way.
    """

    config_options = ("num_labels", "classifier_dropout", "sharing", "return_pooled_output")
    #: The heads' checkpoint names (declared by the task package).
    task_heads = (HEAD,)

    def __init__(
        self,
        config: AlbertConfig | dict[str, Any],
        num_labels: int,
        classifier_dropout: float = 0.1,
        sharing: str = "all",
        return_pooled_output: bool = False,
        name: str = "albert_classifier",
        **kwargs,
    ):
        config = as_config(config)
        if isinstance(num_labels, bool) or not isinstance(num_labels, numbers.Integral):  # 2.5 or "3" would truncate
            raise ValueError(f"num_labels must be an integer >= 1 (1 = regression), got {num_labels!r} "
                             f"({type(num_labels).__name__})")
        if num_labels < 1:
            raise ValueError(f"num_labels must be >= 1 (1 = regression), got {num_labels}")
        if not 0.0 <= float(classifier_dropout) < 1.0:
            raise ValueError(f"classifier_dropout must be in [0, 1), got {classifier_dropout}")
        dtype = kwargs.pop("dtype", None)
        encoder = AlbertEncoder(config, sharing=sharing, name="albert_encoder", dtype=dtype)
        dropout = keras.layers.Dropout(classifier_dropout, name="classifier_dropout", dtype=dtype)
        head = keras.layers.Dense(
            int(num_labels),
            kernel_initializer=truncated_normal(HEAD_INITIALIZER_RANGE),
            bias_initializer="zeros",
            name="output",
            dtype=dtype,
        )
        inputs = encoder_inputs()
        enc = encoder(inputs)
        logits = head(dropout(enc["pooled_output"]))
        # Losses and softmax in float32 under mixed precision.
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
        outputs = {"logits": logits, "pooled_output": enc["pooled_output"]} if return_pooled_output else logits
        super().__init__(inputs=inputs, outputs=outputs, name=name, dtype=dtype, **kwargs)
        self.config = config
        self.num_labels = int(num_labels)
        self.classifier_dropout = float(classifier_dropout)
        self.sharing = sharing
        self.return_pooled_output = bool(return_pooled_output)
        self.encoder = encoder
        self.dropout_layer = dropout
        self.head = head

    def packed_logits(self, features: Mapping[str, Any], training: bool = False, unpadded: bool = True):
        """The logits [N, num_labels] (float32) of the N examples of packed rows (``AlbertEncoder.call_packed``), in
        the order of ``features["example_positions"]``: the same head on each example's own pooled output.
        ``unpadded=False`` under XLA (``call_packed``)."""
        pooled = self.encoder.call_packed(dict(features), training=training, unpadded=unpadded,
                                          pooled_only=True)["pooled_output"]
        return ops.cast(self.head(self.dropout_layer(pooled, training=training)), "float32")

    @classmethod
    def for_head(cls, config: AlbertConfig, head: Any, rows: int,
                 labels: Sequence[str] | None = None) -> AlbertClassifier:
        """The classifier carrying ``head`` (this task's) with ``rows`` labels (1: regression), for a conversion
        that rebuilds the model from a checkpoint's arrays."""
        return cls(config, num_labels=rows)

    @classmethod
    def from_preset(cls, preset: str, /, **kwargs: Any) -> AlbertClassifier:
        """A classifier from a preset name: a pretrained preset (``albert_base_v2``, ``albert/albert-base-v2``, ...)
        loads its released encoder weights (fetched and cached on first use; the head stays randomly initialised), a
        model config (``albert_tiny``) is randomly initialised; ``load_weights=False`` builds the config alone.

        ``kwargs`` holding ``AlbertConfig`` fields change the config; the rest go to the constructor (``num_labels``
        is required). An unknown preset raises ``ConfigError`` listing the known ones.
        """
        return build_from_preset(cls, preset, kwargs)

    @property
    def is_regression(self) -> bool:
        """True for a one-output head (STS-B style regression: the squeezed logit is the score)."""
        return self.num_labels == 1


def classifier_logits(outputs: Any) -> Any:
    """The logits [B, num_labels] of an ``AlbertClassifier`` call, whichever output form it was built with.

    Code that receives a classifier it did not build (the trainer's task, the SavedModel export) reads
    the logits through this, so it works with and without ``return_pooled_output``.
    """
    return outputs["logits"] if isinstance(outputs, Mapping) else outputs


def classification_per_example_loss(logits, labels, num_labels: int):
    """The official per-task loss of each example [B].

    Classification: softmax cross-entropy ``-sum(one_hot(label) * log_softmax(logits))``.
    Regression (``num_labels == 1``): ``(logit - label)^2``.
    """
    logits = ops.cast(logits, "float32")
    if num_labels == 1:
        return ops.square(ops.squeeze(logits, axis=-1) - ops.cast(ops.reshape(labels, (-1,)), "float32"))
    log_probs = ops.log_softmax(logits, axis=-1)
    one_hot = ops.one_hot(ops.cast(ops.reshape(labels, (-1,)), "int32"), num_labels, dtype="float32")
    return -ops.sum(one_hot * log_probs, axis=-1)


def classification_loss(logits, labels, num_labels: int):
    """The official per-task loss averaged over the batch (:func:`classification_per_example_loss`)."""
    return ops.mean(classification_per_example_loss(logits, labels, num_labels))


def predictions_from_logits(logits, num_labels: int):
    """Class ids (argmax) for classification, the squeezed score for regression."""
    if num_labels == 1:
        return ops.squeeze(ops.cast(logits, "float32"), axis=-1)
    return ops.argmax(logits, axis=-1)
