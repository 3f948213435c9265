"""The files inside a fetched preset folder: its checkpoint, config and tokenizer (:func:`locate`)."""

from __future__ import annotations

import dataclasses
import os

from albert_tf import files as _fs
from albert_tf.checkpoints.presets import Preset, PresetError

CONFIG_NAMES = ("albert_config.json",)


@dataclasses.dataclass(frozen=True)
class Pretrained:
    """What a preset resolves to: the files a fine-tuning, conversion or export run needs."""

    name: str
    directory: str
    checkpoint: str  # what --init_checkpoint gets: a TF checkpoint prefix, a Hugging Face or TF-Hub module folder
    format: str
    albert_config_file: str | None
    spm_model_file: str | None
    vocab_file: str | None
    do_lower_case: bool


def _one(paths: list[str], what: str, directory: str) -> str | None:
    if len(paths) > 1:
        names = ", ".join(os.path.relpath(p, directory) for p in paths)
        raise PresetError(f"{directory}: {len(paths)} {what} ({names}); give the one to use explicitly")
    return paths[0] if paths else None


def _model_folder(directory: str) -> str:
    """The folder of an unpacked preset that holds its files: the top folder, or its one sub-folder (tarballs
    unpack to ``albert_base/``)."""
    entries = [e for e in _fs.listdir(directory) if not e.startswith(".")]
    if len(entries) == 1 and _fs.isdir(os.path.join(directory, entries[0].rstrip("/"))):
        return os.path.join(directory, entries[0].rstrip("/"))
    return directory


def locate(directory: str, preset: Preset) -> Pretrained:
    """The checkpoint, config and tokenizer inside the unpacked (or in-place) preset folder ``directory``."""
    from albert_tf.checkpoints.hub_module import is_hub_module, resolve_hub_module

    folder = _model_folder(directory)
    if is_hub_module(folder):
        module = resolve_hub_module(folder)
        return Pretrained(preset.name, folder, folder, "hub_module", module.albert_config_file,
                          module.spm_model_file, module.vocab_file, preset.do_lower_case)
    spm = _one(_fs.match(os.path.join(folder, "*.model")), "SentencePiece models (*.model)", folder)
    vocab = None if spm else _one(_fs.match(os.path.join(folder, "*vocab*.txt")), "vocabularies", folder)
    if _fs.exists(os.path.join(folder, "config.json")):
        config = os.path.join(folder, "albert_config.json")
        return Pretrained(preset.name, folder, folder, "huggingface", config if _fs.exists(config) else None,
                          spm, vocab, preset.do_lower_case)
    config = _one([os.path.join(folder, n) for n in CONFIG_NAMES if _fs.exists(os.path.join(folder, n))],
                  "configs", folder)
    indexes = sorted(_fs.match(os.path.join(folder, "*.index")))
    best = [i for i in indexes if os.path.basename(i) == "model.ckpt-best.index"]
    index = best[0] if best else _one(indexes, "checkpoints (*.index)", folder)
    if index is None or config is None:
        missing = "a checkpoint (*.index)" if index is None else "albert_config.json"
        raise PresetError(f"preset {preset.name!r}: {folder} holds no {missing}; the download is not an ALBERT "
                          f"checkpoint (expected albert_config.json and model.ckpt-*.index, a Hugging Face folder or "
                          f"a TF-Hub module)")
    return Pretrained(preset.name, folder, index[: -len(".index")], preset.format or "official", config, spm, vocab,
                      preset.do_lower_case)


__all__ = ["Pretrained", "locate"]
