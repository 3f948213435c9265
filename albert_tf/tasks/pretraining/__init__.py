"""MLM + SOP pretraining: ``run_pretraining`` (``task``) and the small curve run of the demo, the reproduction and
the benchmarks (``curve``). The records are read and checked by ``albert_tf.data.pretraining``; the model and losses
are ``albert_tf.modeling``'s ``AlbertPretrainer``.

The options and ``make_config`` are plain values (``options``), and the record globs are expanded without
TensorFlow (``inputs``); the task and the curve run, which need TensorFlow, are imported from their modules, so that
``run_pretraining --help``, a flag mistake and a glob that matches nothing do not pay for TensorFlow."""

from __future__ import annotations

from albert_tf.tasks.pretraining.options import TRAINER_DEFAULTS, PretrainingOptions, make_config

__all__ = ["TRAINER_DEFAULTS", "PretrainingOptions", "make_config"]
