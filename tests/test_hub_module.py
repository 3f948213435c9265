"""TF-Hub ALBERT modules as checkpoints: ``--albert_hub_module_handle`` and ``--init_checkpoint=<module dir>``.

The module directory is built the way the official ``export_to_tfhub.py`` lays it out (``tfhub_module.pb``,
``variables/variables`` with the official names, ``assets/`` with the SentencePiece model and
``albert_config.json``); no real module can be downloaded here. The SentencePiece model is conftest's
``spm_model`` (30k-clean where ``../shared`` is present, else the sample-corpus substitute), the vocab size the
model's own; the fine-tuning run uses the built-in weather task (SST-2 layout).
"""

from __future__ import annotations

import os
import shutil

import commands
import numpy as np
import pytest
from conftest import ROOT

from albert_tf.checkpoints import CheckpointError, restore_pretrained
from albert_tf.checkpoints.hub_module import resolve_hub_module
from albert_tf.checkpoints.official import save_official_checkpoint
from albert_tf.cli.flags import apply_hub_module
from albert_tf.config import AlbertConfig
from albert_tf.modeling import AlbertEncoder, AlbertPretrainer
from albert_tf.tokenization import FullTokenizer
from albert_tf.training.run_config import RunError


@pytest.fixture(scope="module")
def config(spm_model):
    vocab_size = FullTokenizer(spm_model_file=spm_model).vocab_size  # 30000 for 30k-clean
    return AlbertConfig.from_name("albert_tiny").replace(vocab_size=vocab_size)


def _word_embeddings(model) -> np.ndarray:
    (var,) = [v for v in model.weights if "word_embeddings" in v.path]
    return np.asarray(var.numpy())


@pytest.fixture(scope="module")
def hub_dir(tmp_path_factory, config, spm_model):
    """A module directory with a pretrained tiny model's official-name weights and its assets (built once; the tests
    only read it)."""
    model = AlbertPretrainer(config)
    root = tmp_path_factory.mktemp("hub") / "albert_tiny_hub"
    (root / "variables").mkdir(parents=True)
    (root / "assets").mkdir()
    (root / "tfhub_module.pb").write_bytes(b"")
    save_official_checkpoint(model, str(root / "variables" / "variables"))
    config.to_json_file(str(root / "assets" / "albert_config.json"))
    shutil.copy(spm_model, root / "assets" / spm_model.name)
    return root, _word_embeddings(model)


def test_resolve_module_assets(hub_dir, spm_model):
    root, _ = hub_dir
    module = resolve_hub_module(str(root) + "/")
    assert module.checkpoint == os.path.join(str(root), "variables", "variables")
    assert module.spm_model_file == os.path.join(str(root), "assets", spm_model.name)
    assert module.albert_config_file == os.path.join(str(root), "assets", "albert_config.json")
    assert module.vocab_file is None


def test_module_dir_loads_as_official_checkpoint(hub_dir, config):
    root, expected = hub_dir
    encoder = AlbertEncoder(config)
    report = restore_pretrained(encoder, str(root))
    assert not report.missing and not report.shape_mismatches
    np.testing.assert_array_equal(_word_embeddings(encoder), expected)


def test_apply_flag_fills_config_and_vocab_explicit_flags_win(hub_dir, tmp_path, spm_model):
    root, _ = hub_dir
    values = apply_hub_module({"albert_hub_module_handle": str(root), "init_checkpoint": None,
                               "albert_config_file": None, "spm_model_file": None, "vocab_file": None})
    assert "albert_hub_module_handle" not in values
    assert values["init_checkpoint"] == str(root)
    assert values["albert_config_file"].endswith("assets/albert_config.json")
    assert values["spm_model_file"].endswith(f"assets/{spm_model.name}")
    mine = apply_hub_module({"albert_hub_module_handle": str(root), "albert_config_file": "albert_tiny",
                             "spm_model_file": "mine.model"})
    assert (mine["albert_config_file"], mine["spm_model_file"]) == ("albert_tiny", "mine.model")
    with pytest.raises(RunError, match="not both"):
        apply_hub_module({"albert_hub_module_handle": str(root), "init_checkpoint": "x"})


@pytest.mark.parametrize("handle, message", [
    ("https://tfhub.dev/google/albert_base/3", "tf-hub-format=compressed"),
    ("{tmp}/missing", "no such directory"),
    ("{tmp}", "not a TF-Hub module directory"),
])
def test_bad_handles_one_line(tmp_path, handle, message):
    with pytest.raises(CheckpointError, match=message):
        resolve_hub_module(handle.format(tmp=tmp_path))


@pytest.mark.heavy
def test_run_classifier_with_hub_module(hub_dir, tmp_path, config):
    """One AdamW step at lr 1e-5 from the module: the backbone is the module's (not a random init)."""
    from albert_tf.data.sample_corpus import write_weather_task

    root, expected = hub_dir
    write_weather_task(str(tmp_path / "glue"), per_class=40)
    out = tmp_path / "sst2"
    proc = commands.run(
        ["-m", "albert_tf.cli.run_classifier", f"--data_dir={tmp_path / 'glue'}",
         "--task_name=SST-2", f"--output_dir={out}", f"--albert_hub_module_handle={root}", "--max_seq_length=32",
         "--do_train", "--train_step=1", "--save_checkpoints_steps=1", "--train_batch_size=4",
         "--learning_rate=1e-5"],
        cwd=str(tmp_path), timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert "RANDOM initialisation" not in output
    assert "variables/variables: loaded" in output, output[-3000:]
    trained = AlbertEncoder(config)
    restore_pretrained(trained, str(out / "ckpt-1"))
    # The first AdamW step without bias correction moves an element by at most lr * 0.1 / sqrt(0.001) = 3.2 lr;
    # a random init would differ by ~0.02.
    assert np.abs(_word_embeddings(trained) - expected).max() < 4e-5
