"""AdamWeightDecay and LAMB against a NumPy re-statement of the official update (spec 3.4).

The reference below is written from the spec's formulas, independently of the code under test:
no bias correction, eps 1e-6, weight decay 0.01 added inside the update except for names matching
LayerNorm / layer_norm / bias (re.search), LAMB trust ratio ||w||/||u|| per tensor (1 when a norm is
0 or the name is excluded), global-norm clipping 1.0 of the gradient before the update.
"""

from __future__ import annotations

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.training.optimizers import LAMB, AdamWeightDecay, create_optimizer
from albert_tf.training.schedules import WarmupPolynomialDecay

EXCLUDE = ["LayerNorm", "layer_norm", "bias"]


def reference_steps(params, grads_per_step, lrs, lamb, clip=1.0, wd=0.01, b1=0.9, b2=0.999, eps=1e-6, bc=False):
    """NumPy float64 restatement of the official optimizer loop (create_optimizer + apply_gradients); ``bc``:
    Adam's bias correction (Kingma & Ba, Algorithm 1: m / (1 - b1^t), v / (1 - b2^t), t from 1)."""
    w = {k: v.astype(np.float64).copy() for k, v in params.items()}
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v_ = {k: np.zeros_like(v) for k, v in w.items()}
    for t, (grads, lr) in enumerate(zip(grads_per_step, lrs), start=1):
        g = {k: x.astype(np.float64) for k, x in grads.items()}
        if clip:
            gn = np.sqrt(sum(float(np.sum(x * x)) for x in g.values()))
            scale = clip / max(gn, clip)
            g = {k: x * scale for k, x in g.items()}
        for name in w:
            m[name] = b1 * m[name] + (1 - b1) * g[name]
            v_[name] = b2 * v_[name] + (1 - b2) * g[name] ** 2
            if bc:
                u = (m[name] / (1 - b1**t)) / (np.sqrt(v_[name] / (1 - b2**t)) + eps)
            else:
                u = m[name] / (np.sqrt(v_[name]) + eps)
            excluded = any(re.search(p, name) for p in EXCLUDE)
            if not excluded:
                u = u + wd * w[name]
            r = 1.0
            if lamb and not excluded:
                wn, un = np.linalg.norm(w[name]), np.linalg.norm(u)
                r = wn / un if (wn > 0 and un > 0) else 1.0
            w[name] = w[name] - r * lr * u
    return w


def make_variables(rng):
    """Variables whose Keras paths look like our model's (scoped names), incl. a zero-norm tensor."""
    specs = {
        "encoder/transformer/attention/query/kernel": (6, 4),
        "encoder/transformer/attention/query/bias": (4,),
        "encoder/embeddings/LayerNorm/gamma": (4,),
        "encoder/ffn/layer_norm/beta": (4,),
        "cls/predictions/output_bias": (7,),
        "encoder/zero_init/kernel": (3, 3),  # ||w|| = 0 -> trust ratio 1
        "encoder/pooler/dense/kernel": (4, 4),
    }
    values, variables = {}, {}
    for path, shape in specs.items():
        scope, leaf = path.rsplit("/", 1)
        value = np.zeros(shape, np.float32) if "zero_init" in path else rng.normal(size=shape).astype(np.float32)
        var = _scoped_variable(scope.split("/"), value, leaf)
        assert var.path == path
        values[path], variables[path] = value, var
    return values, variables


def _scoped_variable(scopes, value, leaf):
    if not scopes:
        return keras.Variable(value, name=leaf)
    with keras.name_scope(scopes[0]):
        return _scoped_variable(scopes[1:], value, leaf)


@pytest.mark.parametrize("cls,lamb", [(AdamWeightDecay, False), (LAMB, True)])
@pytest.mark.parametrize("clip,bc", [(1.0, False), (None, False), (1.0, True)])
def test_matches_numpy_reference(cls, lamb, clip, bc):
    rng = np.random.default_rng(0)
    values, variables = make_variables(rng)
    names = list(values)
    steps = 6
    grads = []
    for s in range(steps):
        g = {n: (rng.normal(size=values[n].shape) * (0.05 if s % 2 else 2.0)).astype(np.float32) for n in names}
        g["encoder/pooler/dense/kernel"][:] = 0.0 if s == 2 else g["encoder/pooler/dense/kernel"]  # zero update norm
        grads.append(g)
    schedule = WarmupPolynomialDecay(0.01, num_train_steps=10, num_warmup_steps=2)
    lrs = [float(schedule(s)) for s in range(steps)]
    opt = cls(learning_rate=schedule, clip_norm=clip, bias_correction=bc)
    for g in grads:
        opt.apply([tf.constant(g[n]) for n in names], [variables[n] for n in names])
    expected = reference_steps(values, grads, lrs, lamb=lamb, clip=clip, bc=bc)
    diffs = {n: float(np.max(np.abs(variables[n].numpy() - expected[n]))) for n in names}
    assert max(diffs.values()) <= 1e-6, diffs
    # The parameters really moved (the comparison is not vacuous), except nothing is required of zero-grad ones.
    assert np.max(np.abs(variables["encoder/transformer/attention/query/kernel"].numpy() - values[names[0]])) > 1e-3


