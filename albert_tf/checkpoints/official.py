"""Google's official TF1 ALBERT checkpoints (the variable names of official ``modeling.py`` and the runners): read,
check, load, write.

Reading uses ``tf.train.load_checkpoint`` (no TF1 graph). Every name is normalised first:
the TF-Hub ``module/`` prefix is stripped; optimizer state (``adam_m``/``adam_v``,
``lamb_m``/``lamb_v``, ``AdamWeightDecayOptimizer*``, TF1 ``Adam``/``Adam_1`` slots,
``beta{1,2}_power``, loss-scale state) and ``global_step`` are ignored and counted. Layouts
that are not Google's (brightmart ``albert_zh``, plain BERT, TF2 object checkpoints) are
refused with a one-line message before anything is built.

Writing emits exactly the names, shapes and dtypes the official code writes (float32 variables, int64
``global_step``) through the ``SaveV2`` op, i.e. the same ``.index`` + ``.data`` files a TF1
``Saver`` writes, plus the ``checkpoint`` state file, so ``tf.train.load_checkpoint``,
``tf.compat.v1.train.init_from_checkpoint`` (what the official runners call) and
``Saver.restore`` all read it.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from albert_tf import files as _fs
from albert_tf.checkpoints.heads import TaskHead, head_rows, heads_of
from albert_tf.checkpoints.paths import checkpoint_reader, resolve_checkpoint_path, write_checkpoint_state
from albert_tf.checkpoints.report import (
    CheckpointError,
    ConfigMismatchError,
    LoadReport,
    NotAlbertCheckpointError,
    assign_official_arrays,
    model_official_arrays,
)

MODULE_PREFIX = "module/"
GLOBAL_STEP = "global_step"

_BLOCK = "bert/encoder/transformer/group_{g}/inner_group_{k}/"

# The pretraining heads of every official checkpoint (the fine-tuning heads are declared by their task packages,
# albert_tf.checkpoints.heads).
PRETRAINING_HEAD_NAMES = (
    "cls/predictions/transform/dense/kernel",
    "cls/predictions/transform/dense/bias",
    "cls/predictions/transform/LayerNorm/beta",
    "cls/predictions/transform/LayerNorm/gamma",
    "cls/predictions/output_bias",
    "cls/seq_relationship/output_weights",
    "cls/seq_relationship/output_bias",
)

_IGNORED_PATTERNS = (
    re.compile(r"(^|/)(adam_m|adam_v|lamb_m|lamb_v|Adam|Adam_1|Momentum|RMSProp|RMSProp_1)$"),
    re.compile(r"AdamWeightDecayOptimizer|LAMBOptimizer|LambOptimizer"),
    re.compile(r"(^|/)(global_step|beta1_power|beta2_power|good_steps|loss_scale|current_loss_scale)$"),
)


def is_optimizer_or_step(name: str) -> bool:
    """True for names a converter must skip: optimizer slots, ``global_step``, loss-scale state."""
    return any(p.search(name) for p in _IGNORED_PATTERNS)


# ---------------------------------------------------------------------------- the spec's listing


def official_variable_shapes(
    config: Any, heads: Iterable[TaskHead] = (), num_labels: int = 2, *, pretraining: bool = True
) -> dict[str, tuple[int, ...]]:
    """Every official variable name and shape for ``config`` (no model is built).

    The encoder's, the pretraining heads' (``pretraining``) and those of ``heads``, the fine-tuning heads a task
    package declared (``num_labels`` sizes the heads that have one row per label). ``global_step`` is not included
    (it is int64 and added by the writer).
    """
    from albert_tf.checkpoints.names import expected_official_shapes

    shapes = expected_official_shapes(config, with_pretraining_heads=pretraining)
    for head in heads:
        shapes.update(head.shapes(config, num_labels))
    return shapes


# ---------------------------------------------------------------------------- reading


@dataclasses.dataclass(frozen=True)
class OpenCheckpoint:
    """A TF checkpoint resolved and opened once: its prefix, reader and ``{name: (shape, dtype name)}`` listing.
    The format detector makes it and the loader reads through it, so one load resolves the path and opens the
    files once."""

    prefix: str
    reader: Any
    listing: dict[str, tuple[tuple[int, ...], str]]


def open_checkpoint(path: str | OpenCheckpoint) -> OpenCheckpoint:
    """Resolve ``path`` (prefix, ``.index``/``.data`` file or directory) and open it; an :class:`OpenCheckpoint` is
    returned as it is."""
    if isinstance(path, OpenCheckpoint):
        return path
    prefix = resolve_checkpoint_path(path)
    try:
        reader = checkpoint_reader(prefix)
    except Exception as e:  # noqa: BLE001 - TF raises several error types for corrupt files
        raise CheckpointError(f"{prefix}: not a readable TF checkpoint ({type(e).__name__})") from None
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    listing = {n: (tuple(int(d) for d in shapes[n]), dtypes[n].name) for n in shapes}
    return OpenCheckpoint(prefix, reader, listing)


def list_checkpoint(path: str | OpenCheckpoint) -> dict[str, tuple[tuple[int, ...], str]]:
    """``{name: (shape, dtype name)}`` of a TF checkpoint, as stored (no renaming)."""
    return open_checkpoint(path).listing


def detect_layout(names: Iterable[str]) -> str:
    """``official``, ``official_hub`` (``module/``), ``tf2_object``, ``brightmart``, ``bert`` or ``unknown``."""
    names = list(names)
    if "_CHECKPOINTABLE_OBJECT_GRAPH" in names or any(".ATTRIBUTES/" in n for n in names):
        return "tf2_object"
    stripped = [n[len(MODULE_PREFIX) :] if n.startswith(MODULE_PREFIX) else n for n in names]
    if any("/layer_shared/" in n or n.endswith("word_embeddings_2") for n in stripped):
        return "brightmart"
    if any(n.startswith("bert/encoder/transformer/group_") for n in stripped):
        return "official_hub" if any(n.startswith(MODULE_PREFIX) for n in names) else "official"
    if any(re.match(r"bert/encoder/layer_\d+/", n) for n in stripped):
        return "bert"
    return "unknown"


LAYOUT_MESSAGES = {
    "tf2_object": "a TF2 object-based checkpoint (albert-tf / Keras), not an official TF1 one; "
    "use --input_format albert_tf",
    "brightmart": "the unofficial brightmart/albert_zh layout (bert/encoder/layer_shared, word_embeddings_2), "
    "not Google's ALBERT layout; it is not supported",
    "bert": "a BERT checkpoint (bert/encoder/layer_N), not ALBERT (no bert/encoder/transformer/group_*)",
    "unknown": "not an ALBERT checkpoint (no bert/encoder/transformer/group_* variables)",
}


def read_official_checkpoint(path: str | OpenCheckpoint) -> tuple[dict[str, np.ndarray], list[str], str]:
    """Read an official TF1 ALBERT checkpoint.

    Returns ``(arrays, ignored, prefix)``: ``arrays`` maps official names (``module/``
    stripped) to float32 arrays in the official layout; ``ignored`` lists the stored names
    skipped on purpose (optimizer slots, ``global_step``). Refuses other layouts with a
    :class:`NotAlbertCheckpointError`.
    """

    opened = open_checkpoint(path)
    prefix, listing, reader = opened.prefix, opened.listing, opened.reader
    layout = detect_layout(listing)
    if layout not in ("official", "official_hub"):
        raise NotAlbertCheckpointError(f"{prefix}: {LAYOUT_MESSAGES[layout]}")
    arrays: dict[str, np.ndarray] = {}
    ignored: list[str] = []
    for stored in sorted(listing):
        if is_optimizer_or_step(stored):
            ignored.append(stored)
            continue
        name = stored[len(MODULE_PREFIX) :] if stored.startswith(MODULE_PREFIX) else stored
        if name in arrays:
            raise CheckpointError(f"{prefix}: variable {name!r} stored both with and without the 'module/' prefix")
        arrays[name] = np.asarray(reader.get_tensor(stored))
    return arrays, ignored, prefix


def infer_architecture(shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    """The config values a checkpoint's shapes pin down (L and N are not stored in shapes)."""
    out: dict[str, int] = {}

    def take(name: str, axis: int, key: str) -> None:
        if name in shapes and len(shapes[name]) > axis:
            out.setdefault(key, int(shapes[name][axis]))

    take("bert/embeddings/word_embeddings", 0, "vocab_size")
    take("bert/embeddings/word_embeddings", 1, "embedding_size")
    take("bert/embeddings/token_type_embeddings", 0, "type_vocab_size")
    take("bert/embeddings/position_embeddings", 0, "max_position_embeddings")
    take("bert/pooler/dense/kernel", 1, "hidden_size")
    take(_BLOCK.format(g=0, k=0) + "attention_1/self/query/kernel", 1, "hidden_size")
    take(_BLOCK.format(g=0, k=0) + "ffn_1/intermediate/dense/kernel", 1, "intermediate_size")
    groups, inner = set(), set()
    for name in shapes:
        m = re.match(r"bert/encoder/transformer/group_(\d+)/inner_group_(\d+)/", name)
        if m:
            groups.add(int(m.group(1)))
            inner.add(int(m.group(2)))
    if groups:
        out["num_hidden_groups"] = max(groups) + 1
        out["inner_group_num"] = max(inner) + 1
    return out


