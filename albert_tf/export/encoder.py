"""Reusable encoder and preprocessor SavedModels: the TF2 counterpart of the official ``export_to_tfhub.py``.

The official script wrote a TF1 Hub module whose ``tokens`` signature took ``input_ids`` / ``input_mask`` /
``segment_ids`` (official ``export_to_tfhub.py``). TF2 users load encoders as a pair of SavedModels in the TF-Hub /
Model Garden "reusable SavedModel" layout instead, and that is what this module writes:

* **Encoder** (:func:`export_encoder`): inputs ``input_word_ids``, ``input_mask``, ``input_type_ids`` (int32
  ``[B, S]``), outputs ``pooled_output`` ``[B, H]`` and ``sequence_output`` ``[B, S, H]`` (float32).

  - ``serving_default`` signature (TF Serving, ``saved_model_cli``, the TF1 session loader);
  - ``__call__(inputs, training=False)`` on the object loaded by ``tf.saved_model.load`` (a dict of the three
    inputs), traced for ``training=False`` and ``training=True`` (dropout), with ``variables``,
    ``trainable_variables`` and ``regularization_losses`` (empty: ALBERT has no weight regularizers; weight decay
    belongs to the optimizer), so ``hub.KerasLayer(path, trainable=True)`` or a plain ``tf.GradientTape`` over
    ``loaded.trainable_variables`` fine-tunes it;
  - assets: the SentencePiece model (``loaded.sp_model_file``) and ``albert_config.json``
    (``loaded.albert_config_file``); ``loaded.do_lower_case`` is a bool variable (not in ``variables``).

* **Preprocessor** (:func:`export_preprocessor`): raw UTF-8 strings -> the encoder's three inputs at a fixed
  ``max_seq_length``, through :class:`albert_tf.tokenization.AlbertPreprocessor` (so the ids equal the Python
  ``FullTokenizer`` ids and the official ``[CLS] a [SEP] b [SEP]`` packing and pair truncation).

  - ``serving_default`` signature: ``text_a`` ``[B]`` (one segment); ``serve_text_pair``: ``text_a`` + ``text_b``
    (an empty ``text_b`` is dropped, as the official ``if tokens_b:``);
  - ``loaded(text)`` (one segment), ``loaded.tokenize(text)`` -> ragged int32 ids ``[B, None]`` (no special
    tokens) and ``loaded.bert_pack_inputs([ids_a])`` / ``loaded.bert_pack_inputs([ids_a, ids_b])``: the Model
    Garden ``bert_pack_inputs`` convention, with the sequence length fixed at export.

Reloading either needs ``import tensorflow`` (and ``import tensorflow_text`` for the preprocessor's SentencePiece
ops), nothing from albert-tf. Both are written with ``tf.saved_model.save`` from an object that lists the
``tf.Variable`` behind each Keras variable (as ``keras.export.ExportArchive`` does), so the TF1 session loader
TF Serving uses finds them; a plain save of a Keras 3 model does not (keras-team/keras#19274). Each SavedModel is
written to a temporary sibling ``<dir>.tmp-<pid>`` and renamed into place when complete, so a killed export leaves
no half-written model behind.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from collections.abc import Mapping
from typing import Any

from absl import logging

from albert_tf import files as _fs
from albert_tf.export.savedmodel import (
    TEXT_SIGNATURE,
    checked_strings,
    checked_token_ids,
    holds_export_of,
    make_preprocessor,
    refuse_non_empty,
    write_savedmodel_atomic,
)
from albert_tf.tokenization.packing import INPUT_NAMES

ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
ENCODER_OUTPUTS = ("pooled_output", "sequence_output")
PAIR_SIGNATURE = "serve_text_pair"
ENCODER_SUBDIR = "encoder"
PREPROCESSOR_SUBDIR = "preprocessor"
CONFIG_ASSET = "albert_config.json"
REQUIRES = "import tensorflow_text before loading the preprocessor (SentencePiece ops)"

# Model Garden / TF-Hub input names -> the names of AlbertEncoder's inputs (the official TFRecord features).
_TO_ALBERT = {"input_word_ids": "input_ids", "input_mask": "input_mask", "input_type_ids": "segment_ids"}


def hub_inputs(features: Mapping[str, Any]) -> dict[str, Any]:
    """Rename ``input_ids`` / ``input_mask`` / ``segment_ids`` to the TF-Hub names (what the preprocessor returns)."""
    return {hub: features[albert] for hub, albert in _TO_ALBERT.items()}


def albert_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """TF-Hub input names -> AlbertEncoder's; a missing or unknown key is a one-line ``KeyError``.

    Why: the exported ``__call__`` takes the Model Garden dict so an ALBERT encoder drops into code written for
    any TF-Hub BERT encoder, while the Keras model keeps the official feature names.
    """
    keys = set(inputs)
    if keys != set(ENCODER_INPUTS):
        raise KeyError(f"encoder inputs must be exactly {list(ENCODER_INPUTS)}, got {sorted(keys)}")
    return {albert: inputs[hub] for hub, albert in _TO_ALBERT.items()}


def _tf_variables(variables: Any) -> list[Any]:
    """The ``tf.Variable`` behind each Keras variable.

    Why: the traced functions capture these; tracking the Keras wrappers instead saves a SavedModel that
    ``tf.saved_model.load`` reads but the TF1 session loader (TF Serving) does not ("Could not find variable").
    """
    import tensorflow as tf

    out = [getattr(v, "value", v) for v in variables]
    bad = [getattr(v, "path", repr(v)) for v, tv in zip(variables, out, strict=True) if not isinstance(tv, tf.Variable)]
    if bad:
        raise TypeError(f"not a tf.Variable (export outside an autocast scope): {bad[:3]}")
    return out


def _root() -> Any:
    """A plain trackable object: unlike ``tf.Module`` it lets ``variables`` / ``trainable_variables`` be lists."""
    import tensorflow as tf

    return tf.__internal__.tracking.AutoTrackable()


def export_encoder(
    encoder: Any,
    export_dir: str,
    *,
    spm_model_file: str | None = None,
    do_lower_case: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> str:
    """Write ``encoder`` (an :class:`~albert_tf.modeling.AlbertEncoder`) as a reusable TF-Hub-style SavedModel.

    Args:
      encoder: the backbone with its weights loaded (built; any dtype policy: outputs are cast to float32).
      export_dir: output directory (must not exist or be empty; local or any ``tf.io.gfile`` filesystem).
      spm_model_file: SentencePiece model to ship as the ``sp_model_file`` asset (what the ids mean); optional.
      do_lower_case: stored as ``loaded.do_lower_case`` (the tokenizer switch that goes with the ids).
      metadata: extra JSON written to ``assets.extra/albert_export.json`` (checkpoint, tokenizer, ...).

    Returns ``export_dir``. See the module docstring for the signatures and the reusable-SavedModel attributes.
    """
    import tensorflow as tf

    config = getattr(encoder, "config", None)
    if config is None or not hasattr(config, "to_json_string"):
        raise TypeError(f"export_encoder needs an AlbertEncoder (with .config), got {type(encoder).__name__}")
    if spm_model_file is not None and not _fs.exists(spm_model_file):
        raise FileNotFoundError(f"spm_model_file not found: {spm_model_file}")
    refuse_non_empty(export_dir)

    def forward(inputs: Mapping[str, Any], training: bool = False) -> dict[str, Any]:
        out = encoder(albert_inputs(inputs), training=training)
        return {k: tf.cast(out[k], tf.float32) for k in ENCODER_OUTPUTS}

    ids = tf.TensorSpec([None, None], tf.int32)
    specs = {k: tf.TensorSpec([None, None], tf.int32, name=k) for k in ENCODER_INPUTS}
    call = tf.function(forward, autograph=False)
    for training in (False, True):
        call.get_concrete_function(specs, training=training)

    @tf.function(input_signature=[ids, ids, ids], autograph=False)
    def serve(input_word_ids, input_mask, input_type_ids):
        checked = checked_token_ids({"input_ids": input_word_ids, "input_mask": input_mask,
                                     "segment_ids": input_type_ids}, INPUT_NAMES, config, "[batch, seq]",
                                    spelled={"input_ids": "input_word_ids", "segment_ids": "input_type_ids"})
        return forward({"input_word_ids": checked["input_ids"], "input_mask": checked["input_mask"],
                        "input_type_ids": checked["segment_ids"]})

    root = _root()
    root.variables = _tf_variables(encoder.variables)
    root.trainable_variables = _tf_variables(encoder.trainable_variables)
    root.non_trainable_variables = _tf_variables(encoder.non_trainable_variables)
    root.regularization_losses = []
    root.__call__ = call
    root.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False, name="do_lower_case")
    info = {
        "kind": "albert_encoder",
        "signatures": {TEXT_SIGNATURE: list(ENCODER_INPUTS)},
        "outputs": list(ENCODER_OUTPUTS),
        "hidden_size": int(config.hidden_size),
        "sharing": getattr(encoder, "sharing", "all"),
        "do_lower_case": bool(do_lower_case),
        "albert_config": config.to_dict(),
        "sp_model_asset": None if spm_model_file is None else posixpath.basename(str(spm_model_file)),
        **dict(metadata or {}),
    }
    # An Asset is a file that saving copies into assets/. The config's source file lives in TensorFlow's in-memory
    # filesystem, so an export to gs:// (or ram://) writes nothing on the local disk.
    scratch = f"ram://albert_export_scratch-{os.getpid()}-{uuid.uuid4().hex}"
    config_path = posixpath.join(scratch, CONFIG_ASSET)
    _fs.makedirs(scratch)
    try:
        with _fs.open_file(config_path, "w") as f:
            f.write(config.to_json_string())
        root.albert_config_file = tf.saved_model.Asset(config_path)
        if spm_model_file is not None:
            root.sp_model_file = tf.saved_model.Asset(spm_model_file)
        signatures = {TEXT_SIGNATURE: serve.get_concrete_function()}
        return write_savedmodel_atomic(
            export_dir, lambda tmp: tf.saved_model.save(root, tmp, signatures=signatures), info
        )
    finally:
        _fs.rmtree(scratch)


def export_preprocessor(
    export_dir: str,
    *,
    preprocessor: Any | None = None,
    spm_model_file: str | bytes | None = None,
    max_seq_length: int | None = None,
    do_lower_case: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> str:
    """Write the raw-text -> encoder-inputs SavedModel matching :func:`export_encoder`.

    Args:
      export_dir: output directory (must not exist or be empty).
      preprocessor: an :class:`~albert_tf.tokenization.AlbertPreprocessor` (SentencePiece or WordPiece); built
        from ``spm_model_file`` / ``max_seq_length`` / ``do_lower_case`` when not given.
      metadata: extra JSON written to ``assets.extra/albert_export.json``.

    Returns ``export_dir``. Outputs are int32 ``[B, max_seq_length]``; see the module docstring.
    """
    import tensorflow as tf

    if preprocessor is None:
        if spm_model_file is None or max_seq_length is None:
            raise ValueError("give a preprocessor or spm_model_file and max_seq_length")
        preprocessor = make_preprocessor(spm_model_file, max_seq_length, do_lower_case)
    refuse_non_empty(export_dir)
    pre = preprocessor
    string = tf.TensorSpec([None], tf.string)
    ragged = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1, row_splits_dtype=tf.int64)

    # tokenize and bert_pack_inputs are traced once each and called by the signatures, so the SavedModel holds
    # the tokenizer graph (large: Unicode tables, the digit-comma table) once, and every entry point gives the
    # same ids by construction.
    @tf.function(input_signature=[string], autograph=False)
    def tokenize(text):
        return pre.tokenize(text)

    def pack(segments: list[Any]) -> dict[str, Any]:
        if len(segments) not in (1, 2):
            raise ValueError(f"bert_pack_inputs takes 1 or 2 segments, got {len(segments)}")
        return hub_inputs(pre.pack(segments[0], segments[1] if len(segments) == 2 else None))

    bert_pack_inputs = tf.function(pack, autograph=False)
    for n in (1, 2):
        bert_pack_inputs.get_concrete_function([ragged] * n)

    @tf.function(input_signature=[string], autograph=False)
    def single(text_a):
        return bert_pack_inputs([tokenize(checked_strings({"text_a": text_a})["text_a"])])

    @tf.function(input_signature=[string, string], autograph=False)
    def pair(text_a, text_b):
        text_a, text_b = checked_strings({"text_a": text_a, "text_b": text_b}).values()
        check = tf.debugging.assert_equal(
            tf.size(text_a), tf.size(text_b), message="text_a and text_b must hold the same number of strings"
        )
        with tf.control_dependencies([check]):
            return bert_pack_inputs([tokenize(text_a), tokenize(text_b)])

    resource_type = tf.saved_model.experimental.TrackableResource
    root = _root()
    # The lookup tables and the SentencePiece model resource the functions capture must be tracked to be saved
    # (and initialised by the TF1 loader); the Keras layer itself is not attached (no variables to list).
    root.resources = [t for t in tf.train.TrackableView(pre).descendants() if isinstance(t, resource_type)]
    root.__call__ = single
    root.tokenize = tokenize
    root.bert_pack_inputs = bert_pack_inputs
    info = {
        "kind": "albert_preprocessor",
        "signatures": {TEXT_SIGNATURE: ["text_a"], PAIR_SIGNATURE: ["text_a", "text_b"]},
        "outputs": list(ENCODER_INPUTS),
        "functions": ["__call__", "tokenize", "bert_pack_inputs"],
        "max_seq_length": int(pre.max_seq_length),
        "vocab_size": int(pre.vocab_size),
        "do_lower_case": bool(pre.do_lower_case),
        "tokenizer": pre.kind,
        "requires": REQUIRES,
        **dict(metadata or {}),
    }
    signatures = {TEXT_SIGNATURE: single.get_concrete_function(), PAIR_SIGNATURE: pair.get_concrete_function()}
    return write_savedmodel_atomic(export_dir, lambda tmp: tf.saved_model.save(root, tmp, signatures=signatures), info)


def export_encoder_and_preprocessor(
    encoder: Any,
    export_dir: str,
    *,
    spm_model_file: str,
    max_seq_length: int,
    do_lower_case: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """``export_savedmodel --task=encoder``: ``<export_dir>/encoder`` and ``<export_dir>/preprocessor``.

    Both directories are checked before anything is written (where both already hold the export of the same
    ``metadata["checkpoint_prefix"]`` and length, a rerun, they are kept as they are); the tokenizer's vocabulary
    must match the encoder's ``vocab_size`` (ids of another vocabulary would embed silently wrong rows). Returns
    ``{"encoder": path, "preprocessor": path}``.
    """
    paths = {
        ENCODER_SUBDIR: posixpath.join(export_dir, ENCODER_SUBDIR),
        PREPROCESSOR_SUBDIR: posixpath.join(export_dir, PREPROCESSOR_SUBDIR),
    }
    meta = dict(metadata or {})
    if meta.get("checkpoint_prefix") and all(holds_export_of(path, {**meta, "max_seq_length": max_seq_length})
                                             for path in paths.values()):
        logging.info("%s holds the export of %s already", export_dir, meta["checkpoint_prefix"])
        return paths  # the same command again
    for path in paths.values():
        refuse_non_empty(path)
    config = encoder.config
    config.check_max_seq_length(int(max_seq_length))
    preprocessor = make_preprocessor(spm_model_file, max_seq_length, do_lower_case)
    config.check_vocab_size(preprocessor.vocab_size)
    export_encoder(encoder, paths[ENCODER_SUBDIR], spm_model_file=spm_model_file, do_lower_case=do_lower_case,
                   metadata={**meta, "preprocessor": f"../{PREPROCESSOR_SUBDIR}", "max_seq_length": max_seq_length})
    export_preprocessor(paths[PREPROCESSOR_SUBDIR], preprocessor=preprocessor,
                        metadata={**meta, "encoder": f"../{ENCODER_SUBDIR}", "max_seq_length": max_seq_length})
    return paths
