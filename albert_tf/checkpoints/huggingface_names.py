"""The name table between Hugging Face ``transformers`` ALBERT parameters and the official TF1 names, and array
conversion both ways.

Every HF parameter name maps to one official name by an explicit table (not a chain of string replaces), with a
flag saying whether the array is transposed: torch ``nn.Linear.weight`` is stored [out, in], TF kernels [in, out];
the official ``output_weights`` heads are already [out, in] and map to HF ``*.weight`` untransposed. The fine-tuning
heads' entries come from the heads a caller passes (:mod:`albert_tf.checkpoints.heads`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from albert_tf.checkpoints.heads import TaskHead, huggingface_head_names
from albert_tf.checkpoints.names import OFFICIAL_BLOCK
from albert_tf.checkpoints.report import (
    CheckpointError,
    NotAlbertCheckpointError,
)

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

# The pretraining heads (HF names are top level, outside "albert."); the fine-tuning heads come from their task
# packages' declarations (albert_tf.checkpoints.heads).
_PRETRAINING_HEADS = {
    "cls/predictions/transform/dense/kernel": ("predictions.dense.weight", True),
    "cls/predictions/transform/dense/bias": ("predictions.dense.bias", False),
    "cls/predictions/transform/LayerNorm/gamma": ("predictions.LayerNorm.weight", False),
    "cls/predictions/transform/LayerNorm/beta": ("predictions.LayerNorm.bias", False),
    "cls/predictions/output_bias": ("predictions.bias", False),
    "cls/seq_relationship/output_weights": ("sop_classifier.classifier.weight", False),
    "cls/seq_relationship/output_bias": ("sop_classifier.classifier.bias", False),
}
PRETRAINING_HF_NAMES = {hf for hf, _ in _PRETRAINING_HEADS.values()}


def _head_table(heads: Iterable[TaskHead]) -> dict[str, tuple[str, bool]]:
    """official name -> (HF name, transposed?) of the pretraining heads and ``heads`` (stored as transformers
    stores them)."""
    return {**_PRETRAINING_HEADS, **{n: (hf, False) for n, hf in huggingface_head_names(heads).items()}}


# HF names that carry no information of their own: tied copies and non-persistent buffers.
_TIED_ALIASES = {
    "predictions.decoder.weight": "bert/embeddings/word_embeddings",
    "predictions.decoder.bias": "cls/predictions/output_bias",
}
_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")

_HF_BLOCK_RE = re.compile(r"^encoder\.albert_layer_groups\.(\d+)\.albert_layers\.(\d+)\.(.+)$")
_HF_BACKBONE = {hf: (off, t) for off, (hf, t) in _BACKBONE.items()}
_HF_BLOCK = {hf: (off, t) for off, (hf, t) in _BLOCK.items()}


def official_to_huggingface_name(name: str, heads: Iterable[TaskHead] = ()) -> tuple[str, bool] | None:
    """``(HF parameter name, transposed?)`` for an official TF1 name of the encoder, the pretraining heads or
    ``heads``, or None if HF has none."""
    if name in _BACKBONE:
        hf, t = _BACKBONE[name]
        return HF_PREFIX + hf, t
    m = OFFICIAL_BLOCK.match(name)
    if m and m.group(3) in _BLOCK:
        hf, t = _BLOCK[m.group(3)]
        return f"{HF_PREFIX}encoder.albert_layer_groups.{m.group(1)}.albert_layers.{m.group(2)}.{hf}", t
    return _head_table(heads).get(name)


def huggingface_to_official_name(hf_name: str, heads: Iterable[TaskHead] = ()) -> tuple[str, bool] | None:
    """``(official TF1 name, transposed?)`` for an HF ALBERT parameter (``albert.`` optional) of the encoder, the
    pretraining heads or ``heads``."""
    hf_heads = {hf: (off, t) for off, (hf, t) in _head_table(heads).items()}
    if hf_name in hf_heads:
        return hf_heads[hf_name]
    name = hf_name[len(HF_PREFIX) :] if hf_name.startswith(HF_PREFIX) else hf_name
    if name in _HF_BACKBONE:
        return _HF_BACKBONE[name]
    m = _HF_BLOCK_RE.match(name)
    if m and m.group(3) in _HF_BLOCK:
        off, t = _HF_BLOCK[m.group(3)]
        return f"bert/encoder/transformer/group_{m.group(1)}/inner_group_{m.group(2)}/{off}", t
    return None


def to_numpy(value: Any) -> np.ndarray:
    """A float32 (or integer) numpy array from a numpy array or a torch tensor, without importing torch."""
    if hasattr(value, "detach"):  # torch.Tensor
        value = value.detach().cpu()
        if value.is_floating_point():
            value = value.float()
        value = value.numpy()
    value = np.asarray(value)
    return value.astype(np.float32) if value.dtype.kind == "f" else value


def huggingface_to_official_arrays(
    state_dict: Mapping[str, Any], source: str = "state dict", heads: Iterable[TaskHead] = ()
) -> tuple[dict[str, np.ndarray], list[str], list[str]]:
    """Rename an HF ALBERT state dict to official names and layouts (the fine-tuning heads among ``heads``).

    Returns ``(arrays, ignored, unknown)``: ``ignored`` are buffers and tied copies that
    equal what they are tied to; ``unknown`` are HF names with no official counterpart
    (kept so the report lists them as unused). A tied copy that differs from its source is
    reported as unknown rather than silently dropped.
    """
    names = list(state_dict)
    heads = tuple(heads)
    if names and not any(huggingface_to_official_name(n, heads) for n in names):
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
            aliases[hf_name] = to_numpy(state_dict[hf_name])
            continue
        mapped = huggingface_to_official_name(hf_name, heads)
        if mapped is None:
            unknown.append(hf_name)
            continue
        official, transposed = mapped
        value = to_numpy(state_dict[hf_name])
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


def official_to_huggingface_arrays(
    arrays: Mapping[str, np.ndarray], config: Any, heads: Iterable[TaskHead] = ()
) -> dict[str, np.ndarray]:
    """Official-name arrays -> an HF state dict (numpy); the fine-tuning heads' names come from ``heads``. Raises on
    names HF cannot hold.

    When E == H the official model has no ``embedding_hidden_mapping_in`` but HF always
    applies one, so an identity kernel and zero bias are written (exactly equivalent).
    """
    heads = tuple(heads)
    out: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        mapped = official_to_huggingface_name(name, heads)
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
