"""absl flags shared by every runner (run_pretraining, run_classifier, run_squad, run_race), defined once.

Each flag is the name of one field of ``albert_tf.training.run_config`` (``TrainerOptions`` / ``RunOptions``)
or of the task's options, so :func:`option_values` + ``ExperimentConfig.from_flat`` map flags to the run's
configuration in one hop. Official names are kept (``iterations_per_loop``, ``use_tpu``, ``tpu_name``,
``save_checkpoints_steps``, ``keep_checkpoint_max``, ``optimizer``, ``learning_rate``, ``poly_power``,
``num_warmup_steps``, ``start_warmup_step``, ``init_from_group0``) next to the new ones (``strategy``,
``steps_per_loop``, ``mixed_precision``, ``jit_compile``, ``recompute_activations``,
``gradient_accumulation_steps``). Every
``define_*`` function takes the runner's defaults and a ``FlagValues`` and is idempotent.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from absl import flags

from albert_tf.tasks.base import FineTuningOptions
from albert_tf.training.run_config import define_option_flags
from albert_tf.training.strategy import STRATEGIES

FLAGS = flags.FLAGS
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
ROOT_SCRIPTS = ("run_", "export_", "create_pretraining_data")


def define_strategy_flags(fv: flags.FlagValues = FLAGS) -> None:
    """--strategy, --tpu (alias --tpu_name), --use_tpu, --tpu_zone, --gcp_project, --num_tpu_cores, ..."""
    if "strategy" in fv:
        return
    flags.DEFINE_enum(
        "strategy",
        "one_device",
        list(STRATEGIES),
        "tf.distribute strategy: one_device (first GPU or the CPU), mirrored (all local GPUs, or "
        "--num_cpu_devices logical CPUs), multi_worker_mirrored (cluster from TF_CONFIG), tpu.",
        flag_values=fv,
    )
    flags.DEFINE_string("tpu", None,
                        "TPU name or grpc:// address for TPUClusterResolver (--strategy=tpu); 'local' on a TPU VM "
                        "(and Colab's TPU runtime).",
                        flag_values=fv)
    flags.DEFINE_alias("tpu_name", "tpu", flag_values=fv)
    flags.DEFINE_bool("use_tpu", False, "Official flag: same as --strategy=tpu.", flag_values=fv)
    flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU (TPUClusterResolver).", flag_values=fv)
    flags.DEFINE_string("gcp_project", None, "GCP project of the TPU (TPUClusterResolver).", flag_values=fv)
    flags.DEFINE_string("master", None, "Official flag, accepted for compatibility; use --tpu.", flag_values=fv)
    flags.DEFINE_integer("num_tpu_cores", 8, "Official flag, accepted for compatibility; the TPU system decides.",
                         flag_values=fv)
    flags.DEFINE_integer(
        "num_cpu_devices", 1, "With --strategy=mirrored and no GPU: split the CPU into this many logical devices.",
        flag_values=fv,
    )
    flags.DEFINE_enum("all_reduce_alg", None, ["ring", "nccl"], "multi_worker_mirrored collective implementation.",
                      flag_values=fv)


def define_training_loop_flags(
    fv: flags.FlagValues = FLAGS,
    *,
    steps_per_loop: int = 1000,
    save_checkpoints_steps: int = 5000,
    keep_checkpoint_max: int = 5,
    train_batch_size: int = 32,
    eval_batch_size: int = 8,
    max_eval_steps: int = 0,
) -> None:
    """--steps_per_loop (alias --iterations_per_loop), batches, accumulation, precision, XLA, checkpoints, seed."""
    if "steps_per_loop" in fv:
        return
    flags.DEFINE_integer("steps_per_loop", steps_per_loop,
                         "Training steps per host call (inner tf.function loop; TPU speed).", flag_values=fv)
    flags.DEFINE_alias("iterations_per_loop", "steps_per_loop", flag_values=fv)
    flags.DEFINE_integer("train_batch_size", train_batch_size,
                         "Global batch per micro-step (x gradient_accumulation_steps).", flag_values=fv)
    flags.DEFINE_integer("eval_batch_size", eval_batch_size, "Global evaluation batch.", flag_values=fv)
    flags.DEFINE_integer("predict_batch_size", 8, "Global prediction batch.", flag_values=fv)
    flags.DEFINE_integer("max_eval_steps", max_eval_steps, "Evaluation batches (0: the whole evaluation set once).",
                         flag_values=fv)
    flags.DEFINE_integer(
        "gradient_accumulation_steps",
        1,
        "Micro-batches of --train_batch_size per optimizer update: the effective batch is "
        "train_batch_size x gradient_accumulation_steps.",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "mixed_precision",
        "float32",
        list(PRECISIONS),
        "Keras dtype policy; mixed_float16 adds dynamic loss scaling. On a CPU, mixed_bfloat16 pays off only where "
        "it multiplies bfloat16 natively (avx512_bf16 or amx_bf16 in /proc/cpuinfo) and without --jit_compile; "
        "elsewhere keep float32 (README, 'bfloat16 on CPUs').",
        flag_values=fv,
    )
    flags.DEFINE_bool("jit_compile", False, "Compile the forward/backward pass with XLA.", flag_values=fv)
    flags.DEFINE_bool(
        "recompute_activations", False,
        "Keep only each transformer layer's input for the backward pass and recompute its activations there: "
        "far less training memory (long sequences, large models) for one more forward pass per step; the "
        "same gradients (benchmarks/activation_memory.py).", flag_values=fv)
    flags.DEFINE_integer("save_checkpoints_steps", save_checkpoints_steps,
                         "Save a checkpoint (and, with --do_eval, evaluate it) every this many steps.", flag_values=fv)
    flags.DEFINE_integer("keep_checkpoint_max", keep_checkpoint_max,
                         "How many recent checkpoints to keep (0 = keep all). Nothing else is ever deleted.",
                         flag_values=fv)
    flags.DEFINE_integer("seed", 12345, "Seed of model initialisation, dropout and input shuffling.", flag_values=fv)
    flags.DEFINE_bool("deterministic", False,
                      "tf.config.experimental.enable_op_determinism(): bitwise-reproducible runs.", flag_values=fv)


def define_optimizer_flags(
    fv: flags.FlagValues = FLAGS,
    *,
    optimizer: str = "lamb",
    learning_rate: float = 0.00176,
    num_train_steps: int = 125000,
    num_warmup_steps: int = 3125,
) -> None:
    """--optimizer, --learning_rate, --poly_power, --num_train_steps, --num_warmup_steps, --start_warmup_step."""
    if "optimizer" in fv:
        return
    flags.DEFINE_enum("optimizer", optimizer, ["adamw", "lamb"],
                      "Official AdamWeightDecay or LAMB (official optimization.py).", flag_values=fv)
    flags.DEFINE_float("learning_rate", learning_rate, "Initial (peak) learning rate.", flag_values=fv)
    flags.DEFINE_float("poly_power", 1.0, "Power of the polynomial decay to 0.", flag_values=fv)
    flags.DEFINE_integer("num_train_steps", num_train_steps, "Number of optimizer updates.", flag_values=fv)
    flags.DEFINE_integer("num_warmup_steps", num_warmup_steps,
                         "Linear warmup steps (the warmup replaces the decay).", flag_values=fv)
    flags.DEFINE_integer("start_warmup_step", 0,
                         "Step at which warmup starts (earlier steps: negative lr, official).", flag_values=fv)
    flags.DEFINE_float("weight_decay_rate", 0.01, "Weight decay inside the update (official 0.01).", flag_values=fv)
    flags.DEFINE_float("adam_epsilon", 1e-6, "Adam epsilon (official 1e-6).", flag_values=fv)
    flags.DEFINE_bool("adam_bias_correction", False,
                      "Divide Adam's m and v by 1 - beta^t as Adam does (not official: the official AdamW and LAMB "
                      "have no bias correction, which makes AdamW's first updates up to 5.6x larger). LAMB's trust "
                      "ratio cancels most of the difference.", flag_values=fv)
    flags.DEFINE_float("clip_norm", 1.0,
                       "Global-norm clipping of the global-batch gradient (official 1.0; 0 = off).", flag_values=fv)


def define_run_flags(fv: flags.FlagValues = FLAGS, *, do_train: bool = False) -> None:
    """--output_dir, --do_train/--do_eval/--do_predict, --init_checkpoint, --init_from_group0, --init_encoder_only."""
    if "output_dir" in fv:
        return
    flags.DEFINE_string("output_dir", None,
                        "Checkpoints, TensorBoard events, eval results and predictions go here (required).",
                        flag_values=fv)
    flags.DEFINE_bool("do_train", do_train, "Train.", flag_values=fv)
    flags.DEFINE_bool("do_eval", False,
                      "Evaluate every checkpoint (while training, else every ckpt-N in --output_dir) and keep the "
                      "best in <output_dir>/best/.", flag_values=fv)
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "Initialise the model weights from this checkpoint (prefix or directory; official TF1, Hugging Face or "
        "albert-tf), or a pretrained preset name (albert_base_v2, albert/albert-base-v2, ...: downloaded, verified "
        "and cached; it supplies --albert_config_file, the tokenizer and --do_lower_case when those are not given; "
        "python -m albert_tf.configs lists them). Step 0 and a fresh optimizer. Ignored when --output_dir "
        "already holds a checkpoint of this run "
        "(then everything is resumed).",
        flag_values=fv,
    )
    flags.DEFINE_bool("init_from_group0", False,
                      "Official flag: initialise every group of a num_hidden_groups > 1 model from group 0 of "
                      "--init_checkpoint (official run_pretraining.py).", flag_values=fv)
    flags.DEFINE_bool("init_encoder_only", False,
                      "Initialise only the encoder from --init_checkpoint; the task head (or the pretraining heads) "
                      "keeps its fresh initial values even where the checkpoint has one. For starting from another "
                      "task's fine-tuned model (the paper's MNLI-first recipe for RTE, MRPC and STS-B) or another "
                      "number of labels; the load report lists the head variables it skipped.", flag_values=fv)


def define_hub_module_flag(fv: flags.FlagValues = FLAGS) -> None:
    """The official fine-tuning flag ``--albert_hub_module_handle`` (official ``fine_tuning_utils.py``)."""
    if "albert_hub_module_handle" in fv:
        return
    flags.DEFINE_string(
        "albert_hub_module_handle",
        None,
        "Official flag: a TF-Hub ALBERT module directory (downloaded tfhub.dev/google/albert_* unpacked, local or "
        "gs://), or a registered handle (https://tfhub.dev/google/albert_base/3, ...: fetched and cached like "
        "--init_checkpoint's presets). Its variables/variables initialise the model like --init_checkpoint, and its "
        "assets supply --albert_config_file and --spm_model_file when those are not given.",
        flag_values=fv,
    )


def apply_hub_module(values: dict[str, Any], fetch: bool = True) -> dict[str, Any]:
    """Fold ``albert_hub_module_handle`` into ``init_checkpoint``, ``albert_config_file`` and ``spm_model_file``
    (explicit flags win); returns ``values`` without the handle. ``fetch=False`` reads nothing: the handle stands
    in ``init_checkpoint`` until the module is resolved (for the checks that run before a download)."""
    from albert_tf.checkpoints.hub_module import resolve_hub_module
    from albert_tf.training.run_config import RunError

    handle = values.pop("albert_hub_module_handle", None)
    if not handle:
        return values
    if values.get("init_checkpoint"):
        raise RunError("give --init_checkpoint or --albert_hub_module_handle, not both")
    if not fetch:
        values["init_checkpoint"] = handle
        return values
    from albert_tf.checkpoints.pretrained import is_preset_name, resolve_pretrained

    module = resolve_hub_module(resolve_pretrained(handle).directory if is_preset_name(handle) else handle)
    values["init_checkpoint"] = module.directory
    if not values.get("albert_config_file"):
        if module.albert_config_file is None:
            raise RunError(f"--albert_hub_module_handle {handle}: the module has no assets/albert_config.json; "
                           "pass --albert_config_file")
        values["albert_config_file"] = module.albert_config_file
    if values.get("spm_model_file") is None and not values.get("vocab_file"):
        if module.spm_model_file is not None:
            values["spm_model_file"] = module.spm_model_file
        elif module.vocab_file is not None:
            values["vocab_file"] = module.vocab_file
    return values


def define_fine_tuning_flags(
    fv: flags.FlagValues = FLAGS,
    *,
    max_seq_length: int,
    max_seq_length_help: str,
    **training_defaults: Any,
) -> None:
    """What every fine-tuning runner shares (GLUE, SQuAD, RACE): model config, tokenizer, lengths, feature cache,
    ``--predict_checkpoint``, ``--sharing``, ``--bucket_lengths``, ``--shuffle_train_examples``, ``--num_trials``,
    ``--trial_selection``, the TF-Hub module flag, and the training flags (official aliases ``--train_step`` /
    ``--warmup_step``) with the runner's defaults. A runner that says something of its own in a flag's help sets it
    afterwards (``cli.fine_tuning.FineTuningCommand.shared_help``)."""
    if "albert_config_file" in fv:
        return
    flags.DEFINE_string("albert_config_file", None,
                        "albert_config.json of the pretrained model, or a model config name (albert_base_v2, "
                        "albert_tiny, ...).", flag_values=fv)
    flags.DEFINE_string("spm_model_file", None,
                        "SentencePiece model (30k-clean.model). '' selects WordPiece (--vocab_file).", flag_values=fv)
    flags.DEFINE_string("vocab_file", None, "WordPiece vocab (Chinese models); unused with --spm_model_file.",
                        flag_values=fv)
    flags.DEFINE_string("cached_dir", None, "Where feature TFRecords are cached (default: --output_dir).",
                        flag_values=fv)
    flags.DEFINE_bool("do_lower_case", True, "Lower-case the text (preprocess_text).", flag_values=fv)
    flags.DEFINE_integer("max_seq_length", max_seq_length, max_seq_length_help, flag_values=fv)
    flags.DEFINE_string("predict_checkpoint", None,
                        "Predict/export from this fine-tuned checkpoint instead of output_dir's best (predict-only "
                        "mode).", flag_values=fv)
    define_option_flags(FineTuningOptions, fv)
    flags.DEFINE_integer(
        "num_trials", 1,
        "Fine-tune this many times with seeds --seed, --seed+1, ... (each a whole run in <output_dir>/trial_<k>, "
        "needs --do_train --do_eval); run_summary.json reports every trial's dev metrics, their median, mean and "
        "spread, and --export_dir exports the trial of --trial_selection.", flag_values=fv)
    flags.DEFINE_enum("trial_selection", "median", ["median", "best"],
                      "With --num_trials: export the trial whose dev score is the median (the lower middle one for "
                      "an even count) or the best (labelled as such in run_summary.json).", flag_values=fv)
    define_hub_module_flag(fv)
    define_all_training_flags(fv, **training_defaults)
    flags.DEFINE_alias("train_step", "num_train_steps", flag_values=fv)
    flags.DEFINE_alias("warmup_step", "num_warmup_steps", flag_values=fv)


def fine_tuning_values(fv: flags.FlagValues = FLAGS, fetch: bool = True) -> dict[str, Any]:
    """The flag values of a fine-tuning runner: a pretrained preset (``--init_checkpoint=albert_base_v2``) and the
    hub module folded in, ``--spm_model_file=''`` as None. ``fetch=False``: neither is fetched nor read yet."""
    values = apply_hub_module(preset_values(fv, fetch), fetch)
    values["spm_model_file"] = values.get("spm_model_file") or None
    return values


def preset_values(fv: flags.FlagValues = FLAGS, fetch: bool = True) -> dict[str, Any]:
    """:func:`option_values` with a pretrained preset named by ``--init_checkpoint`` fetched, and the config,
    tokenizer and ``--do_lower_case`` it brings filled in where the command line does not set them.
    ``fetch=False`` only checks that the name is a preset or a path (:func:`checked_config`'s first pass)."""
    from albert_tf.checkpoints.pretrained import check_bare_name, fill_from_preset

    values = option_values(fv)
    check_bare_name(values.get("init_checkpoint"))
    if not fetch:
        return values
    given = {name for name in values if fv[name].present}
    return fill_from_preset(values, given, set(values))


def checked_config(
    build: Callable[[bool], Any],
    check_inputs: Callable[[Any, Any], Any],
    schedule_from_data: bool = False,
) -> Any:
    """A runner's ExperimentConfig, checked in the order that makes a mistake cheapest to learn of.

    ``build(fetch)`` makes the config from the flags (``fetch``: fetch and fill in the pretrained preset that
    ``--init_checkpoint`` may name). First the flags (``run_config.validate_options``), then the task's input
    files (``check_inputs(task_options, run_options)``: every GLUE row, SQuAD question or RACE file the run reads;
    the pretraining record globs), both without TensorFlow and before the preset's download, which can take
    minutes; the checks that need the preset's files (config, tokenizer, the records' ids against the vocabulary)
    follow once it is fetched, in the task's ``from_options``.
    ``schedule_from_data``: as in ``validate_options``.
    """
    from albert_tf.training.run_config import validate_options

    config = build(False)
    validate_options(config.trainer, config.run, schedule_from_data)
    check_inputs(config.task, config.run)
    return build(True)


def apply_preset_flag(fv: flags.FlagValues, name: str) -> Any:
    """Where flag ``name`` names a pretrained preset, fetch it, point the flag at its checkpoint and fill the
    config, tokenizer and ``--do_lower_case`` flags that ``fv`` has and the command line does not set; returns the
    :class:`~albert_tf.checkpoints.presets.Pretrained` (None for a path). For commands that read flags directly
    (``export_savedmodel``, ``albert_convert_checkpoint``)."""
    from albert_tf.checkpoints.pretrained import (
        FILLED,
        check_bare_name,
        is_preset_name,
        resolve_pretrained,
        supplied_options,
    )

    if name not in fv:
        return None
    check_bare_name(fv[name].value, f"--{name}")
    if not is_preset_name(fv[name].value):
        return None
    found = resolve_pretrained(fv[name].value)
    fv[name].value = found.checkpoint
    fields = {key for key in FILLED if key in fv}
    for key, value in supplied_options(found, {key for key in fields if fv[key].present}, fields).items():
        fv[key].value = value
    return found


def define_all_training_flags(fv: flags.FlagValues = FLAGS, **defaults: Any) -> None:
    """Strategy, loop, optimizer and run flags (defaults forwarded by name)."""
    loop = ("steps_per_loop", "save_checkpoints_steps", "keep_checkpoint_max", "train_batch_size", "eval_batch_size",
            "max_eval_steps")
    optimizer = ("optimizer", "learning_rate", "num_train_steps", "num_warmup_steps")
    define_strategy_flags(fv)
    define_training_loop_flags(fv, **{k: defaults[k] for k in loop if k in defaults})
    define_optimizer_flags(fv, **{k: defaults[k] for k in optimizer if k in defaults})
    define_run_flags(fv, do_train=defaults.get("do_train", False))


def is_albert_module(module: str) -> bool:
    """Whether absl's defining-module name ``module`` is albert-tf's (a package module, a root script, or the
    main module run with ``python -m`` / as a script, which absl names by its path)."""
    name = os.path.basename(module)
    return "albert_tf" in module or module == sys.argv[0] or name.startswith(ROOT_SCRIPTS)


def option_values(fv: flags.FlagValues = FLAGS) -> dict[str, Any]:
    """``{flag name: value}`` of every flag an albert-tf module defined on ``fv`` (absl's own flags left out)."""
    ours = set()
    for module, module_flags in fv.flags_by_module_dict().items():
        if is_albert_module(module):
            ours.update(f.name for f in module_flags)
    return {name: fv[name].value for name in ours}


def strategy_name_from_flags(fv: flags.FlagValues = FLAGS) -> str:
    return "tpu" if fv.use_tpu else fv.strategy


def expected_errors(*task_errors: type[BaseException]) -> tuple[type[BaseException], ...]:
    """The failures a user can cause (bad flags, files, configs, checkpoints, tokenizers) plus a task's own data
    errors: one line on stderr, exit 2, no traceback (``--verbose`` shows it)."""
    from albert_tf.checkpoints import CheckpointError
    from albert_tf.config import ConfigError
    from albert_tf.tokenization import TokenizerError
    from albert_tf.training.run_config import RunError

    return (RunError, ConfigError, *task_errors, CheckpointError, TokenizerError)
