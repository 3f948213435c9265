"""Initialise every hidden group from ``group_0`` of a checkpoint (official ``--init_from_group0``).

Official ``run_pretraining.py --init_from_group0`` (its ``model_fn``) calls
``get_assignment_map_from_checkpoint(tvars, init_checkpoint, num_of_initialize_group=G)``: a
variable ``bert/encoder/transformer/group_{g}/inner_group_{k}/...`` of a model with
G = ``num_hidden_groups`` > 1 groups falls back (official ``modeling.py: transformer_model``, regex ``/group_\\d+/`` ->
``/group_0/``) to the checkpoint's ``group_0/inner_group_{k}/...``, and every other variable (embeddings,
``embedding_hidden_mapping_in``, pooler, heads) loads by its own name. The use: pretrain an
all-shared model (G = 1), then continue with G > 1 groups that all start as copies of its one
block, so the new model computes exactly the function of the old one at step 0 (official ``modeling.py:
transformer_model``: every layer of a group applies the same block, and all groups now hold the same block).

Here a checkpoint of any supported format is read into official-name arrays (official ``modeling.py`` scopes) by the
existing readers (``official.read_official_checkpoint``, the Hugging Face reader,
``native.read_native``), checked against the model's config with the group count set aside
(differing G is the point of the flag, hidden size etc. must agree), broadcast by
:func:`broadcast_group0` and assigned through
:func:`albert_tf.checkpoints.report.assign_official_arrays`, so the :class:`LoadReport` is the
usual one. The source's ``group_{g>0}`` arrays, which the official flag does not read either,
are listed as unused; optimizer slots and ``global_step`` are ignored, as in every
initialisation (official ``run_pretraining.py``: the learning-rate schedule restarts).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from albert_tf.checkpoints.heads import TaskHead, heads_of
from albert_tf.checkpoints.report import (
    CheckpointError,
    LoadReport,
    assign_official_arrays,
    model_official_arrays,
    official_slots,
)

GROUP_SCOPE = "bert/encoder/transformer/"
_GROUP_NAME = re.compile(r"^bert/encoder/transformer/group_(\d+)/(.+)$")
_MAPPING = ("bert/encoder/embedding_hidden_mapping_in/kernel", "bert/encoder/embedding_hidden_mapping_in/bias")
# Keras block names of an albert-tf TF2 checkpoint (AlbertEncoder._make_blocks, sharing='all')
_KERAS_GROUP = re.compile(r"transformer_group_(\d+)_inner_group_\d+")

__all__ = ["broadcast_group0", "load_from_group0", "read_official_arrays", "split_group0"]


def split_group0(
    arrays: Mapping[str, np.ndarray], *, source: str = "checkpoint"
) -> tuple[dict[str, np.ndarray], list[str]]:
    """``(non-group and group_0 arrays, names of the group_{g>0} arrays)``.

    Raises :class:`CheckpointError` (one line naming ``source``) when there is no
    ``bert/encoder/transformer/group_0/...`` array to initialise the groups from.
    """
    kept: dict[str, np.ndarray] = {}
    dropped: list[str] = []
    for name, value in arrays.items():
        match = _GROUP_NAME.match(name)
        if match is not None and int(match.group(1)) != 0:
            dropped.append(name)
        else:
            kept[name] = value
    if not any(name.startswith(GROUP_SCOPE + "group_0/") for name in kept):
        raise CheckpointError(
            f"{source}: no {GROUP_SCOPE}group_0/... variables, nothing to initialise the groups from (init_from_group0)"
        )
    return kept, dropped


def broadcast_group0(
    arrays: Mapping[str, np.ndarray], num_hidden_groups: int, *, source: str = "checkpoint"
) -> dict[str, np.ndarray]:
    """Official-name arrays for a G-group model, every group a copy of the source's ``group_0``.

    ``group_{g}/<rest>`` = source ``group_0/<rest>`` (so ``inner_group_{k}`` keeps its k) for every
    g in ``range(num_hidden_groups)``; non-group names pass through; the source's
    ``group_{g>0}`` arrays are dropped (:func:`split_group0` names them, for the report). Pure:
    the input is not modified, and the same array object serves every group (not copied).
    """
    if isinstance(num_hidden_groups, bool) or not isinstance(num_hidden_groups, int) or num_hidden_groups < 1:
        raise ValueError(f"num_hidden_groups must be a positive integer, got {num_hidden_groups!r}")
    kept, _ = split_group0(arrays, source=source)
    out: dict[str, np.ndarray] = {}
    blocks: dict[str, np.ndarray] = {}
    for name, value in kept.items():
        match = _GROUP_NAME.match(name)
        if match is None:
            out[name] = value
        else:
            blocks[match.group(2)] = value
    for g in range(num_hidden_groups):
        for rest, value in blocks.items():
            out[f"{GROUP_SCOPE}group_{g}/{rest}"] = value
    return out


# ---------------------------------------------------------------------------- reading any format


def _same_architecture(expected: Any, found: Any, source: str) -> None:
    """The configs agree on everything but the group count (``huggingface.check_configs_agree``)."""
    from albert_tf.checkpoints.huggingface import check_configs_agree

    check_configs_agree(expected.replace(num_hidden_groups=1), found.replace(num_hidden_groups=1), source)


def _tf2_group_counts(path: str, config: Any) -> list[int]:
    """Group counts to try for a TF2 checkpoint: the one its Keras block names show, else 1 then the model's."""

    from albert_tf.checkpoints.paths import list_variables, resolve_checkpoint_path

    groups = {
        int(m.group(1))
        for name, _ in list_variables(resolve_checkpoint_path(path))
        if (m := _KERAS_GROUP.search(name))
    }
    candidates = [max(groups) + 1] if groups else [1, config.num_hidden_groups]
    return [g for i, g in enumerate(candidates) if g <= config.num_hidden_layers and g not in candidates[:i]]


