"""What a pretrained preset name resolves to, wherever a checkpoint path is accepted.

:func:`resolve_pretrained` fetches a preset (:mod:`albert_tf.checkpoints.download`) and locates its files;
:func:`fill_from_preset` gives a run's options the checkpoint, config, tokenizer and ``do_lower_case`` it brings;
:func:`pretrained_for_model` serves the models' ``from_preset``. An existing path always wins over a name.
"""

from __future__ import annotations

import os
from typing import Any

from albert_tf import files as _fs
from albert_tf.checkpoints.preset_files import Pretrained, locate
from albert_tf.checkpoints.presets import PresetError, get_preset, presets


def is_preset_name(value: str | os.PathLike | None) -> bool:
    """Whether ``value`` names a preset rather than a path: it is not an existing file or folder (nor a
    checkpoint prefix) and the registry knows it."""
    if not value:
        return False
    value = os.fspath(value)
    if _fs.exists(value) or _fs.exists(value + ".index"):
        return False
    presets()  # a broken $ALBERT_TF_PRESETS file is its own error, not "no such checkpoint"
    try:
        get_preset(value)
    except PresetError:
        return False
    return True


def check_bare_name(value: str | None, flag: str = "--init_checkpoint") -> None:
    """A bare word (no folder, no scheme), or a Hugging Face style ``owner/name`` whose ``owner`` is no folder here,
    that is neither an existing path nor a preset is most likely a misspelt preset name or Hub id: say so, with the
    closest names, before TensorFlow starts, instead of "checkpoint not found" after it."""
    if not value or "://" in value or os.sep != "/" and os.sep in value or is_preset_name(value):
        return
    from albert_tf.checkpoints import keras_hub

    if keras_hub.is_keras_hub_handle(value):
        return
    parts = value.split("/")
    hub_like = len(parts) == 2 and all(parts) and not value.startswith(".") and not _fs.isdir(parts[0])
    if "/" in value and not hub_like:
        return
    if _fs.exists(value) or _fs.exists(value + ".index"):
        return
    import difflib

    close = difflib.get_close_matches(value, list(presets()), n=3, cutoff=0.6)
    if hub_like and not close:  # a relative path into a folder that is missing: say that, as before
        return
    hint = f"; did you mean {' or '.join(close)}?" if close else "; python -m albert_tf.configs lists the names"
    raise PresetError(f"{flag} {value}: no such file or folder, and not a pretrained preset name{hint}")


def resolve_pretrained(name: str) -> Pretrained:
    """Fetch preset ``name`` into the cache when it is not there yet (or use the cache; ``$ALBERT_TF_OFFLINE``) and
    return its files."""
    from albert_tf.checkpoints.download import fetch

    preset = get_preset(name)
    return locate(fetch(preset), preset)


def resolve_any(value: str | None) -> Pretrained | None:
    """:func:`resolve_pretrained` of a preset name, the files of a keras-hub preset folder or handle
    (``checkpoints.keras_hub.pretrained``), or None for anything else (a path)."""
    from albert_tf.checkpoints import keras_hub

    if keras_hub.is_keras_hub(value):
        return keras_hub.pretrained(value)
    return resolve_pretrained(value) if is_preset_name(value) else None


def pretrained_for_model(name: str) -> tuple[Any, Any] | None:
    """For the models' ``from_preset``: ``(AlbertConfig, load(model) -> LoadReport)`` of pretrained preset
    ``name`` (fetched first) or of a keras-hub preset (a folder ``save_to_preset`` wrote, or one of keras-hub's
    handles), or None when ``name`` is neither. ``load`` logs the report and refuses a model whose
    encoder the weights do not fill (``restore_pretrained``)."""
    from albert_tf.checkpoints import keras_hub

    if keras_hub.is_keras_hub(name):
        return keras_hub.find_config(name), _loader(name, name)
    if not is_preset_name(name):
        return None
    from albert_tf.config import AlbertConfig

    found = resolve_pretrained(name)
    if found.albert_config_file is None:
        raise PresetError(f"preset {name!r}: {found.directory} holds no albert_config.json")
    return AlbertConfig.from_json_file(found.albert_config_file), _loader(name, found.checkpoint)


def _loader(name: str, checkpoint: str) -> Any:
    """``load(model) -> LoadReport`` for :func:`pretrained_for_model`."""

    def load(model: Any) -> Any:
        from absl import logging

        from albert_tf.checkpoints import restore_pretrained

        report = restore_pretrained(model, checkpoint)
        logging.info("%s: %s", name, report.summary())
        return report

    return load


# The run options a preset fills in when they are not given.
FILLED = ("albert_config_file", "spm_model_file", "vocab_file", "do_lower_case")


def fill_from_preset(values: dict[str, Any], given: set[str], fields: set[str] | None = None) -> dict[str, Any]:
    """Resolve a preset (or keras-hub preset) named by ``values["init_checkpoint"]`` and fill the options it
    supplies.

    ``init_checkpoint`` becomes the fetched checkpoint; ``albert_config_file``, the tokenizer (``spm_model_file``,
    or ``vocab_file`` for WordPiece models) and ``do_lower_case`` come from the preset unless named in ``given``
    (the options the user set) or absent from ``fields`` (the options this run has). A path is left alone.
    """
    found = resolve_any(values.get("init_checkpoint"))
    if found is None:
        return values
    values["init_checkpoint"] = found.checkpoint
    values.update(supplied_options(found, given, set(values) | set(FILLED) if fields is None else fields))
    return values


def supplied_options(found: Pretrained, given: set[str], fields: set[str]) -> dict[str, Any]:
    """The options of :data:`FILLED` that ``found`` supplies: those in ``fields`` (the run has them), not in
    ``given`` (the user set them), and known to the preset; a tokenizer the user gave (either kind) keeps the
    preset's out of both tokenizer options."""
    tokenizer_given = bool({"spm_model_file", "vocab_file"} & given)
    offered = {
        "albert_config_file": found.albert_config_file,
        "spm_model_file": None if tokenizer_given else found.spm_model_file,
        "vocab_file": None if tokenizer_given else found.vocab_file,
        "do_lower_case": found.do_lower_case,
    }
    return {k: v for k, v in offered.items() if k in fields and k not in given and v is not None}


def describe_presets() -> str:
    """The pretrained presets, one per line: name, size, whether cached, what it is (for
    ``python -m albert_tf.configs``)."""
    from albert_tf.checkpoints.download import CACHE_ENV, cache_dir, cached_record, offline
    from albert_tf.checkpoints.presets import PRESETS_ENV

    known = presets()
    lines = [f"presets, released weights (--init_checkpoint=NAME, Model.from_preset; cache {cache_dir()} from "
             f"${CACHE_ENV}{', offline' if offline() else ''}; add your own with ${PRESETS_ENV}):"]
    for name, preset in sorted(known.items()):
        record = cached_record(preset) if preset.kind != "directory" else {"size": None}
        size = preset.size or (record or {}).get("size")
        state = "in place" if preset.kind == "directory" else ("cached" if record is not None else "not cached")
        shown = f"{size / 1e6:,.1f} MB" if size else "size unknown"
        origin = "" if preset.source == "built-in" else f" [{preset.source}]"
        lines.append(f"  {name:44s} {shown:>14s}  {state:10s}  {preset.description}{origin}")
    return "\n".join(lines)


__all__ = ["FILLED", "check_bare_name", "describe_presets", "fill_from_preset", "is_preset_name",
           "pretrained_for_model", "resolve_any", "resolve_pretrained", "supplied_options"]
