"""What a checkpoint load did: loaded, missing, unused, shape mismatches, ignored.

Every loader in :mod:`albert_tf.checkpoints` ends in :func:`assign_official_arrays`: the
source (official TF1 checkpoint, Hugging Face state dict, another albert-tf model) is first
turned into ``{official TF1 name: array in the official layout}``, then each name
is matched with the model's variable through ``names.official_variable_map``. Nothing is
dropped silently: optimizer slots, ``global_step`` and framework buffers are counted as
*ignored*, names the model has no variable for are *unused*, model variables the source
does not provide are *missing* (google-research/albert#224: print this report on initialisation).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np


class CheckpointError(ValueError):
    """A checkpoint cannot be used; the message is one line naming the file and the reason."""


class NotAlbertCheckpointError(CheckpointError):
    """The file is a checkpoint, but not in a layout we read (e.g. brightmart albert_zh, BERT)."""


class ConfigMismatchError(CheckpointError):
    """The checkpoint's shapes disagree with the ALBERT config (google-research/albert#230)."""


@dataclasses.dataclass
class LoadReport:
    """Outcome of loading weights into a model, keyed by official TF1 names.

    ``loaded``: names whose array was assigned. ``missing``: model variables (official
    names) the source does not hold; they keep their initial values. ``unused``: source
    names with no variable in this model (e.g. the pretraining heads when loading an
    encoder). ``shape_mismatches``: ``(name, source shape, model shape)``, both in the official
    layout, not assigned.
    ``ignored``: optimizer slots, ``global_step``, buffers and tied aliases, skipped on
    purpose. ``head_skipped``: names the source holds for the model's heads, left at their initial values on
    request (:meth:`keep_encoder_only`). ``encoder_prefixes``: how the encoder's names begin (``bert/`` in
    official names; the encoder's top-level Keras paths when a loader reports in Keras paths), for
    :meth:`encoder_summary`.
    """

    source: str = ""
    loaded: list[str] = dataclasses.field(default_factory=list)
    missing: list[str] = dataclasses.field(default_factory=list)
    unused: list[str] = dataclasses.field(default_factory=list)
    shape_mismatches: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = dataclasses.field(default_factory=list)
    ignored: list[str] = dataclasses.field(default_factory=list)
    head_skipped: list[str] = dataclasses.field(default_factory=list)
    encoder_prefixes: tuple[str, ...] = ("bert/",)

    def keep_encoder_only(self) -> None:
        """Record that every head name the source held (loaded or mis-shaped) was put back to its initial value:
        they move to ``head_skipped``, so that the report says what the model was really given."""
        def is_head(name: str) -> bool:
            return not name.startswith(self.encoder_prefixes)

        self.head_skipped = sorted(
            [n for n in self.loaded if is_head(n)] + [n for n, _, _ in self.shape_mismatches if is_head(n)]
        )
        self.loaded = [n for n in self.loaded if not is_head(n)]
        self.shape_mismatches = [m for m in self.shape_mismatches if not is_head(m[0])]

    @property
    def complete(self) -> bool:
        """True when every model variable was loaded and nothing disagreed in shape."""
        return bool(self.loaded) and not self.missing and not self.shape_mismatches

    def raise_if_backbone_incomplete(self) -> None:
        """Raise when a backbone (``bert/...``) variable was mis-shaped or missing; head gaps are only reported."""
        bad = [m for m in self.shape_mismatches if m[0].startswith("bert/")]
        if bad:
            name, a, b = bad[0]
            raise ConfigMismatchError(
                f"{self.source}: backbone variable {name} has shape {list(a)} in the checkpoint "
                f"but {list(b)} in the model (checkpoint and config disagree)"
            )
        missing = [n for n in self.missing if n.startswith("bert/")]
        if missing:
            raise CheckpointError(
                f"{self.source}: {len(missing)} backbone variable(s) not in the checkpoint, first {missing[0]}"
            )

    def encoder_summary(self) -> str:
        """One line on the encoder (``bert/...``) variables alone, what a user checks after loading released
        weights into a task model: the head's gaps (a new classifier, the unused pretraining heads) left out."""
        def count(names: list[str]) -> int:
            return sum(n.startswith(self.encoder_prefixes) for n in names)

        mismatched = sum(n.startswith(self.encoder_prefixes) for n, _, _ in self.shape_mismatches)
        return (f"encoder weights: loaded {count(self.loaded)}, missing {count(self.missing)}, unused "
                f"{count(self.unused)}, shape mismatches {mismatched}")

    def summary(self, verbose: bool = True, limit: int = 20) -> str:
        """A readable multi-line report; ``verbose`` lists the names of every non-loaded group."""
        head = (
            f"checkpoint {self.source or '<arrays>'}: loaded {len(self.loaded)}, missing {len(self.missing)}, "
            f"unused {len(self.unused)}, shape mismatches {len(self.shape_mismatches)}, ignored {len(self.ignored)}"
            + (f", head skipped {len(self.head_skipped)}" if self.head_skipped else "")
        )
        lines = [head]
        if not verbose:
            return head

        def block(title: str, items: list[str]) -> None:
            if not items:
                return
            lines.append(f"  {title} ({len(items)}):")
            lines.extend(f"    {item}" for item in items[:limit])
            if len(items) > limit:
                lines.append(f"    ... and {len(items) - limit} more")

        block("missing (kept their initial values)", self.missing)
        block("head skipped (in the checkpoint, kept their initial values: encoder only)", self.head_skipped)
        block("unused (in the checkpoint, not in the model)", self.unused)
        block(
            "shape mismatches (not loaded)",
            [f"{n}: checkpoint {list(a)} vs model {list(b)}" for n, a, b in self.shape_mismatches],
        )
        ignored_kinds = _count_kinds(self.ignored)
        if ignored_kinds:
            lines.append("  ignored: " + ", ".join(f"{k} x{c}" for k, c in ignored_kinds.items()))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def raise_if_empty(self) -> LoadReport:
        """Fail loudly when nothing was loaded (google-research/albert#230, #132: a run silently trained from
        scratch)."""
        if not self.loaded:
            hint = ""
            if self.shape_mismatches:
                name, a, b = self.shape_mismatches[0]
                hint = f"; first shape mismatch {name}: checkpoint {list(a)} vs model {list(b)}"
            elif self.unused:
                hint = f"; first unused name {self.unused[0]!r}"
            raise CheckpointError(f"no variable of {self.source or 'the checkpoint'} matched the model{hint}")
        return self

    def raise_if_incomplete(self) -> LoadReport:
        """Raise unless every model variable was loaded with the right shape."""
        self.raise_if_empty()
        if self.shape_mismatches:
            name, a, b = self.shape_mismatches[0]
            raise ConfigMismatchError(
                f"{self.source or 'checkpoint'}: {len(self.shape_mismatches)} shape mismatch(es), first {name}: "
                f"checkpoint {list(a)} vs model {list(b)}"
            )
        if self.missing:
            raise CheckpointError(
                f"{self.source or 'checkpoint'}: {len(self.missing)} model variable(s) missing, first {self.missing[0]}"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "loaded": list(self.loaded),
            "missing": list(self.missing),
            "unused": list(self.unused),
            "shape_mismatches": [[n, list(a), list(b)] for n, a, b in self.shape_mismatches],
            "ignored": list(self.ignored),
        }


