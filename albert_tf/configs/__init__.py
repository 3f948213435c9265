"""What the package ships by name besides code: model configs and recipes.

Two kinds live in this folder and travel with the wheel, so they work from any directory:

* **model configs** (``albert_base_v2``, ``albert_tiny``, ...): the released ``albert_config.json`` files; any
  ``--albert_config_file`` flag and :meth:`albert_tf.AlbertConfig.from_name` accept the name.
* **recipes** (``glue/mrpc``, ``pretrain_base``, ...): absl flagfiles with the official hyper-parameters; every
  command accepts ``--recipe=NAME``, which reads the packaged file where it stands on the command line (flags
  after it override it, as with ``--flagfile``).

The third kind, released weights by name, are the **presets** of ``albert_tf.checkpoints.presets``
(``albert_base_v2``, ``albert/albert-base-v2``, ...), fetched into a cache; ``--init_checkpoint`` and the models'
``from_preset`` accept those names. ``python -m albert_tf.configs`` prints all three lists.
"""

from __future__ import annotations

import os

CONFIG_DIR = os.path.dirname(os.path.abspath(__file__))
RECIPE_SUFFIX = ".flags"
MODEL_SUFFIX = ".json"


class UnknownNameError(ValueError):
    """An unknown recipe or model config name; the message lists the known ones."""


# The seam through which this floor and the models' ``from_preset`` (modeling, also below) reach the pretrained
# presets of ``albert_tf.checkpoints`` (a higher floor) without importing it: ``albert_tf/__init__.py`` installs an
# object with ``for_model(name) -> (AlbertConfig, load(model)) or None`` and ``describe() -> str``.
_pretrained_provider = None


def set_pretrained_provider(provider) -> None:
    """Install the pretrained presets' provider (done once by ``albert_tf/__init__.py``)."""
    global _pretrained_provider
    _pretrained_provider = provider


def pretrained(name: str):
    """``(config, load)`` of pretrained preset ``name`` (fetched into the cache first), or None for a name that
    is not one (a config-only preset such as ``albert_tiny``)."""
    return _pretrained_provider.for_model(name) if _pretrained_provider is not None else None


def _names(suffix: str) -> list[str]:
    out = []
    for root, _, files in os.walk(CONFIG_DIR):
        rel = os.path.relpath(root, CONFIG_DIR)
        for f in files:
            if f.endswith(suffix):
                name = f[: -len(suffix)]
                out.append(name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}")
    return sorted(out)


def recipes() -> list[str]:
    """Names accepted by ``--recipe``, e.g. ``glue/mrpc``, ``pretrain_base``."""
    return _names(RECIPE_SUFFIX)


def model_configs() -> list[str]:
    """Names of the packaged model configs, e.g. ``albert_base_v2``."""
    return _names(MODEL_SUFFIX)


def recipe_path(name: str) -> str:
    """The packaged flagfile of recipe ``name`` (``glue/mrpc`` or ``glue/mrpc.flags``)."""
    stem = name[: -len(RECIPE_SUFFIX)] if name.endswith(RECIPE_SUFFIX) else name
    known = recipes()
    if stem not in known:
        raise UnknownNameError(f"unknown recipe {name!r}; known recipes: {', '.join(known)}")
    return os.path.join(CONFIG_DIR, *stem.split("/")) + RECIPE_SUFFIX


def model_config_path(name: str) -> str:
    """The packaged ``albert_config.json`` of the model config ``name``."""
    known = model_configs()
    if name not in known:
        raise UnknownNameError(f"unknown model config {name!r}; known: {', '.join(known)}")
    return os.path.join(CONFIG_DIR, name + MODEL_SUFFIX)


def describe() -> str:
    """The three lists: recipes (each with its file's first comment line), model configs, presets."""
    lines = ["recipes (--recipe=NAME):"]
    for name in recipes():
        with open(recipe_path(name), encoding="utf-8") as f:
            first = f.readline().lstrip("#").strip()
        lines.append(f"  {name:22s} {first}")
    lines.append("model configs (--albert_config_file=NAME):")
    lines.extend(f"  {name}" for name in model_configs())
    if _pretrained_provider is not None:
        lines.append(_pretrained_provider.describe())
    return "\n".join(lines)
