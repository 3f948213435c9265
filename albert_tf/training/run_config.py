"""One nested configuration per run: trainer options + run options (what to do, where) + the task's options.

Flags map onto it in one hop: every flag name is the name of exactly one field (official names; the
official aliases ``train_step``, ``warmup_step``, ``iterations_per_loop``, ``tpu_name``, ``use_tpu``
and ``master`` are folded in by :meth:`ExperimentConfig.from_flat`), so ``run_classifier --max_seq_length``
becomes ``config.task.max_seq_length`` and nothing else holds a copy of it. The Python API builds the
same object from keyword arguments.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from albert_tf.checkpoints.pretrained import fill_from_preset


class RunError(ValueError):
    """A flag combination or an output directory that cannot work; raised before any training."""


def option(default: Any, help: str, *, choices: Sequence[str] | None = None,  # noqa: A002 - absl's word
           aliases: tuple[str, ...] = ()) -> Any:
    """A field of an options dataclass that is also a command-line flag of the same name: its default, ``--help``
    text, allowed values and alias flag names are declared here once, and :func:`define_option_flags` defines the
    flag from them."""
    return dataclasses.field(default=default, metadata={"help": help, "choices": tuple(choices or ()),
                                                        "aliases": tuple(aliases)})


def define_option_flags(options_type: type, fv: Any, names: Sequence[str] | None = None) -> None:
    """Define on ``fv`` (an absl ``FlagValues``) one flag per field of ``options_type`` declared with :func:`option`
    (or only ``names``), typed by the field's annotation: ``bool``, ``int``, ``float``, ``str`` (an enum where the
    field lists its choices), each also ``... | None``; an empty-string default is no default. A flag already on
    ``fv`` (a shared one) is left as it is."""
    import typing

    from absl import flags

    hints = typing.get_type_hints(options_type)
    for field in dataclasses.fields(options_type):
        meta = field.metadata
        if "help" not in meta or (names is not None and field.name not in names) or field.name in fv:
            continue
        # --helpfull lists a flag under the module of the dataclass that declares its field
        owner = next(c for c in options_type.__mro__ if field.name in c.__dict__.get("__annotations__", {}))
        kind = next(t for t in typing.get_args(hints[field.name]) or (hints[field.name],) if t is not type(None))
        default = None if field.default == "" else field.default
        if meta["choices"]:
            flags.DEFINE_enum(field.name, default, list(meta["choices"]), meta["help"], flag_values=fv,
                              module_name=owner.__module__)
        else:
            define = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float,
                      str: flags.DEFINE_string}[kind]
            define(field.name, default, meta["help"], flag_values=fv, module_name=owner.__module__)
        for alias in meta["aliases"]:
            flags.DEFINE_alias(alias, field.name, flag_values=fv, module_name=owner.__module__)


@dataclasses.dataclass
class TrainerOptions:
    """The shared trainer's options (the command lines define a flag of the same name for each)."""

    strategy: str = "one_device"
    tpu: str | None = None
    tpu_zone: str | None = None
    gcp_project: str | None = None
    num_cpu_devices: int = 1
    all_reduce_alg: str | None = None
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    optimizer: str = "adamw"
    learning_rate: float = 5e-5
    num_train_steps: int = 1000
    num_warmup_steps: int = 0
    start_warmup_step: int = 0
    poly_power: float = 1.0
    weight_decay_rate: float = 0.01
    adam_epsilon: float = 1e-6
    adam_bias_correction: bool = False
    clip_norm: float = 1.0
    steps_per_loop: int = 1000
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 0  # 0 keeps every checkpoint
    gradient_accumulation_steps: int = 1
    mixed_precision: str = "float32"
    jit_compile: bool = False
    recompute_activations: bool = False
    seed: int = 12345
    deterministic: bool = False
    max_eval_steps: int = 0  # 0: the whole evaluation set


@dataclasses.dataclass
class RunOptions:
    """What the run does and where its outputs go."""

    output_dir: str = ""
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    init_checkpoint: str | None = None
    init_from_group0: bool = False
    init_encoder_only: bool = False  # load the encoder alone from init_checkpoint; heads keep their initial values
    predict_checkpoint: str | None = None
    export_dir: str | None = None
    eval_at_start: bool = False  # evaluate the initial model (step 0) before training
    num_trials: int = 1  # fine-tunings of the same run with seeds seed, seed + 1, ... (experiment.run_trials)
    trial_selection: str = "median"  # the trial whose model is exported: "median" or "best" dev score


# Official flag names that are aliases of a field.
ALIASES = {
    "train_step": "num_train_steps",
    "warmup_step": "num_warmup_steps",
    "iterations_per_loop": "steps_per_loop",
    "tpu_name": "tpu",
}
# Official flags accepted for compatibility and folded into other fields.
FOLDED = ("use_tpu", "master", "num_tpu_cores")


