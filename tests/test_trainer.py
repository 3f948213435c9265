"""The shared trainer in-process: gradient accumulation, init vs resume, summaries, the real model's exclusions."""

from __future__ import annotations

import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from synthetic_records import write_synthetic_records

from albert_tf import checkpoints as checkpointing
from albert_tf.config import AlbertConfig
from albert_tf.tasks.pretraining.task import PretrainingTask
from albert_tf.training.optimizers import LAMB, create_optimizer
from albert_tf.training.schedules import WarmupPolynomialDecay
from albert_tf.training.summaries import read_scalars
from albert_tf.training.trainer import Trainer, TrainerConfig

SEQ, PRED = 32, 5


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    d = tmp_path_factory.mktemp("records")
    return str(write_synthetic_records(str(d / "train.tfrecord"), 96, SEQ, PRED, 1000, seed=3))


def tiny_config(**changes) -> AlbertConfig:
    return AlbertConfig.from_name("albert_tiny").replace(**changes)


def make_trainer(
    model_dir, records, batch, accum=1, steps=1, config=None, save=1000, lr=1e-2, optimizer="lamb", **overrides
):
    keras.utils.set_random_seed(7)
    task = PretrainingTask(config or tiny_config(), [records], [records], SEQ, PRED, seed=11, shuffle_buffer_size=1)
    cfg = TrainerConfig(
        model_dir=str(model_dir),
        train_batch_size=batch,
        num_train_steps=steps,
        steps_per_loop=1,
        save_checkpoints_steps=save,
        gradient_accumulation_steps=accum,
        eval_batch_size=16,
        **overrides,
    )
    schedule = WarmupPolynomialDecay(lr, num_train_steps=100, num_warmup_steps=0)
    return Trainer(task, tf.distribute.OneDeviceStrategy("/cpu:0"), cfg, lambda: create_optimizer(optimizer, schedule))


def weights(model):
    return {v.path: v.numpy().copy() for v in model.trainable_variables}


@pytest.mark.heavy
@pytest.mark.parametrize("optimizer", ["lamb"])
def test_gradient_accumulation_4x8_equals_batch_32(tmp_path, records, optimizer):
    big = make_trainer(tmp_path / "big", records, batch=32, optimizer=optimizer)
    initial = weights(big.model)
    big.train()
    acc = make_trainer(tmp_path / "acc", records, batch=8, accum=4, optimizer=optimizer)
    for a, b in zip(weights(acc.model).values(), initial.values()):
        np.testing.assert_array_equal(a, b)  # same initialisation
    acc.train()
    moved = max(float(np.max(np.abs(v - initial[k]))) for k, v in weights(big.model).items())
    diff = max(float(np.max(np.abs(v - weights(big.model)[k]))) for k, v in weights(acc.model).items())
    assert moved > 1e-3
    assert diff <= 1e-5, diff


@pytest.mark.heavy
def test_resume_restores_everything_and_init_only_weights(tmp_path, records):
    first = make_trainer(tmp_path / "run", records, batch=8, steps=3, save=3)
    first.train()
    trained = weights(first.model)
    # TensorBoard scalars per step, and evaluation with the official metric names.
    scalars = read_scalars(str(tmp_path / "run" / "train"))
    assert {"loss", "mlm_loss", "sop_loss", "learning_rate", "examples_per_second"} <= set(scalars)
    assert [s for s, _ in scalars["loss"]] == [1, 2, 3]
    metrics = first.evaluate(max_steps=2)
    for key in ("masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy", "sentence_order_loss"):
        assert key in metrics and np.isfinite(metrics[key])
    assert 0.0 <= metrics["masked_lm_accuracy"] <= 1.0 and metrics["eval_batches"] == 2.0
    assert "masked_lm_accuracy" in read_scalars(str(tmp_path / "run" / "eval"))
    # Resume: same model_dir -> step, optimizer slots, weights restored; nothing more to do at step 3.
    again = make_trainer(tmp_path / "run", records, batch=8, steps=3, save=3)
    assert again.restore_or_init() == "resumed"
    assert int(again.global_step.numpy()) == 3
    assert int(again.optimizer.iterations.numpy()) == 3
    for k, v in weights(again.model).items():
        np.testing.assert_array_equal(v, trained[k])
    # Init: a fresh model_dir with init_checkpoint -> weights only, step 0, fresh optimizer.
    init = make_trainer(tmp_path / "ft", records, batch=8, steps=3)
    assert init.restore_or_init(str(tmp_path / "run")) == "initialised"
    assert int(init.global_step.numpy()) == 0 and int(init.optimizer.iterations.numpy()) == 0
    assert len(init.init_report.loaded) == len(trained) and not init.init_report.missing
    for k, v in weights(init.model).items():
        np.testing.assert_array_equal(v, trained[k])
    assert all(float(np.max(np.abs(s.numpy()))) == 0.0 for s in init.optimizer.variables if "adam_m" in s.path)


