"""Training: the official optimizers and schedule, the one tf.distribute trainer and the runner skeleton.

* ``optimizers``: ``AdamWeightDecay``, ``LAMB`` (official ``optimization.py``, ``lamb_optimizer.py``),
``create_optimizer``.
* ``schedules``: ``WarmupPolynomialDecay`` (warmup that replaces a polynomial decay to 0).
* ``strategy``: ``make_strategy`` for ``--strategy`` one_device | mirrored | multi_worker_mirrored | tpu.
* ``trainer``: ``Trainer`` / ``TrainerConfig``: train, evaluate and predict any task under any strategy.
* ``run_config``: ``ExperimentConfig`` (trainer + run + task options; flags map onto it in one hop).
* ``run_dir``: which job an output directory belongs to (``run.json``), atomic JSON/text writes.
* ``evaluator``: evaluation history, result files and the best checkpoint copy.
* ``experiment``: the runner skeleton (``make_trainer``, ``run_experiment``) every job uses.
* ``summaries``: TensorBoard scalars without the tensorboard package.
"""
