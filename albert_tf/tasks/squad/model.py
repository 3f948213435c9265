"""AlbertSquad: the official SQuAD v1.1 and v2.0 models (official ``squad_utils.py: create_v1_model /
create_v2_model``).

**v1** (``create_v1_model``): ``logits = sequence_output . W^T + b`` with ``W`` [2, H] and ``b`` [2]
(``cls/squad/output_weights`` / ``cls/squad/output_bias``), row 0 the start and row 1 the end logits.
The head is a Keras ``Dense(2)`` (kernel [H, 2], the official array transposed, mapped by
``albert_tf.checkpoints.names``); its initialiser is the official ``truncated_normal(stddev=0.02)``.
No ``p_mask`` in v1: the outputs are the raw logits, as the official ``start_log_prob`` /
``end_log_prob`` predictions (which hold raw logits despite their names).

**v2** (``create_v2_model``, XLNet-style; every initialiser is ``truncated_normal(initializer_range)``):

* start: ``start_logits = Dense_1(h)`` (``start_logits/dense``), masked in float32 as
  ``logit * (1 - p_mask) - 1e30 * p_mask``, then ``log_softmax``;
* end given a start ``s``: ``Dense_1(LayerNorm(tanh(Dense_H([h_t ; h_s]))))`` (``end_logits/dense_0``,
  ``end_logits/LayerNorm`` with epsilon 1e-12 as ``tf.contrib.layers.layer_norm``, ``end_logits/dense_1``),
  masked the same way, ``log_softmax``. Training uses the gold start (teacher forcing); inference takes the
  top ``start_n_top`` starts and, for each, the top ``end_n_top`` ends, flattened in the official order
  (start ``i``, end ``j`` at ``i * end_n_top + j``);
* answerability: ``cls_logits = Dense_1,nobias(dropout(tanh(Dense_H([start_feature ; cls_feature]))))``
  (``answer_class/dense_0``, ``answer_class/dense_1``) with ``cls_feature = h_[CLS]`` and
  ``start_feature = sum_t softmax(start_logits_masked)_t h_t``.

Which outputs a v2 call returns depends on the call: ``training=True`` with ``start_positions`` in the inputs
gives the teacher-forced ``start_log_probs`` / ``end_log_probs`` (what the loss needs), anything else the
inference beam. Every variable exists after construction (both paths use the same layers), so one call on
dummy inputs, or none at all, builds the model. All outputs are float32 (int32 indices) under mixed precision;
the masking and the softmaxes run in float32.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import keras
from keras import ops

from albert_tf.config import AlbertConfig
from albert_tf.modeling.embeddings import LAYER_NORM_EPSILON
from albert_tf.modeling.encoder import INPUT_NAMES, AlbertEncoder, as_config, build_from_preset
from albert_tf.modeling.initializers import truncated_normal
from albert_tf.modeling.serialization import RebuiltFromConfig
from albert_tf.tasks.squad import HEAD_V1, HEAD_V2

V1_HEAD_INITIALIZER_RANGE = 0.02  # squad_utils.create_v1_model: tf.truncated_normal_initializer(stddev=0.02)
MASK_VALUE = 1e30  # squad_utils.create_v2_model: logit * (1 - p_mask) - 1e30 * p_mask

V1_OUTPUTS = ("start_logits", "end_logits")
V2_TRAINING_OUTPUTS = ("start_log_probs", "end_log_probs", "cls_logits")
V2_INFERENCE_OUTPUTS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index", "cls_logits")


def mask_logits(logits, p_mask):
    """The official masking ``logit * (1 - p_mask) - 1e30 * p_mask``, in float32 (1e30 overflows float16)."""
    logits = ops.cast(logits, "float32")
    p_mask = ops.cast(p_mask, "float32")
    return logits * (1.0 - p_mask) - MASK_VALUE * p_mask


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSquad(RebuiltFromConfig, keras.Model):
    """Extractive question answering on ALBERT's sequence output (official ``run_squad_v1/v2.py`` models).

    Inputs: dict of int32 ``input_ids``, ``input_mask``, ``segment_ids`` [B, S]; for v2 also ``p_mask`` [B, S]
    (1 = the position cannot be part of an answer: query, ``[SEP]``, padding; all zeros when absent) and, for the
    training outputs, ``start_positions`` [B]. Other keys (``end_positions``, ``is_impossible``, ``unique_ids``)
    are ignored, so a whole feature dict can be passed.

    Outputs (dicts, float32 unless noted):

    * v1: ``start_logits``, ``end_logits`` [B, S] (raw logits, no ``p_mask``);
    * v2, ``training=True`` with ``start_positions``: ``start_log_probs``, ``end_log_probs`` [B, S] (the end
      conditioned on the gold start) and ``cls_logits`` [B];
    * v2 otherwise: ``start_top_log_probs``, ``start_top_index`` (int32) [B, start_n_top];
      ``end_top_log_probs``, ``end_top_index`` (int32) [B, start_n_top * end_n_top] (end ``j`` of start ``i`` at
      ``i * end_n_top + j``); ``cls_logits`` [B].

    Losses: :func:`squad_per_example_loss` / :func:`squad_loss`.
    """

    config_options = ("version_2_with_negative", "start_n_top", "end_n_top", "dropout_prob", "sharing")
    #: The heads' checkpoint names (declared by the task package).
    task_heads = (HEAD_V1, HEAD_V2)

    def __init__(
        self,
        config: AlbertConfig | dict[str, Any],
        version_2_with_negative: bool = False,
        start_n_top: int = 5,
        end_n_top: int = 5,
        dropout_prob: float = 0.1,
        sharing: str = "all",
        name: str = "albert_squad",
        **kwargs,
    ):
        config = as_config(config)
        if int(start_n_top) < 1 or int(end_n_top) < 1:
            raise ValueError(f"start_n_top and end_n_top must be >= 1, got {start_n_top} and {end_n_top}")
        if not 0.0 <= float(dropout_prob) < 1.0:
            raise ValueError(f"dropout_prob must be in [0, 1), got {dropout_prob}")
        dtype = kwargs.pop("dtype", None)
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.config = config
        self.version_2_with_negative = bool(version_2_with_negative)
        self.start_n_top = int(start_n_top)
        self.end_n_top = int(end_n_top)
        self.dropout_prob = float(dropout_prob)
        self.sharing = sharing

        H = config.hidden_size
        self.encoder = AlbertEncoder(config, sharing=sharing, name="albert_encoder", dtype=dtype)
        if not self.version_2_with_negative:
            self.squad_output = keras.layers.Dense(
                2,
                kernel_initializer=truncated_normal(V1_HEAD_INITIALIZER_RANGE),
                bias_initializer="zeros",
                name="squad_output",
                dtype=dtype,
            )
            self.squad_output.build((None, None, H))
        else:
            init = config.initializer_range

            def dense(units, name, activation=None, use_bias=True):
                return keras.layers.Dense(
                    units,
                    activation=activation,
                    use_bias=use_bias,
                    kernel_initializer=truncated_normal(init),
                    name=name,
                    dtype=dtype,
                )

            self.start_dense = dense(1, "start_logits_dense")
            self.end_dense_0 = dense(H, "end_logits_dense_0", activation="tanh")
            self.end_layer_norm = keras.layers.LayerNormalization(
                epsilon=LAYER_NORM_EPSILON, name="end_logits_LayerNorm", dtype=dtype
            )
            self.end_dense_1 = dense(1, "end_logits_dense_1")
            self.answer_dense_0 = dense(H, "answer_class_dense_0", activation="tanh")
            self.answer_dropout = keras.layers.Dropout(self.dropout_prob, name="answer_class_dropout", dtype=dtype)
            self.answer_dense_1 = dense(1, "answer_class_dense_1", use_bias=False)
            self.start_dense.build((None, None, H))
            self.end_dense_0.build((None, None, 2 * H))
            self.end_layer_norm.build((None, None, H))
            self.end_dense_1.build((None, None, H))
            self.answer_dense_0.build((None, 2 * H))
            self.answer_dense_1.build((None, H))
        self.built = True

    @classmethod
    def for_head(cls, config: AlbertConfig, head: Any, rows: int,
                 labels: Sequence[str] | None = None) -> AlbertSquad:
        """The SQuAD model carrying ``head`` (v1's span head or v2's, by ``head.when``), for a conversion that
        rebuilds the model from a checkpoint's arrays."""
        return cls(config, **dict(head.when))

    @classmethod
    def from_preset(cls, preset: str, /, **kwargs: Any) -> AlbertSquad:
        """A SQuAD model from a preset name: a pretrained preset (``albert_base_v2``, ``albert/albert-base-v2``, ...)
        loads its released encoder weights (fetched and cached on first use; the head stays randomly initialised), a
        model config (``albert_tiny``) is randomly initialised; ``load_weights=False`` builds the config alone.

        ``kwargs`` holding ``AlbertConfig`` fields change the config; the rest go to the constructor
        (``version_2_with_negative``, ...). An unknown preset raises ``ConfigError`` listing the known ones.
        """
        return build_from_preset(cls, preset, kwargs)

    def call(self, inputs, training=None):
        if not isinstance(inputs, Mapping):
            raise TypeError("AlbertSquad expects a dict of input_ids, input_mask, segment_ids (and p_mask for v2)")
        missing = [k for k in INPUT_NAMES if k not in inputs]
        if missing:
            raise KeyError(f"AlbertSquad inputs lack {', '.join(missing)}")
        enc = self.encoder({k: inputs[k] for k in INPUT_NAMES}, training=training)
        return self._head(enc["sequence_output"], inputs.get("p_mask"), inputs.get("start_positions"), training)

    def packed_outputs(self, features: Mapping[str, Any], length: Any, training: bool = False,
                       unpadded: bool = True) -> dict[str, Any]:
        """The outputs of :meth:`call` for the N windows of packed rows (``AlbertEncoder.call_packed``,
        ``albert_tf.data.packing``), each ``length`` positions long (at least its longest window): the same head on
        each window's own positions (``AlbertEncoder.example_windows``). Per-window features (``p_mask``,
        ``start_positions``) are [N, ...] in the order of ``example_positions``; ``p_mask`` is cut to ``length``.
        Positions past a window's end (``example_lengths``) hold another window's tokens: v2 adds them to ``p_mask``,
        the v1 loss masks them by :func:`window_mask` (:func:`squad_per_example_loss`). ``unpadded=False`` under XLA
        (``call_packed``)."""
        sequence = self.encoder.call_packed(dict(features), training=training, unpadded=unpadded)["sequence_output"]
        seq = self.encoder.example_windows(sequence, features["example_positions"], length)
        outside = ops.cast(ops.logical_not(window_mask(features["example_lengths"], length)), "float32")
        p_mask = features.get("p_mask")
        p_mask = outside if p_mask is None else ops.maximum(ops.cast(p_mask[:, :length], "float32"), outside)
        return self._head(seq, p_mask, features.get("start_positions"), training)

    def _head(self, seq, p_mask, start_positions, training):
        """The v1 or v2 head on the sequence output [B, S, H] (module docstring); ``p_mask`` None: all zeros."""
        if not self.version_2_with_negative:
            logits = ops.cast(self.squad_output(seq), "float32")  # [B, S, 2]
            return {"start_logits": logits[:, :, 0], "end_logits": logits[:, :, 1]}
        p_mask = ops.zeros(ops.shape(seq)[:2], "float32") if p_mask is None else ops.cast(p_mask, "float32")
        if training and start_positions is not None:
            return self._v2_training(seq, p_mask, start_positions)
        return self._v2_inference(seq, p_mask, training)

    # ------------------------------------------------------------------ v2 pieces

    def _end_logits(self, seq_tiled, start_features):
        """End logits [..., S] from ``h_t`` [..., S, H] and the start's features [..., S, H] (official concat order)."""
        x = self.end_dense_0(ops.concatenate([seq_tiled, start_features], axis=-1))
        x = self.end_layer_norm(x)
        return ops.squeeze(self.end_dense_1(x), axis=-1)

    def _start_logits_masked(self, seq, p_mask):
        return mask_logits(ops.squeeze(self.start_dense(seq), axis=-1), p_mask)  # float32 [B, S]

    def _cls_logits(self, seq, start_logits_masked, training):
        cls_feature = seq[:, 0, :]
        start_p = ops.softmax(start_logits_masked, axis=-1)  # float32 [B, S]
        start_feature = ops.einsum("bsh,bs->bh", ops.cast(seq, "float32"), start_p)
        x = ops.concatenate([ops.cast(start_feature, seq.dtype), cls_feature], axis=-1)
        x = self.answer_dropout(self.answer_dense_0(x), training=training)
        return ops.cast(ops.squeeze(self.answer_dense_1(x), axis=-1), "float32")

    def _v2_training(self, seq, p_mask, start_positions):
        seq_len = ops.shape(seq)[1]
        start_logits_masked = self._start_logits_masked(seq, p_mask)
        start_positions = ops.cast(ops.reshape(start_positions, (-1,)), "int32")
        one_hot = ops.one_hot(start_positions, seq_len, dtype=seq.dtype)  # [B, S]
        start_features = ops.einsum("bsh,bs->bh", seq, one_hot)  # h at the gold start [B, H]
        start_features = ops.tile(start_features[:, None, :], [1, seq_len, 1])
        end_logits_masked = mask_logits(self._end_logits(seq, start_features), p_mask)
        return {
            "start_log_probs": ops.log_softmax(start_logits_masked, axis=-1),
            "end_log_probs": ops.log_softmax(end_logits_masked, axis=-1),
            "cls_logits": self._cls_logits(seq, start_logits_masked, True),
        }

    def _v2_inference(self, seq, p_mask, training):
        k1, k2 = self.start_n_top, self.end_n_top
        seq_len = ops.shape(seq)[1]
        start_logits_masked = self._start_logits_masked(seq, p_mask)
        start_log_probs = ops.log_softmax(start_logits_masked, axis=-1)
        start_top_log_probs, start_top_index = ops.top_k(start_log_probs, k1)  # [B, k1]
        one_hot = ops.one_hot(start_top_index, seq_len, dtype=seq.dtype)  # [B, k1, S]
        start_features = ops.einsum("bsh,bks->bkh", seq, one_hot)  # [B, k1, H]
        start_features = ops.tile(start_features[:, :, None, :], [1, 1, seq_len, 1])  # [B, k1, S, H]
        seq_tiled = ops.tile(seq[:, None, :, :], [1, k1, 1, 1])  # [B, k1, S, H]
        end_logits_masked = mask_logits(self._end_logits(seq_tiled, start_features), p_mask[:, None, :])
        end_log_probs = ops.log_softmax(end_logits_masked, axis=-1)  # [B, k1, S]
        end_top_log_probs, end_top_index = ops.top_k(end_log_probs, k2)  # [B, k1, k2]
        return {
            "start_top_log_probs": start_top_log_probs,
            "start_top_index": ops.cast(start_top_index, "int32"),
            "end_top_log_probs": ops.reshape(end_top_log_probs, (-1, k1 * k2)),
            "end_top_index": ops.cast(ops.reshape(end_top_index, (-1, k1 * k2)), "int32"),
            "cls_logits": self._cls_logits(seq, start_logits_masked, training),
        }


