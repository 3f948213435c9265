"""keras-hub presets in and out: the folders ``save_to_preset`` writes and ``from_preset`` reads.

A keras-hub preset folder holds ``config.json`` (``{"module": "keras_hub...", "class_name": "AlbertBackbone",
"config": {...}}``), ``metadata.json``, ``model.weights.h5``, and for a task ``task.json`` + ``task.weights.h5``,
for a tokenizer ``tokenizer.json`` + ``assets/tokenizer/vocabulary.spm``. keras-hub's own handles
(``albert_base_en_uncased``, ``kaggle://keras/albert/keras/albert_base_en_uncased``) name such a folder online.

Reading loads the preset with keras-hub (an optional extra: ``pip install 'albert-tf[keras_hub]'``) and turns its
variables into ``{official name: array}`` through the table below, so every loader and the load report treat it
like any other format; the config is read from ``config.json`` without keras-hub. Writing builds keras-hub's
``AlbertBackbone`` (and, where a carried head has a keras-hub task class, that task: ``AlbertTextClassifier``) from
the official arrays, with an ``AlbertTokenizer`` whose SentencePiece model does the official preprocessing
(:mod:`albert_tf.checkpoints.keras_hub_tokenizer`), and calls ``save_to_preset``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from albert_tf import files as _fs
from albert_tf.checkpoints.heads import TaskHead, head_rows, heads_of
from albert_tf.checkpoints.names import OFFICIAL_BLOCK
from albert_tf.checkpoints.report import CheckpointError, assign_official_arrays

INSTALL = "pip install 'albert-tf[keras_hub]'"
CONFIG_FILE = "config.json"
TASK_FILE = "task.json"
KAGGLE_SCHEME = "kaggle://"
BACKBONE_CLASS = "AlbertBackbone"
#: keras-hub's own ALBERT preset names (``keras_hub.models.AlbertBackbone.presets``), known without keras-hub so
#: that a name is routed to it (or to the line saying what to install) rather than called a misspelt path.
KERAS_HUB_PRESETS = ("albert_base_en_uncased", "albert_large_en_uncased", "albert_extra_large_en_uncased",
                     "albert_extra_extra_large_en_uncased")

# Official name -> keras-hub backbone variable path (the official shape is the keras-hub array reshaped: the
# attention kernels are [H, heads, head size] / [heads, head size, H] there, [H, H] in the official layout).
_BACKBONE = {
    "bert/embeddings/word_embeddings": "token_embedding/embeddings",
    "bert/embeddings/token_type_embeddings": "segment_embedding/embeddings",
    "bert/embeddings/position_embeddings": "position_embedding/embeddings",
    "bert/embeddings/LayerNorm/gamma": "embeddings_layer_norm/gamma",
    "bert/embeddings/LayerNorm/beta": "embeddings_layer_norm/beta",
    "bert/encoder/embedding_hidden_mapping_in/kernel": "embedding_projection/kernel",
    "bert/encoder/embedding_hidden_mapping_in/bias": "embedding_projection/bias",
    "bert/pooler/dense/kernel": "pooled_dense/kernel",
    "bert/pooler/dense/bias": "pooled_dense/bias",
}
# Suffix under group_{g}/inner_group_{k} -> suffix under group_{g}_inner_layer_{k}.
_BLOCK = {
    "attention_1/self/query/kernel": "self_attention_layer/query/kernel",
    "attention_1/self/query/bias": "self_attention_layer/query/bias",
    "attention_1/self/key/kernel": "self_attention_layer/key/kernel",
    "attention_1/self/key/bias": "self_attention_layer/key/bias",
    "attention_1/self/value/kernel": "self_attention_layer/value/kernel",
    "attention_1/self/value/bias": "self_attention_layer/value/bias",
    "attention_1/output/dense/kernel": "self_attention_layer/attention_output/kernel",
    "attention_1/output/dense/bias": "self_attention_layer/attention_output/bias",
    "LayerNorm/gamma": "self_attention_layer_norm/gamma",
    "LayerNorm/beta": "self_attention_layer_norm/beta",
    "ffn_1/intermediate/dense/kernel": "feedforward_intermediate_dense/kernel",
    "ffn_1/intermediate/dense/bias": "feedforward_intermediate_dense/bias",
    "ffn_1/intermediate/output/dense/kernel": "feedforward_output_dense/kernel",
    "ffn_1/intermediate/output/dense/bias": "feedforward_output_dense/bias",
    "LayerNorm_1/gamma": "feedforward_layer_norm/gamma",
    "LayerNorm_1/beta": "feedforward_layer_norm/beta",
}
_KERAS_HUB_BLOCK = re.compile(r"^group_(\d+)_inner_layer_(\d+)/(.+)$")
_KERAS_HUB_BACKBONE = {path: name for name, path in _BACKBONE.items()}
_KERAS_HUB_BLOCK_NAMES = {path: name for name, path in _BLOCK.items()}


def official_name(path: str) -> str | None:
    """The official name of a keras-hub ``AlbertBackbone`` variable path, or None."""
    if path in _KERAS_HUB_BACKBONE:
        return _KERAS_HUB_BACKBONE[path]
    m = _KERAS_HUB_BLOCK.match(path)
    if m and m.group(3) in _KERAS_HUB_BLOCK_NAMES:
        suffix = _KERAS_HUB_BLOCK_NAMES[m.group(3)]
        return f"bert/encoder/transformer/group_{m.group(1)}/inner_group_{m.group(2)}/{suffix}"
    return None


def keras_hub_path(name: str) -> str | None:
    """The keras-hub ``AlbertBackbone`` variable path of an official encoder name, or None."""
    if name in _BACKBONE:
        return _BACKBONE[name]
    m = OFFICIAL_BLOCK.match(name)
    if m and m.group(3) in _BLOCK:
        return f"group_{m.group(1)}_inner_layer_{m.group(2)}/{_BLOCK[m.group(3)]}"
    return None


# ------------------------------------------------------------------------------------------------ what a path is


def _read_json(path: str) -> Any:
    try:
        return json.loads(_fs.read_text(path))
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path}: not valid JSON ({str(e).splitlines()[0]})") from None


def is_keras_hub_folder(path: str) -> bool:
    """Whether ``path`` is a folder keras-hub's ``save_to_preset`` wrote: its ``config.json`` names a keras-hub
    class (a Hugging Face ``config.json`` has a ``model_type`` instead)."""
    config = os.path.join(os.fspath(path), CONFIG_FILE)
    if not (_fs.isdir(path) and _fs.exists(config)):
        return False
    try:
        data = json.loads(_fs.read_text(config))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and str(data.get("module", "")).startswith("keras_hub")


def is_keras_hub_handle(value: str | os.PathLike | None) -> bool:
    """Whether ``value`` is one of keras-hub's own ALBERT handles (not a path): ``kaggle://...`` or a keras-hub
    preset name (:data:`KERAS_HUB_PRESETS`) that is no file here."""
    if not value:
        return False
    value = os.fspath(value)
    return value.startswith(KAGGLE_SCHEME) or (value in KERAS_HUB_PRESETS and not _fs.exists(value))


def is_keras_hub(value: str | os.PathLike | None) -> bool:
    """Whether ``value`` names a keras-hub preset: one of keras-hub's handles or a folder ``save_to_preset`` wrote."""
    return bool(value) and (is_keras_hub_handle(value) or is_keras_hub_folder(os.fspath(value)))