def check_config_matches(shapes: Mapping[str, tuple[int, ...]], config: Any, source: str = "checkpoint") -> None:
    """Raise :class:`ConfigMismatchError` (one line) when the checkpoint was made for another config.

    E.g. an albert_large checkpoint with an albert_base config (google-research/albert#230) reports
    ``hidden_size 1024 in the checkpoint vs 768 in the config``.
    """
    found = infer_architecture(shapes)
    diffs = [
        f"{key} {value} in the checkpoint vs {getattr(config, key)} in the config"
        for key, value in found.items()
        if getattr(config, key) != value
    ]
    has_map = "bert/encoder/embedding_hidden_mapping_in/kernel" in shapes
    if "hidden_size" in found and "embedding_size" in found and not diffs:
        if has_map != (config.embedding_size != config.hidden_size):
            diffs.append("embedding_hidden_mapping_in presence disagrees with embedding_size vs hidden_size")
    if diffs:
        raise ConfigMismatchError(f"{source}: checkpoint and config disagree: " + "; ".join(diffs))


def effective_config(model: Any, config: Any | None = None) -> Any:
    """The config whose official layout ``model`` has: ``sharing='none'`` stores one group per layer (G = L)."""
    config = config if config is not None else getattr(model, "config", None)
    if config is not None and getattr(model, "sharing", "all") == "none":
        if config.num_hidden_groups != config.num_hidden_layers:
            return config.replace(num_hidden_groups=config.num_hidden_layers)
    return config


