"""One tf.distribute training loop for pretraining and every fine-tuning runner.

A task (the :class:`~albert_tf.training.task.Task` contract) says what is trained (model, inputs, loss,
per-example evaluation outputs and their aggregation); the ``Trainer`` does the rest, the same way
under OneDevice, Mirrored, MultiWorkerMirrored and TPU strategies:

* Input: the task's dataset yields *global* batches (``train_batch_size * gradient_accumulation_steps``
  examples). Every worker reads the same seeded stream and each replica takes its slice
  (``experimental_distribute_values_from_function``), so the examples of an update, hence the losses,
  do not depend on the topology, and the host iterator is checkpointable (a distributed iterator is not):
  a resumed run reads exactly the records an uninterrupted one would.
* Step: per replica, ``gradient_accumulation_steps`` micro-batches of ``train_batch_size / replicas``
  in a ``tf.while_loop``, gradients averaged; loss divided by the number of replicas and the
  gradients all-reduced (SUM), i.e. the mean over replicas of each replica's loss, as the official
  ``CrossShardOptimizer``. The optimizer then clips the global gradient norm and updates.
  Because the MLM loss is normalised per slice (``sum(w*nll) / sum(w)``), N replicas or N accumulated
  micro-batches equal one big batch exactly when every slice holds the same number of real predictions
  (so in the tests), and approximately otherwise, as on the official multi-core TPU.
* An inner ``tf.function`` loop runs ``steps_per_loop`` steps per host call (TPU speed).
* ``mixed_float16`` wraps the optimizer in ``keras.optimizers.LossScaleOptimizer``.
* ``jit_compile`` compiles with XLA what a TPU compiles: with one replica the whole per-replica training step
  (forward, backward, the accumulation loop and the optimizer update) and the per-replica evaluation/prediction
  outputs. With several local replicas (MirroredStrategy) only the forward/backward pass of the training step is
  compiled: XLA on CPU/GPU cannot read the mirrored variables of the other devices inside one cluster.
* Static shapes for TPUs: training batches are full (``drop_remainder``); the last evaluation/prediction batch
  is padded to the global batch size with rows whose outputs are removed before any metric or prediction file
  sees them (``_pad``), so every step function sees one shape.
* ``tf.train.CheckpointManager`` over the model weights, optimizer, global step and the input iterator;
  TensorBoard scalars; a progress line with examples/s and ETA.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf import files as _fs
from albert_tf import interrupts
from albert_tf.checkpoints import init_from_checkpoint, trainer_layout
from albert_tf.checkpoints.paths import damaged, list_variables, read_errors
from albert_tf.checkpoints.report import CheckpointError
from albert_tf.checkpoints.trainer_layout import WEIGHTS_KEY, has_training_state, model_weights
from albert_tf.modeling.recompute import set_recompute
from albert_tf.progress import Progress
from albert_tf.training.strategy import is_chief, worker_info
from albert_tf.training.summaries import write_scalars
from albert_tf.training.task import EVAL, PREDICT, TRAIN, Task

Features = dict[str, tf.Tensor]


@dataclasses.dataclass
class TrainerConfig:
    model_dir: str
    train_batch_size: int
    num_train_steps: int
    steps_per_loop: int = 1000
    save_checkpoints_steps: int = 5000
    keep_checkpoint_max: int = 5  # 0 keeps every checkpoint
    gradient_accumulation_steps: int = 1
    jit_compile: bool = False
    recompute_activations: bool = False
    mixed_precision: str = "float32"
    eval_batch_size: int = 64
    max_eval_steps: int = 100  # 0: the whole evaluation set
    predict_batch_size: int = 8
    write_summaries: bool = True


def _slice_for_replica(batch: Features, replica_id, num_replicas: int) -> Features:
    def take(t):
        if num_replicas == 1:
            return t
        # Static per-replica size when the batch size is known (drop_remainder), else computed in-graph.
        per = t.shape[0] // num_replicas if t.shape[0] is not None else tf.shape(t)[0] // num_replicas
        return t[replica_id * per : (replica_id + 1) * per]

    return tf.nest.map_structure(take, batch)


class Trainer:
    """Runs a ``Task`` under a strategy; see the module docstring."""

    def __init__(
        self,
        task: Task,
        strategy: tf.distribute.Strategy,
        config: TrainerConfig,
        optimizer_fn: Callable[[], keras.optimizers.Optimizer] | None = None,
        log: Callable[[str], None] | None = print,
    ) -> None:
        self.task = task
        self.log = log
        self.strategy = strategy
        self.config = config
        self.num_replicas = strategy.num_replicas_in_sync
        accum = config.gradient_accumulation_steps
        if accum < 1:
            raise ValueError(f"--gradient_accumulation_steps must be >= 1, got {accum}")
        if config.train_batch_size % self.num_replicas:
            raise ValueError(
                f"--train_batch_size {config.train_batch_size} is not divisible by the {self.num_replicas} replicas"
            )
        self.worker_index, self.num_workers = worker_info(strategy)
        self.chief = is_chief(strategy)
        with strategy.scope():
            self.model = task.build_model()
            if config.recompute_activations:  # before any step is traced
                blocks = set_recompute(self.model)
                if log is not None:
                    log(f"recomputing the activations of {blocks} transformer block(s) in the backward pass")
            self.optimizer = None
            if optimizer_fn is not None:
                opt = optimizer_fn()
                if hasattr(opt, "gradients_pre_reduced"):
                    # We all-reduce in the step (so a loss-scale finite check sees one gradient everywhere).
                    opt.gradients_pre_reduced = True
                if config.mixed_precision == "mixed_float16":
                    opt = keras.optimizers.LossScaleOptimizer(opt)
                opt.build(self.model.trainable_variables)
                self.optimizer = opt
        self._pre_reduce = bool(getattr(self._inner_optimizer, "gradients_pre_reduced", False))
        self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        self._train_iterator = None
        self._manager: tf.train.CheckpointManager | None = None
        self._train_loop_fn = None
        # The sums of the step logs over one loop, in the order of ``_log_keys`` (learned when the loop is traced).
        # One variable made here, of a shape known only then: a variable made while tracing would make tf.function
        # trace the whole loop a second time (once to create it, once without creating), seconds per run.
        self._log_sums = tf.Variable(tf.zeros([0]), shape=tf.TensorShape(None), trainable=False, name="log_sums")
        self._log_keys: list[str] = []
        self._summary_writer = None
        self._eval_writer = None
        self._output_fns: dict[str, Any] = {}
        # What ``strategy.run`` runs per replica, by step ("train", "eval_outputs", "predict_outputs"): a
        # ``tf.function(jit_compile=True)`` where ``jit_compile`` compiles it whole (tests check which).
        self.replica_functions: dict[str, Any] = {}
        self.init_report = None

    # ------------------------------------------------------------------ helpers
    @property
    def _inner_optimizer(self):
        opt = self.optimizer
        return getattr(opt, "inner_optimizer", opt)

    @property
    def learning_rate(self) -> float:
        return float(np.asarray(self._inner_optimizer.learning_rate))

    def _distribute(self, batch: Features):
        n = self.num_replicas

        def value_fn(ctx):
            return _slice_for_replica(batch, ctx.replica_id_in_sync_group, n)

        return self.strategy.experimental_distribute_values_from_function(value_fn)

    # ------------------------------------------------------------------ train step
    def _compute_gradients(self, features: Features):
        tvars = self.model.trainable_variables
        with tf.GradientTape() as tape:
            loss, logs = self.task.loss(self.model, features, training=True)
            scaled = tf.cast(loss, tf.float32) / float(self.num_replicas)
            if isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer):
                scaled = self.optimizer.scale_loss(scaled)
        grads = tape.gradient(scaled, tvars)
        grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g) for g, v in zip(grads, tvars)]
        logs = {k: tf.cast(v, tf.float32) for k, v in logs.items()}
        logs.setdefault("loss", tf.cast(loss, tf.float32))
        return grads, logs

    @property
    def compiles_whole_step(self) -> bool:
        """Whether ``jit_compile`` compiles the whole per-replica training step (one replica; see the module
        docstring) rather than the forward/backward pass only."""
        return self.config.jit_compile and self.num_replicas == 1

    def _replica_step(self, features: Features):
        accum = self.config.gradient_accumulation_steps
        compute = self._compute_gradients
        if self.config.jit_compile and not self.compiles_whole_step:
            compute = tf.function(compute, jit_compile=True, reduce_retracing=True)
        if accum == 1:
            grads, logs = compute(features)
        else:
            def split(t):  # [B, ...] -> [accum, B / accum, ...]; a bucketed sequence axis is known at run time only
                rest = [d if d is not None else tf.shape(t)[i + 1] for i, d in enumerate(t.shape[1:])]
                return tf.reshape(t, [accum, t.shape[0] // accum, *rest])

            micro = tf.nest.map_structure(split, features)
            first = tf.nest.map_structure(lambda t: t[0], micro)
            grads, logs = compute(first)

            def body(i, grads, logs):
                g, lg = compute(tf.nest.map_structure(lambda t: tf.gather(t, i), micro))
                return i + 1, [a + b for a, b in zip(grads, g)], {k: logs[k] + lg[k] for k in logs}

            _, grads, logs = tf.while_loop(lambda i, *_: i < accum, body, (tf.constant(1), grads, logs))
            grads = [g / float(accum) for g in grads]
            logs = {k: v / float(accum) for k, v in logs.items()}
        if self._pre_reduce:
            grads = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, grads)
        self.optimizer.apply(grads, self.model.trainable_variables)
        return logs

    def _make_train_loop(self):
        replica_step = self._replica_step
        if self.compiles_whole_step:
            replica_step = tf.function(replica_step, jit_compile=True, reduce_retracing=True)
        self.replica_functions["train"] = replica_step

        def one_step(iterator):
            batch = next(iterator)
            logs = self.strategy.run(replica_step, args=(self._distribute(batch),))
            logs = {k: self.strategy.reduce(tf.distribute.ReduceOp.MEAN, v, axis=None) for k, v in logs.items()}
            self.global_step.assign_add(1)
            return logs

        def loop(iterator, num_steps):
            for i in tf.range(num_steps):
                logs = one_step(iterator)
                self._log_keys[:] = sorted(logs)
                values = tf.stack([logs[k] for k in self._log_keys])
                if i == 0:
                    self._log_sums.assign(values)
                else:
                    self._log_sums.assign_add(values)
            return tf.constant(0)

        return tf.function(loop)

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint(self, with_iterator: bool) -> tf.train.Checkpoint:
        items: dict[str, Any] = {
            WEIGHTS_KEY: model_weights(self.model),
            "global_step": self.global_step,
        }
        if self.optimizer is not None:
            items["optimizer"] = self.optimizer
        if with_iterator and self._train_iterator is not None:
            items["train_iterator"] = self._train_iterator
        return tf.train.Checkpoint(**items)

    def _manager_dir(self) -> str:
        if self.chief:
            return self.config.model_dir
        # Non-chief workers of MultiWorkerMirroredStrategy must save too (collectives) but to a scratch dir.
        return os.path.join(self.config.model_dir, f".worker_{self.worker_index}_tmp")

    def latest_checkpoint(self) -> str | None:
        return tf.train.latest_checkpoint(self.config.model_dir)

    def restore_or_init(
        self, init_checkpoint: str | None = None, init_from_group0: bool = False, init_encoder_only: bool = False
    ) -> str:
        """Resume from ``model_dir`` if it has a checkpoint, else initialise from ``init_checkpoint``.

        ``init_from_group0``: every group of the model from the checkpoint's group 0 (official ``run_pretraining.py
        --init_from_group0``). ``init_encoder_only``: the encoder alone, the heads keep their initial values
        (:func:`init_from_checkpoint`'s ``encoder_only``). Returns "resumed", "initialised" or "fresh".
        """
        latest = self.latest_checkpoint()
        if latest:
            self._check_fits(latest)
            ckpt = self._manager.checkpoint if self._manager is not None else self._checkpoint(with_iterator=False)
            try:
                ckpt.restore(latest).expect_partial()
            except read_errors() as e:
                raise damaged(latest, e) from None
            logging.info("resumed from %s at global step %d", latest, int(self.global_step.numpy()))
            return "resumed"
        if init_checkpoint:
            self.init_report = init_from_checkpoint(
                self.model, init_checkpoint, init_from_group0=init_from_group0, encoder_only=init_encoder_only
            )
            return "initialised"
        return "fresh"

    def save(self) -> str | None:
        with interrupts.deferred():  # Ctrl-C waits for the checkpoint and the manager's state file to be written
            step = int(self.global_step.numpy())
            path = self._manager.save(checkpoint_number=step)
            # and then reports it: a signal held during the save is delivered when this block ends, before the
            # training loop notes the save itself
            interrupts.note(self._where(step, step))
        if not self.chief:
            if _fs.exists(self._manager_dir()):
                _fs.rmtree(self._manager_dir())
            return None
        logging.info("saved checkpoint %s", path)
        return path

    # ------------------------------------------------------------------ train
    def train(
        self,
        init_checkpoint: str | None = None,
        on_loop_end: Callable[[int, dict], None] | None = None,
        on_checkpoint: Callable[[int], None] | None = None,
        init_from_group0: bool = False,
        init_encoder_only: bool = False,
    ) -> dict:
        """Train to ``num_train_steps`` (resuming if possible); returns the last loop's mean logs.

        ``on_loop_end(step, logs)`` runs after every inner loop, ``on_checkpoint(step)`` after every save.
        """
        cfg = self.config
        if self.optimizer is None:
            raise ValueError("Trainer.train needs an optimizer_fn")
        global_batch = cfg.train_batch_size * cfg.gradient_accumulation_steps
        self.task.input_slices = self.num_replicas * cfg.gradient_accumulation_steps
        self.task.jit_compile = cfg.jit_compile
        dataset = self.task.build_inputs(TRAIN, global_batch)
        self._train_iterator = iter(dataset)
        self._manager = tf.train.CheckpointManager(
            self._checkpoint(with_iterator=True), self._manager_dir(), max_to_keep=cfg.keep_checkpoint_max or None
        )
        if self.restore_or_init(init_checkpoint, init_from_group0, init_encoder_only) == "resumed":
            self._check_resumable(self.latest_checkpoint())
        if self._train_loop_fn is None:
            self._train_loop_fn = self._make_train_loop()
        step = int(self.global_step.numpy())
        start_step, start_time = step, time.time()
        last_logs: dict[str, float] = {}
        saved = step
        interrupts.note(self._where(step, saved))
        if step >= cfg.num_train_steps and self.chief and self.log is not None:
            self.log(f"global step {step} has reached --num_train_steps={cfg.num_train_steps}: nothing left to train")
        while step < cfg.num_train_steps:
            every = cfg.save_checkpoints_steps
            to_save = every - step % every if every else 0
            n = min(cfg.steps_per_loop, cfg.num_train_steps - step, to_save or cfg.num_train_steps)
            loop_start = time.time()
            self._train_loop_fn(self._train_iterator, tf.constant(n, tf.int32))
            last_logs = {k: float(v) / n for k, v in zip(self._log_keys, self._log_sums.numpy())}
            step = int(self.global_step.numpy())
            elapsed = time.time() - loop_start
            examples_per_s = n * global_batch / max(elapsed, 1e-9)
            last_logs["learning_rate"] = self.learning_rate
            last_logs["examples_per_second"] = examples_per_s
            self._progress(step, last_logs, start_step, start_time)
            self._write_summaries("", step, last_logs)
            if on_loop_end is not None:
                on_loop_end(step, last_logs)
            if (cfg.save_checkpoints_steps and step % cfg.save_checkpoints_steps == 0) or step >= cfg.num_train_steps:
                self.save()
                saved = step
                if on_checkpoint is not None:
                    on_checkpoint(step)
            interrupts.note(self._where(step, saved))
        return last_logs

    def _check_fits(self, latest: str) -> None:
        """Refuse, naming the first differing tensor, a latest checkpoint written by a model of another config
        (TensorFlow would fail mid-restore with a traceback)."""
        stored = trainer_layout.stored_weights(latest)
        shapes = dict(list_variables(latest))
        for path, variable in model_weights(self.model).items():
            key = stored.get(path)
            if key is None and stored and not trainer_layout.is_rng_state(path):
                raise CheckpointError(
                    f"{latest}: the latest checkpoint in {self.config.model_dir} has no variable {path} of this "
                    "model: it was written with another --albert_config_file or task; resume with the run's own "
                    "settings or choose a new --output_dir")
            if key is not None and list(shapes[key]) != list(variable.shape):
                raise CheckpointError(
                    f"{latest}: the latest checkpoint in {self.config.model_dir} holds {path} with shape "
                    f"{list(shapes[key])}, this model's is {list(variable.shape)}: it was written with another "
                    "--albert_config_file; resume with the run's own config or choose a new --output_dir")

    def _check_resumable(self, latest: str) -> None:
        """A checkpoint without optimizer state (weights written into the run's folder by hand or by a converter)
        would restart the schedule silently; say so instead."""
        if not has_training_state(latest):
            raise CheckpointError(
                f"{latest} holds weights only (no optimizer state), yet it is the latest checkpoint in "
                f"{self.config.model_dir}: it cannot be resumed. Move it out of the folder, or start a new "
                "--output_dir with it as --init_checkpoint"
            )

    def _where(self, step: int, saved: int) -> str:
        """The progress a Ctrl-C reports: the step reached and the checkpoint a rerun resumes from."""
        last = f"the last checkpoint is step {saved}" if saved else "no checkpoint yet"
        return f"at step {step} of {self.config.num_train_steps} ({last})"

    def close(self) -> None:
        """Flush and close the TensorBoard writers (also after an error or Ctrl-C: :func:`run_experiment`)."""
        for name in ("_summary_writer", "_eval_writer"):
            writer = getattr(self, name)
            if writer is not None:
                writer.close()
                setattr(self, name, None)

    def _progress(self, step: int, logs: dict, start_step: int, start_time: float) -> None:
        done = step - start_step
        rate = done / max(time.time() - start_time, 1e-9)
        eta = (self.config.num_train_steps - step) / rate if rate > 0 else float("inf")
        eta_s = time.strftime("%H:%M:%S", time.gmtime(eta)) if np.isfinite(eta) else "?"
        values = " ".join(
            f"{k} {v:.4g}" for k, v in logs.items() if k not in ("examples_per_second", "learning_rate")
        )
        line = (
            f"step {step}/{self.config.num_train_steps} | {values} | lr {logs.get('learning_rate', 0.0):.3g} | "
            f"{logs.get('examples_per_second', 0.0):.1f} examples/s | ETA {eta_s}"
        )
        if self.chief and self.log is not None:
            self.log(line)

    def _write_summaries(self, prefix: str, step: int, values: dict[str, float]) -> None:
        if not (self.config.write_summaries and self.chief):
            return
        self._summary_writer = write_scalars(
            os.path.join(self.config.model_dir, "train"), step, {prefix + k: v for k, v in values.items()},
            self._summary_writer,
        )

    # ------------------------------------------------------------------ eval / predict
    def _pad(self, batch: Features, size: int) -> tuple[Features, int]:
        """Pad a (last, short) batch with zero rows to ``size``: one static shape, every replica a full slice.

        Zero rows have an all-zero ``input_mask`` and weights, and their outputs are dropped before
        the task sees them, so padding never counts in a metric or a prediction file.
        """
        rows = int(tf.nest.flatten(batch)[0].shape[0])
        if rows > size:
            raise ValueError(f"an evaluation batch of {rows} rows exceeds the global batch size {size}")
        if rows == size:
            return batch, rows

        def pad(t):
            return tf.concat([t, tf.zeros([size - rows, *t.shape[1:]], t.dtype)], axis=0)

        return tf.nest.map_structure(pad, batch), rows

    def _gather_fn(self, hook: str):
        """A ``tf.function`` running ``task.<hook>`` on every replica's slice and gathering the rows in order."""
        fn = self._output_fns.get(hook)
        if fn is None:
            task_fn = getattr(self.task, hook)

            def replica_fn(features):
                return task_fn(self.model, features)

            if self.config.jit_compile and self.num_replicas == 1:
                replica_fn = tf.function(replica_fn, jit_compile=True)
            self.replica_functions[hook] = replica_fn

            def step(batch):
                outputs = self.strategy.run(replica_fn, args=(self._distribute(batch),))
                return {k: self.strategy.gather(v, axis=0) for k, v in outputs.items()}

            # Length-bucketed batches come in a few sequence lengths: one generic trace instead of one per length,
            # except on TPUs, whose programs need the static shape of each bucket.
            tpu = isinstance(self.strategy, tf.distribute.TPUStrategy)
            fn = self._output_fns[hook] = tf.function(step, reduce_retracing=not tpu)
        return fn

    def collect_outputs(self, split: str, hook: str, batch_size: int, max_steps: int = 0) -> tuple[dict, int]:
        """Per-example outputs of ``task.<hook>`` over ``split`` (at most ``max_steps`` batches; 0 = all).

        Returns ``({name: array [N, ...]}, batches)`` with the rows in input order, padding removed.
        """
        if batch_size % self.num_replicas:
            raise ValueError(f"--{split}_batch_size {batch_size} is not divisible by {self.num_replicas} replicas")
        dataset = self.task.build_inputs(split, batch_size)
        if dataset is None:
            raise ValueError(f"the task has no {split} data")
        fn = self._gather_fn(hook)
        parts: dict[str, list[np.ndarray]] = {}
        batches = 0
        progress = Progress(f"{split} pass", total=max_steps or None, unit="batches",
                            log=self.log if self.chief else None)
        for batch in dataset:
            if max_steps and batches >= max_steps:
                break
            padded, rows = self._pad(batch, batch_size)
            for k, v in fn(padded).items():
                parts.setdefault(k, []).append(np.asarray(v)[:rows])
            batches += 1
            progress.update()
        return {k: np.concatenate(v, axis=0) for k, v in parts.items()}, batches

    def evaluate(self, max_steps: int | None = None) -> dict[str, float]:
        """``task.aggregate`` of ``task.eval_outputs`` over at most ``max_eval_steps`` global batches (0 = all)."""
        cfg = self.config
        limit = max_steps if max_steps is not None else cfg.max_eval_steps
        outputs, batches = self.collect_outputs(EVAL, "eval_outputs", cfg.eval_batch_size, limit)
        if batches == 0:
            raise ValueError(f"the evaluation data gave no batch of --eval_batch_size {cfg.eval_batch_size}")
        metrics = dict(self.task.aggregate(outputs))
        metrics["eval_batches"] = float(batches)
        metrics["global_step"] = float(self.global_step.numpy())
        if cfg.write_summaries and self.chief:  # beside the training scalars: <model_dir>/eval
            self._eval_writer = write_scalars(
                os.path.join(cfg.model_dir, "eval"), int(self.global_step.numpy()), metrics, self._eval_writer
            )
        return metrics

    def predict(self) -> dict[str, np.ndarray]:
        """``task.predict_outputs`` over the whole prediction split, one row per example, in input order."""
        outputs, _ = self.collect_outputs(PREDICT, "predict_outputs", self.config.predict_batch_size)
        return outputs