def require_keras_hub() -> Any:
    """The ``keras_hub`` module, or a one-line :class:`CheckpointError` saying what to install."""
    try:
        import keras_hub
    except ImportError:
        raise CheckpointError(f"reading or writing a keras-hub preset needs keras-hub: {INSTALL}") from None
    return keras_hub


def backbone_config(path: str) -> dict[str, Any]:
    """The ``AlbertBackbone`` arguments in a keras-hub preset folder's ``config.json`` (read without keras-hub);
    one line for a folder whose backbone is not ALBERT's."""
    file = os.path.join(os.fspath(path), CONFIG_FILE)
    data = _read_json(file)
    name = data.get("class_name") if isinstance(data, dict) else None
    if name != BACKBONE_CLASS or not isinstance(data.get("config"), dict):
        raise CheckpointError(f"{file}: a keras-hub {name or 'preset'}, not an {BACKBONE_CLASS}")
    return data["config"]


def albert_config_from_keras_hub(arguments: Mapping[str, Any], source: str = "keras-hub config") -> Any:
    """An :class:`AlbertConfig` from ``AlbertBackbone`` arguments (keras-hub's ALBERT has the official ``gelu``,
    the tanh approximation, and one dropout rate for both of ALBERT's)."""
    from albert_tf.config import AlbertConfig

    try:
        values = {
            "vocab_size": arguments["vocabulary_size"],
            "embedding_size": arguments["embedding_dim"],
            "hidden_size": arguments["hidden_dim"],
            "num_hidden_layers": arguments["num_layers"],
            "num_hidden_groups": arguments.get("num_groups", 1),
            "inner_group_num": arguments.get("num_inner_repetitions", 1),
            "num_attention_heads": arguments["num_heads"],
            "intermediate_size": arguments["intermediate_dim"],
            "hidden_act": "gelu",
            "hidden_dropout_prob": arguments.get("dropout", 0.0),
            "attention_probs_dropout_prob": arguments.get("dropout", 0.0),
            "max_position_embeddings": arguments.get("max_sequence_length", 512),
            "type_vocab_size": arguments.get("num_segments", 2),
        }
    except KeyError as e:
        raise CheckpointError(f"{source}: no {e.args[0]!r} in the AlbertBackbone config") from None
    return AlbertConfig.from_dict(values, source=source)