def test_bias_correction_is_off_by_default_and_changes_adamw_early_steps():
    """Official default: no bias correction. With it, AdamW's first update is lr * sign(g) (Adam's), without it
    lr * 0.1 / sqrt(0.001) = 3.16x larger; the flag reaches the optimizer through create_optimizer."""
    assert create_optimizer("adamw", 1e-3).bias_correction is False
    moved = {}
    for bc in (False, True):
        w = keras.Variable(np.zeros(2, np.float32), name="kernel")
        opt = create_optimizer("adamw", 1e-3, weight_decay_rate=0.0, clip_norm=None, bias_correction=bc)
        opt.apply([tf.constant([0.5, -2.0])], [w])
        moved[bc] = w.numpy()
    np.testing.assert_allclose(moved[True], [-1e-3, 1e-3], rtol=1e-5)
    official = 1e-3 * 0.1 / np.sqrt(0.001)
    np.testing.assert_allclose(moved[False], [-official, official], rtol=1e-4)
    clone = AdamWeightDecay.from_config(create_optimizer("adamw", 1e-3, bias_correction=True).get_config())
    assert clone.bias_correction is True


def test_exclusions_follow_official_regexes():
    rng = np.random.default_rng(1)
    _, variables = make_variables(rng)
    opt = LAMB(0.1)
    opt.build(list(variables.values()))
    report = {name: (decay, adapt) for name, decay, adapt in opt.variable_report()}
    assert report["encoder/transformer/attention/query/kernel"] == (True, True)
    for excluded in (
        "encoder/transformer/attention/query/bias",
        "encoder/embeddings/LayerNorm/gamma",
        "encoder/ffn/layer_norm/beta",
        "cls/predictions/output_bias",
    ):
        assert report[excluded] == (False, False), excluded


def test_layer_adaptation_exclusions_can_differ_from_weight_decay():
    with keras.name_scope("a"):
        w = keras.Variable(np.full((2, 2), 3.0, np.float32), name="kernel")
    opt = LAMB(0.5, exclude_from_layer_adaptation=["kernel"], weight_decay_rate=0.0, clip_norm=None)
    opt.apply([tf.ones((2, 2))], [w])
    # r = 1 (excluded from adaptation): w - lr * m/(sqrt(v)+eps) with m=0.1, v=0.001
    np.testing.assert_allclose(w.numpy(), 3.0 - 0.5 * 0.1 / (np.sqrt(0.001) + 1e-6), atol=1e-6)


def test_rejects_keras_builtin_decay_and_clipping():
    with pytest.raises(ValueError, match="global_clipnorm"):
        LAMB(0.1, global_clipnorm=1.0)
    with pytest.raises(ValueError, match="optimizer"):
        create_optimizer("sgd", 0.1)


def test_serialisation_round_trip():
    opt = create_optimizer("lamb", WarmupPolynomialDecay(1e-3, 100, 10))
    clone = LAMB.from_config(opt.get_config())
    assert clone.epsilon == 1e-6 and clone.weight_decay_rate == 0.01
    assert clone.exclude_from_layer_adaptation == EXCLUDE


@pytest.mark.parametrize("policy_scale", [True])
def test_under_loss_scale_optimizer_matches_plain(policy_scale):
    """Wrapped in keras' LossScaleOptimizer (scaled grads), the update equals the unwrapped one."""
    rng = np.random.default_rng(2)
    values, plain_vars = make_variables(rng)
    _, scaled_vars = make_variables(np.random.default_rng(2))
    names = list(values)
    plain = LAMB(0.01)
    wrapped = keras.optimizers.LossScaleOptimizer(LAMB(0.01), initial_scale=1024.0)
    for _ in range(3):
        g = {n: rng.normal(size=values[n].shape).astype(np.float32) for n in names}
        plain.apply([tf.constant(g[n]) for n in names], [plain_vars[n] for n in names])
        scale = float(wrapped.dynamic_scale.numpy()) if wrapped.built else 1024.0
        wrapped.apply([tf.constant(g[n] * scale) for n in names], [scaled_vars[n] for n in names])
    for n in names:
        np.testing.assert_allclose(scaled_vars[n].numpy(), plain_vars[n].numpy(), atol=1e-6)


def test_adam_bias_correction_flag_reaches_the_optimizer():
    """``--adam_bias_correction`` is a flag of every runner (a TrainerOptions field, define_training_flags) that
    ``optimizer_factory`` passes on; off unless asked."""
    from absl import flags

    from albert_tf.cli.flags import define_training_flags
    from albert_tf.training.experiment import optimizer_factory
    from albert_tf.training.run_config import TrainerOptions

    fv = flags.FlagValues()
    define_training_flags(fv)
    fv(["prog", "--adam_bias_correction"])
    assert fv.adam_bias_correction is True
    for on in (False, True):
        opt = optimizer_factory(TrainerOptions(optimizer="adamw", adam_bias_correction=on))()
        assert opt.bias_correction is on
