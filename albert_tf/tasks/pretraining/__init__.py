"""MLM + SOP pretraining: ``run_pretraining`` (``task``) and the small curve run of the demo, the reproduction and
the benchmarks (``curve``). The records are read and checked by ``albert_tf.data.pretraining``; the model and losses
are ``albert_tf.modeling``'s ``AlbertPretrainer``.

The options and ``make_config`` are plain values (``options``), and the record globs are expanded without
TensorFlow (``inputs``); the task and the curve run, which need TensorFlow, are imported on first use (PEP 562), so
that ``run_pretraining --help``, a flag mistake and a glob that matches nothing do not pay for TensorFlow."""

from __future__ import annotations

from albert_tf.lazy import lazy_names
from albert_tf.tasks.pretraining.options import TRAINER_DEFAULTS, PretrainingOptions, make_config

# Public name -> the module of this package that defines it.
_LAZY = {
    "CURVE_KEYS": ".curve",
    "pretrain_with_curve": ".curve",
    "small_albert_config": ".curve",
    "PretrainingTask": ".task",
    "run": ".task",
}

__all__ = ["TRAINER_DEFAULTS", "PretrainingOptions", "make_config", *_LAZY]
__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
