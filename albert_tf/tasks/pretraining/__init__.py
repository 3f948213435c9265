"""MLM + SOP pretraining: ``run_pretraining`` (``task``) and the small curve run of the demo, the reproduction and
the benchmarks (``curve``). The records are read and checked by ``albert_tf.data.pretraining``; the model and losses
are ``albert_tf.modeling``'s ``AlbertPretrainer``."""

from albert_tf.tasks.pretraining.curve import CURVE_KEYS, pretrain_with_curve, small_albert_config
from albert_tf.tasks.pretraining.task import (
    TRAINER_DEFAULTS,
    PretrainingOptions,
    PretrainingTask,
    make_config,
    run,
)

__all__ = ["CURVE_KEYS", "TRAINER_DEFAULTS", "PretrainingOptions", "PretrainingTask", "make_config",
           "pretrain_with_curve", "run", "small_albert_config"]
