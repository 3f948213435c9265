"""The official ALBERT optimisers (official ``optimization.py``, ``lamb_optimizer.py``) as Keras 3 optimizers.

``AdamWeightDecay`` (official ``optimization.AdamWeightDecayOptimizer``) and ``LAMB`` (official
``lamb_optimizer.LAMBOptimizer``) share one update; neither has bias correction (official)::

    m = b1*m + (1-b1)*g;   v = b2*v + (1-b2)*g^2
    u = m / (sqrt(v) + eps)  [+ wd * w   unless the name matches exclude_from_weight_decay]
    AdamW: w <- w - lr*u
    LAMB:  w <- w - r*lr*u,  r = ||w|| / ||u|| when both > 0 else 1
           (r = 1 for names matching exclude_from_layer_adaptation, which defaults to the
            weight-decay exclusions, exactly as the official code)

``bias_correction=True`` (``--adam_bias_correction``, not official) divides m by ``1 - b1^t`` and v by
``1 - b2^t`` (t the update count, from 1), as Adam does. Without it, AdamW's updates are larger than Adam's by
``(1 - b1^t) / sqrt(1 - b2^t)``: 3.2x at t = 1, 5.6x at t = 30, 2x at t = 300, 1.03x at t = 3000 (Mosbach et al.,
2021, trace part of BERT fine-tuning's instability to this). LAMB is almost unaffected: its trust ratio cancels a
scale common to u, so only the weight-decay share and the excluded (LayerNorm, bias) variables see it.

Keras' own ``Lamb``/``AdamW`` differ (bias correction, eps 1e-7, decoupled decay applied outside
the trust ratio, no layer-adaptation exclusions; see reference/deps.md), hence these classes.

Exclusions are regular expressions searched (``re.search``) in the variable's Keras 3 path
(e.g. ``albert_pretrainer/encoder/.../LayerNorm/gamma``), the analogue of the TF1 name the
official code searched. The defaults are the official ``["LayerNorm", "layer_norm", "bias"]``;
``bias`` also matches ``output_bias`` as it did officially.

Two things the official ``create_optimizer`` did outside the optimizer are done here so every
runner gets them under every tf.distribute strategy and under ``LossScaleOptimizer``:

* global-norm clipping (``clip_norm``, default 1.0, ``tf.clip_by_global_norm`` as official) is
  applied to the *all-reduced, unscaled* gradient, i.e. to the gradient of the global batch. This
  equals the official single-device behaviour; the official multi-core TPU path clipped each core's
  gradient before the cross-shard sum, which makes results depend on the number of cores.
* ``gradients_pre_reduced``: the trainer all-reduces gradients itself (so the loss-scale finite
  check sees the same gradient on every replica); then the optimizer must not sum them again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import keras
import tensorflow as tf

DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


def variable_name(variable) -> str:
    """The string the exclusion regexes are matched against: the Keras 3 ``path`` (else ``name``)."""
    path = getattr(variable, "path", None)
    if path:
        return str(path)
    name = getattr(variable, "name", "")
    return str(name).split(":")[0]


def _matches(name: str, patterns: Sequence[str] | None) -> bool:
    return any(re.search(p, name) is not None for p in (patterns or ()))


class _OfficialAdamCore(keras.optimizers.Optimizer):
    """Shared state and update of AdamWeightDecay and LAMB (no bias correction)."""

    use_layer_adaptation = False

    def __init__(
        self,
        learning_rate=0.001,
        weight_decay_rate: float = 0.01,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-6,
        exclude_from_weight_decay: Sequence[str] | None = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
        clip_norm: float | None = 1.0,
        gradients_pre_reduced: bool = False,
        bias_correction: bool = False,
        name: str | None = None,
        **kwargs,
    ) -> None:
        for forbidden in ("weight_decay", "global_clipnorm", "clipnorm", "clipvalue", "gradient_accumulation_steps"):
            if kwargs.get(forbidden) is not None:
                raise ValueError(
                    f"{type(self).__name__}: '{forbidden}' is not supported; use weight_decay_rate / clip_norm "
                    "(applied after the cross-replica sum) and the trainer's gradient_accumulation_steps"
                )
            kwargs.pop(forbidden, None)
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.exclude_from_weight_decay = list(exclude_from_weight_decay or [])
        self.clip_norm = None if clip_norm is None or clip_norm <= 0 else float(clip_norm)
        self.gradients_pre_reduced = bool(gradients_pre_reduced)
        self.bias_correction = bool(bias_correction)

    # ------------------------------------------------------------------ which variables
    def _do_use_weight_decay(self, name: str) -> bool:
        return bool(self.weight_decay_rate) and not _matches(name, self.exclude_from_weight_decay)

    def _do_layer_adaptation(self, name: str) -> bool:
        return False

    def build(self, var_list) -> None:
        if self.built:
            return
        super().build(var_list)
        self._adam_m, self._adam_v = self.add_optimizer_variables(var_list, ["adam_m", "adam_v"])
        names = [variable_name(v) for v in var_list]
        self._decay_mask = [self._do_use_weight_decay(n) for n in names]
        self._adapt_mask = [self._do_layer_adaptation(n) for n in names]
        self._built_names = names

    def variable_report(self) -> list[tuple[str, bool, bool]]:
        """(name, weight-decayed, layer-adapted) for every variable: to audit the exclusion regexes."""
        return list(zip(self._built_names, self._decay_mask, self._adapt_mask))

    # ------------------------------------------------------------------ update
    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        dtype = variable.dtype
        lr = tf.cast(learning_rate, dtype)
        grad = tf.cast(tf.convert_to_tensor(gradient), dtype)
        m = self._adam_m[index]
        v = self._adam_v[index]
        next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(grad)
        if self.bias_correction:
            t = tf.cast(self.iterations + 1, dtype)  # this update's number: iterations counts applied updates
            update = (next_m / (1.0 - tf.pow(self.beta_1, t))) / (
                tf.sqrt(next_v / (1.0 - tf.pow(self.beta_2, t))) + self.epsilon
            )
        else:
            update = next_m / (tf.sqrt(next_v) + self.epsilon)
        param = tf.convert_to_tensor(variable)
        if self._decay_mask[index]:
            update += self.weight_decay_rate * param
        ratio = tf.constant(1.0, dtype)
        if self.use_layer_adaptation and self._adapt_mask[index]:
            w_norm = tf.norm(param, ord=2)
            u_norm = tf.norm(update, ord=2)
            ratio = tf.where(
                tf.greater(w_norm, 0.0),
                tf.where(tf.greater(u_norm, 0.0), w_norm / tf.where(u_norm > 0, u_norm, 1.0), 1.0),
                1.0,
            )
        self.assign(m, next_m)
        self.assign(v, next_v)
        self.assign_sub(variable, ratio * lr * update)

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        """All-reduce (unless the trainer did), clip by global norm, then update each variable."""
        tvars = [v.value if isinstance(v, keras.Variable) else v for v in trainable_variables]
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        if not self.gradients_pre_reduced:
            grads = [g for g, _ in self._all_reduce_sum_gradients(list(zip(grads, tvars)))]
        if self.clip_norm is not None:
            grads, _ = tf.clip_by_global_norm(grads, self.clip_norm)
        tf.__internal__.distribute.interim.maybe_merge_call(
            self._distributed_tf_update_step, self._distribution_strategy, list(zip(grads, tvars)), learning_rate
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "weight_decay_rate": self.weight_decay_rate,
                "beta_1": self.beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
                "exclude_from_weight_decay": list(self.exclude_from_weight_decay),
                "clip_norm": self.clip_norm,
                "gradients_pre_reduced": self.gradients_pre_reduced,
                "bias_correction": self.bias_correction,
            }
        )
        for key in ("weight_decay", "global_clipnorm", "clipnorm", "clipvalue", "gradient_accumulation_steps"):
            config.pop(key, None)
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class AdamWeightDecay(_OfficialAdamCore):
    """Official ``AdamWeightDecayOptimizer``: Adam without bias correction + L2 decay inside the update."""

    use_layer_adaptation = False

    def __init__(self, learning_rate=0.001, name: str = "adam_weight_decay", **kwargs) -> None:
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)


@keras.saving.register_keras_serializable(package="albert_tf")
class LAMB(_OfficialAdamCore):
    """Official ``LAMBOptimizer``: the AdamWeightDecay update scaled by a per-tensor trust ratio."""

    use_layer_adaptation = True

    def __init__(
        self,
        learning_rate=0.001,
        exclude_from_layer_adaptation: Sequence[str] | None = None,
        name: str = "lamb",
        **kwargs,
    ) -> None:
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        # Official: `if exclude_from_layer_adaptation: ... else: = exclude_from_weight_decay`.
        if exclude_from_layer_adaptation:
            self.exclude_from_layer_adaptation = list(exclude_from_layer_adaptation)
        else:
            self.exclude_from_layer_adaptation = list(self.exclude_from_weight_decay)

    def _do_layer_adaptation(self, name: str) -> bool:
        return not _matches(name, self.exclude_from_layer_adaptation)

    def get_config(self) -> dict:
        config = super().get_config()
        config["exclude_from_layer_adaptation"] = list(self.exclude_from_layer_adaptation)
        return config


def create_optimizer(
    name: str,
    learning_rate,
    *,
    weight_decay_rate: float = 0.01,
    epsilon: float = 1e-6,
    clip_norm: float | None = 1.0,
    exclude_from_weight_decay: Sequence[str] | None = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
    gradients_pre_reduced: bool = False,
    bias_correction: bool = False,
) -> _OfficialAdamCore:
    """``adamw`` or ``lamb`` with the official hyper-parameters (the ``--optimizer`` flag)."""
    kwargs = dict(
        weight_decay_rate=weight_decay_rate,
        epsilon=epsilon,
        clip_norm=clip_norm,
        exclude_from_weight_decay=exclude_from_weight_decay,
        gradients_pre_reduced=gradients_pre_reduced,
        bias_correction=bias_correction,
    )
    if name == "adamw":
        return AdamWeightDecay(learning_rate, **kwargs)
    if name == "lamb":
        return LAMB(learning_rate, **kwargs)
    raise ValueError(f"--optimizer must be 'adamw' or 'lamb', got {name!r}")