def _positions_cross_entropy(log_probs, positions):
    """``-sum(one_hot(position, S) * log_probs)`` per example (a position outside [0, S) gives 0, as official)."""
    log_probs = ops.cast(log_probs, "float32")
    positions = ops.cast(ops.reshape(positions, (-1,)), "int32")
    one_hot = ops.one_hot(positions, ops.shape(log_probs)[-1], dtype="float32")
    return -ops.sum(one_hot * log_probs, axis=-1)


def window_mask(lengths, length):
    """[B, length] bool: True at the first ``lengths[b]`` positions of window ``b`` (its tokens), False after."""
    return ops.less(ops.expand_dims(ops.arange(length, dtype="int32"), 0),
                    ops.expand_dims(ops.cast(lengths, "int32"), 1))


def squad_per_example_loss(outputs: Mapping[str, Any], features: Mapping[str, Any], version_2_with_negative: bool,
                           window_mask: Any = None):
    """The SQuAD loss of each example [B] (float32); its batch mean is the official ``total_loss``.

    v1: ``(CE(start_logits, start_positions) + CE(end_logits, end_positions)) / 2``. With ``window_mask`` [B, S]
    (True on the window's tokens) the softmaxes run over those positions only (``--loss_over_padding`` off: what
    lets training pack windows and skip padding); without it over every position, padding included, as the official
    ``squad_utils.py: create_v1_model`` (and transformers' ``AlbertForQuestionAnswering``) do.
    v2 (from the teacher-forced outputs): ``(CE_start + CE_end) * 0.5 + 0.5 * sigmoid_CE(is_impossible,
    cls_logits)`` with the cross-entropies read from ``start_log_probs`` / ``end_log_probs``.
    """
    if not version_2_with_negative:
        def log_probs(logits):
            logits = ops.cast(logits, "float32")
            if window_mask is not None:
                logits = ops.where(window_mask, logits, -MASK_VALUE)
            return ops.log_softmax(logits, axis=-1)

        start_log_probs, end_log_probs = log_probs(outputs["start_logits"]), log_probs(outputs["end_logits"])
        start = _positions_cross_entropy(start_log_probs, features["start_positions"])
        end = _positions_cross_entropy(end_log_probs, features["end_positions"])
        return (start + end) / 2.0
    if "start_log_probs" not in outputs:
        raise KeyError("the v2 loss needs the training outputs: call the model with training=True and start_positions")
    start = _positions_cross_entropy(outputs["start_log_probs"], features["start_positions"])
    end = _positions_cross_entropy(outputs["end_log_probs"], features["end_positions"])
    labels = ops.cast(ops.reshape(features["is_impossible"], (-1,)), "float32")
    cls_logits = ops.cast(ops.reshape(outputs["cls_logits"], (-1,)), "float32")
    # tf.nn.sigmoid_cross_entropy_with_logits: max(x, 0) - x * z + log(1 + exp(-|x|))
    regression = ops.relu(cls_logits) - cls_logits * labels + ops.log1p(ops.exp(-ops.abs(cls_logits)))
    return (start + end) * 0.5 + 0.5 * regression


def squad_loss(outputs: Mapping[str, Any], features: Mapping[str, Any], version_2_with_negative: bool,
               window_mask: Any = None):
    """The official ``total_loss``: the batch mean of :func:`squad_per_example_loss`."""
    return ops.mean(squad_per_example_loss(outputs, features, version_2_with_negative, window_mask))
