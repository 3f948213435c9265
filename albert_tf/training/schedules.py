"""Learning-rate schedule of the official ``optimization.py: create_optimizer``.

* Decay: ``init_lr * (1 - min(step, N) / N) ** poly_power`` (``tf.train.polynomial_decay`` to 0,
  ``cycle=False``), measured from step 0, not from the end of warmup.
* Warmup: with ``s = step - start_warmup_step``, while ``s < num_warmup_steps`` the rate is
  ``init_lr * s / num_warmup_steps`` and *replaces* the decayed value.
* Official quirk kept: steps before ``start_warmup_step`` give a negative rate.
"""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="albert_tf")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup that replaces a polynomial decay to 0 (the official ALBERT/BERT schedule)."""

    def __init__(
        self,
        init_lr: float,
        num_train_steps: int,
        num_warmup_steps: int = 0,
        poly_power: float = 1.0,
        start_warmup_step: int = 0,
        name: str = "warmup_polynomial_decay",
    ) -> None:
        super().__init__()
        if num_train_steps < 1:
            raise ValueError(f"num_train_steps must be >= 1, got {num_train_steps}")
        if num_warmup_steps < 0:
            raise ValueError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}")
        self.init_lr = float(init_lr)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)
        self.poly_power = float(poly_power)
        self.start_warmup_step = int(start_warmup_step)
        self.name = name

    def __call__(self, step):
        with tf.name_scope(self.name):
            step = tf.cast(tf.convert_to_tensor(step), tf.float32)
            n = float(self.num_train_steps)
            decayed = self.init_lr * tf.pow(1.0 - tf.minimum(step, n) / n, self.poly_power)
            if not self.num_warmup_steps:
                return decayed
            # The official code works on int32 steps: s = int(step) - start_warmup_step.
            s = step - float(self.start_warmup_step)
            warmup = self.init_lr * s / float(self.num_warmup_steps)
            return tf.where(s < float(self.num_warmup_steps), warmup, decayed)

    def get_config(self) -> dict:
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "poly_power": self.poly_power,
            "start_warmup_step": self.start_warmup_step,
            "name": self.name,
        }
