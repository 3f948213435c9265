"""Activation recomputation (``modeling.recompute``, ``--recompute_activations``): the same gradients as keeping
the activations, dropout masks reproduced in the recomputation, under every sharing mode, the pretrainer's
last-layer subset, ``jit_compile`` and a two-replica ``MirroredStrategy``; the flag reaches the trainer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import commands
import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import ROOT

from albert_tf.config import AlbertConfig
from albert_tf.modeling import recompute as rc
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.transformer import TransformerBlock

CONFIG = AlbertConfig.from_name("albert_tiny").replace(num_hidden_layers=3, inner_group_num=2)


def _inputs(batch=2, seq=16, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), "int32")
    mask[0, seq - 5:] = 0  # padding in one row: the attention bias takes part
    return {"input_ids": rng.integers(0, CONFIG.vocab_size, (batch, seq)).astype("int32"), "input_mask": mask,
            "segment_ids": np.zeros((batch, seq), "int32")}


def _dense(g):
    return tf.convert_to_tensor(g).numpy()


def _loss_and_grads(model, inputs, on, key="sequence_output"):
    rc.set_recompute(model, on)
    with tf.GradientTape() as tape:
        out = model(inputs, training=True)
        loss = tf.reduce_sum(out[key] ** 2) + tf.reduce_sum(out["pooled_output"])
    grads = tape.gradient(loss, model.trainable_variables)
    return float(loss), [_dense(g) for g in grads]


def _seed_states(model):
    return [v for v in model.non_trainable_variables if "seed_generator" in v.path]


@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
def test_gradients_equal_keeping_the_activations(sharing):
    model = AlbertEncoder(CONFIG, sharing=sharing)
    inputs = _inputs()
    loss, grads = _loss_and_grads(model, inputs, on=False)
    loss_rc, grads_rc = _loss_and_grads(model, inputs, on=True)
    assert loss_rc == pytest.approx(loss, rel=1e-6)
    assert len(grads) == len(grads_rc) == len(model.trainable_variables)
    for var, a, b in zip(model.trainable_variables, grads, grads_rc):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6, err_msg=var.path)
    assert sum(np.abs(g).sum() > 0 for g in grads_rc) == len(grads_rc)  # every variable gets its gradient
    # one block object per (group, inner) is still called at every layer
    assert len({id(b) for row in model.layer_blocks for b in row}) == len(model.unique_blocks())


@pytest.mark.heavy
def test_the_pretrainers_last_layer_subset_recomputes_too():
    from albert_tf.modeling import AlbertPretrainer

    model = AlbertPretrainer(CONFIG)
    inputs = dict(_inputs(), masked_lm_positions=np.array([[1, 3, 0], [2, 4, 7]], "int32"))
    inputs = {k: v for k, v in inputs.items()}

    def loss_and_grads(on):
        rc.set_recompute(model, on)
        with tf.GradientTape() as tape:
            out = model(inputs, training=True)
            loss = sum(tf.reduce_sum(tf.cast(v, tf.float32) ** 2) for v in tf.nest.flatten(out))
        return float(loss), [_dense(g) for g in tape.gradient(loss, model.trainable_variables)]

    (loss, grads), (loss_rc, grads_rc) = loss_and_grads(False), loss_and_grads(True)
    assert loss_rc == pytest.approx(loss, rel=1e-6)
    for a, b in zip(grads, grads_rc):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


def test_dropout_masks_are_the_same_in_the_recomputation(monkeypatch):
    """With dropout on, a recomputed block draws its masks from one seed per application; the gradient through
    ``tf.recompute_grad`` must equal plain autodiff of the same seeded forward pass (the recomputation redrew the
    same masks). Seeds of the two runs are made equal by restoring the seed generators' state."""
    config = CONFIG.replace(hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.2)
    model = AlbertEncoder(config)
    inputs = _inputs()
    states = _seed_states(model)
    assert states, "the dropout layers own seed generators"
    saved = [v.numpy() for v in states]
    loss_rc, grads_rc = _loss_and_grads(model, inputs, on=True)
    for v, value in zip(states, saved):
        v.assign(value)
    monkeypatch.setattr(tf, "recompute_grad", lambda f: f)  # the same seeded forward, activations kept
    loss, grads = _loss_and_grads(model, inputs, on=True)
    assert loss_rc == pytest.approx(loss, rel=1e-6)
    for a, b in zip(grads, grads_rc):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
    # and the masks are real dropout: a different seed gives another loss, the same layer in eval gives none
    loss_again, _ = _loss_and_grads(model, inputs, on=True)
    assert loss_again != pytest.approx(loss, rel=1e-6)
    rc.set_recompute(model, True)
    np.testing.assert_array_equal(model(inputs, training=False)["sequence_output"],
                                  model(inputs, training=False)["sequence_output"])


def test_every_application_of_a_shared_block_draws_its_own_masks():
    config = CONFIG.replace(num_hidden_layers=4, inner_group_num=1, hidden_dropout_prob=0.5,
                            attention_probs_dropout_prob=0.0)
    block = AlbertEncoder(config, recompute_activations=True).layer_blocks[0][0]
    x = tf.ones((1, 4, config.hidden_size))
    bias = tf.zeros((1, 1, 1, 4))
    first, second = block(x, bias, training=True), block(x, bias, training=True)
    assert not np.allclose(first, second)


def _three_steps(on, jit, inputs):
    keras.utils.set_random_seed(3)
    model = AlbertEncoder(CONFIG, recompute_activations=on)
    opt = keras.optimizers.SGD(0.5)

    @tf.function(jit_compile=jit)
    def step(batch):
        with tf.GradientTape() as tape:
            out = model(batch, training=True)
            loss = tf.reduce_mean(out["sequence_output"] ** 2) + tf.reduce_mean(out["pooled_output"])
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    return [float(step(inputs)) for _ in range(3)], [w.numpy() for w in model.trainable_variables]