def keras_hub_arguments(config: Any) -> dict[str, Any]:
    """The ``AlbertBackbone`` arguments of an :class:`AlbertConfig`; one line for what keras-hub's ALBERT cannot
    hold (another activation)."""
    if config.hidden_act not in ("gelu", "gelu_new"):
        raise CheckpointError(f"hidden_act {config.hidden_act!r}: keras-hub's AlbertBackbone computes 'gelu' (the "
                              "tanh approximation) only")
    return {
        "vocabulary_size": config.vocab_size,
        "num_layers": config.num_hidden_layers,
        "num_heads": config.num_attention_heads,
        "num_groups": config.num_hidden_groups,
        "num_inner_repetitions": config.inner_group_num,
        "embedding_dim": config.embedding_size,
        "hidden_dim": config.hidden_size,
        "intermediate_dim": config.intermediate_size,
        "dropout": config.hidden_dropout_prob,
        "max_sequence_length": config.max_position_embeddings,
        "num_segments": config.type_vocab_size,
    }


def local_folder(path: str) -> str:
    """A keras-hub handle fetched through keras-hub (its cache), or ``path`` itself."""
    if not is_keras_hub_handle(path):
        return os.fspath(path)
    require_keras_hub()
    from keras_hub.src.utils.preset_utils import get_file

    try:
        return os.path.dirname(get_file(os.fspath(path), CONFIG_FILE))
    except Exception as e:  # noqa: BLE001 - keras-hub and kagglehub raise many kinds; one line names the handle
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CheckpointError(f"{path}: keras-hub could not fetch the preset ({first})") from None


def find_config(path: str) -> Any:
    """The :class:`AlbertConfig` of a keras-hub preset folder or handle."""
    folder = local_folder(path)
    return albert_config_from_keras_hub(backbone_config(folder), source=os.path.join(folder, CONFIG_FILE))


def tokenizer_file(path: str) -> str | None:
    """The SentencePiece model a keras-hub preset folder holds (``assets/tokenizer/vocabulary.spm``), or None."""
    found = os.path.join(local_folder(path), "assets", "tokenizer", "vocabulary.spm")
    return found if _fs.exists(found) else None


