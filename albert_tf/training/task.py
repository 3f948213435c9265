"""The task contract: what one job (pretraining, a GLUE task, SQuAD, RACE, or a user's own) gives the runner.

It lives in the training layer, under the ``Trainer`` and the runner skeleton that call it, so both are typed against
it; the jobs themselves live in ``albert_tf/tasks/``. A :class:`Task` knows its data, model, loss, metrics,
prediction files and export; it knows nothing of strategies, checkpoints or output-directory bookkeeping, which the
runner skeleton (:mod:`albert_tf.training.experiment`) and the ``Trainer`` own.

Hooks, in the order the runner calls them:

* construction (the task's own ``from_options``): every cheap check (configs, tokenizer, input files) before
  TensorFlow starts work.
* ``identity()``: what must agree for a run to continue in an output directory (``run.json``).
* ``prepare()`` once the strategy exists; ``build_model()`` (inside the strategy scope);
  ``build_inputs(split, global_batch_size)``.
* ``loss(model, features, training)`` -> ``(scalar loss, {name: scalar to log})`` for one replica's batch.
* ``eval_outputs(model, features)`` -> ``{name: per-example tensor [B, ...]}``; the runner gathers them over the
  whole evaluation set (padded rows removed) and ``aggregate(outputs)`` turns them into metrics, so metrics that
  need the whole set (MCC, F1, Pearson) are exact. ``key_metric`` picks the best checkpoint.
* ``predict_outputs`` (default: ``eval_outputs``) and ``write_predictions(outputs, results_dir)``.
* ``export(model, export_dir, step, source)``: a SavedModel for serving.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from albert_tf.training.run_config import RunError

#: The splits ``build_inputs`` is asked for.
TRAIN, EVAL, PREDICT = "train", "eval", "predict"
SPLITS = (TRAIN, EVAL, PREDICT)


class TaskError(RunError):
    """A task cannot run with these options or inputs; the message is one line naming the flag or file."""


class Task(abc.ABC):
    """Base class of every job; see the module docstring for the hooks."""

    #: Short name used in messages and in ``run.json``.
    name: str = "task"
    #: The metric that selects the best checkpoint (higher is better).
    key_metric: str = "accuracy"

    #: The AlbertConfig of the model (written beside the checkpoints of a training run).
    albert_config: Any = None
    #: Set by the ``Trainer`` before ``build_inputs(TRAIN, ...)``: the number of equal parts (replicas x gradient
    #: accumulation micro-batches) it cuts each training batch into along axis 0. A task whose batches are not one
    #: example per row (packed fine-tuning, ``albert_tf.data.packing``) gives them a leading axis of this size.
    input_slices: int = 1
    #: Set by the ``Trainer``: whether its training step is compiled by XLA (``jit_compile``), where every shape
    #: must follow from the input shapes, not from the data.
    jit_compile: bool = False

    # ---------------------------------------------------------------- before any TF work
    def identity(self) -> dict[str, Any]:
        """What a continuing run in the same output directory must share (compared to ``run.json``)."""
        return {"task": self.name}

    def run_record(self) -> dict[str, Any]:
        """What ``run.json`` records beside :meth:`identity`, for later tools rather than for comparison (a
        fine-tuning run's tokenizer, which ``export_savedmodel`` and ``convert_checkpoint`` check or use)."""
        return {}

    def input_paths(self) -> list[str]:
        """The files and folders the task reads its data from. An ``--output_dir`` or ``--export_dir`` that is one
        of them, or a folder that holds one, is refused before anything is written (no command writes among its
        own inputs)."""
        return []

    def results_subdir(self, previous: dict[str, Any], training: bool) -> str | None:
        """Where results go when ``run.json`` holds ``previous``, an identity different from :meth:`identity`.

        Return a sub-directory name for a compatible job using that model (e.g. MNLI-mismatched in an MNLI run),
        or raise :class:`TaskError`. The default refuses.
        """
        raise TaskError(f"holds a {previous.get('task')} run; this is {self.name}: choose another --output_dir")

    def warn_without_init_checkpoint(self) -> None:
        """Called when training starts from random initialisation (no ``--init_checkpoint``, nothing to resume)."""
        return None

    def data_report(self) -> dict[str, Any]:
        """What reading the task's data counted (skipped rows, failed alignments, truncations), for
        ``run_summary.json``; called after :meth:`prepare`. Nothing is dropped without being counted here."""
        return {}

    # ---------------------------------------------------------------- model and data
    def prepare(self) -> None:
        """Work done once the strategy exists and before the model is built (e.g. feature caches)."""
        return None

    @abc.abstractmethod
    def build_model(self) -> Any:
        """A built (variables created) keras model; called inside the strategy scope."""

    @abc.abstractmethod
    def build_inputs(self, split: str, global_batch_size: int) -> Any:
        """``tf.data`` of feature dicts: ``train`` repeats (same stream on every worker); ``eval``/``predict``
        read once in order (or None when the task has no such data)."""

    @abc.abstractmethod
    def loss(self, model: Any, features: dict, training: bool) -> tuple[Any, dict]:
        """(scalar loss to minimise, dict of scalar values to log) for one replica's batch."""

    # ---------------------------------------------------------------- evaluation and prediction
    @abc.abstractmethod
    def eval_outputs(self, model: Any, features: dict) -> dict:
        """Per-example tensors (leading dimension = batch) for :meth:`aggregate`."""

    @abc.abstractmethod
    def aggregate(self, outputs: dict[str, np.ndarray]) -> dict[str, float]:
        """Metrics of a whole evaluation set from the concatenated :meth:`eval_outputs`."""

    def predict_outputs(self, model: Any, features: dict) -> dict:
        """Per-example tensors for :meth:`write_predictions` (default: the evaluation outputs)."""
        return self.eval_outputs(model, features)

    def write_predictions(self, outputs: dict[str, np.ndarray], results_dir: str) -> dict[str, Any]:
        """Write prediction files (temporary name, then renamed); returns a summary for ``run_summary.json``."""
        raise TaskError(f"{self.name}: --do_predict is not supported")

    def export(self, model: Any, export_dir: str, step: int, source: str) -> str:
        """Write a SavedModel of ``model`` under ``export_dir``; returns its path."""
        raise TaskError(f"{self.name}: --export_dir is not supported")
