"""Pretraining losses and metrics exactly as the official ``run_pretraining.py`` (``get_masked_lm_output``,
``get_sentence_order_output``).

* MLM: ``sum(w * nll) / (sum(w) + 1e-5)`` over the masked positions, ``w`` = masked_lm_weights.
* SOP: mean softmax cross-entropy; label 0 = segments in order.
* total = MLM + SOP, unweighted (the official). ``sentence_loss_weight`` scales the sentence term; 0 leaves it out
  of the total altogether (the paper's Table 5 "None" row: MLM only, the sentence head gets no gradient).
"""

from __future__ import annotations

import tensorflow as tf

MLM_EPSILON = 1e-5


def _sop_labels(features):
    return tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])


def masked_lm_nll(outputs, features):
    """Per-position negative log-likelihood [B, P] and weights [B, P]."""
    logits = tf.cast(outputs["mlm_logits"], tf.float32)
    ids = tf.cast(features["masked_lm_ids"], tf.int32)
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits)
    return nll, weights


def pretraining_losses(outputs, features, sentence_loss_weight: float = 1.0) -> dict[str, tf.Tensor]:
    """``{"mlm_loss", "sop_loss", "total_loss"}`` for one (per-replica) batch.

    ``total_loss = mlm_loss + sentence_loss_weight * sop_loss``; with weight 0 the total is ``mlm_loss`` itself (the
    sentence loss is still reported, but nothing of it reaches the gradient).
    """
    nll, weights = masked_lm_nll(outputs, features)
    mlm_loss = tf.reduce_sum(weights * nll) / (tf.reduce_sum(weights) + MLM_EPSILON)
    sop_nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=_sop_labels(features), logits=tf.cast(outputs["sop_logits"], tf.float32)
    )
    sop_loss = tf.reduce_mean(sop_nll)
    if sentence_loss_weight == 0:
        total = mlm_loss
    elif sentence_loss_weight == 1:
        total = mlm_loss + sop_loss
    else:
        total = mlm_loss + float(sentence_loss_weight) * sop_loss
    return {"mlm_loss": mlm_loss, "sop_loss": sop_loss, "total_loss": total}


def per_example_pretraining_metrics(outputs, features) -> dict[str, tf.Tensor]:
    """Per-example [B] sums from which every official ``metric_fn`` value aggregates over a whole set.

    ``masked_lm_correct`` / ``masked_lm_weight`` / ``masked_lm_nll_sum`` are weighted by
    ``masked_lm_weights`` (padding positions do not count), as ``tf.metrics.accuracy(...,
    weights=masked_lm_weights)`` in the official ``metric_fn``.
    """
    nll, weights = masked_lm_nll(outputs, features)
    ids = tf.cast(features["masked_lm_ids"], tf.int32)
    predicted = tf.argmax(outputs["mlm_logits"], axis=-1, output_type=tf.int32)
    labels = _sop_labels(features)
    sop_logits = tf.cast(outputs["sop_logits"], tf.float32)
    sop_pred = tf.argmax(sop_logits, axis=-1, output_type=tf.int32)
    sop_nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=sop_logits)
    return {
        "masked_lm_correct": tf.reduce_sum(weights * tf.cast(tf.equal(predicted, ids), tf.float32), axis=-1),
        "masked_lm_weight": tf.reduce_sum(weights, axis=-1),
        "masked_lm_nll_sum": tf.reduce_sum(weights * nll, axis=-1),
        "sentence_order_correct": tf.cast(tf.equal(sop_pred, labels), tf.float32),
        "sentence_order_count": tf.ones_like(sop_nll),
        "sentence_order_nll_sum": sop_nll,
    }


def pretraining_metrics(outputs, features) -> dict[str, tf.Tensor]:
    """Accuracies of one batch plus the sums needed to aggregate them over many batches."""
    sums = {k: tf.reduce_sum(v) for k, v in per_example_pretraining_metrics(outputs, features).items()}
    sums["masked_lm_accuracy"] = sums["masked_lm_correct"] / tf.maximum(sums["masked_lm_weight"], 1e-12)
    sums["sentence_order_accuracy"] = sums["sentence_order_correct"] / tf.maximum(sums["sentence_order_count"], 1.0)
    return sums