def load_official_checkpoint(
    model: Any, path: str | OpenCheckpoint, config: Any | None = None, *, check_config: bool = True
) -> LoadReport:
    """Load an official TF1 checkpoint (any G, K; with or without ``module/``) into ``model``.

    When ``config`` is given (or the model exposes ``.config``), the checkpoint's shapes are
    checked against it first and a mismatch raises before any assignment.
    """
    arrays, ignored, prefix = read_official_checkpoint(path)
    config = effective_config(model, config)
    if check_config and config is not None:
        check_config_matches({n: a.shape for n, a in arrays.items()}, config, source=prefix)
    return assign_official_arrays(model, arrays, source=prefix, ignored=ignored)


# ---------------------------------------------------------------------------- writing


def write_official_arrays(
    arrays: Mapping[str, np.ndarray],
    prefix: str,
    global_step: int | None = 0,
    *,
    module_prefix: bool = False,
    extra: Mapping[str, np.ndarray] | None = None,
) -> str:
    """Write ``{name: array}`` as a TF1 name-based checkpoint at ``prefix``; returns the prefix.

    Float arrays are stored as float32 (as the official code writes them), ``global_step`` as int64 (skipped when
    None). ``module_prefix`` writes the TF-Hub ``module/`` names; ``extra`` adds names
    verbatim (tests use it to add optimizer slots). A ``checkpoint`` state file pointing at
    the prefix is written beside it.
    """
    import tensorflow as tf

    prefix = os.fspath(prefix)
    if "://" not in prefix:
        prefix = os.path.abspath(prefix)
    directory = os.path.dirname(prefix)
    _fs.makedirs(directory)
    names, tensors = [], []
    for name in sorted(arrays):
        value = np.asarray(arrays[name])
        if value.dtype.kind == "f":
            value = value.astype(np.float32)
        names.append(MODULE_PREFIX + name if module_prefix else name)
        tensors.append(tf.constant(value))
    if global_step is not None:
        names.append((MODULE_PREFIX if module_prefix else "") + GLOBAL_STEP)
        tensors.append(tf.constant(int(global_step), dtype=tf.int64))
    for name, value in (extra or {}).items():
        names.append(name)
        tensors.append(tf.constant(np.asarray(value)))
    if len(set(names)) != len(names):
        raise CheckpointError(f"{prefix}: duplicate variable names in the checkpoint to write")
    with tf.device("/cpu:0"):
        tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names), tensors=tensors)
    write_checkpoint_state(directory, os.path.basename(prefix))
    return prefix


def save_official_checkpoint(
    model: Any, prefix: str, global_step: int = 0, *, module_prefix: bool = False, check: bool = True
) -> str:
    """Write ``model`` as an official-layout TF1 checkpoint (official names, shapes and dtypes).

    With ``check`` and a model exposing ``.config``, every name written of the encoder, the pretraining heads and the
    model's own fine-tuning head must have the official shape for that config.
    """
    arrays = model_official_arrays(model)
    config = effective_config(model)
    if check and config is not None:
        expected = official_variable_shapes(config)
        for head in heads_of(model):
            expected.update(head.shapes(config, head_rows(head, arrays)))
        for name, value in arrays.items():
            shape = expected.get(name)
            if shape is not None and tuple(value.shape) != shape:
                raise CheckpointError(
                    f"{prefix}: {name} has shape {list(value.shape)}, the official layout has {list(shape)}"
                )
    return write_official_arrays(arrays, prefix, global_step, module_prefix=module_prefix)
