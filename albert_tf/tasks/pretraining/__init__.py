"""MLM + SOP pretraining: ``run_pretraining`` (``task``) and the small curve run of the demo, the reproduction and
the benchmarks (``curve``). The records are read and checked by ``albert_tf.data.pretraining``; the model and losses
are ``albert_tf.modeling``'s ``AlbertPretrainer``.

The options are plain values (``options``); the task and the curve run, which need TensorFlow, are imported on
first use (PEP 562), so that ``run_pretraining --help`` does not pay for TensorFlow."""

from __future__ import annotations

import importlib
from typing import Any

from albert_tf.tasks.pretraining.options import TRAINER_DEFAULTS, PretrainingOptions

# Public name -> the module of this package that defines it.
_LAZY = {
    "CURVE_KEYS": "curve",
    "pretrain_with_curve": "curve",
    "small_albert_config": "curve",
    "PretrainingTask": "task",
    "make_config": "task",
    "run": "task",
}

__all__ = ["TRAINER_DEFAULTS", "PretrainingOptions", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
