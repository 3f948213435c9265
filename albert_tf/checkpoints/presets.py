"""Released ALBERT weights by name: the one registry of pretrained presets.

A *pretrained preset* is a name (``albert_base_v2``, ``albert/albert-base-v2``,
``https://tfhub.dev/google/albert_base/3``) for weights that albert-tf fetches, verifies and caches
(:mod:`~albert_tf.checkpoints.download`); :mod:`~albert_tf.checkpoints.pretrained` turns it into the files a run
needs: the checkpoint, ``albert_config.json``, the tokenizer and its ``do_lower_case``. Every ``--init_checkpoint``
(and ``--albert_hub_module_handle``, ``export_savedmodel --checkpoint``, ``albert_convert_checkpoint --input``)
takes a name where it takes a path; an existing path always wins over a name.

Built in:

* Google's tarballs (official ``README.md`` of google-research/albert, "Pre-trained Models"):
  ``albert_{base,large,xlarge,xxlarge}_v{1,2}`` (English, SentencePiece ``30k-clean.model``) and
  ``albert_{base,large,xlarge,xxlarge}_zh`` (Chinese, WordPiece vocabulary);
* the TF-Hub modules by their handles, ``https://tfhub.dev/google/albert_{size}/1`` (v1) and ``/3`` (v2 without
  native Einsum), fetched from the ``tfhub-modules`` bucket that tfhub.dev served them from. ``/2`` is left out: the
  maintainers said it "will remain broken" (google-research/albert#94);
* Hugging Face ids ``albert/albert-{size}-v{1,2}`` (and the old ``albert-{size}-v{1,2}``), fetched with
  ``huggingface_hub`` when it is installed; ``hf://owner/name`` names any other Hugging Face repository.

Google published no checksums for its tarballs, so the built-in entries carry none. Such an entry is checked by
what can be checked: the byte count against the server's ``Content-Length``, the archive read to its end (gzip's
CRC), and the unpacked folder holding a config and a checkpoint. The sha256 of what was fetched is recorded in the
cache (``python -m albert_tf.configs`` prints it) so that a site can pin it in its own entry.

User entries come from the JSON file named by ``$ALBERT_TF_PRESETS``: ``{"name": {"url": ..., "sha256": ...,
"size": ..., "format": ..., "do_lower_case": ..., "description": ...}}`` with ``url`` an ``https://``/``http://`` or
``file://`` URL, or a path (relative to the JSON file; a TensorFlow filesystem path such as ``gs://`` works too) of
a ``.tar.gz`` / ``.tar`` / ``.zip`` archive or of an unpacked folder, which is used in place. A user entry with a
built-in name replaces it (a mirror).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any

from albert_tf import files as _fs
from albert_tf.checkpoints.report import CheckpointError

PRESETS_ENV = "ALBERT_TF_PRESETS"
TARBALL_URL = "https://storage.googleapis.com/albert_models/{}.tar.gz"
HUB_HANDLE = "https://tfhub.dev/google/albert_{}/{}"
HUB_ARCHIVE_URL = "https://storage.googleapis.com/tfhub-modules/google/albert_{}/{}.tar.gz"
HF_SCHEME = "hf://"
SIZES = ("base", "large", "xlarge", "xxlarge")
PRESET_FORMATS = ("official", "huggingface", "hub_module", "albert_tf")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
ENTRY_KEYS = {"url": str, "sha256": str, "size": int, "format": str, "do_lower_case": bool, "description": str}
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class PresetError(CheckpointError):
    """An unknown preset name or a bad entry in ``$ALBERT_TF_PRESETS``."""


@dataclasses.dataclass(frozen=True)
class Preset:
    """One named set of pretrained weights and where it comes from."""

    name: str
    url: str
    size: int | None = None
    sha256: str | None = None
    format: str | None = None  # None: detected from the unpacked files
    do_lower_case: bool = True
    description: str = ""
    source: str = "built-in"

    @property
    def kind(self) -> str:
        """``huggingface`` (a Hub repository), ``directory`` (a local folder used in place) or ``archive``."""
        if self.url.startswith(HF_SCHEME):
            return "huggingface"
        path = local_source(self.url)
        if path is not None and not path.endswith(ARCHIVE_SUFFIXES) and _fs.isdir(path):
            return "directory"
        return "archive"


def _built_in() -> dict[str, Preset]:
    out: dict[str, Preset] = {}
    for size in SIZES:
        for version in (1, 2):
            name = f"albert_{size}_v{version}"
            out[name] = Preset(name, TARBALL_URL.format(name), format="official",
                               description=f"Google's ALBERT-{size} v{version} tarball (English, 30k-clean.model)")
            hf = f"albert/albert-{size}-v{version}"
            out[hf] = Preset(hf, HF_SCHEME + hf, format="huggingface",
                             description=f"ALBERT-{size} v{version} on the Hugging Face Hub")
        for version, release in ((1, 1), (2, 3)):
            handle = HUB_HANDLE.format(size, release)
            out[handle] = Preset(handle, HUB_ARCHIVE_URL.format(size, release), format="hub_module",
                                 description=f"TF-Hub module of ALBERT-{size} v{version}")
        zh = f"albert_{size}_zh"
        out[zh] = Preset(zh, TARBALL_URL.format(zh), format="official",
                         description=f"Google's Chinese ALBERT-{size} tarball (WordPiece vocabulary)")
    return out


BUILT_IN = _built_in()
ALIASES = {f"albert-{size}-v{version}": f"albert/albert-{size}-v{version}" for size in SIZES for version in (1, 2)}


def local_source(url: str) -> str | None:
    """The path behind a ``file://`` URL or a plain (local or TensorFlow filesystem) path; None for http(s) and
    ``hf://``."""
    if url.startswith(("http://", "https://", HF_SCHEME)):
        return None
    if url.startswith("file://"):
        return url[len("file://"):]
    return url


