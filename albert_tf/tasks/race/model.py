"""AlbertMultipleChoice: the official RACE model (official ``race_utils.py: create_model``).

Each example holds ``num_choices`` (4 for RACE) token sequences ``[CLS] article [SEP] question+option [SEP]``.
The official model flattens them to ``[B * num_choices, L]``, runs ALBERT, takes the pooled output, applies
dropout (``keep_prob = 1 - dropout_prob``, training only), scores every choice with
``logit = pooled . output_weights^T + output_bias`` (``output_weights`` [1, H] used with ``transpose_b``,
``output_bias`` [1]), reshapes the scores to ``[B, num_choices]`` and trains with softmax cross-entropy over
the choices. Every choice is scored on its own: nothing mixes the choices before the softmax.

The head is a Keras ``Dense(1)`` named ``output`` whose kernel [H, 1] is the official ``output_weights``
transposed; the official variables sit at the top level of the graph (``output_weights``, ``output_bias``,
the GLUE classifier's names with one row), mapped by ``albert_tf.checkpoints.names``. Its initialiser is the
official ``truncated_normal(stddev=0.02)`` (hard-coded there, not the config's ``initializer_range``) with a
zero bias.

The model's output is the logits tensor alone (float32 under mixed precision), so
``compile(loss=SparseCategoricalCrossentropy(from_logits=True))`` + ``fit`` on ``(features, label)`` works as
for ``AlbertClassifier``; :func:`multiple_choice_per_example_loss` / :func:`multiple_choice_loss` are the
official losses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import keras
from keras import ops

from albert_tf.config import AlbertConfig
from albert_tf.modeling.encoder import INPUT_NAMES, AlbertEncoder, as_config, build_from_preset
from albert_tf.modeling.initializers import truncated_normal
from albert_tf.modeling.serialization import RebuiltFromConfig
from albert_tf.tasks.race import HEAD

HEAD_INITIALIZER_RANGE = 0.02  # race_utils.create_model: tf.truncated_normal_initializer(stddev=0.02)
RACE_NUM_CHOICES = 4


def flat_choices(x):
    """``[B, C, L] -> [B * C, L]`` (row ``b * C + c`` is choice ``c`` of example ``b``): the model's flattening, the
    packed training batches' and the real-token export's."""
    return ops.reshape(x, (-1, ops.shape(x)[-1]))


@keras.saving.register_keras_serializable(package="albert_tf")
class FlattenChoices(keras.layers.Layer):
    """``[B, C, L] -> [B * C, L]`` (row ``b * C + c`` is choice ``c`` of example ``b``, as ``tf.reshape``)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.built = True

    def call(self, x):
        return flat_choices(x)

    def compute_output_shape(self, input_shape):
        batch, choices, length = input_shape
        flat = None if batch is None or choices is None else batch * choices
        return (flat, length)


