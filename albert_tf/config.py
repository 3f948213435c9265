"""AlbertConfig: the official ``albert_config.json`` keys, validated, plus the packaged model configs by name.

The official ``AlbertConfig.from_dict`` copies every JSON key into ``__dict__`` and never
checks anything. We keep that tolerance for reading (unknown keys are preserved and written
back) but validate the keys the model uses, with one-line messages naming the key, so a bad
config fails before any Keras layer is built.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from dataclasses import dataclass, field, fields
from typing import Any

from albert_tf import files as _fs
from albert_tf.configs import UnknownNameError, model_config_path, model_configs

# Activations an ALBERT config may name. "gelu" is the tanh approximation (what the official
# code computes; Hugging Face calls it "gelu_new"); the exact erf GELU is opt-in as "gelu_exact".
ACTIVATIONS = ("gelu", "gelu_new", "gelu_exact", "relu", "tanh", "linear", "")

# Keys that released configs carry but the model never reads (the released ``albert_config.json`` files).
UNUSED_OFFICIAL_KEYS = ("down_scale_factor", "net_structure_type", "gap_size", "num_memory_blocks", "layers_to_keep")

SHARING_MODES = ("all", "attention", "ffn", "none")

#: The model configs shipped in ``albert_tf/configs`` (``AlbertConfig.from_name``, ``--albert_config_file=NAME``).
MODEL_CONFIGS = tuple(model_configs())

class ConfigError(ValueError):
    """A config value is missing or invalid; the message names the key."""


def _write_text(path: str, text: str) -> None:
    with _fs.open_file(path, "wb") as f:
        f.write(text.encode("utf-8"))


@dataclass
class AlbertConfig:
    """Hyper-parameters of an ALBERT model, named as in the official ``albert_config.json``.

    Defaults are the official constructor's (albert_xxlarge), except ``vocab_size`` which is
    required. ``extra`` holds every key we do not model, so a config read from disk is written
    back with nothing lost.
    """

    vocab_size: int | None = None
    embedding_size: int = 128
    hidden_size: int = 4096
    num_hidden_layers: int = 12
    num_hidden_groups: int = 1
    num_attention_heads: int = 64
    intermediate_size: int = 16384
    inner_group_num: int = 1
    down_scale_factor: int = 1
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Raise ConfigError (one line, naming the key) for a config the model cannot use."""
        if self.vocab_size is None:
            raise ConfigError("albert config: 'vocab_size' is required (rows of the word embedding table)")
        ints = (
            "vocab_size",
            "embedding_size",
            "hidden_size",
            "num_hidden_layers",
            "num_hidden_groups",
            "num_attention_heads",
            "intermediate_size",
            "inner_group_num",
            "max_position_embeddings",
            "type_vocab_size",
        )
        for key in ints:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"albert config: '{key}' must be a positive integer, got {value!r}")
        for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, key)
            if not isinstance(value, (int, float)) or not 0.0 <= float(value) < 1.0:
                raise ConfigError(f"albert config: '{key}' must be a probability in [0, 1), got {value!r}")
        if not isinstance(self.initializer_range, (int, float)) or self.initializer_range <= 0:
            raise ConfigError(f"albert config: 'initializer_range' must be > 0, got {self.initializer_range!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"albert config: 'hidden_size' ({self.hidden_size}) must be a multiple of "
                f"'num_attention_heads' ({self.num_attention_heads})"
            )
        if self.num_hidden_groups > self.num_hidden_layers:
            raise ConfigError(
                f"albert config: 'num_hidden_groups' ({self.num_hidden_groups}) cannot exceed "
                f"'num_hidden_layers' ({self.num_hidden_layers}): some groups would never be used"
            )
        act = self.hidden_act if self.hidden_act is not None else ""
        if act not in ACTIVATIONS:
            raise ConfigError(
                f"albert config: 'hidden_act' {self.hidden_act!r} is not supported; use one of "
                f"{', '.join(repr(a) for a in ACTIVATIONS if a)}"
            )

    def check_max_seq_length(self, max_seq_length: int) -> None:
        """Raise if sequences of ``max_seq_length`` cannot be embedded by this config."""
        if max_seq_length < 3:
            raise ConfigError(f"max_seq_length {max_seq_length} is too small: [CLS] x [SEP] needs at least 3")
        if max_seq_length > self.max_position_embeddings:
            raise ConfigError(
                f"max_seq_length {max_seq_length} exceeds the config's 'max_position_embeddings' "
                f"({self.max_position_embeddings})"
            )

    def check_vocab_size(self, pieces: int) -> None:
        """Raise if a tokenizer of ``pieces`` pieces does not belong to this config.

        Why: ids of another vocabulary embed silently wrong rows (or fail only inside a step)."""
        if int(pieces) != self.vocab_size:
            raise ConfigError(
                f"the tokenizer has {pieces} pieces but albert_config vocab_size is {self.vocab_size}: vocab and "
                "config do not belong together"
            )

    # ------------------------------------------------------------------ derived
    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def group_of_layer(self, layer_index: int) -> int:
        """Group used by layer ``l``: ``int(l / L * G)`` exactly as the official code."""
        return int(layer_index / self.num_hidden_layers * self.num_hidden_groups)

    # ------------------------------------------------------------------ (de)serialisation
    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "albert config") -> AlbertConfig:
        """Build from an official-style dict; unknown keys are kept in ``extra``."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)} - {"extra"}
        kwargs = {k: v for k, v in data.items() if k in known}
        extra = {k: copy.deepcopy(v) for k, v in data.items() if k not in known}
        extra.update(copy.deepcopy(data.get("extra", {})) if isinstance(data.get("extra"), dict) else {})
        extra.pop("extra", None)
        if kwargs.get("hidden_act") is None and "hidden_act" in kwargs:
            kwargs["hidden_act"] = ""
        try:
            return cls(**kwargs, extra=extra)
        except ConfigError as e:
            if source != "albert config":
                raise ConfigError(str(e).replace("albert config", source, 1)) from None
            raise

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> AlbertConfig:
        """Read an official ``albert_config.json`` (or one of ours); local or any TensorFlow filesystem (``gs://``)."""
        path = os.fspath(path)
        if not _fs.exists(path):
            raise ConfigError(f"albert config file not found: {path}")
        try:
            data = json.loads(_fs.read_text(path))
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None
        except UnicodeDecodeError as e:
            raise ConfigError(f"{path}: not a JSON config: a binary file (not UTF-8 text at byte {e.start})") from None
        return cls.from_dict(data, source=path)

    @classmethod
    def from_name(cls, name: str) -> AlbertConfig:
        """One of the model configs shipped in ``albert_tf/configs`` by name, e.g. ``albert_base_v2``."""
        try:
            return cls.from_json_file(model_config_path(name))
        except UnknownNameError as e:
            raise ConfigError(str(e)) from None

    @classmethod
    def from_preset(cls, name: str) -> AlbertConfig:
        """The old spelling of :meth:`from_name` (a "preset" is released weights by name); warns."""
        warnings.warn("AlbertConfig.from_preset is now AlbertConfig.from_name", DeprecationWarning, stacklevel=2)
        return cls.from_name(name)

    @classmethod
    def load(cls, name_or_path: str) -> AlbertConfig:
        """A model config name or a path to a JSON file."""
        if name_or_path in MODEL_CONFIGS:
            return cls.from_name(name_or_path)
        return cls.from_json_file(name_or_path)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.name != "extra"}
        out.update(copy.deepcopy(self.extra))
        return out

    def to_json_string(self) -> str:
        """Same layout as the official ``to_json_string``: indent 2, sorted keys."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_json_string` to ``path`` (local or any TensorFlow filesystem, e.g. ``gs://``)."""
        _write_text(os.fspath(path), self.to_json_string())

    def replace(self, **changes: Any) -> AlbertConfig:
        """A validated copy with some fields changed."""
        data = self.to_dict()
        data.update(changes)
        return AlbertConfig.from_dict(data)
