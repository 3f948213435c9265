"""What every SavedModel export of the package shares: the signature names, the atomic write (temporary directory,
then renamed), the export's metadata file, the in-graph tokenizer and the TF1 session loader that TF Serving uses.

Built with ``keras.export.ExportArchive`` by the tasks' exports: a plain ``tf.saved_model.save`` of a Keras 3 model
loads in TF2 but fails in the TF1 session loader TF Serving uses ("Could not find variable", keras-team/keras#19274).
Consumers must ``import tensorflow_text`` before loading (the SentencePiece ops live there; the stock ModelServer
links them). :func:`run_tf1_session` loads an export exactly as TF Serving's ``SavedModelBundle`` does and is what
the tests use as a stand-in for the server.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from albert_tf import files as _fs
from albert_tf import interrupts
from albert_tf.tokenization.packing import INPUT_NAMES

TEXT_SIGNATURE = "serving_default"
IDS_SIGNATURE = "serve_token_ids"
#: The RACE export's token-id signature before every task's was named ``serve_token_ids``.
LEGACY_IDS_SIGNATURE = "serve_ids"
EXAMPLES_SIGNATURE = "serve_tf_examples"
EXPORT_INFO = os.path.join("assets.extra", "albert_export.json")
#: What a consumer of an export with an in-graph tokenizer must do first (recorded in its ``albert_export.json``).
REQUIRES = "import tensorflow_text before loading (SentencePiece ops)"


def rank_check(value: Any, name: str, layout: str) -> Any:
    """An op that fails the request with an ``InvalidArgumentError`` naming ``name`` and ``layout`` (``"[batch]"``,
    ``"[batch, seq]"``: its rank is the number of dimensions written) when ``value`` has another rank.

    TF Serving checks no request's shape against the signature (tensorflow/serving#1436: a scalar reaches the graph
    where ``[None]`` is declared), and ``tf.debugging.assert_rank`` adds nothing to a graph whose declared rank is
    known when traced; so this is an ``Assert`` on the rank the request has when it runs."""
    import tensorflow as tf

    rank = tf.raw_ops.Rank(input=value)
    return tf.debugging.Assert(tf.equal(rank, layout.count(",") + 1),
                               [f"{name} must have the shape {layout}; got a tensor of rank", rank])


def checked_strings(inputs: Mapping[str, Any], layouts: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The raw-text inputs of a signature, each checked to have its rank (``layouts[name]``, default ``[batch]``:
    a vector of strings, one per request) before any is read: a scalar or a ``[1, 1]`` tensor is refused with a
    message naming the input, not answered as some batch or failed inside the tokenizer."""
    import tensorflow as tf

    layouts = {name: (layouts or {}).get(name, "[batch]") for name in inputs}
    checks = [rank_check(value, name, layouts[name]) for name, value in inputs.items()]
    out = {}
    with tf.control_dependencies(checks):
        for name, value in inputs.items():
            # and a data dependency: a control edge alone does not order the ops of a nested tf.function's body
            # once it is inlined, which may then fail first on the wrong rank. CheckNumerics of 1 / ok fails with the
            # same message where the rank is wrong, and the value's reshape waits for its output.
            ok = tf.cast(tf.equal(tf.raw_ops.Rank(input=value), layouts[name].count(",") + 1), tf.float32)
            one = tf.raw_ops.CheckNumerics(tensor=1.0 / ok, message=f"{name} must have the shape {layouts[name]}")
            out[name] = tf.reshape(value, tf.shape(value) * tf.cast(one, tf.int32))
    return out


