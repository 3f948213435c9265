"""Hugging Face ``transformers`` ALBERT weights in and out, through the official TF1 names.

Every HF parameter name is mapped to the official TF1 name by the table of :mod:`huggingface_names`. Loading goes
through
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
also writes the tokenizer files (:mod:`huggingface_tokenizer`).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from albert_tf import files as _fs
from albert_tf.checkpoints.heads import TaskHead, head_rows, heads_of
from albert_tf.checkpoints.huggingface_config import (
    albert_config_from_huggingface,
    check_configs_agree,
    huggingface_config_from_albert,
)
from albert_tf.checkpoints.huggingface_names import (
    HF_PREFIX,
    PRETRAINING_HF_NAMES,
    huggingface_to_official_arrays,
    official_to_huggingface_arrays,
    to_numpy,
)
from albert_tf.checkpoints.huggingface_tokenizer import (
    huggingface_tokenizer_files,
    write_files,
)
from albert_tf.checkpoints.report import (
    CheckpointError,
    LoadReport,
    assign_official_arrays,
    model_official_arrays,
)

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
    arrays, ignored, unknown = huggingface_to_official_arrays(state_dict, source=source, heads=heads_of(model))
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
    from safetensors import SafetensorError

    try:
        return _read_safetensors(file)
    except SafetensorError as e:  # a file cut short or damaged: the header or a tensor's bytes do not add up
        raise CheckpointError(f"{file}: not a readable safetensors file, cut short or damaged ({e})") from None


def _read_safetensors(file: str) -> dict[str, Any]:
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
    return {k: to_numpy(v) for k, v in tensors.items()}


def load_huggingface(model: Any, path: str) -> LoadReport:
    """Load an HF model directory (``config.json`` + weights) into ``model``."""
    state, hf_config = read_huggingface_dir(path)
    return load_huggingface_state_dict(model, state, hf_config, source=os.fspath(path))


def model_to_huggingface_state_dict(model: Any, config: Any | None = None) -> dict[str, np.ndarray]:
    """Our model's weights as a transformers ALBERT state dict (numpy, float32)."""
    from albert_tf.checkpoints.official import effective_config

    return official_to_huggingface_arrays(model_official_arrays(model), effective_config(model, config),
                                          heads_of(model))


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

    # The model's own head names its transformers class: two heads can share names and shapes (a one-label
    # classifier and a multiple-choice head), which the arrays alone cannot tell apart.
    heads = heads_of(model)
    architecture = next((h.huggingface_architecture for h in heads if h.huggingface_architecture), None)
    return save_huggingface_arrays(
        model_official_arrays(model),
        effective_config(model, config),
        output_dir,
        spm_model_file=spm_model_file,
        vocab_file=vocab_file,
        do_lower_case=do_lower_case,
        architecture=architecture,
        heads=heads,
    )


def _hf_names(head: TaskHead) -> set[str]:
    return set(head.huggingface.values())


def _declared_head(architecture: str, heads: Sequence[TaskHead], present: set[str], arrays: Mapping[str, np.ndarray],
                   config: Any, output_dir: str) -> TaskHead:
    """The head of ``heads`` whose transformers class is ``architecture``, checked against the head arrays present
    (exactly its names, with its official shapes)."""
    declared = [h for h in heads if h.huggingface_architecture == architecture]
    if not declared:
        known = sorted({h.huggingface_architecture for h in heads if h.huggingface_architecture})
        raise ValueError(f"architecture must be None or one the given heads declare ({', '.join(known)}), "
                         f"got {architecture!r}")
    for head in declared:
        expected = head.shapes(config, head_rows(head, arrays))
        if _hf_names(head) == present and all(tuple(arrays[n].shape) == expected[n] for n in head.official_names):
            return head
    shapes = ", ".join(f"{n} {list(s)}" for n, s in declared[0].shapes(config, 1).items())
    raise CheckpointError(f"{output_dir}: {architecture} needs exactly the head {shapes}")


def save_huggingface_arrays(
    arrays: Mapping[str, np.ndarray],
    config: Any,
    output_dir: str,
    *,
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    architecture: str | None = None,
    heads: Iterable[TaskHead] = (),
    labels: Sequence[str] | None = None,
) -> list[str]:
    """Official-name arrays -> ``model.safetensors`` + ``config.json`` (+ tokenizer files) in ``output_dir``.

    ``heads``: the fine-tuning heads the arrays may hold (a model's own, or every task's for a conversion from
    files: ``albert_tf.tasks.registry.task_heads``).

    The architecture follows the heads present: ``AlbertForPreTraining`` (MLM + SOP),
    ``AlbertForQuestionAnswering`` (SQuAD v1 head), ``AlbertForSequenceClassification``
    (``output_weights``), else ``AlbertModel``; ``architecture="AlbertForMultipleChoice"`` names a
    RACE head (``output_weights`` [1, H], which the arrays alone cannot tell from a regression head).
    Backbone names always carry the ``albert.`` prefix (transformers' ``AlbertModel`` loads them;
    keras-hub needs them).

    ``labels``: the names of a labelled head's rows (a tagger's tags) for ``id2label``, else ``LABEL_<i>``.

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
    heads = tuple(heads)
    state = official_to_huggingface_arrays(arrays, config, heads)
    present = {n for n in state if not n.startswith(HF_PREFIX)}
    pretraining = present & PRETRAINING_HF_NAMES
    task = present - PRETRAINING_HF_NAMES
    if pretraining and task:
        raise CheckpointError(
            f"{output_dir}: no single transformers ALBERT class holds both the pretraining heads and "
            f"{', '.join(sorted(task))}"
        )
    head = None
    if architecture is not None:
        head = _declared_head(architecture, heads, task, arrays, config, output_dir)
    elif pretraining:
        architecture = "AlbertForPreTraining"
    elif task:
        head = next((h for h in heads if h.guessed_from_arrays and _hf_names(h) == task), None)
        if head is None:
            raise CheckpointError(
                f"{output_dir}: no transformers ALBERT class holds the heads {', '.join(sorted(task))}"
            )
        architecture = head.huggingface_architecture
    else:
        architecture = "AlbertModel"
    hf_config = huggingface_config_from_albert(config, architecture)
    if head is not None and head.labels_in_config:
        rows = head_rows(head, arrays)
        names = list(labels) if labels is not None and len(labels) == rows else [f"LABEL_{i}" for i in range(rows)]
        hf_config["id2label"] = {str(i): name for i, name in enumerate(names)}
        hf_config["label2id"] = {name: i for i, name in enumerate(names)}
    files = {
        "model.safetensors": save(state, metadata={"format": "pt"}),
        "config.json": (json.dumps(hf_config, indent=2, sort_keys=True) + "\n").encode("utf-8"),
        **tokenizer,
    }
    return write_files(output_dir, files)