def _count_kinds(names: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in names:
        kind = name.rsplit("/", 1)[-1] if "/" in name else name
        counts[kind] = counts.get(kind, 0) + 1
    return counts


# ---------------------------------------------------------------------------- the model side


@dataclasses.dataclass(frozen=True)
class OfficialSlot:
    """One model variable and how its value relates to the official TF1 array."""

    name: str
    variable: Any
    to_model: Callable[[np.ndarray], np.ndarray]
    to_official: Callable[[np.ndarray], np.ndarray]


def _identity(x: np.ndarray) -> np.ndarray:
    return x


def _transpose(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(x))


def _make_slot(name: str, entry: Any) -> OfficialSlot:
    """Normalise one ``official_variable_map`` entry.

    Accepted forms: ``names.VariableRef`` (``.variable``, ``.transform``), a bare variable, or
    ``(variable, transform)``; transform ``None``, ``"identity"``, ``"transpose"`` or a
    callable official->model with an ``.inverse`` attribute.
    """
    if isinstance(entry, OfficialSlot):
        return entry
    if hasattr(entry, "variable") and hasattr(entry, "transform"):  # names.VariableRef
        variable, transform = entry.variable, entry.transform
    elif isinstance(entry, tuple):
        variable, transform = entry[0], (entry[1] if len(entry) > 1 else None)
    else:
        variable, transform = entry, None
    if transform is None or transform == "identity":
        return OfficialSlot(name, variable, _identity, _identity)
    if transform == "transpose":
        return OfficialSlot(name, variable, _transpose, _transpose)
    if callable(transform):
        inverse = getattr(transform, "inverse", None)
        if inverse is None:
            raise TypeError(f"official_variable_map entry {name!r}: transform {transform!r} has no .inverse")
        return OfficialSlot(name, variable, transform, inverse)
    raise TypeError(f"official_variable_map entry {name!r}: unsupported transform {transform!r}")


def official_slots(model: Any) -> dict[str, OfficialSlot]:
    """``{official TF1 name: OfficialSlot}`` for every variable of ``model`` (via names.py)."""
    from albert_tf.checkpoints.names import official_variable_map

    try:
        mapping = official_variable_map(model)
    except (TypeError, ValueError) as e:  # e.g. sharing='attention' has no official layout
        raise CheckpointError(f"{type(model).__name__}: {e}") from None
    return {name: _make_slot(name, entry) for name, entry in mapping.items()}


def model_official_arrays(model: Any) -> dict[str, np.ndarray]:
    """The model's weights as ``{official name: array in the official layout}`` (float32)."""
    out = {}
    for name, slot in official_slots(model).items():
        value = np.asarray(slot.variable.numpy() if hasattr(slot.variable, "numpy") else slot.variable)
        out[name] = np.asarray(slot.to_official(value), dtype=np.float32)
    return out


def _shape_of(variable: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in variable.shape)


def assign_official_arrays(
    model: Any,
    arrays: Mapping[str, np.ndarray],
    *,
    source: str = "",
    ignored: list[str] | None = None,
    slots: Mapping[str, OfficialSlot] | None = None,
) -> LoadReport:
    """Assign ``{official name: array}`` to the model's variables and report what happened.

    Arrays are in the official layout (e.g. ``output_weights`` [out, in]); each is converted
    with the slot's ``to_model`` and must then match the variable's shape exactly, else it is
    listed under ``shape_mismatches`` and not assigned. Nothing raises here: callers decide
    with ``raise_if_empty`` / ``raise_if_incomplete``.
    """
    slots = official_slots(model) if slots is None else slots
    report = LoadReport(source=source, ignored=list(ignored or []))
    for name, slot in slots.items():
        if name not in arrays:
            report.missing.append(name)
            continue
        value = np.asarray(slot.to_model(np.asarray(arrays[name])))
        want = _shape_of(slot.variable)
        if tuple(value.shape) != want:
            # both shapes in the official layout, so the message compares like with like
            model_shape = tuple(slot.to_official(np.broadcast_to(np.float32(0), want)).shape)
            report.shape_mismatches.append((name, tuple(np.asarray(arrays[name]).shape), model_shape))
            continue
        slot.variable.assign(value.astype(_numpy_dtype(slot.variable)))
        report.loaded.append(name)
    report.unused = [name for name in arrays if name not in slots]
    return report


def _numpy_dtype(variable: Any) -> np.dtype:
    dtype = variable.dtype
    name = getattr(dtype, "name", dtype)
    try:
        return np.dtype(name)
    except TypeError:
        return np.dtype(np.float32)