def pretrained(path: str) -> Any:
    """What a keras-hub preset folder or handle gives a run where a pretrained preset would: the folder as the
    checkpoint, its backbone config as an ``albert_config.json`` (written once into the albert-tf cache, named by
    its content, since the runners take a file) and its SentencePiece model (albert-tf lower-cases, as every
    released English ALBERT)."""
    import hashlib

    from albert_tf.checkpoints.download import cache_dir
    from albert_tf.checkpoints.preset_files import Pretrained

    folder = local_folder(path)
    text = json.dumps(find_config(folder).to_dict(), indent=2, sort_keys=True) + "\n"
    config_file = os.path.join(cache_dir(), "keras_hub", hashlib.sha256(text.encode()).hexdigest()[:16],
                               "albert_config.json")
    if not _fs.exists(config_file):
        _fs.makedirs(os.path.dirname(config_file))
        _fs.write_text_atomic(config_file, text)
    return Pretrained(name=os.fspath(path), directory=folder, checkpoint=folder, format="keras_hub",
                      albert_config_file=config_file, spm_model_file=tokenizer_file(folder), vocab_file=None,
                      do_lower_case=True)


# ------------------------------------------------------------------------------------------------ reading


def task_class(path: str) -> str | None:
    """The keras-hub task class a preset folder or handle holds (``task.json``), or None for a backbone alone."""
    folder = local_folder(path)
    file = os.path.join(folder, TASK_FILE)
    if not _fs.exists(file):
        return None
    data = _read_json(file)
    return data.get("class_name") if isinstance(data, dict) else None


def read_keras_hub(path: str, heads: Sequence[TaskHead] = ()) -> tuple[dict[str, np.ndarray], list[str]]:
    """``({official name: array}, unknown)`` of a keras-hub preset folder or handle: the backbone's variables and,
    where the folder holds a task whose class one of ``heads`` names (``keras_hub_task``), its head's. ``unknown``:
    the variable paths of the preset that have no official name (a task head albert-tf has none for)."""
    folder = local_folder(path)
    backbone_config(folder)  # an AlbertBackbone, or one line before keras-hub starts
    keras_hub = require_keras_hub()
    held = task_class(folder)
    head = next((h for h in heads if held and h.keras_hub_task == held), None)
    try:
        if held is not None and hasattr(keras_hub.models, held):
            task = getattr(keras_hub.models, held).from_preset(folder, load_weights=True)
            backbone = task.backbone
        else:
            task, backbone = None, keras_hub.models.Backbone.from_preset(folder, load_weights=True)
    except Exception as e:  # noqa: BLE001 - Keras raises ValueError, OSError, KeyError ... for a damaged preset
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise CheckpointError(f"{folder}: keras-hub could not load the preset ({first})") from None
    arrays: dict[str, np.ndarray] = {}
    unknown = []
    for variable in backbone.weights:
        name = official_name(variable.path)
        if name is None:
            unknown.append(variable.path)
            continue
        arrays[name] = np.asarray(variable.numpy(), dtype=np.float32)
    in_backbone = {id(v) for v in backbone.weights}
    head_paths = {w.keras_hub: (n, w) for n, w in (head.weights.items() if head else ()) if w.keras_hub}
    for variable in (task.weights if task is not None else ()):
        if id(variable) in in_backbone:
            continue
        if variable.path not in head_paths:
            unknown.append(variable.path)
            continue
        name, weight = head_paths[variable.path]
        value = np.asarray(variable.numpy(), dtype=np.float32)
        arrays[name] = value.T if weight.transposed else value
    return _official_shapes(arrays), unknown


