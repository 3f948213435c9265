"""A small in-process pretraining run with a held-out accuracy curve: what the demo, the reproduction and the
pretraining benchmarks run (the ``run_pretraining`` command runs :mod:`albert_tf.tasks.pretraining.task`)."""

from __future__ import annotations

import numpy as np

from albert_tf.config import AlbertConfig
from albert_tf.data.pretraining.dataset import (
    online_masking_config,
    validate_pretraining_files,
)
from albert_tf.data.pretraining.record_files import expand_globs

# The official run_pretraining defaults of the shared trainer options (official ``run_pretraining.py``).
from albert_tf.tasks.pretraining.task import PretrainingTask
from albert_tf.training.evaluator import recorded_history
from albert_tf.training.experiment import run_experiment
from albert_tf.training.run_config import ExperimentConfig


def small_albert_config(vocab_size: int, embedding_size: int = 128, hidden_size: int = 256, layers: int = 4,
                        heads: int = 4, max_position_embeddings: int = 512) -> AlbertConfig:
    """The small ALBERT of the learning benchmark (E 128, H 256, 4 layers by default), dropout 0 (v2 style)."""
    return AlbertConfig(
        vocab_size=vocab_size,
        embedding_size=embedding_size,
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden_size,
        max_position_embeddings=max_position_embeddings,
    )


class _BudgetReached(Exception):
    pass


CURVE_KEYS = ("masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy", "sentence_order_loss")


def pretrain_with_curve(
    config: AlbertConfig,
    train_input: str,
    eval_input: str,
    model_dir: str,
    *,
    num_train_steps: int,
    train_batch_size: int = 32,
    learning_rate: float = 2e-3,
    num_warmup_steps: int | None = None,
    eval_every: int = 100,
    eval_batch_size: int = 64,
    max_eval_steps: int = 20,
    steps_per_loop: int = 25,
    optimizer: str = "lamb",
    seed: int = 12345,
    time_budget_s: float | None = None,
    stop_at_step: int = 0,
    sharing: str = "all",
    sentence_loss_weight: float = 1.0,
    mixed_precision: str = "float32",
    jit_compile: bool = False,
    adam_bias_correction: bool = False,
    masked_lm_budget: int = 0,
    log=print,
    progress_log=print,
) -> dict:
    """A small in-process pretraining run on the runner skeleton with a held-out accuracy curve (the demo stage
    and the learning benchmark): the held-out files are evaluated at step 0 and at every checkpoint.

    ``time_budget_s`` stops training at the first checkpoint after the budget (the curve says where).
    ``stop_at_step`` stops it at the first checkpoint at or after that step, with the learning-rate schedule still
    spanning ``num_train_steps`` (weights taken part-way through a longer schedule); calling again with a larger
    value, or none, resumes from that checkpoint.
    ``sharing``, ``sentence_loss_weight``, ``mixed_precision``, ``jit_compile``, ``adam_bias_correction`` and
    ``masked_lm_budget`` are the ``run_pretraining`` flags of those names. With ``masked_lm_budget > 0`` the
    training records are masked again every time they are read (dynamic masking, ``online_masking.py``); the
    held-out curve keeps the held-out records' own masks, so that runs with and without it are scored on the same
    masked tokens.
    """
    import time

    from albert_tf.data.pretraining.stats import record_shapes
    from albert_tf.training.run_config import RunOptions, TrainerOptions

    train_files = expand_globs(train_input, "train input")
    eval_files = expand_globs(eval_input, "eval input")
    seq, pred = record_shapes(train_files[0])
    validate_pretraining_files(train_files, seq, pred, config.vocab_size, token_boundary=masked_lm_budget > 0)
    validate_pretraining_files(eval_files, seq, pred, config.vocab_size)
    masking = (online_masking_config(train_files, masked_lm_budget, config.vocab_size, pred, seed=seed)
               if masked_lm_budget > 0 else None)
    task = PretrainingTask(
        config, train_files, eval_files, seq, pred, seed=seed, sharing=sharing,
        sentence_loss_weight=sentence_loss_weight, online_masking=masking, online_masking_eval=False,
    )
    trainer_options = TrainerOptions(
        strategy="one_device",
        optimizer=optimizer,
        learning_rate=learning_rate,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps if num_warmup_steps is not None else max(1, num_train_steps // 10),
        train_batch_size=train_batch_size,
        steps_per_loop=min(steps_per_loop, eval_every),
        save_checkpoints_steps=eval_every,
        keep_checkpoint_max=2,
        eval_batch_size=eval_batch_size,
        max_eval_steps=max_eval_steps,
        mixed_precision=mixed_precision,
        jit_compile=jit_compile,
        adam_bias_correction=adam_bias_correction,
        seed=seed,
    )
    from albert_tf.checkpoints.paths import list_run_checkpoints

    saved = max((step for step, _ in list_run_checkpoints(model_dir)), default=0)
    stopped_before = 0 < stop_at_step <= saved  # a rerun of a run that has already stopped there trains no further
    run = RunOptions(output_dir=model_dir, do_train=not stopped_before, do_eval=True, eval_at_start=True)
    curve: list[dict] = []
    start = time.time()

    def on_evaluation(step: int, metrics: dict) -> None:
        point = {"step": step, "seconds": round(time.time() - start, 1)}
        point.update({k: round(metrics[k], 4) for k in CURVE_KEYS})
        curve.append(point)
        if log and progress_log is None:  # else the run's evaluator has printed these numbers ("eval step N: ...")
            log(
                f"  held-out @ step {step}: MLM acc {point['masked_lm_accuracy']:.3f}"
                f" loss {point['masked_lm_loss']:.3f} | SOP acc {point['sentence_order_accuracy']:.3f}"
                f" loss {point['sentence_order_loss']:.3f}"
            )

    def on_checkpoint(step: int) -> None:  # after the checkpoint is written, so that the curve's last step has one
        if step >= num_train_steps:
            return
        if (time_budget_s is not None and time.time() - start > time_budget_s) or 0 < stop_at_step <= step:
            raise _BudgetReached

    stopped_early = False
    summary: dict = {}
    try:
        summary = run_experiment(
            task, ExperimentConfig(None, trainer_options, run), on_evaluation=on_evaluation,
            on_checkpoint=on_checkpoint, log=progress_log,
        )
    except _BudgetReached:
        stopped_early = True
    seen = {p["step"] for p in curve}
    # A run resumed in the same directory: the evaluations its earlier runs recorded belong to the curve (read from
    # eval_results.json when this run stopped early and so returned no summary).
    history = summary.get("eval") or recorded_history(model_dir)
    earlier = [h for h in history if int(h["global_step"]) not in seen]
    if earlier:
        recorded = [{"step": int(h["global_step"]), "seconds": None, **{k: round(h[k], 4) for k in CURVE_KEYS}}
                    for h in earlier]
        curve = sorted(curve + recorded, key=lambda point: point["step"])
    return {
        "curve": curve,
        "steps_done": summary.get("global_step", curve[-1]["step"] if curve else 0),
        "stopped_by_time_budget": stopped_early and not stop_at_step,
        "stopped_at_step": stop_at_step if (stopped_early or stopped_before) and stop_at_step else None,
        "seconds": round(time.time() - start, 1),
        "max_seq_length": seq,
        "max_predictions_per_seq": pred,
        "train_files": train_files,
        "eval_files": eval_files,
        "params": int(sum(int(np.prod(v.shape)) for v in task.build_model().trainable_variables)),
    }
