"""Hugging Face ``transformers`` ALBERT weights in and out, through the official TF1 names.

Every HF parameter name is mapped to the official TF1 name (official ``modeling.py`` scopes) by an explicit table
(not a chain of string replaces), with a flag saying whether the array is transposed: torch
``nn.Linear.weight`` is stored [out, in], TF kernels [in, out]; the official ``output_weights``
heads are already [out, in] and map to HF ``*.weight`` untransposed. Loading then goes through
:func:`albert_tf.checkpoints.report.assign_official_arrays`, so HF and official checkpoints
share one path into the model.

Export writes ``model.safetensors`` + ``config.json`` that
``transformers.AlbertForPreTraining.from_pretrained(dir)`` (or ``AlbertModel``) loads with
no missing or unexpected keys, and keras-hub's ``AlbertBackbone.from_preset(dir)`` too (every
backbone name carries the ``albert.`` prefix, which keras-hub requires and transformers strips).
The tied MLM decoder (``predictions.decoder.weight`` = word embeddings,
``predictions.decoder.bias`` = ``predictions.bias``) is not written, as HF does.
``hidden_act``: the official ``gelu`` is the tanh approximation, which HF calls ``gelu_new``;
HF's ``gelu`` is the exact erf form, our opt-in ``gelu_exact``.

Given the model's tokenizer (a SentencePiece ``.model`` or a WordPiece ``vocab.txt``), export
also writes the tokenizer files (``spiece.model`` + ``tokenizer.json`` or ``vocab.txt``, with
``tokenizer_config.json`` and ``special_tokens_map.json``). Without them transformers silently
builds a 5-token tokenizer from the directory and keras-hub refuses it.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from albert_tf import files as _fs
from albert_tf.checkpoints.huggingface_config import (
    SPM_SPECIAL_TOKENS,
    WORDPIECE_SPECIAL_TOKENS,
    albert_config_from_huggingface,
    check_configs_agree,
    check_sentencepiece_proto,
    huggingface_config_from_albert,
    sentencepiece_tokenizer_config,
    sentencepiece_tokenizer_json,
    wordpiece_tokenizer_config,
)
from albert_tf.checkpoints.report import (
    CheckpointError,
    LoadReport,
    NotAlbertCheckpointError,
    assign_official_arrays,
    model_official_arrays,
)
from albert_tf.files import makedirs, write_bytes_atomic

HF_PREFIX = "albert."

# Official name -> (HF name without the "albert." prefix for backbone names, transposed?).
_BACKBONE = {
    "bert/embeddings/word_embeddings": ("embeddings.word_embeddings.weight", False),
    "bert/embeddings/token_type_embeddings": ("embeddings.token_type_embeddings.weight", False),
    "bert/embeddings/position_embeddings": ("embeddings.position_embeddings.weight", False),
    "bert/embeddings/LayerNorm/gamma": ("embeddings.LayerNorm.weight", False),
    "bert/embeddings/LayerNorm/beta": ("embeddings.LayerNorm.bias", False),
    "bert/encoder/embedding_hidden_mapping_in/kernel": ("encoder.embedding_hidden_mapping_in.weight", True),
    "bert/encoder/embedding_hidden_mapping_in/bias": ("encoder.embedding_hidden_mapping_in.bias", False),
    "bert/pooler/dense/kernel": ("pooler.weight", True),
    "bert/pooler/dense/bias": ("pooler.bias", False),
}

# Suffix under group_{g}/inner_group_{k} -> suffix under albert_layer_groups.{g}.albert_layers.{k}.
_BLOCK = {
    "attention_1/self/query/kernel": ("attention.query.weight", True),
    "attention_1/self/query/bias": ("attention.query.bias", False),
    "attention_1/self/key/kernel": ("attention.key.weight", True),
    "attention_1/self/key/bias": ("attention.key.bias", False),
    "attention_1/self/value/kernel": ("attention.value.weight", True),
    "attention_1/self/value/bias": ("attention.value.bias", False),
    "attention_1/output/dense/kernel": ("attention.dense.weight", True),
    "attention_1/output/dense/bias": ("attention.dense.bias", False),
    "LayerNorm/gamma": ("attention.LayerNorm.weight", False),
    "LayerNorm/beta": ("attention.LayerNorm.bias", False),
    "ffn_1/intermediate/dense/kernel": ("ffn.weight", True),
    "ffn_1/intermediate/dense/bias": ("ffn.bias", False),
    "ffn_1/intermediate/output/dense/kernel": ("ffn_output.weight", True),
    "ffn_1/intermediate/output/dense/bias": ("ffn_output.bias", False),
    "LayerNorm_1/gamma": ("full_layer_layer_norm.weight", False),
    "LayerNorm_1/beta": ("full_layer_layer_norm.bias", False),
}

# Heads (HF names are top level, outside "albert.").
_HEADS = {
    "cls/predictions/transform/dense/kernel": ("predictions.dense.weight", True),
    "cls/predictions/transform/dense/bias": ("predictions.dense.bias", False),
    "cls/predictions/transform/LayerNorm/gamma": ("predictions.LayerNorm.weight", False),
    "cls/predictions/transform/LayerNorm/beta": ("predictions.LayerNorm.bias", False),
    "cls/predictions/output_bias": ("predictions.bias", False),
    "cls/seq_relationship/output_weights": ("sop_classifier.classifier.weight", False),
    "cls/seq_relationship/output_bias": ("sop_classifier.classifier.bias", False),
    # run_classifier.py / run_race.py <-> AlbertForSequenceClassification / AlbertForMultipleChoice
    "output_weights": ("classifier.weight", False),
    "output_bias": ("classifier.bias", False),
    # run_squad_v1.py <-> AlbertForQuestionAnswering (start = row 0, end = row 1 in both)
    "cls/squad/output_weights": ("qa_outputs.weight", False),
    "cls/squad/output_bias": ("qa_outputs.bias", False),
}

# HF names that carry no information of their own: tied copies and non-persistent buffers.
_TIED_ALIASES = {
    "predictions.decoder.weight": "bert/embeddings/word_embeddings",
    "predictions.decoder.bias": "cls/predictions/output_bias",
}
_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")

_BLOCK_RE = re.compile(r"^bert/encoder/transformer/group_(\d+)/inner_group_(\d+)/(.+)$")
_HF_BLOCK_RE = re.compile(r"^encoder\.albert_layer_groups\.(\d+)\.albert_layers\.(\d+)\.(.+)$")
_HF_BACKBONE = {hf: (off, t) for off, (hf, t) in _BACKBONE.items()}
_HF_BLOCK = {hf: (off, t) for off, (hf, t) in _BLOCK.items()}
_HF_HEADS = {hf: (off, t) for off, (hf, t) in _HEADS.items()}


def official_to_huggingface_name(name: str) -> tuple[str, bool] | None:
    """``(HF parameter name, transposed?)`` for an official TF1 name, or None if HF has none."""
    if name in _BACKBONE:
        hf, t = _BACKBONE[name]
        return HF_PREFIX + hf, t
    m = _BLOCK_RE.match(name)
    if m and m.group(3) in _BLOCK:
        hf, t = _BLOCK[m.group(3)]
        return f"{HF_PREFIX}encoder.albert_layer_groups.{m.group(1)}.albert_layers.{m.group(2)}.{hf}", t
    if name in _HEADS:
        return _HEADS[name]
    return None


def huggingface_to_official_name(hf_name: str) -> tuple[str, bool] | None:
    """``(official TF1 name, transposed?)`` for an HF ALBERT parameter (``albert.`` optional)."""
    if hf_name in _HF_HEADS:
        return _HF_HEADS[hf_name]
    name = hf_name[len(HF_PREFIX) :] if hf_name.startswith(HF_PREFIX) else hf_name
    if name in _HF_BACKBONE:
        return _HF_BACKBONE[name]
    m = _HF_BLOCK_RE.match(name)
    if m and m.group(3) in _HF_BLOCK:
        off, t = _HF_BLOCK[m.group(3)]
        return f"bert/encoder/transformer/group_{m.group(1)}/inner_group_{m.group(2)}/{off}", t
    return None


def _to_numpy(value: Any) -> np.ndarray:
    """A float32 (or integer) numpy array from a numpy array or a torch tensor, without importing torch."""
    if hasattr(value, "detach"):  # torch.Tensor
        value = value.detach().cpu()
        if value.is_floating_point():
            value = value.float()
        value = value.numpy()
    value = np.asarray(value)
    return value.astype(np.float32) if value.dtype.kind == "f" else value


def huggingface_to_official_arrays(
    state_dict: Mapping[str, Any], source: str = "state dict"
) -> tuple[dict[str, np.ndarray], list[str], list[str]]:
    """Rename an HF ALBERT state dict to official names and layouts.

    Returns ``(arrays, ignored, unknown)``: ``ignored`` are buffers and tied copies that
    equal what they are tied to; ``unknown`` are HF names with no official counterpart
    (kept so the report lists them as unused). A tied copy that differs from its source is
    reported as unknown rather than silently dropped.
    """
    names = list(state_dict)
    if names and not any(huggingface_to_official_name(n) for n in names):
        raise NotAlbertCheckpointError(
            f"{source}: no ALBERT parameter names (expected e.g. 'albert.embeddings.word_embeddings.weight'); "
            f"first name {names[0]!r}"
        )
    arrays: dict[str, np.ndarray] = {}
    ignored: list[str] = []
    aliases: dict[str, np.ndarray] = {}
    unknown: list[str] = []
    for hf_name in names:
        bare = hf_name[len(HF_PREFIX) :] if hf_name.startswith(HF_PREFIX) else hf_name
        if bare in _BUFFERS:
            ignored.append(hf_name)
            continue
        if hf_name in _TIED_ALIASES:
            aliases[hf_name] = _to_numpy(state_dict[hf_name])
            continue
        mapped = huggingface_to_official_name(hf_name)
        if mapped is None:
            unknown.append(hf_name)
            continue
        official, transposed = mapped
        value = _to_numpy(state_dict[hf_name])
        arrays[official] = np.ascontiguousarray(value.T) if transposed else value
    for hf_name, value in aliases.items():
        target = _TIED_ALIASES[hf_name]
        if target not in arrays:
            arrays[target] = value  # e.g. an untied export that kept only the decoder copy
            continue
        if arrays[target].shape == value.shape and np.array_equal(arrays[target], value):
            ignored.append(hf_name)
        else:
            unknown.append(hf_name)
    return arrays, ignored, unknown


def official_to_huggingface_arrays(arrays: Mapping[str, np.ndarray], config: Any) -> dict[str, np.ndarray]:
    """Official-name arrays -> an HF state dict (numpy). Raises on names HF cannot hold.

    When E == H the official model has no ``embedding_hidden_mapping_in`` but HF always
    applies one, so an identity kernel and zero bias are written (exactly equivalent).
    """
    out: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        mapped = official_to_huggingface_name(name)
        if mapped is None:
            raise CheckpointError(f"variable {name!r} has no Hugging Face ALBERT counterpart")
        hf, transposed = mapped
        value = np.asarray(value, dtype=np.float32)
        out[hf] = np.ascontiguousarray(value.T) if transposed else np.ascontiguousarray(value)
    mapping_w = HF_PREFIX + "encoder.embedding_hidden_mapping_in.weight"
    if mapping_w not in out and config.embedding_size == config.hidden_size:
        out[mapping_w] = np.eye(config.hidden_size, dtype=np.float32)
        out[HF_PREFIX + "encoder.embedding_hidden_mapping_in.bias"] = np.zeros(config.hidden_size, np.float32)
    return out


# ---------------------------------------------------------------------------- model in / out


def load_huggingface_state_dict(
    model: Any,
    state_dict: Mapping[str, Any],
    hf_config: Mapping[str, Any] | None = None,
    *,
    source: str = "Hugging Face state dict",
) -> LoadReport:
    """Load a transformers ``AlbertForPreTraining`` / ``AlbertModel`` (or task model) state dict.

    Values may be numpy arrays or torch tensors; the ``albert.`` prefix is optional. When
    ``hf_config`` is given and the model exposes ``.config``, the two must describe the same
    architecture.
    """
    from albert_tf.checkpoints.official import effective_config

    config = effective_config(model)
    if hf_config is not None and config is not None:
        check_configs_agree(config, albert_config_from_huggingface(hf_config), source)
    arrays, ignored, unknown = huggingface_to_official_arrays(state_dict, source=source)
    if config is not None and config.embedding_size == config.hidden_size:
        check_identity_projection(arrays, source)
    report = assign_official_arrays(model, arrays, source=source, ignored=ignored)
    report.unused.extend(unknown)
    return report


def check_identity_projection(arrays: Mapping[str, np.ndarray], source: str) -> None:
    """Refuse an E == H load whose HF ``embedding_hidden_mapping_in`` is not the identity.

    HF's ALBERT always applies that projection; the official model (and ours) has none when
    E == H. An identity kernel with zero bias is exactly equivalent and is left unused; any other
    projection would silently change every output, so it is an error.
    """
    kernel = arrays.get("bert/encoder/embedding_hidden_mapping_in/kernel")
    bias = arrays.get("bert/encoder/embedding_hidden_mapping_in/bias")
    if kernel is None:
        return
    n = kernel.shape[0]
    identity = kernel.shape == (n, n) and np.array_equal(kernel, np.eye(n, dtype=kernel.dtype))
    if not identity or (bias is not None and np.any(bias != 0)):
        raise CheckpointError(
            f"{source}: embedding_size == hidden_size, so the ALBERT model has no embedding_hidden_mapping_in, "
            "but the Hugging Face weights apply a non-identity one; the outputs would differ"
        )


def read_huggingface_config(path: str) -> dict[str, Any]:
    """The ``config.json`` dict of an HF model directory (local or ``gs://``, through ``tf.io.gfile``); one-line
    errors for a bad directory or JSON."""
    path = os.fspath(path)
    if not _fs.isdir(path):
        raise CheckpointError(f"{path}: not a directory (a Hugging Face model is a directory with config.json)")
    config_path = os.path.join(path, "config.json")
    if not _fs.exists(config_path):
        raise CheckpointError(f"{path}: no config.json in the Hugging Face model directory")
    try:
        return json.loads(_fs.read_text(config_path))
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{config_path}: line {e.lineno}: not valid JSON ({e.msg})") from None


def read_huggingface_dir(path: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``(state dict as numpy, config dict)`` from an HF model directory.

    Reads ``model.safetensors`` (or the sharded ``model.safetensors.index.json``), else
    ``pytorch_model.bin`` through ``torch.load(weights_only=True)`` (no arbitrary unpickling). The directory may be
    local or on any TensorFlow filesystem (``gs://``): every file is found and read through ``tf.io.gfile``.
    """
    path = os.fspath(path)
    hf_config = read_huggingface_config(path)
    single = os.path.join(path, "model.safetensors")
    index = os.path.join(path, "model.safetensors.index.json")
    binary = os.path.join(path, "pytorch_model.bin")
    if _fs.exists(single) or _fs.exists(index):
        files = [single]
        if not _fs.exists(single):
            weight_map = json.loads(_fs.read_text(index))["weight_map"]
            files = [os.path.join(path, n) for n in sorted(set(weight_map.values()))]
        state: dict[str, Any] = {}
        for file in files:
            state.update(_load_safetensors(file))
        return state, hf_config
    if _fs.exists(binary):
        try:
            import torch
        except ImportError:
            raise CheckpointError(f"{binary}: reading pytorch_model.bin needs torch (pip install torch)") from None
        source = io.BytesIO(_fs.read_bytes(binary)) if _fs.is_remote(binary) else binary
        return dict(torch.load(source, map_location="cpu", weights_only=True)), hf_config
    raise CheckpointError(f"{path}: no model.safetensors or pytorch_model.bin in the Hugging Face model directory")


def require_safetensors(path: str) -> None:
    """Raise a one-line :class:`CheckpointError` naming the fix when ``safetensors`` is not installed.

    Hugging Face weights are ``model.safetensors``; without the package every HF read or write
    would otherwise end in an ``ImportError`` traceback, possibly after a long conversion.
    """
    try:
        import safetensors.numpy  # noqa: F401 - only checking that it imports
    except ImportError:
        raise CheckpointError(
            f"{path}: Hugging Face weights (model.safetensors) need the safetensors package: pip install safetensors"
        ) from None


def _load_safetensors(file: str) -> dict[str, Any]:
    """numpy arrays; bfloat16/float16 files (numpy has no bfloat16) go through torch and become float32.

    A local file is memory-mapped (``safe_open``); a ``gs://``/``ram://`` file is read whole through
    ``tf.io.gfile`` and parsed from its bytes (``safetensors`` itself opens local paths only).
    """
    require_safetensors(file)
    data = _fs.read_bytes(file) if _fs.is_remote(file) else None
    try:
        if data is not None:
            from safetensors.numpy import load

            return dict(load(data))
        from safetensors import safe_open

        with safe_open(file, framework="numpy") as f:
            return {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - safe_open has keys(), not iteration
    except (TypeError, ValueError):
        pass
    try:
        from safetensors.torch import load, load_file
    except ImportError:
        raise CheckpointError(f"{file}: holds bfloat16 tensors; reading them needs torch (pip install torch)") from None
    tensors = load(data) if data is not None else load_file(file)
    return {k: _to_numpy(v) for k, v in tensors.items()}


def load_huggingface(model: Any, path: str) -> LoadReport:
    """Load an HF model directory (``config.json`` + weights) into ``model``."""
    state, hf_config = read_huggingface_dir(path)
    return load_huggingface_state_dict(model, state, hf_config, source=os.fspath(path))


def model_to_huggingface_state_dict(model: Any, config: Any | None = None) -> dict[str, np.ndarray]:
    """Our model's weights as a transformers ALBERT state dict (numpy, float32)."""
    from albert_tf.checkpoints.official import effective_config

    return official_to_huggingface_arrays(model_official_arrays(model), effective_config(model, config))


def save_huggingface(
    model: Any,
    output_dir: str,
    config: Any | None = None,
    *,
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
) -> list[str]:
    """Write ``model.safetensors`` + ``config.json`` loadable by transformers, and the tokenizer when given.

    Returns the files written. See :func:`save_huggingface_arrays` for the tokenizer arguments.
    """
    from albert_tf.checkpoints.official import effective_config
    from albert_tf.modeling.multiple_choice import AlbertMultipleChoice

    # RACE's head (output_weights [1, H]) has the names and shape of a one-label classifier: only the
    # model class tells them apart.
    architecture = "AlbertForMultipleChoice" if isinstance(model, AlbertMultipleChoice) else None
    return save_huggingface_arrays(
        model_official_arrays(model),
        effective_config(model, config),
        output_dir,
        spm_model_file=spm_model_file,
        vocab_file=vocab_file,
        do_lower_case=do_lower_case,
        architecture=architecture,
    )


def save_huggingface_arrays(
    arrays: Mapping[str, np.ndarray],
    config: Any,
    output_dir: str,
    *,
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    architecture: str | None = None,
) -> list[str]:
    """Official-name arrays -> ``model.safetensors`` + ``config.json`` (+ tokenizer files) in ``output_dir``.

    The architecture follows the heads present: ``AlbertForPreTraining`` (MLM + SOP),
    ``AlbertForQuestionAnswering`` (SQuAD v1 head), ``AlbertForSequenceClassification``
    (``output_weights``), else ``AlbertModel``; ``architecture="AlbertForMultipleChoice"`` names a
    RACE head (``output_weights`` [1, H], which the arrays alone cannot tell from a regression head).
    Backbone names always carry the ``albert.`` prefix (transformers' ``AlbertModel`` loads them;
    keras-hub needs them).

    ``spm_model_file`` (SentencePiece) or ``vocab_file`` (WordPiece) adds the tokenizer files of
    :func:`huggingface_tokenizer_files`; they are checked against ``config.vocab_size`` before
    anything is written, so a wrong tokenizer leaves ``output_dir`` untouched.
    """
    require_safetensors(output_dir)
    from safetensors.numpy import save

    tokenizer: dict[str, bytes] = {}
    if spm_model_file or vocab_file:
        tokenizer = huggingface_tokenizer_files(
            spm_model_file=spm_model_file,
            vocab_file=vocab_file,
            do_lower_case=do_lower_case,
            vocab_size=config.vocab_size,
            model_max_length=config.max_position_embeddings,
        )
    state = official_to_huggingface_arrays(arrays, config)
    heads = {n for n in state if not n.startswith(HF_PREFIX)}
    pretraining = heads & {"predictions.bias", "sop_classifier.classifier.weight"}
    task = heads & {"classifier.weight", "qa_outputs.weight"}
    if pretraining and task:
        raise CheckpointError(
            f"{output_dir}: no single transformers ALBERT class holds both the pretraining heads and "
            f"{', '.join(sorted(task))}"
        )
    if architecture == "AlbertForMultipleChoice":
        weight = state.get("classifier.weight")
        if heads != {"classifier.weight", "classifier.bias"} or tuple(weight.shape) != (1, config.hidden_size):
            raise CheckpointError(f"{output_dir}: AlbertForMultipleChoice needs exactly the head output_weights [1, H]")
    elif architecture is not None:
        raise ValueError(f"architecture must be None or 'AlbertForMultipleChoice', got {architecture!r}")
    elif pretraining:
        architecture = "AlbertForPreTraining"
    elif "qa_outputs.weight" in heads:
        architecture = "AlbertForQuestionAnswering"
    elif "classifier.weight" in heads:
        architecture = "AlbertForSequenceClassification"
    else:
        architecture = "AlbertModel"
    hf_config = huggingface_config_from_albert(config, architecture)
    if architecture in ("AlbertForQuestionAnswering", "AlbertForSequenceClassification"):
        rows = int(state.get("classifier.weight", state.get("qa_outputs.weight")).shape[0])
        hf_config["id2label"] = {str(i): f"LABEL_{i}" for i in range(rows)}
        hf_config["label2id"] = {f"LABEL_{i}": i for i in range(rows)}
    files = {
        "model.safetensors": save(state, metadata={"format": "pt"}),
        "config.json": (json.dumps(hf_config, indent=2, sort_keys=True) + "\n").encode("utf-8"),
        **tokenizer,
    }
    return _write_files(output_dir, files)


# ---------------------------------------------------------------------------- tokenizer out

SPM_FILE = "spiece.model"  # the names transformers' AlbertTokenizer / BertTokenizer look for
WORDPIECE_FILE = "vocab.txt"


def _read_bytes(path: str, what: str) -> bytes:
    """The bytes of ``path`` through ``tf.io.gfile`` (local or remote); one-line error when it is missing."""

    if not _fs.exists(path) or _fs.isdir(path):
        raise CheckpointError(f"{path}: {what} not found")
    with _fs.open_file(path, "rb") as f:
        return f.read()


def _json_bytes(payload: Mapping[str, Any]) -> bytes:
    return (json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _parse_sentencepiece(data: bytes, source: str) -> Any:
    """A ``sentencepiece_model_pb2.ModelProto`` from the bytes of a ``.model`` file; one-line error otherwise."""
    from google.protobuf.message import DecodeError
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    try:
        proto.ParseFromString(data)
    except DecodeError:
        proto.Clear()
    if not proto.pieces:
        raise CheckpointError(f"{source}: not a SentencePiece model file")
    return proto


def huggingface_tokenizer_files(
    *,
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    vocab_size: int | None = None,
    model_max_length: int | None = None,
) -> dict[str, bytes]:
    """The tokenizer files of an HF model directory, by file name, checked but not written.

    SentencePiece (``spm_model_file``): ``spiece.model`` (a byte copy), ``tokenizer.json``,
    ``tokenizer_config.json`` (``AlbertTokenizer``) and ``special_tokens_map.json``. WordPiece
    (``vocab_file``): ``vocab.txt`` (a byte copy), ``tokenizer_config.json`` (``BertTokenizer``)
    and ``special_tokens_map.json``. Raises :class:`CheckpointError` when both or neither file is
    given, the file is missing or not a tokenizer, it lacks ALBERT's special tokens, or its size
    differs from ``vocab_size`` (the tokenizer of another model: every id would be wrong).
    """
    if bool(spm_model_file) == bool(vocab_file):
        raise CheckpointError("give exactly one of spm_model_file (SentencePiece) and vocab_file (WordPiece)")
    if spm_model_file:
        data = _read_bytes(spm_model_file, "SentencePiece model")
        proto = _parse_sentencepiece(data, spm_model_file)
        problems = check_sentencepiece_proto(proto, spm_model_file)
        size, source, specials = len(proto.pieces), spm_model_file, SPM_SPECIAL_TOKENS
    else:
        data = _read_bytes(vocab_file, "WordPiece vocab file")
        try:
            lines = data.decode("utf-8").split("\n")  # the official load_vocab: one token per readline()
        except UnicodeDecodeError as e:
            raise CheckpointError(f"{vocab_file}: not a UTF-8 WordPiece vocab file ({e.reason})") from None
        entries = [line.strip() for line in (lines[:-1] if lines[-1] == "" else lines)]
        missing = [t for t in dict.fromkeys(WORDPIECE_SPECIAL_TOKENS.values()) if t not in set(entries)]
        problems = [f"{vocab_file}: no WordPiece special token(s) {', '.join(missing)}"] if missing else []
        size, source, specials = len(entries), vocab_file, WORDPIECE_SPECIAL_TOKENS
    if vocab_size is not None and size != vocab_size:
        problems.append(
            f"{source}: {size} tokens but the model's vocab_size is {vocab_size} (the tokenizer of another model?)"
        )
    if problems:
        raise CheckpointError("; ".join(problems))
    special_map = _json_bytes(specials)
    if spm_model_file:
        add_prefix = bool(proto.normalizer_spec.add_dummy_prefix)
        return {
            SPM_FILE: data,
            "tokenizer.json": _json_bytes(sentencepiece_tokenizer_json(proto, do_lower_case)),
            "tokenizer_config.json": _json_bytes(
                sentencepiece_tokenizer_config(do_lower_case, model_max_length, add_prefix)
            ),
            "special_tokens_map.json": special_map,
        }
    return {
        WORDPIECE_FILE: data,
        "tokenizer_config.json": _json_bytes(wordpiece_tokenizer_config(do_lower_case, model_max_length)),
        "special_tokens_map.json": special_map,
    }


def _write_files(output_dir: str, files: Mapping[str, bytes]) -> list[str]:
    """Write ``{name: bytes}`` into ``output_dir`` (any ``tf.io.gfile`` filesystem), each file under a temporary
    name renamed when complete; returns the paths."""
    if not files:
        return []
    makedirs(output_dir)
    written = []
    for name, data in files.items():
        path = os.path.join(output_dir, name)
        write_bytes_atomic(path, data)
        written.append(path)
    return written


def save_huggingface_tokenizer(
    output_dir: str,
    *,
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    vocab_size: int | None = None,
    model_max_length: int | None = None,
) -> list[str]:
    """Write only the tokenizer files of :func:`huggingface_tokenizer_files` into ``output_dir``; returns them."""
    files = huggingface_tokenizer_files(
        spm_model_file=spm_model_file,
        vocab_file=vocab_file,
        do_lower_case=do_lower_case,
        vocab_size=vocab_size,
        model_max_length=model_max_length,
    )
    return _write_files(output_dir, files)
