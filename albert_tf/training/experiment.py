"""The runner skeleton every job uses: validate -> claim the output dir -> strategy -> train (evaluating each
checkpoint, keeping a best copy) -> evaluate what is left -> predict -> export.

It calls only the task's hooks (the :class:`~albert_tf.training.task.Task` contract);
``run_pretraining``, ``run_classifier`` and the demo differ only in the task and the
:class:`~albert_tf.training.run_config.ExperimentConfig` they pass.

* :func:`make_trainer` is the one trainer set-up: the strategy first (``MultiWorkerMirroredStrategy`` must exist
  before any TF op), then seeds, determinism and the dtype policy, then ``task.prepare()`` (feature caches,
  ``tf.data``), then the ``Trainer`` with the official optimizer and schedule.
* Evaluation runs just before each checkpoint is saved, on exactly that state, and again for every
  ``ckpt-N`` of ``output_dir`` not yet evaluated (``do_eval`` without ``do_train``; there ``--predict_checkpoint``
  evaluates that checkpoint instead). The best checkpoint by
  ``task.key_metric`` is copied to ``best/ckpt-best``; nothing is deleted (only ``keep_checkpoint_max`` prunes).
* Predict/export use ``--predict_checkpoint``, else the best copy, else the latest ``ckpt-N``.
* :func:`run_trials` runs one fine-tuning several times with consecutive seeds (``--num_trials``) and exports the
  trial of the median (or best) dev score.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf
from absl import logging

from albert_tf import files as _fs
from albert_tf.checkpoints import init_from_checkpoint, resolve_checkpoint_path, trainer_layout
from albert_tf.checkpoints.native import write_model_file
from albert_tf.checkpoints.paths import list_run_checkpoints, resume_point
from albert_tf.export.savedmodel import holds_export_of
from albert_tf.training.evaluator import CheckpointEvaluator
from albert_tf.training.optimizers import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, create_optimizer
from albert_tf.training.run_config import ExperimentConfig, RunError, RunOptions, TrainerOptions, validate_options
from albert_tf.training.run_dir import OutputDirLock, claim_output_dir, is_chief_process, record_identity, write_json
from albert_tf.training.schedules import WarmupPolynomialDecay
from albert_tf.training.strategy import make_strategy
from albert_tf.training.task import Task
from albert_tf.training.trainer import Trainer, TrainerConfig


def optimizer_factory(options: TrainerOptions) -> Callable[[], keras.optimizers.Optimizer]:
    """A zero-argument factory (called inside the strategy scope) for the official optimizer and schedule."""

    def make():
        schedule = WarmupPolynomialDecay(
            init_lr=options.learning_rate,
            num_train_steps=options.num_train_steps,
            num_warmup_steps=options.num_warmup_steps,
            poly_power=options.poly_power,
            start_warmup_step=options.start_warmup_step,
        )
        return create_optimizer(
            options.optimizer,
            schedule,
            weight_decay_rate=options.weight_decay_rate,
            epsilon=options.adam_epsilon,
            bias_correction=options.adam_bias_correction,
            clip_norm=options.clip_norm,
            exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
        )

    return make


def make_trainer(
    task: Task, options: TrainerOptions, model_dir: str, log: Callable[[str], None] | None = print
) -> Trainer:
    """The one trainer set-up of every path (pretraining, fine-tuning, demo); see the module docstring."""
    strategy = make_strategy(
        options.strategy,
        tpu=options.tpu,
        tpu_zone=options.tpu_zone,
        gcp_project=options.gcp_project,
        num_cpu_devices=options.num_cpu_devices,
        all_reduce_alg=options.all_reduce_alg,
    )
    logging.info("strategy %s with %d replicas", type(strategy).__name__, strategy.num_replicas_in_sync)
    keras.utils.set_random_seed(options.seed)  # model initialisation and dropout; input shuffles are seeded too
    if options.deterministic:
        tf.config.experimental.enable_op_determinism()
    keras.mixed_precision.set_global_policy(options.mixed_precision)
    task.prepare()
    config = TrainerConfig(
        model_dir=model_dir,
        train_batch_size=options.train_batch_size,
        num_train_steps=options.num_train_steps,
        steps_per_loop=options.steps_per_loop,
        save_checkpoints_steps=options.save_checkpoints_steps,
        keep_checkpoint_max=options.keep_checkpoint_max,
        gradient_accumulation_steps=options.gradient_accumulation_steps,
        jit_compile=options.jit_compile,
        recompute_activations=options.recompute_activations,
        mixed_precision=options.mixed_precision,
        eval_batch_size=options.eval_batch_size,
        max_eval_steps=options.max_eval_steps,
        predict_batch_size=options.predict_batch_size,
    )
    return Trainer(task, strategy, config, optimizer_factory(options), log=log)


def load_fine_tuned(model: Any, checkpoint: str, flag: str = "--predict_checkpoint") -> int:
    """Every weight of ``model`` from ``checkpoint`` (any supported format); returns the checkpoint's step. A
    checkpoint that lacks a variable of the model (a pretrained one, another task's) is refused, naming ``flag``."""
    report = init_from_checkpoint(model, checkpoint, flag=flag.lstrip("-"))
    missing = [n for n in report.missing if not trainer_layout.is_rng_state(n)]
    if missing:
        raise RunError(
            f"{flag} {checkpoint} lacks {len(missing)} variable(s) of this model "
            f"(e.g. {missing[0]}): it is not a fine-tuned checkpoint of this task"
        )
    return trainer_layout.checkpoint_step(resolve_checkpoint_path(checkpoint))


def export_checkpoint(task: Task, checkpoint: str, export_dir: str, flag: str = "--checkpoint") -> str:
    """The export path: build the task's model, load ``checkpoint`` into it and write the task's SavedModel under
    ``export_dir``; returns its path. No strategy, optimizer, output directory or training loop is involved. Where
    ``export_dir/<step>`` already holds the export of ``checkpoint`` (a rerun), that path is returned as it is."""
    done = existing_export(export_dir, checkpoint, task)
    if done is not None:  # the same command again: its export is there already
        logging.info("%s is the export of %s already", done, checkpoint)
        return done
    keras.mixed_precision.set_global_policy("float32")  # a SavedModel for serving computes in float32
    model = task.build_model()
    step = load_fine_tuned(model, checkpoint, flag)
    return task.export(model, export_dir, step, checkpoint)


def load_for_inference(trainer: Trainer, run: RunOptions, results_dir: str) -> tuple[str, int]:
    """Weights for predict/export: ``--predict_checkpoint``, else the best copy (results dir, then the run's),
    else the latest ``ckpt-N``. Returns (source, step)."""
    model = trainer.model
    if run.predict_checkpoint:
        return run.predict_checkpoint, load_fine_tuned(model, run.predict_checkpoint)
    for folder in dict.fromkeys([results_dir, run.output_dir]):
        if trainer_layout.has_best(folder):
            prefix = trainer_layout.best_prefix(folder)
            trainer_layout.restore_weights(model, prefix)
            return prefix, trainer_layout.checkpoint_step(prefix)
    checkpoints = list_run_checkpoints(run.output_dir)
    if checkpoints:
        step, prefix = checkpoints[-1]
        trainer_layout.restore_weights(model, prefix)
        return prefix, step
    raise RunError(
        f"nothing to predict/export with: no best/ or ckpt-N in {run.output_dir} and no --predict_checkpoint"
    )


def refuse_writing_among_inputs(task: Task, run: RunOptions) -> None:
    """Refuse an ``--output_dir`` / ``--export_dir`` that is one of the task's inputs or a folder holding one."""
    inputs = [p for p in task.input_paths() if p]
    for flag, output in (("--output_dir", run.output_dir), ("--export_dir", run.export_dir)):
        hit = _fs.written_input(inputs, [output]) if output and inputs else None
        if hit is not None:
            raise RunError(f"{flag}={output} holds the input {hit[0]}: checkpoints, caches and results would be "
                           "written among the inputs; choose another folder")


def run_experiment(
    task: Task,
    config: ExperimentConfig,
    *,
    on_evaluation: Callable[[int, dict], None] | None = None,
    on_checkpoint: Callable[[int], None] | None = None,
    log: Callable[[str], None] | None = print,
) -> dict[str, Any]:
    """Run ``task`` as ``config`` says; returns a summary (also written to ``run_summary.json``).

    ``on_evaluation(step, metrics)`` runs after each evaluation (before that step's checkpoint is written),
    ``on_checkpoint(step)`` after each training checkpoint is written: the place to stop a run early.
    """
    options, run = config.trainer, config.run
    validate_options(options, run)
    refuse_writing_among_inputs(task, run)
    if run.do_train:  # resume is all or nothing: what a rerun would resume from is checked before any write
        resume_point(run.output_dir)
    identity = {**task.identity(), **task.run_record()}
    # run.json is written once the data is converted (make_trainer): a run stopped while caching features leaves
    # nothing under a final name.
    results_dir = claim_output_dir(run.output_dir, identity, run.do_train, task.results_subdir, write=False)
    writes = run.do_train or run.do_eval or run.do_predict
    lock = OutputDirLock(run.output_dir) if writes and is_chief_process() else None
    if lock is not None:
        lock.acquire()
    try:
        return _run(task, config, results_dir, identity, on_evaluation, on_checkpoint, log)
    finally:
        if lock is not None:
            lock.release()


def _run(task: Task, config: ExperimentConfig, results_dir: str, identity: dict[str, Any], on_evaluation,
         on_checkpoint, log) -> dict[str, Any]:
    trainer = make_trainer(task, config.trainer, config.run.output_dir, log=log)
    if config.run.do_train and is_chief_process() and results_dir == config.run.output_dir:
        record_identity(config.run.output_dir, identity)
    try:
        return _run_with(trainer, task, config, results_dir, on_evaluation, on_checkpoint, log)
    finally:  # also on Ctrl-C: the event files end whole
        trainer.close()


def _run_with(trainer: Trainer, task: Task, config: ExperimentConfig, results_dir: str, on_evaluation,
              on_checkpoint, log) -> dict[str, Any]:
    options, run = config.trainer, config.run
    albert_config = getattr(task, "albert_config", None)
    if run.do_train and trainer.chief and albert_config is not None:
        albert_config.to_json_file(os.path.join(run.output_dir, "albert_config.json"))
        # the model's class and options: a conversion reads the run's checkpoints back with their task head
        write_model_file(trainer.model, run.output_dir)
    summary: dict[str, Any] = {"task": task.name, "key_metric": task.key_metric}
    report = task.data_report()
    if report:
        summary["data"] = report
    evaluator = CheckpointEvaluator(results_dir, task.name, task.key_metric, log=log) if run.do_eval else None

    def evaluate(step: int) -> None:
        metrics = trainer.evaluate()
        if trainer.chief:
            metrics = evaluator.record(metrics, step, trainer.model)
        if on_evaluation is not None:
            on_evaluation(step, metrics)

    if run.do_train:
        resuming = bool(list_run_checkpoints(run.output_dir))
        if not run.init_checkpoint and not resuming:
            task.warn_without_init_checkpoint()
        if evaluator is not None and run.eval_at_start and not resuming:
            trainer.restore_or_init(run.init_checkpoint, run.init_from_group0, run.init_encoder_only)
            evaluate(0)

        def on_loop_end(step: int, logs: dict) -> None:
            # Called just before the Trainer saves ckpt-<step>: evaluate exactly that state.
            saving = step % options.save_checkpoints_steps == 0 or step >= options.num_train_steps
            if evaluator is not None and saving and step not in evaluator.evaluated_steps:
                evaluate(step)

        trainer.train(run.init_checkpoint, on_loop_end=on_loop_end, on_checkpoint=on_checkpoint,
                      init_from_group0=run.init_from_group0, init_encoder_only=run.init_encoder_only)
        summary["global_step"] = int(trainer.global_step.numpy())
    if evaluator is not None:
        if run.predict_checkpoint and not run.do_train:  # the checkpoint the user named, not output_dir's
            step = load_fine_tuned(trainer.model, run.predict_checkpoint)
            if step not in evaluator.evaluated_steps:
                trainer.global_step.assign(step)
                evaluate(step)
            elif log is not None:
                log(f"step {step} is evaluated in {results_dir} already (eval_results.json)")
        else:
            for step, prefix in list_run_checkpoints(run.output_dir):
                if step not in evaluator.evaluated_steps:
                    trainer_layout.restore_weights(trainer.model, prefix)
                    trainer.global_step.assign(step)
                    evaluate(step)
        if not evaluator.history:
            if not run.init_checkpoint:
                raise RunError(f"--do_eval: no checkpoint (ckpt-N) in {run.output_dir} to evaluate; train first")
            trainer.restore_or_init(run.init_checkpoint, run.init_from_group0, run.init_encoder_only)
            evaluate(0)
        summary["eval"] = evaluator.history
        summary["best"] = evaluator.best
    if run.do_predict or run.export_dir:
        source, step = load_for_inference(trainer, run, results_dir)
        summary["inference_checkpoint"] = source
        if run.do_predict:
            summary["predict"] = task.write_predictions(trainer.predict(), results_dir)
        if run.export_dir:
            done = existing_export(run.export_dir, source, task)
            summary["export_dir"] = done or task.export(trainer.model, run.export_dir, step, source)
            if log is not None:
                log(f"{done} is the export of {source} already" if done else f"exported {summary['export_dir']}")
    if (run.do_train or run.do_eval or run.do_predict) and trainer.chief:
        _fs.makedirs(results_dir)
        write_json(os.path.join(results_dir, "run_summary.json"), summary)
    return summary


TRIAL_SELECTIONS = ("median", "best")


def run_trials(
    config: ExperimentConfig,
    build: Callable[[ExperimentConfig], tuple[Task, ExperimentConfig]],
    log: Callable[[str], None] | None = print,
) -> dict[str, Any]:
    """``--num_trials=N``: the same fine-tuning N times with seeds ``seed``, ``seed + 1``, ..., each a complete run
    in ``<output_dir>/trial_<k>`` (train, evaluate every checkpoint, keep its best, predict); then every trial's
    best dev metrics, their median, mean, standard deviation and range in ``<output_dir>/run_summary.json`` and the
    log, and the export (``--export_dir``) of one trial's best checkpoint: the trial whose key-metric score is the
    median (the lower of the middle two for an even N), or the best one with ``--trial_selection=best`` (the
    summary says which). Fine-tuning of large ALBERTs fails to converge on some seeds (transformers#2104); one
    seed's score says little, several say how much to trust it (ELECTRA's ``num_trials``).

    ``build(config)`` makes the task and its final config (a task may derive its schedule from the data). With one
    trial this is :func:`run_experiment` on ``config``. A rerun resumes or skips each trial like any run.
    """
    run = config.run
    if run.num_trials == 1:
        task, config = build(config)
        return run_experiment(task, config, log=log)
    if run.num_trials < 1:
        raise RunError(f"--num_trials must be >= 1, got {run.num_trials}")
    if run.trial_selection not in TRIAL_SELECTIONS:
        raise RunError(f"--trial_selection={run.trial_selection!r}: expected one of {', '.join(TRIAL_SELECTIONS)}")
    if not (run.do_train and run.do_eval):
        raise RunError("--num_trials needs --do_train and --do_eval: the trials are compared by their dev scores")
    if run.predict_checkpoint:
        raise RunError("--num_trials trains its own models: --predict_checkpoint has no place in it")
    if run.output_dir and list_run_checkpoints(run.output_dir):
        raise RunError(f"--output_dir {run.output_dir} holds the checkpoints of a single run; the trials go into "
                       "trial_<k> folders of a new --output_dir")
    trials = []
    for k in range(run.num_trials):
        seed = config.trainer.seed + k
        trial_run = dataclasses.replace(run, output_dir=os.path.join(run.output_dir, f"trial_{k}"), export_dir=None,
                                        num_trials=1)
        task, trial_config = build(dataclasses.replace(
            config, run=trial_run, trainer=dataclasses.replace(config.trainer, seed=seed)))
        if k == 0:
            refuse_writing_among_inputs(task, run)  # the top-level --output_dir and --export_dir
        if log is not None:
            log(f"trial {k + 1} of {run.num_trials} (seed {seed}) in {trial_run.output_dir}")
        summary = run_experiment(task, trial_config, log=log)
        best = summary.get("best") or {}
        if task.key_metric not in best:
            raise RunError(f"trial {k} ({trial_run.output_dir}) has no dev {task.key_metric} to compare")
        trials.append({"trial": k, "seed": seed, "output_dir": trial_run.output_dir, "best": best,
                       "score": float(best[task.key_metric])})
        if log is not None:
            log(f"trial {k + 1} of {run.num_trials}: best dev {task.key_metric} {trials[-1]['score']:.4f}")
    scores = [t["score"] for t in trials]
    ranked = sorted(trials, key=lambda t: (t["score"], t["trial"]))
    chosen = ranked[-1] if run.trial_selection == "best" else ranked[(len(ranked) - 1) // 2]
    summary = {
        "task": task.name, "key_metric": task.key_metric, "num_trials": run.num_trials, "trials": trials,
        "median": statistics.median(scores), "mean": statistics.fmean(scores), "std": statistics.stdev(scores),
        "min": min(scores), "max": max(scores), "selection": run.trial_selection,
        "chosen_trial": chosen["trial"], "chosen_score": chosen["score"], "chosen_output_dir": chosen["output_dir"],
    }
    if log is not None:
        log(f"{run.num_trials} trials, dev {task.key_metric}: median {summary['median']:.4f}, mean "
            f"{summary['mean']:.4f} ± {summary['std']:.4f} (std), range {summary['min']:.4f}-{summary['max']:.4f}; "
            f"the {run.trial_selection} trial is trial {chosen['trial']} ({chosen['score']:.4f})")
    if run.export_dir:
        folder = chosen["output_dir"]
        checkpoint = trainer_layout.best_prefix(folder) if trainer_layout.has_best(folder) else \
            list_run_checkpoints(folder)[-1][1]
        summary["export_checkpoint"] = checkpoint
        done = existing_export(run.export_dir, checkpoint, task)
        if done is not None:  # a rerun: this trial's model is exported already
            summary["export_dir"] = done
            if log is not None:
                log(f"{done} is the export of {checkpoint} already")
        else:
            task, _ = build(dataclasses.replace(config, run=dataclasses.replace(
                run, output_dir=folder, do_train=False, do_eval=False, do_predict=False, num_trials=1)))
            summary["export_dir"] = export_checkpoint(task, checkpoint, run.export_dir, flag="--output_dir")
            if log is not None:
                log(f"exported {summary['export_dir']}")
    if is_chief_process():
        write_json(os.path.join(run.output_dir, "run_summary.json"), summary)
    return summary


def existing_export(export_dir: str, checkpoint: str, task: Task | None = None) -> str | None:
    """The SavedModel under ``export_dir/<step>`` written from ``checkpoint`` (at ``task``'s ``max_seq_length``), if
    there is one (its metadata): what the same command run again finds, and keeps instead of failing on a non-empty
    folder. Other export options are not compared: an export with other ones goes to another ``--export_dir``."""
    try:
        path = os.path.join(export_dir, str(trainer_layout.checkpoint_step(resolve_checkpoint_path(checkpoint))))
    except (ValueError, OSError, tf.errors.OpError):  # not a checkpoint this layout reads: nothing to compare
        return None
    length = getattr(getattr(task, "options", None), "max_seq_length", None)
    expected = {"checkpoint": checkpoint, **({} if length is None else {"max_seq_length": length})}
    return path if holds_export_of(path, expected) else None