@pytest.mark.heavy
@pytest.mark.parametrize("jit", [False, True])
def test_training_steps_under_tf_function_and_xla_equal_keeping_the_activations(jit):
    inputs = _inputs(batch=4)
    (losses, weights), (losses_rc, weights_rc) = (_three_steps(on, jit, inputs) for on in (False, True))
    np.testing.assert_allclose(losses_rc, losses, rtol=1e-5)
    assert losses[2] != losses[0]
    for a, b in zip(weights, weights_rc):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


def test_the_option_is_in_the_config_and_set_recompute_switches_a_built_model():
    model = AlbertEncoder(CONFIG, recompute_activations=True)
    assert model.get_config()["recompute_activations"] is True
    again = AlbertEncoder.from_config(model.get_config())
    blocks = [layer for layer in again._flatten_layers() if isinstance(layer, TransformerBlock)]
    assert blocks and all(b.recompute for b in blocks)
    assert rc.set_recompute(again, False) == len(blocks) and not any(b.recompute for b in blocks)
    assert again.get_config()["recompute_activations"] is False
    assert len(again.weights) == len(AlbertEncoder(CONFIG).weights)  # no variable of its own


MIRRORED = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    from albert_tf.config import AlbertConfig
    from albert_tf.modeling.encoder import AlbertEncoder

    config = AlbertConfig.from_name("albert_tiny")
    rng = np.random.default_rng(0)
    batch = {"input_ids": rng.integers(0, config.vocab_size, (4, 12)).astype("int32"),
             "input_mask": np.ones((4, 12), "int32"), "segment_ids": np.zeros((4, 12), "int32")}
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    def run(on):
        keras.utils.set_random_seed(0)
        with strategy.scope():
            model = AlbertEncoder(config, recompute_activations=on)
            opt = keras.optimizers.SGD(0.5)
        dist = iter(strategy.experimental_distribute_dataset(
            tf.data.Dataset.from_tensor_slices(batch).batch(4).repeat()))
        @tf.function
        def step(b):
            def replica(b):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(model(b, training=True)["sequence_output"] ** 2) / 2
                opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
                return loss
            return strategy.reduce("SUM", strategy.run(replica, args=(b,)), axis=None)
        losses = [float(step(next(dist))) for _ in range(3)]
        return losses, [w.numpy() for w in model.trainable_variables]
    (l0, w0), (l1, w1) = run(False), run(True)
    print(json.dumps({"replicas": strategy.num_replicas_in_sync, "losses": l0, "losses_rc": l1,
                      "max_weight_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(w0, w1))}))
    """
)


@pytest.mark.heavy
def test_two_replicas_of_a_mirrored_strategy_train_the_same_with_it():
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, "-c", MIRRORED], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["replicas"] == 2
    np.testing.assert_allclose(out["losses_rc"], out["losses"], rtol=1e-5)
    assert out["losses"][2] < out["losses"][0] and out["max_weight_diff"] < 1e-5


def test_the_backward_pass_computes_each_block_again(monkeypatch):
    """Eagerly, a forward pass calls every block application's FFN once; with recomputation the gradient calls
    each of them once more (and without it, never)."""
    from albert_tf.modeling.transformer import FeedForwardSublayer

    calls = []
    original = FeedForwardSublayer.call

    def counted(self, *args, **kwargs):
        calls.append(self.name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(FeedForwardSublayer, "call", counted)
    model = AlbertEncoder(CONFIG)
    applications = CONFIG.num_hidden_layers * CONFIG.inner_group_num
    counts = {}
    for on in (False, True):
        rc.set_recompute(model, on)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(_inputs(), training=True)["sequence_output"])
        calls.clear()
        tape.gradient(loss, model.trainable_variables)
        counts[on] = len(calls)
    assert counts == {False: 0, True: applications}


@pytest.mark.heavy
def test_run_classifier_recompute_activations_trains_the_same_weights(tmp_path):
    """The flag reaches the trainer (its log line) and changes nothing but memory: a tiny MRPC run with and without
    it ends at the same weights (albert_tiny has no encoder dropout; the classifier's is seeded alike)."""
    from conftest import shared_path

    config = tmp_path / "albert_tiny_30k.json"
    AlbertConfig.from_name("albert_tiny").replace(vocab_size=30000).to_json_file(str(config))
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    weights = []
    for on in (False, True):
        out = tmp_path / f"out_{on}"
        args = [os.path.join(ROOT, "run_classifier.py"), "--task_name=MRPC",
                f"--data_dir={shared_path('glue')}", f"--spm_model_file={shared_path('spm', '30k-clean.model')}",
                f"--albert_config_file={config}", f"--output_dir={out}", f"--cached_dir={tmp_path / 'cache'}",
                "--do_train", "--max_seq_length=32", "--train_batch_size=8", "--train_step=6",
                "--save_checkpoints_steps=6", "--learning_rate=1e-3"] + (["--recompute_activations"] if on else [])
        result = commands.run(args, env=env, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        assert ("recomputing the activations of 1 transformer block(s)" in result.stderr + result.stdout) == on
        reader = tf.train.load_checkpoint(str(out / "ckpt-6"))
        weights.append({k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
                        if "OBJECT_GRAPH" not in k and "ITERATOR" not in k and "optimizer" not in k})
    assert sorted(weights[0]) == sorted(weights[1])
    for key, value in weights[0].items():
        np.testing.assert_allclose(weights[1][key], value, rtol=1e-4, atol=1e-6, err_msg=key)
