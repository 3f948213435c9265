"""Flags reach their point of use in one hop: every runner flag is exactly one field of the ExperimentConfig."""

from __future__ import annotations

import pytest
from absl import flags

from albert_tf.cli import flags as shared
from albert_tf.training.run_config import ExperimentConfig, RunError


def _parsed(define, argv):
    fv = flags.FlagValues()
    define(fv)
    fv(["prog", *argv])
    return fv


def test_run_classifier_flags_map_onto_one_field_each():
    from albert_tf.cli.run_classifier import config_from_flags, define_flags

    fv = _parsed(define_flags, ["--max_seq_length=128", "--train_step=7", "--warmup_step=2", "--use_tpu",
                                "--tpu_name=grpc://1.2.3.4:8470", "--init_checkpoint=pretrained/ck",
                                "--init_from_group0", "--init_encoder_only"])
    config = config_from_flags(fv)
    assert config.task.max_seq_length == 128
    assert (config.trainer.num_train_steps, config.trainer.num_warmup_steps) == (7, 2)
    assert (config.trainer.strategy, config.trainer.tpu) == ("tpu", "grpc://1.2.3.4:8470")
    assert (config.run.init_checkpoint, config.run.init_from_group0) == ("pretrained/ck", True)
    assert config.run.init_encoder_only
    assert config.trainer.optimizer == "adamw" and config.trainer.keep_checkpoint_max == 0  # official defaults


def test_run_pretraining_flags_map_onto_one_field_each():
    from albert_tf.cli.run_pretraining import define_flags
    from albert_tf.tasks import pretraining

    fv = _parsed(define_flags, ["--max_seq_length=64", "--iterations_per_loop=9", "--input_file=a,b"])
    config = pretraining.make_config(**shared.option_values(fv))
    assert (config.task.max_seq_length, config.task.input_file) == (64, "a,b")
    assert config.trainer.steps_per_loop == 9
    assert (config.trainer.optimizer, config.trainer.learning_rate, config.trainer.train_batch_size) == (
        "lamb", 0.00176, 4096)
    assert config.run.do_train and config.trainer.max_eval_steps == 100


def test_an_option_nothing_reads_is_refused():
    from albert_tf.tasks.glue import GlueOptions

    with pytest.raises(RunError, match="unknown option 'max_seq_lenght'"):
        ExperimentConfig.from_flat(GlueOptions, {"max_seq_lenght": 128})


def test_validate_options_leaves_the_counts_the_data_gives_to_the_task():
    """run_squad's official defaults (--num_train_steps=0, --num_warmup_steps=-1: counts from the training data) pass
    the check a runner makes before TensorFlow only when it says so; every other mistake is still refused."""
    from albert_tf.training.run_config import RunOptions, TrainerOptions, validate_options

    run = RunOptions(output_dir="out", do_train=True)
    from_data = TrainerOptions(num_train_steps=0, num_warmup_steps=-1)
    validate_options(from_data, run, schedule_from_data=True)
    with pytest.raises(RunError, match="--num_warmup_steps=-1 is out of range"):
        validate_options(from_data, run)
    with pytest.raises(RunError, match="--num_train_steps must be >= 1, got 0"):
        validate_options(TrainerOptions(num_train_steps=0), run)
    with pytest.raises(RunError, match="--learning_rate=0 is out of range"):
        validate_options(TrainerOptions(num_train_steps=0, learning_rate=0), run, schedule_from_data=True)
    with pytest.raises(RunError, match="--save_checkpoints_steps must be >= 1"):
        validate_options(TrainerOptions(num_train_steps=0, save_checkpoints_steps=0), run, schedule_from_data=True)


@pytest.mark.parametrize(("command", "options"), [
    ("run_pretraining", "albert_tf.tasks.pretraining.options:PretrainingOptions"),
    ("run_classifier", "albert_tf.tasks.glue.options:GlueOptions"),
    ("run_squad", "albert_tf.tasks.squad.options:SquadOptions"),
    ("run_race", "albert_tf.tasks.race.options:RaceOptions"),
    ("run_tagging", "albert_tf.tasks.tagging.options:TaggingOptions"),
])
def test_every_runner_flag_is_one_option_field(command, options):
    """A runner's flags are made from the fields of its options, ``TrainerOptions`` and ``RunOptions`` (their
    default, help and choices written once, ``run_config.option``); only the official flags folded into another
    field are defined by hand."""
    import dataclasses
    import importlib

    from absl import flags

    from albert_tf.training.run_config import RunOptions, TrainerOptions

    module, name = options.split(":")
    fields = {f.name: f for cls in (getattr(importlib.import_module(module), name), TrainerOptions, RunOptions)
              for f in reversed(dataclasses.fields(cls))}
    fv = flags.FlagValues()
    importlib.import_module(f"albert_tf.cli.{command}").define_flags(fv)
    folded = {"use_tpu", "master", "num_tpu_cores", "albert_hub_module_handle"}
    aliases = {alias for f in fields.values() for alias in f.metadata.get("aliases", ())}
    for flag_name, flag in fv._flags().items():
        if flag_name in aliases or flag_name in folded:  # an official alias, or folded into another field
            continue
        field = fields.get(flag_name)
        assert field is not None and "help" in field.metadata, f"--{flag_name} of {command} is not an option field"
        if field.metadata["choices"]:
            assert sorted(flag.parser.enum_values) == sorted(field.metadata["choices"]), flag_name