@keras.saving.register_keras_serializable(package="albert_tf")
class UnflattenChoices(keras.layers.Layer):
    """``[B * C, 1] -> [B, C]``: the per-choice scores regrouped by example (inverse of :class:`FlattenChoices`)."""

    def __init__(self, num_choices: int, **kwargs):
        super().__init__(**kwargs)
        self.num_choices = int(num_choices)
        self.built = True

    def call(self, x):
        return ops.reshape(x, (-1, self.num_choices))

    def compute_output_shape(self, input_shape):
        flat = input_shape[0]
        return (None if flat is None else flat // self.num_choices, self.num_choices)

    def get_config(self):
        return {**super().get_config(), "num_choices": self.num_choices}


def choice_inputs(num_choices: int) -> dict[str, keras.KerasTensor]:
    """The three int32 [batch, num_choices, seq] inputs named as in the official TFRecords."""
    return {name: keras.Input(shape=(num_choices, None), dtype="int32", name=name) for name in INPUT_NAMES}


def unflatten_choice_features(features: Mapping[str, Any], num_choices: int = RACE_NUM_CHOICES) -> dict[str, Any]:
    """The official RACE TFRecord features (each choice's ids concatenated: [B, C * L]) as [B, C, L].

    Keys other than ``input_ids``/``input_mask``/``segment_ids`` are passed through unchanged; inputs
    already of rank 3 are left as they are.
    """
    out = dict(features)
    for name in INPUT_NAMES:
        value = features[name]
        if len(value.shape) == 2:
            out[name] = ops.reshape(value, (ops.shape(value)[0], num_choices, -1))
    return out


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoice(RebuiltFromConfig, keras.Model):
    """Multiple-choice reading comprehension (RACE) on ALBERT's pooled output, one score per choice.

    Inputs: dict of int32 ``input_ids``, ``input_mask``, ``segment_ids`` [B, num_choices, L] (see
    :func:`unflatten_choice_features` for the official flattened [B, num_choices * L] records); other keys
    (``label_ids``, ``is_real_example``) are ignored, so a whole feature dict can be passed.
    Output: the logits, float32 [B, num_choices]. Train with
    ``compile(loss=SparseCategoricalCrossentropy(from_logits=True))`` and ``fit``, or with
    :func:`multiple_choice_loss` (the official loss).
    """

    config_options = ("num_choices", "dropout_prob", "sharing")
    #: The heads' checkpoint names (declared by the task package).
    task_heads = (HEAD,)

    def __init__(
        self,
        config: AlbertConfig | dict[str, Any],
        num_choices: int = RACE_NUM_CHOICES,
        dropout_prob: float = 0.1,
        sharing: str = "all",
        name: str = "albert_multiple_choice",
        **kwargs,
    ):
        config = as_config(config)
        if int(num_choices) < 1:
            raise ValueError(f"num_choices must be >= 1, got {num_choices}")
        if not 0.0 <= float(dropout_prob) < 1.0:
            raise ValueError(f"dropout_prob must be in [0, 1), got {dropout_prob}")
        num_choices = int(num_choices)
        dtype = kwargs.pop("dtype", None)
        encoder = AlbertEncoder(config, sharing=sharing, name="albert_encoder", dtype=dtype)
        flatten = FlattenChoices(name="flatten_choices", dtype=dtype)
        dropout = keras.layers.Dropout(float(dropout_prob), name="multiple_choice_dropout", dtype=dtype)
        head = keras.layers.Dense(
            1,
            kernel_initializer=truncated_normal(HEAD_INITIALIZER_RANGE),
            bias_initializer="zeros",
            name="output",
            dtype=dtype,
        )
        inputs = choice_inputs(num_choices)
        enc = encoder({k: flatten(v) for k, v in inputs.items()})  # [B * C, L] -> pooled [B * C, H]
        scores = head(dropout(enc["pooled_output"]))  # [B * C, 1]
        logits = UnflattenChoices(num_choices, name="choice_logits", dtype=dtype)(scores)
        # Softmax and losses in float32 under mixed precision.
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, name=name, dtype=dtype, **kwargs)
        self.config = config
        self.num_choices = num_choices
        self.dropout_prob = float(dropout_prob)
        self.sharing = sharing
        self.encoder = encoder
        self.dropout_layer = dropout
        self.head = head

    def call(self, inputs, training=None, mask=None):
        # Only the three id tensors reach the graph, so a whole RACE feature dict (with ``label_ids``,
        # ``is_real_example``) can be passed: Keras' functional model would misalign extra keys.
        if not isinstance(inputs, Mapping):
            raise TypeError("AlbertMultipleChoice expects a dict of input_ids, input_mask, segment_ids [B, C, L]")
        return super().call({k: inputs[k] for k in INPUT_NAMES}, training=training, mask=mask)

    def packed_logits(self, features: Mapping[str, Any], training: bool = False, unpadded: bool = True):
        """The logits [N / num_choices, num_choices] (float32) of the N choices of packed rows
        (``AlbertEncoder.call_packed``, ``albert_tf.data.packing``; each choice one packed example, the choices of a
        question consecutive in ``example_positions``): the same head on each choice's own pooled output.
        ``unpadded=False`` under XLA (``call_packed``)."""
        pooled = self.encoder.call_packed(dict(features), training=training, unpadded=unpadded,
                                          pooled_only=True)["pooled_output"]
        scores = self.head(self.dropout_layer(pooled, training=training))
        return ops.cast(ops.reshape(scores, (-1, self.num_choices)), "float32")

    @classmethod
    def for_head(cls, config: AlbertConfig, head: Any, rows: int,
                 labels: Sequence[str] | None = None) -> AlbertMultipleChoice:
        """The multiple-choice model carrying ``head`` (one score per choice: ``rows`` is 1), for a conversion that
        rebuilds the model from a checkpoint's arrays."""
        return cls(config)

    @classmethod
    def from_preset(cls, preset: str, /, **kwargs: Any) -> AlbertMultipleChoice:
        """A multiple-choice model from a preset name: a pretrained preset (``albert_base_v2``, ``albert/albert-
        base-v2``, ...) loads its released encoder weights (fetched and cached on first use; the head stays randomly
        initialised), a model config (``albert_tiny``) is randomly initialised; ``load_weights=False`` builds the
        config alone.

        ``kwargs`` holding ``AlbertConfig`` fields change the config; the rest go to the constructor. An unknown
        preset raises ``ConfigError`` listing the known ones.
        """
        return build_from_preset(cls, preset, kwargs)


def multiple_choice_per_example_loss(logits, labels):
    """The official per-example RACE loss [B] (float32): ``-sum(one_hot(label) * log_softmax(logits))``."""
    logits = ops.cast(logits, "float32")
    log_probs = ops.log_softmax(logits, axis=-1)
    one_hot = ops.one_hot(ops.cast(ops.reshape(labels, (-1,)), "int32"), ops.shape(logits)[-1], dtype="float32")
    return -ops.sum(one_hot * log_probs, axis=-1)


def multiple_choice_loss(logits, labels):
    """The official ``loss``: the batch mean of :func:`multiple_choice_per_example_loss`."""
    return ops.mean(multiple_choice_per_example_loss(logits, labels))


def multiple_choice_predictions(logits):
    """The chosen option of each example [B] (int32 argmax, as the official ``predictions``)."""
    return ops.cast(ops.argmax(logits, axis=-1), "int32")
