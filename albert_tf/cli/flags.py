"""absl flags shared by every runner (run_pretraining, run_classifier, run_squad, run_race), defined once.

Each flag is one field of ``albert_tf.training.run_config`` (``TrainerOptions`` / ``RunOptions``) or of the task's
options, declared there with its default, help, choices and aliases and made into a flag by
``define_option_flags``, so :func:`option_values` + ``ExperimentConfig.from_flat`` map flags to the run's
configuration in one hop. What is defined by hand here has no field of its own: the official ``--use_tpu``,
``--master`` and ``--num_tpu_cores`` (folded into ``strategy`` / ``tpu``), the tokenizer and config files of the
fine-tuning runners, and ``--albert_hub_module_handle`` (folded into ``init_checkpoint``). Every ``define_*``
function takes a ``FlagValues`` and is idempotent.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from absl import flags

from albert_tf.training.run_config import RunOptions, TrainerOptions, define_option_flags

FLAGS = flags.FLAGS
ROOT_SCRIPTS = ("run_", "export_", "create_pretraining_data")


def define_official_tpu_flags(fv: flags.FlagValues = FLAGS) -> None:
    """The official TPU flags that are not fields of their own: ``--use_tpu``, ``--master`` and ``--num_tpu_cores``
    (``ExperimentConfig.from_flat`` folds them into ``strategy`` and ``tpu``)."""
    if "use_tpu" in fv:
        return
    flags.DEFINE_bool("use_tpu", False, "Official flag: same as --strategy=tpu.", flag_values=fv)
    flags.DEFINE_string("master", None, "Official flag, accepted for compatibility; use --tpu.", flag_values=fv)
    flags.DEFINE_integer("num_tpu_cores", 8, "Official flag, accepted for compatibility; the TPU system decides.",
                         flag_values=fv)


def define_training_flags(fv: flags.FlagValues = FLAGS, defaults: Mapping[str, Any] | None = None,
                          run_flags: Sequence[str] | None = None, help: Mapping[str, str] | None = None,  # noqa: A002
                          ) -> None:
    """The trainer's flags (every field of ``TrainerOptions``, official aliases included), the official TPU flags
    and the run flags (the fields of ``RunOptions``, or only ``run_flags``), with the runner's ``defaults`` and
    ``help`` texts by name."""
    define_option_flags(TrainerOptions, fv, defaults=defaults, help=help)
    define_official_tpu_flags(fv)
    define_option_flags(RunOptions, fv, names=run_flags, defaults=defaults, help=help)


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
    ``--init_checkpoint`` may name). First the flags (``run_config.validate_options``; the output folders,
    ``check_output_folders``), then the task's input
    files (``check_inputs(task_options, run_options)``: every GLUE row, SQuAD question or RACE file the run reads;
    the pretraining record globs), both without TensorFlow and before the preset's download, which can take
    minutes; the checks that need the preset's files (config, tokenizer, the records' ids against the vocabulary)
    follow once it is fetched, in the task's ``from_options``.
    ``schedule_from_data``: as in ``validate_options``.
    """
    from albert_tf.training.run_config import check_output_folders, validate_options

    config = build(False)
    validate_options(config.trainer, config.run, schedule_from_data)
    check_output_folders(config.run, config.task)
    check_inputs(config.task, config.run)
    return build(True)


def apply_preset_flag(fv: flags.FlagValues, name: str) -> Any:
    """Where flag ``name`` names a pretrained preset (or a keras-hub preset), fetch it, point the flag at its
    checkpoint and fill the config, tokenizer and ``--do_lower_case`` flags that ``fv`` has and the command line
    does not set; returns the :class:`~albert_tf.checkpoints.presets.Pretrained` (None for a path). For commands
    that read flags directly (``export_savedmodel``, ``albert_convert_checkpoint``)."""
    from albert_tf.checkpoints.pretrained import FILLED, check_bare_name, resolve_any, supplied_options

    if name not in fv:
        return None
    check_bare_name(fv[name].value, f"--{name}")
    found = resolve_any(fv[name].value)
    if found is None:
        return None
    fv[name].value = found.checkpoint
    fields = {key for key in FILLED if key in fv}
    for key, value in supplied_options(found, {key for key in fields if fv[key].present}, fields).items():
        fv[key].value = value
    return found


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
