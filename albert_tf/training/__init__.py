"""Training: the official optimizers and schedule, the one tf.distribute trainer, pretraining input and task.

* ``optimizers``: ``AdamWeightDecay``, ``LAMB`` (spec 3.4), ``create_optimizer``.
* ``schedules``: ``WarmupPolynomialDecay`` (warmup that replaces a polynomial decay to 0).
* ``strategy``: ``make_strategy`` for ``--strategy`` one_device | mirrored | multi_worker_mirrored | tpu.
* ``flags``: the absl flags every runner shares, and ``*_from_flags`` helpers.
* ``trainer``: ``Trainer`` / ``TrainerConfig`` / the ``Task`` protocol (pretraining and fine-tuning).
* ``checkpointing``: checkpoint layout; ``init_from_checkpoint`` (weights only, with a loaded/missing/unused report).
* ``pretraining_data``: official pretraining TFRecords -> tf.data, with up-front validation.
* ``pretraining_task``: ``PretrainingTask`` (AlbertPretrainer + MLM/SOP losses).
* ``quick_pretrain``: a small in-process run with a held-out accuracy curve (demo, benchmark).
* ``summaries``: TensorBoard scalars without the tensorboard package.
* ``synthetic_records``: official-layout synthetic TFRecords for tests.
"""