def checked_token_ids(features: Mapping[str, Any], names: Sequence[str], config: Any, layout: str,
                      spelled: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A token-id request checked before the model sees it: every input the shape of ``input_ids`` (``layout``
    names it in the message, e.g. ``[batch, seq]``), sequences no longer than ``max_position_embeddings``,
    ``input_ids`` in ``[0, vocab_size)``, ``segment_ids`` in ``[0, type_vocab_size)``, masks (``input_mask``,
    ``p_mask``) 0 or 1; first the rank of each (:func:`rank_check`), then at least one token per sequence and one
    real token in every ``input_mask`` row. ``config`` is the model's ``AlbertConfig`` (None: only shapes and masks
    are checked). ``spelled``: the signature's own name of an input where it differs (TF-Hub's ``input_word_ids``).

    A failed check is an ``InvalidArgumentError`` that names the input and the limit. Without them an id out of range
    is a gather error that names neither on the CPU, and on a GPU a row of zeros (TensorFlow does not check gather
    indices there), and mismatched shapes broadcast silently.
    """
    import tensorflow as tf

    say = {k: (spelled or {}).get(k, k) for k in names}
    with tf.control_dependencies([rank_check(features[k], say[k], layout) for k in names]):  # shapes are read below
        features = {k: tf.identity(features[k]) for k in names}
    ids = features["input_ids"]
    checks = [tf.debugging.assert_equal(tf.shape(features[k]), tf.shape(ids),
                                        message=f"{say[k]} must have the shape of {say['input_ids']} ({layout})")
              for k in names if k != "input_ids"]
    checks.append(tf.debugging.Assert(tf.logical_or(tf.equal(tf.shape(ids)[0], 0), tf.shape(ids)[-1] > 0),
                                      [f"{say['input_ids']}: sequences of no token (each starts with [CLS])"]))
    ranges = {}
    if config is not None:  # a stand-in model without an AlbertConfig gets the shape and mask checks only
        limit = int(config.max_position_embeddings)
        checks.append(tf.debugging.assert_less_equal(
            tf.shape(ids)[-1], limit,
            message=f"{say['input_ids']}: sequences longer than max_position_embeddings={limit}"))
        ranges = {"input_ids": int(config.vocab_size), "segment_ids": int(config.type_vocab_size)}
    for name in names:
        if config is None and name in ("input_ids", "segment_ids"):
            continue
        high = ranges.get(name, 2)  # input_mask and p_mask hold 0 or 1
        what = {"input_ids": "the vocabulary size", "segment_ids": "type_vocab_size"}.get(name, "a mask")
        message = f"{say[name]} must lie in [0, {high}) ({what})"
        checks.append(tf.debugging.assert_non_negative(features[name], message=message))
        checks.append(tf.debugging.assert_less(features[name], tf.constant(high, features[name].dtype),
                                               message=message))
    if "input_mask" in names:  # a row without a real token has nothing to attend to: refused, not answered; after
        # the other checks, so a request wrong in several ways is told its shape or range first
        with tf.control_dependencies(checks):
            real = tf.reduce_any(tf.not_equal(features["input_mask"], 0), axis=-1)
            checks.append(tf.debugging.Assert(tf.reduce_all(real),
                                              [f"{say['input_mask']}: a row with no real token (all zeros)"]))
    with tf.control_dependencies(checks):
        return {k: tf.identity(features[k]) for k in names}


def signature_named(signatures: Mapping[str, Any], key: str, export_dir: str) -> str:
    """``key`` where ``signatures`` (a loaded SavedModel's) has it; for :data:`IDS_SIGNATURE`, also a RACE export
    written before the name was shared (``serve_ids``). Otherwise a ``ValueError`` naming what it has."""
    if key in signatures:
        return key
    if key == IDS_SIGNATURE and LEGACY_IDS_SIGNATURE in signatures:
        return LEGACY_IDS_SIGNATURE
    raise ValueError(f"{export_dir} has no signature {key!r}; it has {sorted(signatures)}")


def refuse_non_empty(export_dir: str) -> None:
    """Raise ``FileExistsError`` when ``export_dir`` is a directory holding anything (never overwrite an export)."""
    if _fs.has_children(export_dir):
        raise FileExistsError(f"{export_dir} exists and is not empty (an export is never overwritten): give another "
                              "--export_dir or remove it")


def holds_export_of(export_dir: str, expected: Mapping[str, Any]) -> bool:
    """Whether ``export_dir`` holds an export of this package whose metadata has every item of ``expected`` (its
    weights' checkpoint, lengths, ...): the same command run again keeps it instead of failing."""
    if not _fs.isfile(os.path.join(export_dir, EXPORT_INFO)):
        return False
    try:
        recorded = load_export_info(export_dir)
    except (OSError, ValueError):
        return False
    return (bool(expected) and isinstance(recorded, dict)
            and all(recorded.get(k) == json.loads(json.dumps(v)) for k, v in expected.items()))


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
    tmp = _fs.temporary_name(export_dir)
    _fs.rmtree(tmp)
    try:
        write(tmp)
        _fs.makedirs(posixpath.join(tmp, posixpath.dirname(EXPORT_INFO)))
        with _fs.open_file(posixpath.join(tmp, EXPORT_INFO), "w") as f:
            f.write(json.dumps(dict(info), indent=1, sort_keys=True) + "\n")
        refuse_non_empty(export_dir)  # another writer may have claimed it meanwhile
        if _fs.isdir(export_dir):
            _fs.rmtree(export_dir)  # an empty directory the user created beforehand
        with interrupts.deferred():  # the rename is the commit point: a stop held during it reports the export
            _fs.rename_dir(tmp, export_dir)
            interrupts.note(f"after writing {export_dir}")
            interrupts.advise(f"{export_dir} is complete (written before the stop); the same command keeps it")
    except BaseException:
        _fs.rmtree(tmp)
        raise
    return export_dir


def write_archive(export_dir: str, tracked: Sequence[Any], endpoints: Mapping[str, Any],
                  info: Mapping[str, Any]) -> str:
    """The one writer of the tasks' SavedModels: ``endpoints`` (signature name -> ``tf.function`` with its input
    signature) over the ``tracked`` objects (the model, the in-graph tokenizer layers), written through
    ``keras.export.ExportArchive`` (what TF Serving's TF1 loader reads, see the module docstring) with ``info`` as
    ``albert_export.json``, atomically (:func:`write_savedmodel_atomic`); returns ``export_dir``."""
    import keras

    archive = keras.export.ExportArchive()
    for obj in tracked:
        archive.track(obj)
    return write_savedmodel_atomic(export_dir, lambda tmp: _write_out(archive, endpoints, tmp), info)


def _write_out(archive: Any, endpoints: Mapping[str, Any], path: str) -> None:
    """``archive.write_out(path)`` with each endpoint traced once instead of twice.

    ``tf.saved_model.save`` traces every function again inside its save context (TensorFlow's tracing cache keys
    a trace by the save options' variable policy, so one made outside does not serve), and ``ExportArchive``
    traces each endpoint outside it (``add_endpoint`` to check it, ``write_out`` to list its variables). Here the
    endpoints are added and their variables listed inside a save context with the options the save uses, so the
    save finds every trace made. The steps are ``write_out``'s own (keras 3.15,
    pinned in setup.py, through its private ``_filter_and_track_resources`` and ``_get_concrete_fn``); where they
    are missing (another keras), ``write_out`` itself runs.
    """
    import tensorflow as tf

    steps = ("_filter_and_track_resources", "_get_concrete_fn", "_tf_trackable")
    try:
        from tensorflow.python.saved_model import save_context
    except ImportError:  # pragma: no cover - a TensorFlow that moved it
        save_context = None
    if save_context is None or not all(hasattr(archive, step) for step in steps):  # pragma: no cover
        for name, fn in endpoints.items():
            archive.add_endpoint(name, fn)
        archive.write_out(path, verbose=False)
        return
    options = tf.saved_model.SaveOptions()
    with save_context.save_context(options):
        for name, fn in endpoints.items():
            archive.add_endpoint(name, fn)
        archive._filter_and_track_resources()
        signatures = {name: archive._get_concrete_fn(name) for name in endpoints}
    signatures.setdefault(TEXT_SIGNATURE, signatures[next(iter(endpoints))])  # write_out's alias for TF Serving
    tf.saved_model.save(archive._tf_trackable, path, options=options, signatures=signatures)


def make_preprocessor(spm_model_file: str | bytes, max_seq_length: int, do_lower_case: bool = True) -> Any:
    """The in-graph tokenizer layer used by the text signature."""
    from albert_tf.tokenization import AlbertPreprocessor

    return AlbertPreprocessor(spm_model_file, max_seq_length, do_lower_case=do_lower_case)


def preprocess(preprocessor: Any, text_a: Any, text_b: Any | None) -> dict[str, Any]:
    """Raw strings -> int32 ``input_ids``/``input_mask``/``segment_ids`` through the preprocessor layer."""
    inputs = {"text_a": text_a} if text_b is None else {"text_a": text_a, "text_b": text_b}
    out = preprocessor(inputs)
    return {k: out[k] for k in INPUT_NAMES}


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
        sig, feed_dict = load_in_session(sess, export_dir, signature, feeds)
        names = sorted(sig.outputs)
        values = sess.run([sig.outputs[k].name for k in names], feed_dict=feed_dict)
    return dict(zip(names, values, strict=True))


def load_in_session(sess: Any, export_dir: str, signature: str, feeds: Mapping[str, Any]) -> tuple[Any, dict]:
    """Load ``export_dir`` into the TF1 ``sess`` as TF Serving does; returns ``signature``'s ``SignatureDef`` and the
    feed dict of ``feeds`` (signature input name -> array). A missing signature or input is a ``KeyError`` naming
    what the export has."""
    import tensorflow as tf

    meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], export_dir)
    if signature not in meta.signature_def:
        raise KeyError(f"{export_dir}: no signature {signature!r}; it has {sorted(meta.signature_def)}")
    sig = meta.signature_def[signature]
    missing = set(sig.inputs) - set(feeds)
    if missing:
        raise KeyError(f"signature {signature!r} needs inputs {sorted(sig.inputs)}; missing {sorted(missing)}")
    return sig, {sig.inputs[k].name: np.asarray(v) for k, v in feeds.items()}


def load_export_info(export_dir: str) -> dict[str, Any]:
    """The JSON written beside the SavedModel (labels, signature inputs, task metadata); local or ``gs://``."""

    with _fs.open_file(os.path.join(export_dir, EXPORT_INFO), "rb") as f:
        return json.loads(f.read().decode("utf-8"))