def _official_shapes(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The attention arrays reshaped to the official [H, H] / [H] (keras-hub keeps them per head: query, key and
    value kernels [H, heads, size], their biases [heads, size], the output kernel [heads, size, H])."""
    out = {}
    for name, value in arrays.items():
        if name.endswith("/attention_1/output/dense/kernel"):
            value = value.reshape(-1, value.shape[-1])
        elif "/attention_1/self/" in name:
            value = value.reshape(value.shape[0], -1) if name.endswith("/kernel") else value.reshape(-1)
        out[name] = value
    return out


def load_keras_hub(model: Any, path: str) -> Any:
    """Load a keras-hub preset folder or handle into ``model``; returns the load report."""
    from albert_tf.checkpoints.huggingface import check_configs_agree
    from albert_tf.checkpoints.official import effective_config

    config = effective_config(model)
    if config is not None:
        check_configs_agree(config, find_config(path), os.fspath(path))
    arrays, unknown = read_keras_hub(path, heads_of(model))
    report = assign_official_arrays(model, arrays, source=os.fspath(path))
    report.unused.extend(unknown)
    return report


# ------------------------------------------------------------------------------------------------ writing


def writable(name: str, head: TaskHead | None) -> bool:
    """Whether a keras-hub output holds the official name ``name``: the encoder's, and ``head``'s where keras-hub
    has a task class for it."""
    return keras_hub_path(name) is not None or bool(head and head.keras_hub_task and name in head.official_names)


def save_keras_hub_arrays(
    arrays: Mapping[str, np.ndarray],
    config: Any,
    output_dir: str,
    *,
    spm_model_file: str | None = None,
    do_lower_case: bool = True,
    head: TaskHead | None = None,
    sequence_length: int | None = None,
) -> list[str]:
    """Official-name arrays -> a keras-hub preset folder: ``AlbertBackbone``, and with ``head`` (one with a
    ``keras_hub_task``) that task (``AlbertTextClassifier``) with its preprocessor, and an ``AlbertTokenizer`` when
    ``spm_model_file`` is given. Names with no keras-hub variable (the pretraining heads, a head keras-hub has no
    class for) are not written: the caller refuses or reports them (:func:`writable`). Returns the files written."""
    keras_hub = require_keras_hub()
    from albert_tf.checkpoints.keras_hub_tokenizer import preprocessing_proto

    if head is not None and not head.keras_hub_task:
        raise CheckpointError(f"keras-hub has no ALBERT task class for the {head.name} head")
    backbone = keras_hub.models.AlbertBackbone(**keras_hub_arguments(config), dtype="float32")
    by_path = {v.path: v for v in backbone.weights}
    for name, value in arrays.items():
        path = keras_hub_path(name)
        if path is not None:
            variable = by_path[path]
            variable.assign(np.asarray(value, dtype=np.float32).reshape(tuple(variable.shape)))
    tokenizer = None
    if spm_model_file:
        proto = preprocessing_proto(_fs.read_bytes(spm_model_file), do_lower_case, source=spm_model_file)
        tokenizer = keras_hub.models.AlbertTokenizer(proto=proto)
        if tokenizer.vocabulary_size() != config.vocab_size:
            raise CheckpointError(f"{spm_model_file}: {tokenizer.vocabulary_size()} pieces, the model's vocab_size "
                                  f"is {config.vocab_size}")
    length = min(sequence_length or 512, config.max_position_embeddings)
    _fs.makedirs(output_dir)
    if head is None:
        backbone.save_to_preset(output_dir)
        if tokenizer is not None:
            tokenizer.save_to_preset(output_dir)
    else:
        task_class = getattr(keras_hub.models, head.keras_hub_task)
        preprocessor = None
        if tokenizer is not None:
            preprocessor_class = getattr(keras_hub.models, f"{head.keras_hub_task}Preprocessor")
            preprocessor = preprocessor_class(tokenizer=tokenizer, sequence_length=length)
        task = task_class(backbone=backbone, num_classes=head_rows(head, arrays), preprocessor=preprocessor,
                          dropout=config.hidden_dropout_prob)
        task_paths = {v.path: v for v in task.weights}
        for name, weight in head.weights.items():
            value = np.asarray(arrays[name], dtype=np.float32)
            task_paths[weight.keras_hub].assign(value.T if weight.transposed else value)
        task.save_to_preset(output_dir)
    return sorted(os.path.join(output_dir, f) for f in _fs.listdir(output_dir))
