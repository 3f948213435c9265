"""The fine-tuning tasks a shared command can export, each declared once by its own package.

A task package (``albert_tf/tasks/<task>/``, or any installed package) declares a :class:`TaskExport` with
:func:`register_task`; ``export_savedmodel`` learns from the declarations which ``--task`` values exist, which flags
each reads, what is required and how to export, and names no task itself. The head's checkpoint names are declared
beside the task's model (:mod:`albert_tf.checkpoints.heads`).

:func:`load_tasks` imports every package under ``albert_tf/tasks/`` (a package registers when imported) and every
module named by an ``albert_tf.tasks`` entry point of an installed distribution (the built-in tasks are declared
there too, in ``setup.py``, so that a conversion from files finds every head), so a task that lives outside this
repository registers the same way::

    [project.entry-points."albert_tf.tasks"]
    my_task = "my_package.albert_task"
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import pkgutil
from collections.abc import Callable
from typing import Any

from albert_tf.checkpoints.heads import ENTRY_POINT_GROUP
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
    """

    name: str
    description: str
    define_flags: Callable[[Any], None]
    export: Callable[[Any], str]
    required: tuple[str, ...] = ("albert_config_file", "spm_model_file")
    errors: tuple[type[BaseException], ...] = ()
    default: bool = False


#: The shared flags of ``export_savedmodel`` that a fine-tuned task's export reads (the command defines them).
SHARED_EXPORT_FLAGS = ("albert_config_file", "spm_model_file", "max_seq_length", "do_lower_case", "sharing")


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


_TASKS: dict[str, TaskExport] = {}


def register_task(task: TaskExport) -> TaskExport:
    """Declare ``task``; declaring a name again replaces it (a reloaded module)."""
    _TASKS[task.name] = task
    return task


def registered_tasks() -> list[TaskExport]:
    """The declared tasks, in declaration order."""
    return list(_TASKS.values())


def get_task(name: str) -> TaskExport:
    if name not in _TASKS:
        raise KeyError(f"--task={name}: no such task; known: {', '.join(_TASKS) or 'none'}")
    return _TASKS[name]


def load_tasks() -> list[TaskExport]:
    """Import the task packages under ``albert_tf/tasks/`` and the ``albert_tf.tasks`` entry points; returns every
    declared task. Importing a package twice is free, so every command may call this."""
    import albert_tf.tasks as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.ispkg:
            importlib.import_module(f"{package.__name__}.{info.name}")
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        importlib.import_module(entry.value.split(":", 1)[0])
    return registered_tasks()
