"""One nested configuration per run: trainer options + run options (what to do, where) + the task's options.

Flags map onto it in one hop: every flag is one field, declared once with :func:`option` (its default, help,
choices and aliases; :func:`define_option_flags` makes the flag), so ``run_classifier --max_seq_length`` becomes
``config.task.max_seq_length`` and nothing else holds a copy of it. The official aliases (``train_step``,
``warmup_step``, ``iterations_per_loop``, ``tpu_name``) are declared on their fields; ``use_tpu``, ``master`` and
``num_tpu_cores`` are folded into ``strategy`` and ``tpu`` by :meth:`ExperimentConfig.from_flat`. The Python API
builds the same object from keyword arguments.
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


def define_option_flags(options_type: type, fv: Any, names: Sequence[str] | None = None,
                        defaults: Mapping[str, Any] | None = None, help: Mapping[str, str] | None = None,  # noqa: A002
                        ) -> None:
    """Define on ``fv`` (an absl ``FlagValues``) one flag per field of ``options_type`` declared with :func:`option`
    (or only ``names``), typed by the field's annotation: ``bool``, ``int``, ``float``, ``str`` (an enum where the
    field lists its choices), each also ``... | None``; an empty-string default is no default. ``defaults`` and
    ``help`` replace a field's default and help text for this command (by name). A flag already on ``fv`` (a shared
    one) is left as it is."""
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
        default = (defaults or {}).get(field.name, field.default)
        default = None if default == "" else default
        text = (help or {}).get(field.name, meta["help"])
        if meta["choices"]:
            flags.DEFINE_enum(field.name, default, list(meta["choices"]), text, flag_values=fv,
                              module_name=owner.__module__)
        else:
            define = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float,
                      str: flags.DEFINE_string}[kind]
            define(field.name, default, text, flag_values=fv, module_name=owner.__module__)
        for alias in meta["aliases"]:
            flags.DEFINE_alias(alias, field.name, flag_values=fv, module_name=owner.__module__)


#: ``--strategy``'s values (``training.strategy.make_strategy``).
STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
#: ``--mixed_precision``'s values: Keras dtype policies.
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


@dataclasses.dataclass
class TrainerOptions:
    """The shared trainer's options: each field is the flag of every runner (``define_option_flags``); a runner
    changes a default by name (``run_pretraining``'s ``TRAINER_DEFAULTS``, ``cli.fine_tuning.TRAINING_DEFAULTS``)."""

    strategy: str = option(
        "one_device",
        "tf.distribute strategy: one_device (first GPU or the CPU), mirrored (all local GPUs, or --num_cpu_devices "
        "logical CPUs), multi_worker_mirrored (cluster from TF_CONFIG), tpu.", choices=STRATEGIES)
    tpu: str | None = option(
        None, "TPU name or grpc:// address for TPUClusterResolver (--strategy=tpu); 'local' on a TPU VM (and Colab's "
        "TPU runtime).", aliases=("tpu_name",))
    tpu_zone: str | None = option(None, "GCE zone of the TPU (TPUClusterResolver).")
    gcp_project: str | None = option(None, "GCP project of the TPU (TPUClusterResolver).")
    num_cpu_devices: int = option(
        1, "With --strategy=mirrored and no GPU: split the CPU into this many logical devices.")
    all_reduce_alg: str | None = option(None, "multi_worker_mirrored collective implementation.",
                                        choices=("ring", "nccl"))
    train_batch_size: int = option(32, "Global batch per micro-step (x gradient_accumulation_steps).")
    eval_batch_size: int = option(8, "Global evaluation batch.")
    predict_batch_size: int = option(8, "Global prediction batch.")
    optimizer: str = option("adamw", "Official AdamWeightDecay or LAMB (official optimization.py).",
                            choices=("adamw", "lamb"))
    learning_rate: float = option(5e-5, "Initial (peak) learning rate.")
    num_train_steps: int = option(1000, "Number of optimizer updates.", aliases=("train_step",))
    num_warmup_steps: int = option(0, "Linear warmup steps (the warmup replaces the decay).", aliases=("warmup_step",))
    start_warmup_step: int = option(0, "Step at which warmup starts (earlier steps: negative lr, official).")
    poly_power: float = option(1.0, "Power of the polynomial decay to 0.")
    weight_decay_rate: float = option(0.01, "Weight decay inside the update (official 0.01).")
    adam_epsilon: float = option(1e-6, "Adam epsilon (official 1e-6).")
    adam_bias_correction: bool = option(
        False, "Divide Adam's m and v by 1 - beta^t as Adam does (not official: the official AdamW and LAMB have no "
        "bias correction, which makes AdamW's first updates up to 5.6x larger). LAMB's trust ratio cancels most of "
        "the difference.")
    clip_norm: float = option(1.0, "Global-norm clipping of the global-batch gradient (official 1.0; 0 = off).")
    steps_per_loop: int = option(1000, "Training steps per host call (inner tf.function loop; TPU speed).",
                                 aliases=("iterations_per_loop",))
    save_checkpoints_steps: int = option(
        1000, "Save a checkpoint (and, with --do_eval, evaluate it) every this many steps.")
    keep_checkpoint_max: int = option(
        0, "How many recent checkpoints to keep (0 = keep all). Nothing else is ever deleted.")
    gradient_accumulation_steps: int = option(
        1, "Micro-batches of --train_batch_size per optimizer update: the effective batch is train_batch_size x "
        "gradient_accumulation_steps.")
    mixed_precision: str = option(
        "float32", "Keras dtype policy; mixed_float16 adds dynamic loss scaling. On a CPU, mixed_bfloat16 pays off "
        "only where it multiplies bfloat16 natively (avx512_bf16 or amx_bf16 in /proc/cpuinfo) and without "
        "--jit_compile; elsewhere keep float32 (README, 'bfloat16 on CPUs').", choices=PRECISIONS)
    jit_compile: bool = option(False, "Compile the forward/backward pass with XLA.")
    recompute_activations: bool = option(
        False, "Keep only each transformer layer's input for the backward pass and recompute its activations "
        "there: far less training memory (long sequences, large models) for one more forward pass per step; the "
        "same gradients (benchmarks/activation_memory.py).")
    seed: int = option(12345, "Seed of model initialisation, dropout and input shuffling.")
    deterministic: bool = option(
        False, "tf.config.experimental.enable_op_determinism(): bitwise-reproducible runs.")
    max_eval_steps: int = option(0, "Evaluation batches (0: the whole evaluation set once).")


@dataclasses.dataclass
class RunOptions:
    """What the run does and where its outputs go: each field declared with ``option`` is a flag of the runners
    that read it (``run_pretraining`` has no prediction, export or trials)."""

    output_dir: str = option(
        "", "Checkpoints, TensorBoard events, eval results and predictions go here (required).")
    do_train: bool = option(False, "Train.")
    do_eval: bool = option(
        False, "Evaluate every checkpoint (while training, else every ckpt-N in --output_dir) and keep the best in "
        "<output_dir>/best/.")
    do_predict: bool = option(False, "Predict the test set.")
    init_checkpoint: str | None = option(
        None, "Initialise the model weights from this checkpoint (prefix or directory; official TF1, Hugging Face "
        "or albert-tf), or a pretrained preset name (albert_base_v2, albert/albert-base-v2, ...: downloaded, "
        "verified and cached; it supplies --albert_config_file, the tokenizer and --do_lower_case when those are "
        "not given; python -m albert_tf.configs lists them). Step 0 and a fresh optimizer. Ignored when "
        "--output_dir already holds a checkpoint of this run (then everything is resumed).")
    init_from_group0: bool = option(
        False, "Official flag: initialise every group of a num_hidden_groups > 1 model from group 0 of "
        "--init_checkpoint (official run_pretraining.py).")
    init_encoder_only: bool = option(
        False, "Initialise only the encoder from --init_checkpoint; the task head (or the pretraining heads) keeps "
        "its fresh initial values even where the checkpoint has one. For starting from another task's fine-tuned "
        "model (the paper's recipe in section 4.9 for its small fine-tuning tasks) or another number of labels; "
        "the load report lists the head variables it skipped.")
    predict_checkpoint: str | None = option(
        None, "Predict/export from this fine-tuned checkpoint instead of output_dir's best (predict-only mode); "
        "without --do_train, --do_eval evaluates it instead of output_dir's checkpoints.")
    export_dir: str | None = option(None, "Write a SavedModel of the best weights to <dir>/<step>.")
    #: evaluate the initial model (step 0) before training (the curve runs; no flag)
    eval_at_start: bool = False
    num_trials: int = option(
        1, "Fine-tune this many times with seeds --seed, --seed+1, ... (each a whole run in "
        "<output_dir>/trial_<k>, needs --do_train --do_eval); run_summary.json reports every trial's dev metrics, "
        "their median, mean and spread, and --export_dir exports the trial of --trial_selection.")
    trial_selection: str = option(
        "median", "With --num_trials: export the trial whose dev score is the median (the lower middle one for an "
        "even count) or the best (labelled as such in run_summary.json).", choices=("median", "best"))


#: The run options of ``run_pretraining`` (no prediction, export or trials).
PRETRAINING_RUN_FLAGS = ("output_dir", "do_train", "do_eval", "init_checkpoint", "init_from_group0",
                         "init_encoder_only")
# Official flags accepted for compatibility and folded into other fields (``cli.flags.define_official_tpu_flags``).
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
        for alias, target in _aliases(task_options).items():
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


def _aliases(task_options: type) -> dict[str, str]:
    """alias flag name -> its field (official names such as ``train_step``, declared with ``option``)."""
    return {alias: f.name for options in (task_options, TrainerOptions, RunOptions)
            for f in dataclasses.fields(options) for alias in f.metadata.get("aliases", ())}


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


def check_output_folders(run: RunOptions, task: Any = None) -> None:
    """``--output_dir``, ``--export_dir`` and the task's ``--cached_dir`` can be folders: none is, nor lies under,
    an existing file. Checked with the flags, so that a file in the way is named before training, not when the
    first checkpoint or the export is written."""
    from albert_tf import files as _fs

    for flag, path in (("output_dir", run.output_dir), ("export_dir", run.export_dir),
                       ("cached_dir", getattr(task, "cached_dir", None))):
        blocker = _fs.file_in_the_way(path) if path else None
        if blocker is not None:
            raise RunError(f"--{flag}={path}: {blocker} is a file, not a directory")


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
