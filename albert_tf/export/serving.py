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
* ``serve_tf_examples``: the official ``run_classifier.py --export_dir`` receiver: ``serialized_example``
  [B] strings of ``tf.train.Example`` with int64 ``input_ids``/``input_mask``/``segment_ids``
  [max_seq_length] (the records ``albert_tf.data.glue`` writes), same outputs.
* With ``threshold`` (official ``--threshold_to_export``) every signature also returns it as a
  float scalar ``threshold`` (a scalar output has no batch dimension, so TF Serving's REST API then
  needs the columnar ``"inputs"`` request format instead of row ``"instances"``).

Built with ``keras.export.ExportArchive``: a plain ``tf.saved_model.save`` of a Keras 3 model
loads in TF2 but fails in the TF1 session loader TF Serving uses ("Could not find variable",
keras-team/keras#19274; measured in reference/deps.md Q3). Consumers must ``import
tensorflow_text`` before loading (the SentencePiece ops live there; the stock ModelServer links
them). :func:`run_tf1_session` loads an export exactly as TF Serving's ``SavedModelBundle`` does
and is what the tests use as a stand-in for the server.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from albert_tf import files as _fs
from albert_tf.data.batching import DEFAULT_BUCKET_LENGTHS, bucket_boundaries, trim_batch

TEXT_SIGNATURE = "serving_default"
IDS_SIGNATURE = "serve_token_ids"
EXAMPLES_SIGNATURE = "serve_tf_examples"
EXPORT_INFO = os.path.join("assets.extra", "albert_export.json")


def refuse_non_empty(export_dir: str) -> None:
    """Raise ``FileExistsError`` when ``export_dir`` is a directory holding anything (never overwrite an export)."""
    if _fs.has_children(export_dir):
        raise FileExistsError(f"{export_dir} exists and is not empty; choose a new export directory")


def write_savedmodel_atomic(export_dir: str, write: Callable[[str], Any], info: Mapping[str, Any]) -> str:
    """``write(tmp)`` a SavedModel into ``<export_dir>.tmp-<pid>``, add ``assets.extra/albert_export.json``, then
    rename it to ``export_dir``; returns ``export_dir``.

    Why: TF Serving and ``tf.saved_model.load`` must never see a directory that holds a graph without its
    variables (TF Serving also ignores the non-numeric temporary name beside its version directories); the rename
    is the commit point, and a failure removes the temporary directory. Every export of the package goes through
    here. Directory moves and deletions go through :mod:`albert_tf.files`, which also handles ``ram://``.
    """
    export_dir = export_dir.rstrip("/") or export_dir
    refuse_non_empty(export_dir)
    tmp = f"{export_dir}.tmp-{os.getpid()}"
    _fs.rmtree(tmp)
    try:
        write(tmp)
        _fs.makedirs(posixpath.join(tmp, posixpath.dirname(EXPORT_INFO)))
        with _fs.open_file(posixpath.join(tmp, EXPORT_INFO), "w") as f:
            f.write(json.dumps(dict(info), indent=1, sort_keys=True) + "\n")
        refuse_non_empty(export_dir)  # another writer may have claimed it meanwhile
        if _fs.isdir(export_dir):
            _fs.rmtree(export_dir)  # an empty directory the user created beforehand
        _fs.rename_dir(tmp, export_dir)
    except BaseException:
        _fs.rmtree(tmp)
        raise
    return export_dir


def _classifier_outputs(
    model: Any, features: Mapping[str, Any], labels: Sequence[str] | None, threshold: float | None = None
) -> dict[str, Any]:
    import tensorflow as tf

    from albert_tf.modeling.classifier import classifier_logits

    logits = tf.cast(classifier_logits(model(dict(features), training=False)), tf.float32)
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


def make_preprocessor(spm_model_file: str | bytes, max_seq_length: int, do_lower_case: bool = True) -> Any:
    """The in-graph tokenizer layer used by the text signature."""
    from albert_tf.tokenization import AlbertPreprocessor

    return AlbertPreprocessor(spm_model_file, max_seq_length, do_lower_case=do_lower_case)


def preprocess(preprocessor: Any, text_a: Any, text_b: Any | None) -> dict[str, Any]:
    """Raw strings -> int32 ``input_ids``/``input_mask``/``segment_ids`` through the preprocessor layer."""
    inputs = {"text_a": text_a} if text_b is None else {"text_a": text_a, "text_b": text_b}
    out = preprocessor(inputs)
    return {k: out[k] for k in ("input_ids", "input_mask", "segment_ids")}


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
        ``tf.function(jit_compile=True)`` in every signature. Same outputs up to float rounding; measured ~10%
        lower CPU latency at batch 1 (benchmarks/serving_latency.py). The first request of each new input shape
        compiles (seconds), and the server must be built with XLA's CPU/GPU JIT (stock TensorFlow and
        TensorFlow Serving builds are).
      bucket_lengths: the bucket lengths of the in-graph length bucketing (``--bucket_lengths`` syntax; ``None``
        or ``"none"``: every request padded to ``max_seq_length``, as the official export). With ``jit_compile``
        each bucket length compiles once.
    """
    import keras
    import tensorflow as tf

    num_labels = int(getattr(model, "num_labels", 0) or 0)
    if labels is None and num_labels not in (0, 1):
        raise ValueError(f"labels=None means regression, but the model has {num_labels} labels")
    if labels is not None and num_labels and len(labels) != num_labels:
        raise ValueError(f"{len(labels)} label strings for a model with {num_labels} labels")
    if preprocessor is None:
        if spm_model_file is None or max_seq_length is None:
            raise ValueError("give a preprocessor or spm_model_file and max_seq_length for the raw-text signature")
        preprocessor = make_preprocessor(spm_model_file, max_seq_length, do_lower_case)
    refuse_non_empty(export_dir)
    seq = int(preprocessor.max_seq_length)
    boundaries = bucket_boundaries(bucket_lengths, seq)

    def trimmed(features: Mapping[str, Any]) -> Mapping[str, Any]:
        return features if boundaries is None else trim_batch(features, boundaries)

    labels = None if labels is None else [str(x) for x in labels]
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(preprocessor)
    forward = tf.function(model, jit_compile=True) if jit_compile else model

    string = tf.TensorSpec([None], tf.string)
    if text_pair:

        @tf.function(input_signature=[string, string])
        def serve_text(text_a, text_b):
            return _classifier_outputs(forward, trimmed(preprocess(preprocessor, text_a, text_b)), labels, threshold)

    else:

        @tf.function(input_signature=[string])
        def serve_text(text_a):
            return _classifier_outputs(forward, trimmed(preprocess(preprocessor, text_a, None)), labels, threshold)

    ids = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[ids, ids, ids])
    def serve_ids(input_ids, input_mask, segment_ids):
        feats = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
        return _classifier_outputs(forward, feats, labels, threshold)  # the caller's own length (TFLite converts it)

    example_spec = {k: tf.io.FixedLenFeature([seq], tf.int64) for k in ("input_ids", "input_mask", "segment_ids")}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve_examples(serialized_example):
        parsed = tf.io.parse_example(serialized_example, example_spec)
        feats = {k: tf.cast(v, tf.int32) for k, v in parsed.items()}
        return _classifier_outputs(forward, trimmed(feats), labels, threshold)

    archive.add_endpoint(TEXT_SIGNATURE, serve_text)
    archive.add_endpoint(IDS_SIGNATURE, serve_ids)
    archive.add_endpoint(EXAMPLES_SIGNATURE, serve_examples)

    info = {
        "signatures": {
            TEXT_SIGNATURE: ["text_a", "text_b"] if text_pair else ["text_a"],
            IDS_SIGNATURE: ["input_ids", "input_mask", "segment_ids"],
            EXAMPLES_SIGNATURE: ["serialized_example"],
        },
        "max_seq_length": seq,
        "threshold": threshold,
        "jit_compile": bool(jit_compile),
        "bucket_lengths": None if boundaries is None else list(boundaries),
        "labels": labels,
        "regression": labels is None,
        "outputs": ["score", "logits"] if labels is None else ["probabilities", "label", "label_id", "logits"],
        "requires": "import tensorflow_text before loading (SentencePiece ops)",
        **dict(metadata or {}),
    }
    return write_savedmodel_atomic(export_dir, lambda tmp: archive.write_out(tmp, verbose=False), info)


def run_tf1_session(
    export_dir: str, feeds: Mapping[str, Any], signature: str = TEXT_SIGNATURE
) -> dict[str, np.ndarray]:
    """Load ``export_dir`` with the TF1 session loader (TF Serving's ``SavedModelBundle`` path) and run a signature.

    ``feeds`` maps signature input names to arrays (strings as ``str``/``bytes``). Run it in a
    fresh process to reproduce what a server sees; it imports ``tensorflow_text`` first.
    """
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the SentencePiece / RoundRobinTrim ops)

    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as sess:
        meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], export_dir)
        if signature not in meta.signature_def:
            raise KeyError(f"{export_dir}: no signature {signature!r}; it has {sorted(meta.signature_def)}")
        sig = meta.signature_def[signature]
        missing = set(sig.inputs) - set(feeds)
        if missing:
            raise KeyError(f"signature {signature!r} needs inputs {sorted(sig.inputs)}; missing {sorted(missing)}")
        feed_dict = {sig.inputs[k].name: np.asarray(v) for k, v in feeds.items()}
        names = sorted(sig.outputs)
        values = sess.run([sig.outputs[k].name for k in names], feed_dict=feed_dict)
    return dict(zip(names, values, strict=True))


def load_export_info(export_dir: str) -> dict[str, Any]:
    """The JSON written beside the SavedModel (labels, signature inputs, task metadata); local or ``gs://``."""

    with _fs.open_file(os.path.join(export_dir, EXPORT_INFO), "rb") as f:
        return json.loads(f.read().decode("utf-8"))
