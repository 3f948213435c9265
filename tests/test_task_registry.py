"""Tasks are declared by their own packages and found one way: the built-in ones from a table, another package's by
one entry-point line. A task written outside the package (``tests/toy_task.py``), registered by that line alone, is
exported by ``export_savedmodel --task=<its name>`` with its head loaded from an official-layout checkpoint, although
nothing in ``albert_tf`` names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import commands
import numpy as np
import pytest
from conftest import ROOT

TINY = {"vocab_size": 300, "embedding_size": 8, "hidden_size": 16, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32,
        "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def test_the_built_in_tasks_declare_themselves():
    from albert_tf.tasks.registry import load_tasks, task_heads

    names = [task.name for task in load_tasks()]
    assert {"classifier", "squad", "race", "tagging"} <= set(names)
    assert [t.name for t in load_tasks() if t.default] == ["classifier"]
    assert {"classifier", "race", "squad_v1", "squad_v2", "tagging"} <= {h.name for h in task_heads()}


def test_tasks_and_their_heads_are_read_without_tensorflow(tmp_path):
    """The tasks' declarations and their heads' checkpoint names are plain data: a conversion from files learns every
    head without importing a model (or TensorFlow)."""
    code = ("import sys\n"
            "from albert_tf.tasks.registry import load_tasks, task_heads\n"
            "tasks = [t.name for t in load_tasks()]\n"
            "names = [h.name for h in task_heads()]\n"
            "print(tasks, names, 'tensorflow' in sys.modules, 'albert_tf.tasks.glue.model' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-2000:]
    last = result.stdout.strip().splitlines()[-1]
    assert last == ("['classifier', 'squad', 'race', 'tagging'] ['classifier', 'squad_v1', 'squad_v2', 'race', "
                    "'tagging'] False False"), last


@pytest.mark.parametrize("module", ["albert_tf.tasks.glue.model:AlbertClassifier",
                                    "albert_tf.tasks.squad.model:AlbertSquad",
                                    "albert_tf.tasks.race.model:AlbertMultipleChoice",
                                    "albert_tf.tasks.tagging.model:AlbertTagger"])
def test_each_model_lists_the_heads_its_task_declares(module):
    """The model class and the task declaration name the same head objects, so a model's checkpoint names and a
    conversion's are one fact."""
    import importlib

    from albert_tf.tasks.registry import load_tasks

    path, name = module.split(":")
    model_class = getattr(importlib.import_module(path), name)
    declared = [task for task in load_tasks() if any(head in task.heads for head in model_class.task_heads)]
    assert [task.heads for task in declared] == [model_class.task_heads]


