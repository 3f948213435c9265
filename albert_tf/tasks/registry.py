"""The fine-tuning tasks, found one way: the built-in ones are a table, another package's by one entry point.

A task package (``albert_tf/tasks/<task>/``, or a module of any installed distribution) declares a
:class:`TaskExport` as its ``TASK``: ``export_savedmodel`` learns from it which ``--task`` values exist, which flags
each reads, what is required and how to export, and names no task itself; a conversion from files learns the
heads' checkpoint names from its ``heads``. The built-in tasks are :data:`BUILT_IN`; a task that lives outside this
repository is one line of its distribution's metadata::

    [project.entry-points."albert_tf.tasks"]
    my_task = "my_package.albert_task"
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
from collections.abc import Callable
from typing import Any

from albert_tf.checkpoints.heads import TaskHead
from albert_tf.training.run_config import define_option_flags


@dataclasses.dataclass(frozen=True)
class TaskExport:
    """How ``export_savedmodel --task=NAME`` turns one task's fine-tuned checkpoint into a SavedModel.

    * ``description``: the ``--help`` paragraph (signatures, where it writes, an example command).
    * ``define_flags(fv)``: the task's own flags (idempotent: a flag already on ``fv`` is left as it is). The
      command defines the shared ones: ``--albert_config_file``, ``--spm_model_file``, ``--do_lower_case``,
      ``--max_seq_length``, ``--sharing``, ``--checkpoint``, ``--export_dir``, ``--tflite``.
    * ``required``: the flags that must be given besides ``--checkpoint`` and ``--export_dir``.
    * ``export(fv)``: write the SavedModel of ``fv.checkpoint`` under ``fv.export_dir``; returns its path.
    * ``errors``: the exceptions that are the user's input errors (one line, exit 2).
    * ``default``: the ``--task`` of a command line that gives none (the official export's, the GLUE classifier).
    * ``heads``: its heads' checkpoint names (the model class lists the same ones as ``task_heads``).
    """

    name: str
    description: str
    define_flags: Callable[[Any], None]
    export: Callable[[Any], str]
    required: tuple[str, ...] = ("albert_config_file", "spm_model_file")
    errors: tuple[type[BaseException], ...] = ()
    default: bool = False
    heads: tuple[TaskHead, ...] = ()


#: The shared flags of ``export_savedmodel`` that a fine-tuned task's export reads (the command defines them).
SHARED_EXPORT_FLAGS = ("albert_config_file", "spm_model_file", "max_seq_length", "do_lower_case", "sharing",
                       "export_real_tokens")


def fine_tuning_export(task: str, options_type: type, flags: tuple[str, ...]) -> dict[str, Any]:
    """``define_flags`` and ``export`` of a :class:`TaskExport` for a ``FineTuningTask``: ``flags`` are the fields of
    ``options_type`` that ``export_savedmodel`` takes as the task's own flags; ``task`` (``module:Class``, imported
    when the export runs, not when the package declares itself) exports the checkpoint with them and the shared
    ones."""

    def export(fv: Any) -> str:
        module, name = task.split(":")
        task_class = getattr(importlib.import_module(module), name)
        options = {flag: fv[flag].value for flag in (*SHARED_EXPORT_FLAGS, *flags)}
        return task_class.export_checkpoint(fv.checkpoint, fv.export_dir, **options)

    return {"define_flags": functools.partial(define_option_flags, options_type, names=flags), "export": export}


#: The modules of the built-in tasks, each holding its ``TASK``.
BUILT_IN = ("albert_tf.tasks.glue", "albert_tf.tasks.squad", "albert_tf.tasks.race", "albert_tf.tasks.tagging")

#: The entry-point group of the modules (``module`` or ``module:ATTRIBUTE``) that declare tasks outside the package.
ENTRY_POINT_GROUP = "albert_tf.tasks"


@functools.cache
def load_tasks() -> tuple[TaskExport, ...]:
    """Every task: the built-in ones (which import no TensorFlow), then those the ``albert_tf.tasks`` entry points
    name (a ``module`` holding its ``TASK``, or ``module:ATTRIBUTE``), in that order. A later task of the same name
    replaces an earlier one. Read once per process: the installed distributions' metadata does not change while a
    command runs, and a command asks several times (its flags, its task, its errors)."""
    tasks: dict[str, TaskExport] = {}
    specs = [*BUILT_IN, *(entry.value for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))]
    for spec in specs:
        module, _, attribute = spec.partition(":")
        task = getattr(importlib.import_module(module.strip()), attribute.strip() or "TASK", None)
        if not isinstance(task, TaskExport):
            raise TypeError(f"albert_tf.tasks entry point {spec!r}: not a TaskExport (expected a module with TASK)")
        tasks[task.name] = task
    return tuple(tasks.values())


def get_task(name: str) -> TaskExport:
    """The task called ``name``; a ``KeyError`` lists the known ones."""
    tasks = {task.name: task for task in load_tasks()}
    if name not in tasks:
        raise KeyError(f"--task={name}: no such task; known: {', '.join(tasks) or 'none'}")
    return tasks[name]


def task_heads() -> list[TaskHead]:
    """The heads of every task, for code that starts from files alone (a conversion)."""
    return [head for task in load_tasks() for head in task.heads]
