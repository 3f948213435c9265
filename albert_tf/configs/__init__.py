"""The presets shipped inside the package: model configs and flagfiles, by name.

Two kinds live in this folder and travel with the wheel, so they work from any directory:

* **model configs** (``albert_base_v2``, ``albert_tiny``, ...): the released ``albert_config.json`` files; any
  ``--albert_config_file`` flag and :meth:`albert_tf.AlbertConfig.from_preset` accept the name.
* **flag presets** (``glue/mrpc``, ``pretrain_base``, ...): absl flagfiles with the official recipes; every
  command accepts ``--preset=NAME``, which reads the packaged file where it stands on the command line (flags
  after it override it, as with ``--flagfile``).

``python -m albert_tf.configs`` prints both lists.
"""

from __future__ import annotations

import os

CONFIG_DIR = os.path.dirname(os.path.abspath(__file__))
FLAGFILE_SUFFIX = ".flags"
MODEL_SUFFIX = ".json"


class PresetError(ValueError):
    """An unknown preset name; the message lists the known ones."""


def _names(suffix: str) -> list[str]:
    out = []
    for root, _, files in os.walk(CONFIG_DIR):
        rel = os.path.relpath(root, CONFIG_DIR)
        for f in files:
            if f.endswith(suffix):
                name = f[: -len(suffix)]
                out.append(name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}")
    return sorted(out)


def flag_presets() -> list[str]:
    """Names accepted by ``--preset``, e.g. ``glue/mrpc``, ``pretrain_base``."""
    return _names(FLAGFILE_SUFFIX)


def model_presets() -> list[str]:
    """Names of the packaged model configs, e.g. ``albert_base_v2``."""
    return _names(MODEL_SUFFIX)


def flagfile_path(name: str) -> str:
    """The packaged flagfile of preset ``name`` (``glue/mrpc`` or ``glue/mrpc.flags``)."""
    stem = name[: -len(FLAGFILE_SUFFIX)] if name.endswith(FLAGFILE_SUFFIX) else name
    known = flag_presets()
    if stem not in known:
        raise PresetError(f"unknown preset {name!r}; known presets: {', '.join(known)}")
    return os.path.join(CONFIG_DIR, *stem.split("/")) + FLAGFILE_SUFFIX


def model_config_path(name: str) -> str:
    """The packaged ``albert_config.json`` of model preset ``name``."""
    known = model_presets()
    if name not in known:
        raise PresetError(f"unknown model preset {name!r}; known: {', '.join(known)}")
    return os.path.join(CONFIG_DIR, name + MODEL_SUFFIX)


def describe() -> str:
    """Both lists, one preset per line with its file's first comment line."""
    lines = ["flag presets (--preset=NAME):"]
    for name in flag_presets():
        with open(flagfile_path(name), encoding="utf-8") as f:
            first = f.readline().lstrip("#").strip()
        lines.append(f"  {name:22s} {first}")
    lines.append("model presets (--albert_config_file=NAME):")
    lines.extend(f"  {name}" for name in model_presets())
    return "\n".join(lines)
