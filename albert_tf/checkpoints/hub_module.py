"""TF-Hub ALBERT modules (the official ``export_to_tfhub.py`` format) read as checkpoints.

A TF1 Hub module directory (``tfhub.dev/google/albert_*``, downloaded and unpacked, on a local disk or ``gs://``)
holds ``tfhub_module.pb``, ``saved_model.pb``, its weights as a TF checkpoint at ``variables/variables`` and the
assets the official exporter registered: the SentencePiece model (``assets/*.model``), its ``.vocab`` and, in
modules exported by ``export_to_tfhub.py``, ``assets/albert_config.json``. The weights carry the official names
(``bert/...``; ``module/bert/...`` once a graph has loaded the module), which the official reader maps, so the
module is read like any official checkpoint: no ``tensorflow_hub`` and no TF1 graph are needed.

``--albert_hub_module_handle`` of the official fine-tuning runners resolves here. The released handles
(``https://tfhub.dev/google/albert_base/3``, ...) are pretrained presets, fetched into the cache first
(:mod:`albert_tf.checkpoints.presets`); any other ``https://`` handle is refused with the way to download it.
"""

from __future__ import annotations

import dataclasses
import os

from albert_tf import files as _fs
from albert_tf.checkpoints.report import CheckpointError

VARIABLES_PREFIX = os.path.join("variables", "variables")
MARKERS = ("tfhub_module.pb", "saved_model.pb")


@dataclasses.dataclass(frozen=True)
class HubModule:
    """What a Hub module directory provides to a fine-tuning run."""

    directory: str
    checkpoint: str  # TF checkpoint prefix of the module's weights
    spm_model_file: str | None  # assets/*.model (SentencePiece) if any
    vocab_file: str | None  # assets/vocab.txt (WordPiece modules) if any
    albert_config_file: str | None  # assets/albert_config.json if any


def is_hub_module(path: str) -> bool:
    """Whether ``path`` is a directory holding a Hub module (a marker file and ``variables/variables.index``)."""

    path = os.fspath(path)
    if not _fs.isdir(path):
        return False
    has_marker = any(_fs.exists(os.path.join(path, m)) for m in MARKERS)
    return has_marker and _fs.exists(os.path.join(path, VARIABLES_PREFIX) + ".index")


def resolve_hub_module(handle: str) -> HubModule:
    """The weights and assets of the Hub module at ``handle`` (a local or ``gs://`` directory)."""

    handle = os.fspath(handle).rstrip("/")
    if handle.startswith(("http://", "https://")):
        raise CheckpointError(
            f"--albert_hub_module_handle {handle}: not a registered handle (python -m albert_tf.configs lists them); "
            f"fetch '{handle}?tf-hub-format=compressed', unpack the .tar.gz and pass the directory (or a gs:// copy), "
            f"or add it to $ALBERT_TF_PRESETS"
        )
    if not _fs.isdir(handle):
        what = "a file, where a TF-Hub module's directory is expected" if _fs.exists(handle) else "no such directory"
        raise CheckpointError(f"--albert_hub_module_handle {handle}: {what}")
    if not is_hub_module(handle):
        raise CheckpointError(
            f"--albert_hub_module_handle {handle}: not a TF-Hub module directory (expected tfhub_module.pb or "
            f"saved_model.pb and {VARIABLES_PREFIX}.index)"
        )
    assets = os.path.join(handle, "assets")
    names = sorted(_fs.listdir(assets)) if _fs.isdir(assets) else []

    def one(suffix: str) -> str | None:
        found = [n for n in names if n.endswith(suffix)]
        if len(found) > 1:
            raise CheckpointError(f"{assets}: {len(found)} '*{suffix}' assets ({', '.join(found)}); pass the one "
                                  f"to use explicitly")
        return os.path.join(assets, found[0]) if found else None

    return HubModule(
        directory=handle,
        checkpoint=os.path.join(handle, VARIABLES_PREFIX),
        spm_model_file=one(".model"),
        vocab_file=os.path.join(assets, "vocab.txt") if "vocab.txt" in names else None,
        albert_config_file=os.path.join(assets, "albert_config.json") if "albert_config.json" in names else None,
    )
