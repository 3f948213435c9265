"""Hugging Face ``config.json`` <-> :class:`AlbertConfig`: the key and activation mapping of the two configs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from albert_tf.checkpoints.report import ConfigMismatchError

_ACT_FROM_HF = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "gelu": "gelu_exact", "relu": "relu", "tanh": "tanh"}
_ACT_TO_HF = {"gelu": "gelu_new", "gelu_new": "gelu_new", "gelu_exact": "gelu", "relu": "relu", "tanh": "tanh"}
_SHARED_KEYS = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "num_hidden_groups",
    "num_attention_heads",
    "intermediate_size",
    "inner_group_num",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
)


def albert_config_from_huggingface(hf_config: Mapping[str, Any]) -> Any:
    """An :class:`AlbertConfig` from a transformers ``AlbertConfig`` dict (``config.json``).

    ``gelu_new`` (tanh approximation) becomes the official ``gelu``; HF's exact ``gelu``
    becomes ``gelu_exact``. A ``layer_norm_eps`` other than 1e-12 or a non-absolute position
    embedding cannot be reproduced and raises.
    """
    from albert_tf.config import AlbertConfig, ConfigError

    data = dict(hf_config)
    model_type = data.get("model_type", "albert")
    if model_type != "albert":
        raise ConfigError(f"Hugging Face config: model_type {model_type!r} is not 'albert'")
    eps = float(data.get("layer_norm_eps", 1e-12))
    if abs(eps - 1e-12) > 1e-15:
        raise ConfigError(f"Hugging Face config: layer_norm_eps {eps} is not ALBERT's 1e-12 (not supported)")
    pos = data.get("position_embedding_type", "absolute")
    if pos != "absolute":
        raise ConfigError(f"Hugging Face config: position_embedding_type {pos!r} is not supported (absolute only)")
    act = data.get("hidden_act", "gelu_new")
    if act not in _ACT_FROM_HF:
        raise ConfigError(f"Hugging Face config: hidden_act {act!r} is not supported")
    values = {k: data[k] for k in _SHARED_KEYS if k in data}
    values["hidden_act"] = _ACT_FROM_HF[act]
    return AlbertConfig.from_dict(values, source="Hugging Face config")


def huggingface_config_from_albert(config: Any, architecture: str = "AlbertForPreTraining") -> dict[str, Any]:
    """A transformers ``config.json`` dict for ``config`` (``hidden_act`` gelu -> gelu_new)."""
    act = config.hidden_act or "linear"
    out = {k: getattr(config, k) for k in _SHARED_KEYS}
    out.update(
        {
            "architectures": [architecture],
            "model_type": "albert",
            "hidden_act": _ACT_TO_HF.get(act, act),
            "layer_norm_eps": 1e-12,
            "position_embedding_type": "absolute",
            "tie_word_embeddings": True,
        }
    )
    return out


def check_configs_agree(expected: Any, found: Any, source: str) -> None:
    """Raise :class:`ConfigMismatchError` naming the first architecture keys that differ."""
    keys = _SHARED_KEYS[:8] + ("max_position_embeddings", "type_vocab_size", "hidden_act")
    diffs = [
        f"{k} {getattr(found, k)!r} in the checkpoint vs {getattr(expected, k)!r} in the config"
        for k in keys
        if getattr(found, k) != getattr(expected, k)
    ]
    if diffs:
        raise ConfigMismatchError(f"{source}: checkpoint and config disagree: " + "; ".join(diffs))
