"""TFLite conversion of an exported SavedModel's token-id signature, and a runner for the ``.tflite`` file.

What: :func:`convert_signature` turns ONE signature of a SavedModel written by this package (every task's
``serve_token_ids``) into a ``.tflite`` flat
buffer that uses only TFLite builtin ops, so it runs on a stock TFLite / LiteRT runtime (Android, iOS, desktop)
without linking the Flex delegate. :func:`run_tflite` runs a signature of such a file with the TFLite interpreter
(what the tests compare with the SavedModel).

Why the sequence length is pinned: the exported signatures take ``[batch, seq]`` ids with both dimensions unknown.
The encoder's attention bias is ``mask[:, None, None, :]``, a ``StridedSlice`` with ``new_axis_mask``; the TFLite
legalizer only rewrites that into builtin ``RESHAPE`` + ``STRIDED_SLICE`` when at most one input dimension is
unknown, so with both unknown the op stays ``tf.StridedSlice`` and needs the Flex delegate (measured with TF 2.21;
the SQuAD v2 head adds ``p_mask[:, None, :]`` and an ``Einsum`` that only lower to builtins with a static sequence
length). We therefore re-trace the signature with the sequence axis fixed to the export's ``max_seq_length``
(``assets.extra/albert_export.json``) and the batch left dynamic, as TFLite BERT models usually are: the ``.tflite``
file answers any batch size at that one sequence length (pad features to it, as the training pipeline does).

Why a re-traced copy and not ``TFLiteConverter.from_saved_model(export_dir)`` itself: besides the dynamic shape,
converting from the export directory also converts the whole SavedModel's initialisers, i.e. the raw-text
preprocessor's int64 -> int64 ``HashTableV2`` / ``LookupTableImportV2`` tables, which are not builtins either, even
for a signature that never touches them. So a signature whose only captured resources are variables is re-traced
into a temporary SavedModel that holds just those variables and that one signature, and *that* goes through
``from_saved_model(tmp, signature_keys=[key])``. A signature that captures other resources (the raw-text ones: the
SentencePiece model, the lookup tables) is converted from the export directory as it is.

What does not convert with builtins (``ValueError`` naming the ops; measured with TF 2.21): the raw-text
``serving_default`` signatures, whose in-graph tokenizer uses TF string ops (``StringLower``, ``StaticRegexReplace``,
``StaticRegexFullMatch``, ``UnicodeTranscode``, ``UnicodeDecode``/``UnicodeEncode``), tensorflow_text ops
(``NormalizeUTF8``, ``SentencepieceOp``, ``SentencepieceTokenizeOp``; SQuAD also ``SentencepieceTokenizeWithOffsetsOp``
and ``RegexSplitWithOffsets``), ragged ops (``RaggedGather``, ``RaggedRange``, ``RaggedTensorToTensor``), a
``HashTableV2``/``LookupTableFindV2`` table, and ``TensorScatterUpdate``/``UnsortedSegmentSum``; SQuAD's in-graph
answer search adds float64 / int64 arithmetic that has no builtin kernel (``AddV2``, ``Mul``, ``Max``, ``SelectV2``,
``GatherV2``, ``FloorDiv``, ...); and ``serve_tf_examples`` (``ParseExampleV2``). ``select_tf_ops=True`` converts all
of them with ``SELECT_TF_OPS``: TF kernels run through the Flex delegate, so the app must link
``tensorflow-lite-select-tf-ops`` (and a Flex build that holds tensorflow_text's kernels for the SentencePiece ops).
The ``tf.lite.Interpreter`` of the TF 2.21 pip wheel has no Flex delegate and refuses such a file at run time, so
those conversions are not checked numerically here.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import uuid
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from albert_tf import files
from albert_tf import files as _fs
from albert_tf.export.savedmodel import EXPORT_INFO, IDS_SIGNATURE, signature_named

DEFAULT_FILENAME = "model.tflite"
#: ``quantize`` choices: float32 weights, int8 weights with dynamic-range activations (TFLite's hybrid kernels;
#: ``tf.lite.Optimize.DEFAULT``), float16 weights (dequantized to float32 when the interpreter loads them).
QUANTIZATIONS = ("none", "dynamic", "float16")


def default_filename(quantize: str = "none") -> str:
    """``model.tflite``, ``model_dynamic.tflite`` or ``model_float16.tflite``: one export can hold all three."""
    return DEFAULT_FILENAME if quantize == "none" else f"model_{quantize}.tflite"
FLEX_HINT = (
    "select_tf_ops=True converts them with SELECT_TF_OPS, but the file then needs the Flex delegate "
    "(tensorflow-lite-select-tf-ops) at run time"
)


def _import_tensorflow() -> Any:
    import tensorflow as tf

    try:  # the raw-text signatures hold SentencePiece ops: the export only loads with them registered
        import tensorflow_text  # noqa: F401
    except ImportError:  # pragma: no cover - a dependency of the package
        pass
    return tf


def export_seq_length(saved_model_dir: str) -> int | None:
    """The ``max_seq_length`` recorded in ``assets.extra/albert_export.json`` of an export, or None."""

    path = posixpath.join(saved_model_dir, EXPORT_INFO)
    if not _fs.exists(path):
        return None
    with _fs.open_file(path, "r") as f:
        value = json.load(f).get("max_seq_length")
    return None if value is None else int(value)


def blocking_ops(error: BaseException) -> list[str]:
    """The TF op names (without ``tf.``) that a ``ConverterError`` says TFLite could not lower, sorted."""
    text = str(error)
    ops = {getattr(getattr(e, "operator", None), "name", "") for e in getattr(error, "errors", None) or []}
    ops.update(re.findall(r"'(tf\.\w+)' op is neither a custom op nor a flex op", text))
    for line in re.findall(r"^(?:TF Select ops|Flex ops|Ops that need custom implementation[^:]*):\s*(.+)$",
                           text, flags=re.MULTILINE):
        ops.update(x.strip() for x in line.split(","))
    return sorted({re.sub(r"^(tf\.|Flex)", "", x) for x in ops if x})


def pinned_input_specs(fn: Any, seq_length: int | None) -> dict[str, Any]:
    """The signature's input specs with the last (sequence) axis of every integer input of rank >= 2 that is
    unknown fixed to ``seq_length`` (``[B, S]`` ids, RACE's ``[B, 4, S]``); other inputs as they are."""
    import tensorflow as tf

    _, kwargs = fn.structured_input_signature
    specs = {}
    for name, spec in kwargs.items():
        shape = spec.shape.as_list()
        if spec.dtype.is_integer and len(shape) >= 2 and shape[-1] is None:
            if seq_length is None:
                raise ValueError(f"input {name!r} has an unknown sequence length and the export records no "
                                 "max_seq_length; pass seq_length=")
            shape[-1] = int(seq_length)
        specs[name] = tf.TensorSpec(shape, spec.dtype, name=name)
    return specs


def captures_only_variables(fn: Any) -> bool:
    """Whether every resource ``fn`` captures is one of its variables (no lookup tables, SentencePiece models)."""
    handles = {id(v.handle) for v in fn.variables}
    return all(id(t) in handles for t in fn.captured_inputs)


def _pinned_saved_model(fn: Any, specs: Mapping[str, Any], signature_key: str, tmp_dir: str) -> None:
    """Save ``fn`` re-traced on ``specs`` as the only signature of a SavedModel holding only ``fn``'s variables."""
    import tensorflow as tf

    names = sorted(specs)

    @tf.function(input_signature=[specs[k] for k in names])
    def pinned(*tensors):
        return fn(**dict(zip(names, tensors, strict=True)))

    module = tf.Module()
    module.signature_variables = list(fn.variables)
    module.pinned = pinned
    tf.saved_model.save(module, tmp_dir, signatures={signature_key: pinned.get_concrete_function()})


def convert_signature(
    saved_model_dir: str,
    output_path: str | None = None,
    signature_key: str = IDS_SIGNATURE,
    *,
    seq_length: int | None = None,
    select_tf_ops: bool = False,
    quantize: str = "none",
) -> str:
    """Convert the signature ``signature_key`` of the SavedModel ``saved_model_dir`` to a ``.tflite`` file.

    Args:
      saved_model_dir: an export of this package (or any SavedModel).
      output_path: where to write; default ``<saved_model_dir>/model.tflite``. Written to
        ``<output_path>.tmp-<pid>`` and renamed when complete (an existing file is replaced).
      signature_key: the signature to convert (default ``serve_token_ids``, every task's; a RACE export written
        before that name was shared has ``serve_ids``, found under the default too).
      seq_length: the sequence length the ``.tflite`` answers at (the last axis of every integer ``[..., seq]``
        input); default the export's ``max_seq_length``. The batch stays dynamic. See the module docstring.
      select_tf_ops: also allow TF ops through the Flex delegate (``SELECT_TF_OPS``); off by default so the file
        runs on any TFLite runtime.
      quantize: ``none`` (float32), ``dynamic`` (int8 weights, activations quantized on the fly where TFLite has a
        hybrid kernel: about a quarter of the size) or ``float16`` (half the size, float32 arithmetic); the default
        file name says which (:func:`default_filename`). Sizes, speed and dev metrics: ``benchmarks/README.md``.

    Returns the path written. Raises ``ValueError`` naming the signatures that exist for an unknown
    ``signature_key``, and naming the ops that blocked the conversion when the converter fails.
    """
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize={quantize!r}: expected one of {', '.join(QUANTIZATIONS)}")
    tf = _import_tensorflow()

    loaded = tf.saved_model.load(saved_model_dir)
    signature_key = signature_named(loaded.signatures, signature_key, saved_model_dir)
    fn = loaded.signatures[signature_key]
    ops = [tf.lite.OpsSet.TFLITE_BUILTINS] + ([tf.lite.OpsSet.SELECT_TF_OPS] if select_tf_ops else [])

    # The re-traced SavedModel is scratch: staged in TensorFlow's in-memory filesystem (the converter reads it
    # from there), so converting a gs:// export writes nothing on the local disk.
    tmp_dir = f"ram://albert_tflite_scratch-{os.getpid()}-{uuid.uuid4().hex}"
    try:
        source = saved_model_dir
        if captures_only_variables(fn):  # re-trace: pinned sequence axis, and none of the export's other resources
            specs = pinned_input_specs(fn, export_seq_length(saved_model_dir) if seq_length is None else seq_length)
            source = posixpath.join(tmp_dir, "pinned")
            _pinned_saved_model(fn, specs, signature_key, source)
        converter = tf.lite.TFLiteConverter.from_saved_model(source, signature_keys=[signature_key])
        converter.target_spec.supported_ops = ops
        if quantize != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        try:
            flatbuffer = converter.convert()
        except Exception as e:  # ConverterError: the message lists the ops, the full text stays chained
            blocked = blocking_ops(e)
            what = ", ".join(blocked) if blocked else "(see the converter error above)"
            hint = "" if select_tf_ops else f"; {FLEX_HINT}"
            opsets = "TFLITE_BUILTINS + SELECT_TF_OPS" if select_tf_ops else "TFLITE_BUILTINS"
            raise ValueError(
                f"signature {signature_key!r} of {saved_model_dir} does not convert to TFLite with {opsets}: "
                f"ops {what} are not supported{hint}"
            ) from e
    finally:
        files.rmtree(tmp_dir)
    path = output_path or posixpath.join(saved_model_dir, default_filename(quantize))
    parent = posixpath.dirname(path)
    if parent:
        files.makedirs(parent)
    files.write_bytes_atomic(path, flatbuffer)  # readers never see half a file
    return path


def _interpreter(content: bytes) -> Any:
    tf = _import_tensorflow()
    with warnings.catch_warnings():  # TF 2.21 warns that tf.lite.Interpreter moves to ai_edge_litert
        warnings.filterwarnings("ignore", message=r"(?s).*tf\.lite\.Interpreter is deprecated")
        return tf.lite.Interpreter(model_content=content)


def _check_names(signature_key: str, needed: Iterable[str], given: Iterable[str]) -> None:
    needed, given = sorted(needed), set(given)
    missing = [k for k in needed if k not in given]
    extra = sorted(given - set(needed))
    if missing or extra:
        parts = ([f"missing {missing}"] if missing else []) + ([f"unknown {extra}"] if extra else [])
        raise ValueError(f"TFLite signature {signature_key!r} takes inputs {needed}; {', '.join(parts)}")


def _runner(path: str, signature_key: str) -> Any:

    with _fs.open_file(path, "rb") as f:
        interpreter = _interpreter(f.read())
    signatures = interpreter.get_signature_list()
    if signature_key not in signatures:
        raise ValueError(f"{path} has no signature {signature_key!r}; it has {sorted(signatures)}")
    return interpreter.get_signature_runner(signature_key)


def signature_inputs(path: str, signature_key: str = IDS_SIGNATURE) -> dict[str, tuple[list[int], str]]:
    """Input name -> (shape, dtype name) of a signature of the ``.tflite`` file ``path``; -1 marks a dimension
    that takes any size (the batch)."""
    details = _runner(path, signature_key).get_input_details()
    return {k: ([int(x) for x in d["shape_signature"]], np.dtype(d["dtype"]).name) for k, d in sorted(details.items())}


def run_tflite(
    path: str, feeds: Mapping[str, np.ndarray], signature_key: str = IDS_SIGNATURE
) -> dict[str, np.ndarray]:
    """Run the signature ``signature_key`` of the ``.tflite`` file ``path`` on ``feeds`` (input name -> array).

    Inputs are cast to the signature's dtypes and the model is resized to their shapes (any batch size; the
    sequence length the file was converted at). Returns output name -> a copy of the array. Raises ``ValueError``
    for an unknown signature, missing or unknown inputs, or a shape the file cannot take.
    """
    runner = _runner(path, signature_key)
    details = runner.get_input_details()
    _check_names(signature_key, details, feeds)
    arrays = {}
    for name, detail in details.items():
        value = np.asarray(feeds[name])
        expected = [int(d) for d in detail["shape_signature"]]
        if value.ndim != len(expected) or any(e != -1 and e != s for e, s in zip(expected, value.shape, strict=True)):
            shown = ["?" if e == -1 else e for e in expected]
            raise ValueError(f"input {name!r} has shape {list(value.shape)}; {path} takes {shown} "
                             "(pad or cut the features to the sequence length it was converted at)")
        if value.dtype.kind in "USO":  # strings (the raw-text signatures): UTF-8 bytes
            value = np.vectorize(lambda x: x.encode("utf-8") if isinstance(x, str) else x, otypes=[object])(value)
        arrays[name] = value.astype(detail["dtype"], copy=False)
    outputs = runner(**arrays)
    return {k: np.array(v) for k, v in sorted(outputs.items())}