def test_init_checkpoint_of_another_size_fails_loudly(tmp_path, records):
    keras.utils.set_random_seed(1)
    from albert_tf.modeling import AlbertPretrainer

    small = AlbertPretrainer(tiny_config())
    prefix = tf.train.Checkpoint(**{checkpointing.WEIGHTS_KEY: checkpointing.model_weights(small)}).write(
        str(tmp_path / "small" / "ckpt-1")
    )
    bigger = AlbertPretrainer(tiny_config(hidden_size=64, intermediate_size=128))
    with pytest.raises(checkpointing.CheckpointInitError, match="shape mismatches.*another albert_config"):
        checkpointing.init_from_checkpoint(bigger, prefix)
    with pytest.raises(checkpointing.CheckpointInitError, match="does not exist"):
        checkpointing.init_from_checkpoint(bigger, str(tmp_path / "nothing_here"))
    # Nothing in common (another model's names): refuses to train from scratch silently.
    other = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="unrelated")])
    with pytest.raises(checkpointing.CheckpointInitError, match="no variable matched"):
        checkpointing.init_from_checkpoint(other, prefix)


def test_default_exclusions_on_the_real_model_match_official_names():
    """Our path-based decision equals the official regexes applied to the official TF1 name of each variable."""
    from albert_tf.checkpoints.names import official_variable_map
    from albert_tf.modeling import AlbertPretrainer

    model = AlbertPretrainer(tiny_config())
    opt = LAMB(0.1)
    opt.build(model.trainable_variables)
    ours = {name: (decay, adapt) for name, decay, adapt in opt.variable_report()}
    official = official_variable_map(model)
    checked = 0
    for official_name, ref in official.items():
        path = ref.variable.path
        if path not in ours:
            continue
        excluded = any(re.search(p, official_name) for p in ("LayerNorm", "layer_norm", "bias"))
        assert ours[path] == (not excluded, not excluded), (official_name, path)
        checked += 1
    assert checked == len(ours)


@pytest.mark.parametrize(
    "policy,jit", [("mixed_float16", False), pytest.param("mixed_bfloat16", True, marks=pytest.mark.slow)]
)
@pytest.mark.heavy
def test_mixed_precision_and_xla_train_like_float32(tmp_path, records, policy, jit):
    reference = make_trainer(tmp_path / "f32", records, batch=8, steps=2)
    ref_logs = reference.train()
    keras.mixed_precision.set_global_policy(policy)
    try:
        trainer = make_trainer(tmp_path / policy, records, batch=8, steps=2, mixed_precision=policy, jit_compile=jit)
        if policy == "mixed_float16":
            assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer)
        logs = trainer.train()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert all(v.dtype == "float32" for v in trainer.model.trainable_variables)
    assert int(trainer.optimizer.iterations.numpy()) == 2  # no step skipped by the loss scale
    for key in ("loss", "mlm_loss", "sop_loss"):
        assert abs(logs[key] - ref_logs[key]) < 2e-2, (key, logs[key], ref_logs[key])