def _register_with_one_line(tmp_path) -> dict[str, str]:
    """The toy task's one registration line, as an installed distribution's metadata holds it; returns the
    environment in which Python finds that distribution and the module."""
    dist = tmp_path / "site" / "toy_tagger-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-tagger\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[albert_tf.tasks]\ntoy_tagger = toy_task\n")
    path = os.pathsep.join([str(tmp_path / "site"), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "2"}


@pytest.mark.heavy
def test_a_task_declared_outside_the_package_exports(tmp_path, spm_model):
    import keras
    import toy_task

    from albert_tf.checkpoints.official import save_official_checkpoint
    from albert_tf.config import AlbertConfig
    from albert_tf.tokenization import FullTokenizer

    vocab = FullTokenizer(spm_model_file=str(spm_model)).vocab_size
    config_path = tmp_path / "albert_config.json"
    config_path.write_text(json.dumps({**TINY, "vocab_size": vocab}))
    config = AlbertConfig.from_json_file(str(config_path))
    keras.utils.set_random_seed(3)
    task = toy_task.ToyTaggerTask(config, num_tags=5)
    model = task.build_model()
    prefix = save_official_checkpoint(model, str(tmp_path / "ckpt" / "model.ckpt-7"), global_step=7)

    ids = np.array([[2, 10, 11, 12, 3, 0]], np.int32)
    mask = (ids > 0).astype(np.int32)
    expected = model({"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}).numpy()

    # A fresh process of the unchanged command: the task is found by its entry-point line alone.
    export_dir = tmp_path / "export"
    env = _register_with_one_line(tmp_path)
    result = subprocess.run(
        [sys.executable, str(ROOT / "export_savedmodel.py"), "--task=toy_tagger", "--num_tags=5",
         f"--albert_config_file={config_path}",
         f"--spm_model_file={spm_model}", f"--checkpoint={prefix}", f"--export_dir={export_dir}"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    exported = [line.split(" ", 1)[1] for line in result.stdout.splitlines() if line.startswith("exported ")]
    assert len(exported) == 1 and os.path.dirname(exported[0]) == str(export_dir), result.stdout

    import tensorflow as tf

    loaded = tf.saved_model.load(exported[0])
    served = loaded.signatures["serve_token_ids"](
        input_ids=tf.constant(ids), input_mask=tf.constant(mask), segment_ids=tf.zeros_like(ids))
    # The head's weights came from the checkpoint through the declared names (random ones would differ).
    np.testing.assert_allclose(served["logits"].numpy(), expected, atol=1e-5)
    info = json.loads((export_dir / os.path.basename(exported[0]) / "assets.extra" / "albert_export.json").read_text())
    assert info["task"] == "toy_tagger" and info["checkpoint"] == prefix


@pytest.mark.heavy
def test_a_flag_of_another_task_is_refused(tmp_path):
    """A task's own flag given with another --task is an error, not silently ignored."""
    result = commands.run(
        [str(ROOT / "export_savedmodel.py"), "--task=race", "--task_name=MRPC",
         "--albert_config_file=x", "--spm_model_file=y", "--checkpoint=z", f"--export_dir={tmp_path / 'e'}"],
        timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 2
    assert "--task_name is a flag of --task=classifier, not of --task=race" in result.stderr


@pytest.mark.parametrize("name", ["classifier", "race", "squad"])
def test_each_declared_task_lists_its_help(name):
    from albert_tf.tasks.registry import get_task, load_tasks

    load_tasks()
    task = get_task(name)
    assert f"export_savedmodel --task={name}" in task.description


def test_a_new_option_field_is_one_flag_in_help_and_in_the_config():
    """A task's new setting is one dataclass field: declared with ``option``, it is a flag with its help, type,
    choices and alias (``define_option_flags``, what every runner and ``export_savedmodel`` use), and the flag's
    value lands in that field of the config."""
    import dataclasses

    import toy_task
    from absl import flags

    from albert_tf.training.run_config import ExperimentConfig, define_option_flags, option

    @dataclasses.dataclass
    class Options(toy_task.ToyOptions):
        tag_scheme: str = option("iob2", "How the training file's tags are written.", choices=("iob1", "iob2", "bioes"),
                                 aliases=("scheme",))
        label_all_pieces: bool = option(False, "Label every piece of a word, not only its first.")
        max_words: int | None = option(None, "Words read per sentence (default: all).")

    fv = flags.FlagValues()
    define_option_flags(Options, fv)
    fv(["prog", "--scheme=bioes", "--label_all_pieces", "--num_tags=5"])
    text = fv.get_help()
    assert "--tag_scheme: <iob1|iob2|bioes>: How the training file's tags are written." in text
    assert "--[no]label_all_pieces: Label every piece of a word, not only its first." in text
    assert fv["max_words"].value is None and fv["tag_scheme"].default == "iob2"
    with pytest.raises(flags.IllegalFlagValueError):
        fv["tag_scheme"].parse("bio")
    assert toy_task.options_from_flags(fv, Options) == Options(num_tags=5, tag_scheme="bioes", label_all_pieces=True)
    config = ExperimentConfig.from_flat(Options, {f.name: fv[f.name].value for f in dataclasses.fields(Options)})
    assert (config.task.tag_scheme, config.task.label_all_pieces, config.task.num_tags) == ("bioes", True, 5)
