"""Fine-tuning heads in checkpoints: a head's names in every checkpoint format, as plain data.

A task package declares each of its heads once, as a :class:`TaskHead` in its TensorFlow-free ``__init__``: the
official TF1 name of each weight, where the weight lives on the Keras model, the official shape and the Hugging Face
parameter name. The task's model class lists its heads (``task_heads``), so code holding a model reads them from
the model (:func:`heads_of`); code that starts from files alone (a conversion) is handed the heads of every task
(``albert_tf.tasks.registry.task_heads``) by its caller. The pretraining heads (MLM, SOP) are part of every official
checkpoint and are named in :mod:`albert_tf.checkpoints.names`, not here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

#: A dimension of a head weight's official shape: a number, or ``"H"`` (hidden size), ``"2H"`` or ``"labels"``
#: (the head's row count, ``num_labels`` for a classifier).
Dim = int | str


@dataclasses.dataclass(frozen=True)
class HeadWeight:
    """One weight of a head.

    * ``path``: the Keras variable as an attribute path from the model (``"head.kernel"``).
    * ``shape``: its official shape (:data:`Dim` entries).
    * ``transposed``: the official variable is the transpose of the Keras one (the official runners'
      ``output_weights`` [rows, H] against a Dense kernel [H, rows]).
    * ``huggingface``: the transformers parameter name (the same layout as the official variable), or None where
      transformers has no class for the head.
    * ``keras_hub``: the keras-hub variable path on the head's task model (a Keras Dense kernel, so ``transposed``
      holds for it as for the albert-tf layer), or None where keras-hub has no ALBERT class for the head.
    """

    path: str
    shape: tuple[Dim, ...]
    transposed: bool = False
    huggingface: str | None = None
    keras_hub: str | None = None


@dataclasses.dataclass(frozen=True)
class TaskHead:
    """One fine-tuning head's names in every checkpoint format.

    * ``name``: how messages and ``official_variable_shapes`` call it.
    * ``weights``: official name -> :class:`HeadWeight`. A head sized by its labels lists first a weight whose
      leading dimension is ``"labels"``, which is how a checkpoint's label count is read (:func:`head_rows`).
    * ``huggingface_architecture``: the transformers class that holds the head (None: transformers has none).
    * ``keras_hub_task``: the keras-hub task class that holds the head (None: keras-hub has none).
    * ``labels_in_config``: transformers' config.json lists one label per row of the head (id2label, label2id).
    * ``guessed_from_arrays``: a converter may pick this head from the arrays' names alone (False where another
      head has the same names and shapes, so only the model or the user can name it).
    * ``when``: model attribute -> value, where one model class carries several heads (SQuAD's v1 and v2).
    * ``model``: ``module:Class`` of the task's Keras model, whose ``for_head(config, head, rows)`` builds one
      carrying this head (a conversion from files rebuilds the task model with it).
    """

    name: str
    weights: Mapping[str, HeadWeight]
    huggingface_architecture: str | None = None
    keras_hub_task: str | None = None
    labels_in_config: bool = False
    guessed_from_arrays: bool = True
    when: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    model: str | None = None

    @property
    def official_names(self) -> tuple[str, ...]:
        return tuple(self.weights)

    @property
    def huggingface(self) -> dict[str, str]:
        """official name -> transformers name, for the weights transformers holds."""
        return {name: w.huggingface for name, w in self.weights.items() if w.huggingface}

    def shapes(self, config: Any, rows: int) -> dict[str, tuple[int, ...]]:
        """official name -> shape for ``config``, with ``rows`` labels (as the official runner creates it)."""
        dims = {"H": config.hidden_size, "2H": 2 * config.hidden_size, "labels": rows}
        return {name: tuple(dims[d] if isinstance(d, str) else d for d in w.shape) for name, w in self.weights.items()}

    def applies_to(self, model: Any) -> bool:
        """Whether ``model``, of a class that lists this head, carries it (``when``)."""
        return all(getattr(model, key) == value for key, value in self.when.items())


def heads_of(model: Any) -> list[TaskHead]:
    """The heads ``model`` carries: those its class lists in ``task_heads`` that apply to it."""
    return [head for head in getattr(type(model), "task_heads", ()) if head.applies_to(model)]


def huggingface_head_names(heads: Iterable[TaskHead]) -> dict[str, str]:
    """official name -> transformers name over ``heads`` (heads that share official names, such as a one-label
    classifier and RACE's head, share the transformers name too)."""
    out: dict[str, str] = {}
    for head in heads:
        out.update(head.huggingface)
    return out


def official_head_names(heads: Iterable[TaskHead]) -> frozenset[str]:
    """Every official name of ``heads``."""
    return frozenset(n for head in heads for n in head.official_names)


def head_rows(head: TaskHead, arrays: Mapping[str, Any]) -> int:
    """The label count of ``head`` as stored in ``arrays`` (its first weight's leading dimension), for the shape
    checks of heads sized by their labels; 2 where the head is absent."""
    first = arrays.get(head.official_names[0]) if head.official_names else None
    return int(first.shape[0]) if first is not None and len(first.shape) else 2