@dataclasses.dataclass
class ExperimentConfig:
    """``task`` (the task's own options dataclass), ``trainer`` and ``run``."""

    task: Any
    trainer: TrainerOptions
    run: RunOptions

    @classmethod
    def from_flat(
        cls,
        task_options: type,
        values: Mapping[str, Any],
        trainer_defaults: Mapping[str, Any] | None = None,
        ignore: tuple[str, ...] = (),
    ) -> ExperimentConfig:
        """Distribute flat ``values`` (flag name -> value) over the three parts, each name to its one field.

        Unknown names raise :class:`RunError` (a flag that nothing reads is a bug), except those in ``ignore``
        (e.g. absl's own flags when ``values`` is ``FLAGS.flag_values_dict()``). Nothing is fetched: a preset name
        in ``init_checkpoint`` stays a name (:func:`fetch_pretrained` is the step that fetches it).
        """
        parts: dict[str, dict[str, Any]] = {"task": {}, "trainer": dict(trainer_defaults or {}), "run": {}}
        owners = _owners(task_options)
        values = dict(values)
        for alias, target in ALIASES.items():
            if alias in values:
                value = values.pop(alias)
                values.setdefault(target, value)
        if values.pop("use_tpu", False):
            values["strategy"] = "tpu"
        master = values.pop("master", None)
        if master and not values.get("tpu"):
            values["tpu"] = master
        values.pop("num_tpu_cores", None)
        for name, value in values.items():
            owner = owners.get(name)
            if owner is None:
                if name in ignore:
                    continue
                raise RunError(f"unknown option {name!r} for {task_options.__name__}")
            parts[owner][name] = value
        return cls(task_options(**parts["task"]), TrainerOptions(**parts["trainer"]), RunOptions(**parts["run"]))


def _owners(task_options: type) -> dict[str, str]:
    """option name -> the part of an :class:`ExperimentConfig` that holds it (the task's options first)."""
    owners = {f.name: "task" for f in dataclasses.fields(task_options)}
    owners.update({f.name: "trainer" for f in dataclasses.fields(TrainerOptions) if f.name not in owners})
    owners.update({f.name: "run" for f in dataclasses.fields(RunOptions) if f.name not in owners})
    return owners


def fetch_pretrained(task_options: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """The step that fetches a released model: where ``init_checkpoint`` names a preset (``albert_base_v2``), fetch
    it into the cache and fill ``albert_config_file``, the tokenizer and ``do_lower_case`` where ``values`` leaves
    them unset (:func:`checkpoints.pretrained.fill_from_preset`); any other value is returned as it is."""
    given = {name for name, value in values.items() if value is not None and value != ""}
    return fill_from_preset(dict(values), given, set(_owners(task_options)))


_POSITIVE = (
    "train_batch_size",
    "eval_batch_size",
    "predict_batch_size",
    "steps_per_loop",
    "gradient_accumulation_steps",
)
_RANGES = (
    ("learning_rate", lambda v: math.isfinite(v) and v > 0, "a finite number > 0"),
    ("num_warmup_steps", lambda v: v >= 0, ">= 0"),
    ("start_warmup_step", lambda v: v >= 0, ">= 0"),
    ("poly_power", lambda v: math.isfinite(v) and v > 0, "a finite number > 0"),
    ("weight_decay_rate", lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0"),
    ("adam_epsilon", lambda v: math.isfinite(v) and v > 0, "a finite number > 0"),
    ("clip_norm", lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0 (0 = no clipping)"),
    ("keep_checkpoint_max", lambda v: v >= 0, ">= 0 (0 = keep all)"),
    ("max_eval_steps", lambda v: v >= 0, ">= 0 (0 = the whole set)"),
    ("num_cpu_devices", lambda v: v >= 1, ">= 1"),
)


def validate_options(trainer: TrainerOptions, run: RunOptions, schedule_from_data: bool = False) -> None:
    """Flag checks that need no file: what to do, and numbers in their ranges (one line each).

    Plain Python, so that a command line checks its flags before it imports TensorFlow. ``schedule_from_data``: a
    ``num_train_steps`` <= 0 and a ``num_warmup_steps`` < 0 stand for the counts the training data gives (run_squad's
    official defaults), checked again once the task has set them.
    """
    if not (run.do_train or run.do_eval or run.do_predict or run.export_dir):
        raise RunError("at least one of --do_train, --do_eval, --do_predict or --export_dir is required")
    if not run.output_dir:
        raise RunError("--output_dir is required")
    for name in ("init_from_group0", "init_encoder_only"):
        if getattr(run, name) and not run.init_checkpoint:
            raise RunError(f"--{name} says how to load --init_checkpoint, which is not given")
    for name in _POSITIVE:
        if getattr(trainer, name) < 1:
            raise RunError(f"--{name} must be >= 1, got {getattr(trainer, name)}")
    for name, ok, allowed in _RANGES:
        value = getattr(trainer, name)
        if schedule_from_data and name == "num_warmup_steps" and value < 0:
            continue
        if not ok(value):
            raise RunError(f"--{name}={value} is out of range: it must be {allowed}")
    if run.do_train:
        for name in ("num_train_steps", "save_checkpoints_steps"):
            value = getattr(trainer, name)
            if value < 1 and not (schedule_from_data and name == "num_train_steps" and value <= 0):
                raise RunError(f"--{name} must be >= 1, got {value}")
