"""albert-tf: ALBERT (A Lite BERT) for TensorFlow 2 / Keras 3.

The public API::

    from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer, AlbertClassifier, AlbertSquad
    from albert_tf import AlbertMultipleChoice, FullTokenizer, AlbertPreprocessor

The names are imported on first use (PEP 562), so ``import albert_tf.configs``, a command's ``--help`` or a
runner's flag mistake does not pay for importing TensorFlow, and a command line can quiet TensorFlow's start-up
banners before the import.

Layers of the package, each importing only from the ones before it (``tests/test_architecture.py``):
``config``/``configs``/``files``/``tokenization``/``evaluation`` < ``modeling``/``data``/``export`` <
``checkpoints`` < ``training`` < ``tasks`` < ``cli``/``demo``. See ARCHITECTURE.md.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Public name -> the module that defines it.
_EXPORTS = {
    "AlbertConfig": "albert_tf.config",
    "ConfigError": "albert_tf.config",
    "AlbertEncoder": "albert_tf.modeling",
    "AlbertPretrainer": "albert_tf.modeling",
    "AlbertClassifier": "albert_tf.tasks.glue.model",
    "AlbertSquad": "albert_tf.tasks.squad.model",
    "AlbertMultipleChoice": "albert_tf.tasks.race.model",
    "FullTokenizer": "albert_tf.tokenization",
    "AlbertPreprocessor": "albert_tf.tokenization",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    """A public name's value, its module imported on first access (PEP 562) and the value kept here."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'albert_tf' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_EXPORTS[name]), name)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


class _PretrainedPresets:
    """The pretrained presets as ``albert_tf.configs`` and the models' ``from_preset`` reach them: their floors lie
    below ``albert_tf.checkpoints``, which is imported only when a name is resolved or listed."""

    @staticmethod
    def for_model(name: str) -> Any:
        from albert_tf.checkpoints.pretrained import pretrained_for_model

        return pretrained_for_model(name)

    @staticmethod
    def describe() -> str:
        from albert_tf.checkpoints.pretrained import describe_presets

        return describe_presets()


importlib.import_module("albert_tf.configs").set_pretrained_provider(_PretrainedPresets)