def _entry(name: Any, data: Any, path: str) -> Preset:
    where = f"{path}: entry {name!r}"
    if not isinstance(name, str) or not name.strip():
        raise PresetError(f"{path}: preset names must be non-empty strings, got {name!r}")
    if not isinstance(data, dict):
        raise PresetError(f"{where}: expected an object with \"url\", got {type(data).__name__}")
    unknown = sorted(set(data) - set(ENTRY_KEYS))
    if unknown:
        raise PresetError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(ENTRY_KEYS)})")
    for key, kind in ENTRY_KEYS.items():
        if key in data and (not isinstance(data[key], kind) or (kind is int and isinstance(data[key], bool))):
            raise PresetError(f"{where}: {key!r} must be {kind.__name__}, got {data[key]!r}")
    if not data.get("url"):
        raise PresetError(f"{where}: \"url\" is required (https://, file:// or a path)")
    sha256 = data.get("sha256")
    if sha256 is not None and not _SHA256.match(sha256.lower()):
        raise PresetError(f"{where}: \"sha256\" must be 64 hex digits, got {sha256!r}")
    if data.get("format") is not None and data["format"] not in PRESET_FORMATS:
        raise PresetError(f"{where}: \"format\" must be one of {', '.join(PRESET_FORMATS)}, got {data['format']!r}")
    if data.get("size") is not None and data["size"] <= 0:
        raise PresetError(f"{where}: \"size\" must be a positive byte count, got {data['size']}")
    url = data["url"]
    source = local_source(url)
    if source is not None and not _fs.is_remote(source) and not os.path.isabs(source):
        source = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), source))
        url = "file://" + source if url.startswith("file://") else source
    return Preset(name, url, size=data.get("size"), sha256=sha256.lower() if sha256 else None,
                  format=data.get("format"), do_lower_case=data.get("do_lower_case", True),
                  description=data.get("description", ""), source=path)


def user_presets() -> dict[str, Preset]:
    """The entries of ``$ALBERT_TF_PRESETS`` (empty when unset), validated: a bad file or entry raises
    :class:`PresetError` naming the file, the line or the entry."""
    path = os.environ.get(PRESETS_ENV)
    if not path:
        return {}
    if not _fs.exists(path):
        raise PresetError(f"${PRESETS_ENV}={path}: file not found")
    if _fs.isdir(path):
        raise PresetError(f"${PRESETS_ENV}={path}: is a directory; it must name a JSON file")
    try:
        data = json.loads(_fs.read_text(path))
    except json.JSONDecodeError as e:
        raise PresetError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None
    except UnicodeDecodeError:
        raise PresetError(f"{path}: not UTF-8 text") from None
    if not isinstance(data, dict):
        raise PresetError(f"{path}: expected a JSON object {{\"name\": {{\"url\": ...}}}}, got {type(data).__name__}")
    return {name: _entry(name, entry, path) for name, entry in data.items()}


def presets() -> dict[str, Preset]:
    """Every known preset: the built-in ones, replaced or extended by ``$ALBERT_TF_PRESETS``."""
    return {**BUILT_IN, **user_presets()}


def get_preset(name: str) -> Preset:
    """The preset called ``name`` (an old Hugging Face id maps to its ``albert/`` one; ``hf://owner/name`` is any
    Hub repository); :class:`PresetError` lists the known names otherwise."""
    known = presets()
    if name in known:
        return known[name]
    if name in ALIASES and ALIASES[name] in known:
        return known[ALIASES[name]]
    if name.startswith(HF_SCHEME) and name.count("/") == 3:
        return Preset(name, name, format="huggingface", description="a Hugging Face Hub repository")
    raise PresetError(f"unknown pretrained preset {name!r}; known: {', '.join(sorted(known))} "
                      f"(python -m albert_tf.configs lists them; ${PRESETS_ENV} adds your own)")


__all__ = [
    "ALIASES",
    "BUILT_IN",
    "PRESETS_ENV",
    "Preset",
    "PresetError",
    "get_preset",
    "local_source",
    "presets",
    "user_presets",
]