def _read_native_model(path: str, config: Any | None) -> Any:
    """The albert-tf model stored at ``path`` (``.keras`` holds its config; a TF2 checkpoint needs G)."""
    from albert_tf.checkpoints import native

    if path.endswith((".keras", ".weights.h5")) or config is None:
        return native.read_native(path, config)[0]
    error: CheckpointError | None = None
    for groups in _tf2_group_counts(path, config):
        try:
            return native.read_native(path, config.replace(num_hidden_groups=groups))[0]
        except CheckpointError as e:
            error = e
    raise error or CheckpointError(f"{path}: no albert-tf model of this config matches the TF2 checkpoint")


def read_official_arrays(
    path: str, input_format: str | None = None, config: Any | None = None, heads: Iterable[TaskHead] = ()
) -> tuple[dict[str, np.ndarray], list[str], list[str], str]:
    """Any supported checkpoint as ``(official-name arrays, ignored, unknown, source)``; a Hugging Face
    directory's fine-tuning heads are named by ``heads``.

    ``ignored``: optimizer slots, ``global_step``, buffers; ``unknown``: source names with no
    official counterpart (reported as unused). With ``config``, a Hugging Face or albert-tf
    source whose config differs in anything but ``num_hidden_groups`` raises
    :class:`ConfigMismatchError`; shapes are checked by the caller.
    """
    from albert_tf.checkpoints import huggingface, official
    from albert_tf.checkpoints.formats import detect_format

    path = os.fspath(path)
    input_format = input_format or detect_format(path)
    if input_format == "official":
        arrays, ignored, source = official.read_official_checkpoint(path)
        return arrays, ignored, [], source
    if input_format == "huggingface":
        state, hf_config = huggingface.read_huggingface_dir(path)
        arrays, ignored, unknown = huggingface.huggingface_to_official_arrays(state, source=path, heads=heads)
        if config is not None:
            _same_architecture(config, huggingface.albert_config_from_huggingface(hf_config), path)
            if config.embedding_size == config.hidden_size:
                # HF always has the projection; an identity one is exact and left unused (as load_huggingface)
                huggingface.check_identity_projection(arrays, path)
                unknown = unknown + [n for n in _MAPPING if arrays.pop(n, None) is not None]
        return arrays, ignored, unknown, path
    if input_format == "albert_tf":
        source_model = _read_native_model(path, config)
        if config is not None and getattr(source_model, "config", None) is not None:
            _same_architecture(config, source_model.config, path)
        return model_official_arrays(source_model), [], [], path
    raise CheckpointError(f"unknown checkpoint format {input_format!r}; use one of official, albert_tf, huggingface")


# ---------------------------------------------------------------------------- loading


def _model_group_count(slots: Mapping[str, Any], model: Any) -> int:
    groups = {int(m.group(1)) for name in slots if (m := _GROUP_NAME.match(name))}
    if not groups:
        raise CheckpointError(f"{type(model).__name__}: the model has no {GROUP_SCOPE}group_* variables")
    return max(groups) + 1


def load_from_group0(
    model: Any,
    path: str,
    *,
    input_format: str | None = None,
    config: Any | None = None,
    require_backbone: bool = True,
) -> LoadReport:
    """Initialise ``model`` from ``path`` with every group set to the checkpoint's ``group_0``.

    ``path``: any format :func:`albert_tf.checkpoints.restore_pretrained` reads (official TF1,
    albert-tf ``.keras`` / TF2 checkpoint, Hugging Face directory), with any number of groups.
    ``config`` defaults to the model's; ``sharing='none'`` models are G = L groups and work
    too. Before anything is assigned, the non-group and ``group_0`` shapes are checked against
    the config with ``num_hidden_groups`` set aside: a differing hidden size, inner-group count
    etc. raises a one-line :class:`ConfigMismatchError`. Raises :class:`CheckpointError` when
    the source has no ``group_0``, when nothing loaded and, with ``require_backbone``, when a
    backbone (``bert/...``) variable is missing or mis-shaped (head gaps are only reported).
    The source's ``group_{g>0}`` names appear under ``report.unused``.
    """
    from albert_tf.checkpoints.official import check_config_matches, effective_config

    config = effective_config(model, config)  # sharing='none' is the G = L layout
    slots = official_slots(model)  # one-line CheckpointError for layouts without official names
    num_groups = _model_group_count(slots, model)
    arrays, ignored, unknown, source = read_official_arrays(path, input_format, config, heads_of(model))
    kept, dropped = split_group0(arrays, source=source)
    if config is not None:
        # the group count is not compared: the check sees one group on both sides
        shapes = {name: value.shape for name, value in kept.items()}
        check_config_matches(shapes, config.replace(num_hidden_groups=1), source=source)
    report = assign_official_arrays(
        model, broadcast_group0(kept, num_groups, source=source), source=source, ignored=ignored, slots=slots
    )
    report.unused.extend(dropped + unknown)
    report.raise_if_empty()
    if require_backbone:
        report.raise_if_backbone_incomplete()
    return report
