"""SavedModel export of a fine-tuned classifier that TF Serving answers from raw text.

Signatures (all batch-major; TF Serving's ``predict`` API):

* ``serving_default``: raw UTF-8 strings ``text_a`` [B] and, for sentence-pair tasks,
  ``text_b`` [B]. Tokenized in the graph by :class:`albert_tf.tokenization.AlbertPreprocessor`
  (official ``preprocess_text`` + SentencePiece + ``[CLS] a [SEP] b [SEP]`` packing with the
  official pair truncation), so the client needs no tokenizer. Outputs: ``probabilities``
  [B, C] float32, ``label`` [B] string (the task's label string of the argmax), ``label_id``
  [B] int32 and ``logits``; for regression (STS-B) ``score`` [B] float32 (unclipped) and
  ``logits``. TF1 signatures have no optional inputs, so single-sentence tasks export
  ``text_a`` only and pair tasks ``text_a`` + ``text_b``; pass ``""`` as ``text_b`` to a pair
  model to score a single sentence (an empty second segment is dropped, as the official
  ``if tokens_b:``).
* ``serve_token_ids``: ``input_ids``, ``input_mask``, ``segment_ids`` int32 [B, S], same outputs.
* Length bucketing (``bucket_lengths``, on by default): the raw-text and tf.Example signatures cut the batch's
  sequence axis to its longest real sequence rounded up to the next bucket length
  (``albert_tf.data.batching.trim_batch``, the fine-tuning runners' bucketing), so a short request runs at 32-64
  positions instead of ``max_seq_length``. Exact: padding columns are inert under the attention mask (same outputs
  to float rounding). ``serve_token_ids`` runs at the length the caller sends (it is what ``--tflite`` converts,
  with TFLite builtins only, at one fixed length).
* Real-token dense layers (``real_tokens``, ``--export_real_tokens``; on by default, not under ``jit_compile``): the
  raw-text and tf.Example signatures send only the real tokens of a request through the embeddings, projections and
  FFN, so the padding that bucketing leaves in a mixed-length batch costs nothing there (fine-tuning's
  ``call_packed``; same outputs).
* ``serve_tf_examples``: the official ``run_classifier.py --export_dir`` receiver: ``serialized_example``
  [B] strings of ``tf.train.Example`` with int64 ``input_ids``/``input_mask``/``segment_ids``
  [max_seq_length] (the records ``albert_tf.data.glue`` writes), same outputs.
* With ``threshold`` (official ``--threshold_to_export``) every signature also returns it as a
  float scalar ``threshold`` (a scalar output has no batch dimension, so TF Serving's REST API then
  needs the columnar ``"inputs"`` request format instead of row ``"instances"``).

Shared pieces (atomic write, metadata, tokenizer, TF1 loader): :mod:`albert_tf.export.savedmodel`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from albert_tf.data.batching import DEFAULT_BUCKET_LENGTHS, bucket_boundaries, trim_batch
from albert_tf.data.packing import one_example_per_row
from albert_tf.export.savedmodel import (
    EXAMPLES_SIGNATURE,
    IDS_SIGNATURE,
    REQUIRES,
    TEXT_SIGNATURE,
    checked_strings,
    checked_token_ids,
    make_preprocessor,
    preprocess,
    refuse_non_empty,
    write_archive,
)
from albert_tf.tokenization.packing import INPUT_NAMES


def _classifier_outputs(logits: Any, labels: Sequence[str] | None, threshold: float | None = None) -> dict[str, Any]:
    import tensorflow as tf

    logits = tf.cast(logits, tf.float32)
    if labels is None:
        out = {"score": tf.squeeze(logits, axis=-1), "logits": logits}
    else:
        probabilities = tf.nn.softmax(logits, axis=-1)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        label = tf.gather(tf.constant(list(labels), dtype=tf.string), label_id)
        out = {"probabilities": probabilities, "label": label, "label_id": label_id, "logits": logits}
    if threshold is not None:  # the official --threshold_to_export: a float scalar beside the answers
        out["threshold"] = tf.constant(float(threshold), tf.float32)
    return out


def export_classifier(
    model: Any,
    export_dir: str,
    *,
    labels: Sequence[str] | None,
    text_pair: bool,
    preprocessor: Any | None = None,
    spm_model_file: str | bytes | None = None,
    max_seq_length: int | None = None,
    do_lower_case: bool = True,
    metadata: Mapping[str, Any] | None = None,
    threshold: float | None = None,
    jit_compile: bool = False,
    bucket_lengths: str | Sequence[int] | None = DEFAULT_BUCKET_LENGTHS,
    real_tokens: bool = True,
) -> str:
    """Write ``model`` (an ``AlbertClassifier``) as a SavedModel with raw-text, token-id and tf.Example signatures.

    Args:
      model: the classifier (logits output, or the ``return_pooled_output`` dict); ``labels is None`` means
        regression (``num_labels == 1``).
      export_dir: output directory (must not exist or be empty; TF Serving wants ``<dir>/<version>``).
      labels: label strings in class-id order (e.g. ``["0", "1"]``), or None for regression.
      text_pair: whether the signature takes ``text_b`` as well.
      preprocessor: an ``AlbertPreprocessor``; built from ``spm_model_file`` / ``max_seq_length`` /
        ``do_lower_case`` when not given.
      metadata: extra JSON written to ``assets.extra/albert_export.json`` (task, tokenizer, ...).
      threshold: the official ``--threshold_to_export``: also return this float scalar as ``threshold``.
      jit_compile: run the model's forward (not the tokenizer: XLA has no SentencePiece kernels) in a nested
        ``tf.function(jit_compile=True)`` in every signature. Same outputs up to float rounding; its latency:
        benchmarks/README.md (``serving_latency.py``). The first request of each new input shape
        compiles (seconds), and the server must be built with XLA's CPU/GPU JIT (stock TensorFlow and
        TensorFlow Serving builds are).
      bucket_lengths: the bucket lengths of the in-graph length bucketing (``--bucket_lengths`` syntax; ``None``
        or ``"none"``: every request padded to ``max_seq_length``, as the official export). With ``jit_compile``
        each bucket length compiles once.
      real_tokens: in the raw-text and tf.Example signatures, send only each request's real tokens through the
        embeddings, projections and FFN (``AlbertClassifier.packed_logits`` on one example per row; attention stays
        per row), so the padding a mixed-length batch keeps after bucketing costs no dense-layer work. Same outputs
        to float rounding. The token count depends on the data, which XLA cannot compile: with ``jit_compile`` (or a
        model without ``packed_logits``) every position is computed; ``albert_export.json`` records which.
    """
    import tensorflow as tf

    from albert_tf.tasks.glue.model import classifier_logits

    num_labels = int(getattr(model, "num_labels", 0) or 0)
    if labels is None and num_labels not in (0, 1):
        raise ValueError(f"labels=None means regression, but the model has {num_labels} labels")
    if labels is not None and num_labels and len(labels) != num_labels:
        raise ValueError(f"{len(labels)} label strings for a model with {num_labels} labels")
    if preprocessor is None:
        if spm_model_file is None or max_seq_length is None:
            raise ValueError("give a preprocessor or spm_model_file and max_seq_length for the raw-text signature")
        preprocessor = make_preprocessor(spm_model_file, max_seq_length, do_lower_case)
    # XLA compiles no data-dependent token count; a model without packed_logits (not an AlbertClassifier) has no
    # real-token path: both compute every position
    real_tokens = real_tokens and not jit_compile and hasattr(model, "packed_logits")
    refuse_non_empty(export_dir)
    seq = int(preprocessor.max_seq_length)
    boundaries = bucket_boundaries(bucket_lengths, seq)

    labels = None if labels is None else [str(x) for x in labels]
    forward = tf.function(model, jit_compile=True) if jit_compile else model

    def answers(features: Mapping[str, Any]) -> dict[str, Any]:  # the raw-text and tf.Example signatures
        features = features if boundaries is None else trim_batch(features, boundaries)
        if real_tokens:
            # cut to the longest request, not its bucket: without XLA the bucket's rounding only adds attention work
            rows = one_example_per_row(features, trim=True)
            return _classifier_outputs(model.packed_logits(rows), labels, threshold)
        return _classifier_outputs(classifier_logits(forward(dict(features), training=False)), labels, threshold)

    string = tf.TensorSpec([None], tf.string)
    if text_pair:

        @tf.function(input_signature=[string, string])
        def serve_text(text_a, text_b):
            text = checked_strings({"text_a": text_a, "text_b": text_b})
            return answers(preprocess(preprocessor, text["text_a"], text["text_b"]))

    else:

        @tf.function(input_signature=[string])
        def serve_text(text_a):
            return answers(preprocess(preprocessor, checked_strings({"text_a": text_a})["text_a"], None))

    ids = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[ids, ids, ids])
    def serve_ids(input_ids, input_mask, segment_ids):
        feats = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
        feats = checked_token_ids(feats, INPUT_NAMES, getattr(model, "config", None), "[batch, seq]")
        logits = classifier_logits(forward(feats, training=False))  # the caller's own length (TFLite converts it)
        return _classifier_outputs(logits, labels, threshold)

    example_spec = {k: tf.io.FixedLenFeature([seq], tf.int64) for k in INPUT_NAMES}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve_examples(serialized_example):
        serialized_example = checked_strings({"serialized_example": serialized_example})["serialized_example"]
        parsed = tf.io.parse_example(serialized_example, example_spec)
        feats = {k: tf.cast(v, tf.int32) for k, v in parsed.items()}
        feats = checked_token_ids(feats, INPUT_NAMES, getattr(model, "config", None), f"[batch, {seq}]")
        return answers(feats)

    info = {
        "signatures": {
            TEXT_SIGNATURE: ["text_a", "text_b"] if text_pair else ["text_a"],
            IDS_SIGNATURE: list(INPUT_NAMES),
            EXAMPLES_SIGNATURE: ["serialized_example"],
        },
        "max_seq_length": seq,
        "threshold": threshold,
        "jit_compile": bool(jit_compile),
        "bucket_lengths": None if boundaries is None else list(boundaries),
        "real_tokens": bool(real_tokens),
        "labels": labels,
        "regression": labels is None,
        "outputs": ["score", "logits"] if labels is None else ["probabilities", "label", "label_id", "logits"],
        "requires": REQUIRES,
        **dict(metadata or {}),
    }
    endpoints = {TEXT_SIGNATURE: serve_text, IDS_SIGNATURE: serve_ids, EXAMPLES_SIGNATURE: serve_examples}
    return write_archive(export_dir, [model, preprocessor], endpoints, info)
