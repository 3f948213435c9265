"""Fine-tuning heads in checkpoints: each task package declares its head's names here, and every checkpoint format
learns them from the declaration.

A :class:`TaskHead` says, for one head, which Keras model carries it, the official TF1 variable of each of its
weights (and the shapes the official runner creates), the Hugging Face parameter names and the transformers class
that holds it. The declaring module is the module of the model class, so any code holding such a model has
registered its head. Code that starts from files alone (a conversion) needs every head: the first lookup imports
the modules named by the ``albert_tf.tasks`` entry points of the installed distributions, where the built-in tasks
are declared (``setup.py``) the same way as a task from another package. The pretraining heads (MLM, SOP) are part
of every official checkpoint and are named in :mod:`albert_tf.checkpoints.names`, not here.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
from collections.abc import Callable, Mapping
from typing import Any

#: The entry-point group of the modules that declare tasks and their heads.
ENTRY_POINT_GROUP = "albert_tf.tasks"


@dataclasses.dataclass(frozen=True)
class TaskHead:
    """One fine-tuning head's names in every checkpoint format.

    * ``name``: how :func:`albert_tf.checkpoints.official.official_variable_shapes` and messages call it.
    * ``model_type`` / ``carried_by``: the Keras model class that carries the head; ``applies`` narrows it when one
      class carries several heads (SQuAD's v1 and v2).
    * ``official_names``: the official TF1 names of its weights.
    * ``variables(model)``: official name -> :class:`~albert_tf.checkpoints.names.VariableRef` of the model's head
      weights.
    * ``shapes(config, num_labels)``: official name -> shape, as the official runner creates the head. A head sized
      by its labels lists first a weight whose leading dimension is the label count (the official runners'
      ``output_weights`` [num_labels, H]), which is how a checkpoint's label count is read (:func:`head_rows`).
    * ``huggingface``: official name -> (transformers parameter name, transposed?); empty, with
      ``huggingface_architecture`` None, for a head transformers has no class for.
    * ``huggingface_architecture``: the transformers class that holds the head.
    """

    name: str
    model_type: type
    official_names: tuple[str, ...]
    variables: Callable[[Any], dict[str, Any]]
    shapes: Callable[[Any, int], dict[str, tuple[int, ...]]]
    huggingface: Mapping[str, tuple[str, bool]] = dataclasses.field(default_factory=dict)
    huggingface_architecture: str | None = None
    #: transformers' config.json lists one label per row of the head's first weight (id2label, label2id).
    labels_in_config: bool = False
    #: whether a converter may pick this head from the arrays' names alone (False where another head has the same
    #: names and shapes, so only the model or the user can name it).
    guessed_from_arrays: bool = True
    applies: Callable[[Any], bool] | None = None

    def carried_by(self, model: Any) -> bool:
        return isinstance(model, self.model_type) and (self.applies is None or bool(self.applies(model)))


_HEADS: dict[str, TaskHead] = {}
_HEAD_MODULES: list[str] = []
_DECLARED_LOADED = False


def declare_head_module(module: str) -> None:
    """Name the module that registers a package's heads, imported on the first lookup instead of by the package:
    the module holds the Keras model (TensorFlow), and a package that imports it lazily keeps its own import, and
    the ``--help`` of the commands that load it, free of TensorFlow."""
    if module not in _HEAD_MODULES:
        _HEAD_MODULES.append(module)


def load_declared_heads() -> None:
    """Import every module an ``albert_tf.tasks`` entry point names (once per process) and every module named to
    :func:`declare_head_module`, so that their heads are registered before a lookup that starts from files."""
    global _DECLARED_LOADED
    if not _DECLARED_LOADED:
        _DECLARED_LOADED = True
        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            importlib.import_module(entry.value.split(":", 1)[0])
    for module in list(_HEAD_MODULES):
        importlib.import_module(module)


def register_head(head: TaskHead) -> TaskHead:
    """Make ``head`` known to every checkpoint format; registering a name again replaces it (a reloaded module)."""
    _HEADS[head.name] = head
    return head


def registered_heads() -> list[TaskHead]:
    """Every declared head, in registration order."""
    load_declared_heads()
    return list(_HEADS.values())


def get_head(name: str) -> TaskHead:
    """The head declared as ``name``; a ``ValueError`` lists the known ones."""
    load_declared_heads()
    if name not in _HEADS:
        raise ValueError(f"unknown head {name!r}; known: {', '.join(['pretraining', *_HEADS])}")
    return _HEADS[name]


def heads_of(model: Any) -> list[TaskHead]:
    """The declared heads ``model`` carries."""
    return [head for head in registered_heads() if head.carried_by(model)]


def huggingface_head_names() -> dict[str, tuple[str, bool]]:
    """official name -> (transformers name, transposed?) over every declared head (heads that share official names,
    such as a one-label classifier and RACE's head, share the transformers name too)."""
    out: dict[str, tuple[str, bool]] = {}
    for head in registered_heads():
        out.update(head.huggingface)
    return out


def official_head_names() -> frozenset[str]:
    """Every official name of a declared head."""
    return frozenset(n for head in registered_heads() for n in head.official_names)


def head_rows(head: TaskHead, arrays: Mapping[str, Any]) -> int:
    """The ``num_labels`` of ``head`` as stored in ``arrays`` (its first official weight's leading dimension), for
    the shape checks of heads sized by their labels; 2 where the head is absent."""
    first = arrays.get(head.official_names[0]) if head.official_names else None
    return int(first.shape[0]) if first is not None and len(first.shape) else 2
