"""ONNX conversion of an exported SavedModel's token-id signature (``tf2onnx``), and a runner for the file.

What: :func:`convert_signature` turns ONE token-id signature of a SavedModel written by this package (every
task's ``serve_token_ids``) into an ``.onnx`` file for ONNX
Runtime, TensorRT, OpenVINO and the like; :func:`run_onnx` runs it with ONNX Runtime (what the tests compare with
the SavedModel).

How: the signature is re-traced with the sequence axis fixed to the export's ``max_seq_length`` and the batch
dynamic (``export.tflite.pinned_input_specs``, the same pinning as the TFLite file) and handed to
``tf2onnx.convert.from_function``, which freezes its variables. Converting the export directory itself
(``python -m tf2onnx.convert --saved-model``) fails: loading it needs the raw-text signature's tensorflow_text ops
(``SentencepieceOp`` is not registered in tf2onnx's process), and those string ops have no ONNX equivalent anyway,
so the raw-text signatures are not converted; tokenize on the client (the features of ``serve_token_ids``).

``tf2onnx``, ``onnx`` and ``onnxruntime`` are the ``onnx`` extra (``pip install albert-tf[onnx]``); tf2onnx 1.17.0
converts TensorFlow 2.21 / Keras 3 exports this way (its ``from_keras`` does not work with Keras 3,
onnx/tensorflow-onnx#2329, which is why a function is converted, not the Keras model).
"""

from __future__ import annotations

import os
import posixpath
import tempfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from albert_tf import files
from albert_tf.export.savedmodel import IDS_SIGNATURE, signature_named
from albert_tf.export.tflite import _import_tensorflow, captures_only_variables, export_seq_length, pinned_input_specs

DEFAULT_FILENAME = "model.onnx"
#: ONNX opset of the files written (ONNX Runtime 1.16 and later run it).
OPSET = 17
INSTALL_HINT = "pip install 'albert-tf[onnx]' (tf2onnx, onnx, onnxruntime)"


def _tf2onnx() -> Any:
    try:
        import tf2onnx
    except ImportError as e:
        raise ImportError(f"--onnx needs tf2onnx: {INSTALL_HINT}") from e
    return tf2onnx


def convert_signature(
    saved_model_dir: str,
    output_path: str | None = None,
    signature_key: str = IDS_SIGNATURE,
    *,
    seq_length: int | None = None,
    opset: int = OPSET,
) -> str:
    """Convert the signature ``signature_key`` of the SavedModel ``saved_model_dir`` to an ONNX file.

    Args:
      saved_model_dir: an export of this package.
      output_path: where to write; default ``<saved_model_dir>/model.onnx`` (written under a temporary name and
        renamed when complete).
      signature_key: a token-id signature (default ``serve_token_ids``, every task's; a RACE export written before
        that name was shared has ``serve_ids``, found under the default too).
      seq_length: the sequence length the file takes (default the export's ``max_seq_length``); any batch.
      opset: the ONNX opset.

    Returns the path written. Raises ``ValueError`` for an unknown signature or one that captures more than its
    variables (the raw-text signatures), ``ImportError`` without tf2onnx.
    """
    tf2onnx = _tf2onnx()
    tf = _import_tensorflow()
    loaded = tf.saved_model.load(saved_model_dir)
    signature_key = signature_named(loaded.signatures, signature_key, saved_model_dir)
    fn = loaded.signatures[signature_key]
    if not captures_only_variables(fn):
        raise ValueError(f"signature {signature_key!r} of {saved_model_dir} holds more than its variables (a raw-text "
                         "signature's tokenizer): only the token-id signatures convert to ONNX")
    specs = pinned_input_specs(fn, export_seq_length(saved_model_dir) if seq_length is None else seq_length)
    names = sorted(specs)
    signature = [specs[k] for k in names]

    @tf.function(input_signature=signature)
    def pinned(*tensors):
        return fn(**dict(zip(names, tensors, strict=True)))

    path = output_path or posixpath.join(saved_model_dir, DEFAULT_FILENAME)
    with tempfile.TemporaryDirectory(prefix="albert_onnx_") as scratch:  # tf2onnx writes local files only
        local = os.path.join(scratch, "model.onnx")
        tf2onnx.convert.from_function(pinned, input_signature=signature, opset=opset, output_path=local)
        with open(local, "rb") as f:
            content = f.read()
    parent = posixpath.dirname(path)
    if parent:
        files.makedirs(parent)
    files.write_bytes_atomic(path, content)
    return path


def run_onnx(path: str, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the ONNX file ``path`` with ONNX Runtime (CPU) on ``feeds`` (input name -> array, cast to the file's
    integer type); returns output name -> array. ``ValueError`` names missing or unknown inputs."""
    try:
        import onnxruntime
    except ImportError as e:
        raise ImportError(f"running an ONNX file needs onnxruntime: {INSTALL_HINT}") from e
    with files.open_file(path, "rb") as f:
        session = onnxruntime.InferenceSession(f.read(), providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in session.get_inputs()}
    missing, extra = sorted(set(inputs) - set(feeds)), sorted(set(feeds) - set(inputs))
    if missing or extra:
        raise ValueError(f"{path} takes inputs {sorted(inputs)}; missing {missing}, unknown {extra}")
    dtypes = {"tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(float)": np.float32}
    arrays = {k: np.asarray(v).astype(dtypes.get(inputs[k].type, None) or np.asarray(v).dtype, copy=False)
              for k, v in feeds.items()}
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, arrays), strict=True))
