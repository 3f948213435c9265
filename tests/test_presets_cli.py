"""A pretrained preset name wherever a checkpoint path goes: the runners (no config or vocabulary flags), the
converter, the encoder export, the models' ``from_preset``, and the README's engineer command exactly as written.
A loopback server plays storage.googleapis.com; the test counts its requests."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import shared_path
from tests.preset_server import PresetServer, cache_env, presets_file, sha256, tarball, write_release

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = pathlib.Path(sys.executable).parent
ENCODER_LINE = re.compile(r"encoder weights: loaded (\d+), missing (\d+), unused (\d+), shape mismatches (\d+)")


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A tiny model with the official 30k vocabulary, published as ``albert_tiny.tar.gz`` in Google's layout."""
    folder = write_release(tmp_path_factory.mktemp("release") / "albert_tiny", shared_path("spm", "30k-clean.model"))
    return {"folder": folder, "archive": tarball(folder, "albert_tiny")}


@pytest.fixture
def server(release):
    with PresetServer() as s:
        s.files["albert_tiny.tar.gz"] = release["archive"]
        yield s


def run(args: list[str], env: dict, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    env = {**env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "PYTHONPATH": str(ROOT)}
    return subprocess.run(args, env=env, cwd=str(cwd), capture_output=True, text=True, timeout=900)


def encoder_counts(stderr: str) -> tuple[int, ...]:
    found = ENCODER_LINE.findall(stderr)
    assert found, stderr[-3000:]
    return tuple(int(x) for x in found[-1])


@pytest.mark.slow
def test_runner_converter_and_export_take_a_preset_name(tmp_path, server, release):
    entry = {"url": server.url("albert_tiny.tar.gz"), "sha256": sha256(release["archive"])}
    env = cache_env(tmp_path, presets_file(tmp_path / "presets.json", {"tiny_release": entry}))
    glue = shared_path("glue")
    common = [f"--data_dir={glue}", "--task_name=MRPC", "--init_checkpoint=tiny_release", "--do_train",
              "--train_step=4", "--max_seq_length=32", "--train_batch_size=8", "--save_checkpoints_steps=4"]
    first = run(["run_classifier", *common, "--output_dir=out1"], env, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    loaded, missing, unused, mismatched = encoder_counts(first.stderr)
    assert loaded > 0 and (missing, unused, mismatched) == (0, 0, 0)
    assert server.gets("albert_tiny.tar.gz") == 1
    assert "RANDOM initialisation" not in first.stderr
    second = run(["run_classifier", *common, "--output_dir=out2"], env, tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert server.gets("albert_tiny.tar.gz") == 1  # the cache answered
    offline = {**env, "ALBERT_TF_OFFLINE": "1"}
    third = run(["run_classifier", *common, "--output_dir=out3"], offline, tmp_path)
    assert third.returncode == 0, third.stderr[-3000:]
    assert encoder_counts(third.stderr)[1:] == (0, 0, 0)

    convert = run(["albert_convert_checkpoint", "convert", "--input=tiny_release", "--output=hf",
                   "--output_format=huggingface"], offline, tmp_path)
    assert convert.returncode == 0, convert.stderr[-3000:]
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == (release["folder"] / "30k-clean.model").read_bytes()
    export = run(["export_savedmodel", "--task=encoder", "--init_checkpoint=tiny_release", "--max_seq_length=32",
                  "--export_dir=hub"], offline, tmp_path)
    assert export.returncode == 0, export.stderr[-3000:]
    assert (tmp_path / "hub" / "encoder" / "saved_model.pb").exists()
    unknown = run(["run_classifier", *common[:2], "--init_checkpoint=albert_huge_v9", "--output_dir=out4",
                   "--do_train"], offline, tmp_path)
    assert unknown.returncode != 0
    assert "Traceback" not in unknown.stderr
    assert "--init_checkpoint albert_huge_v9: no such file or folder, and not a pretrained preset name" in \
        unknown.stderr
    assert server.gets("albert_tiny.tar.gz") == 1


def test_models_from_preset_load_the_released_weights(tmp_path, monkeypatch, server, release):
    import tensorflow as tf

    from albert_tf import AlbertClassifier, AlbertEncoder

    entry = {"url": server.url("albert_tiny.tar.gz"), "sha256": sha256(release["archive"])}
    monkeypatch.setenv("ALBERT_TF_PRESETS", presets_file(tmp_path / "presets.json", {"tiny_release": entry}))
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path / "cache"))
    reader = tf.train.load_checkpoint(str(release["folder"] / "model.ckpt-best"))
    expected = reader.get_tensor("bert/embeddings/word_embeddings")

    def word_embeddings(model) -> np.ndarray:
        return next(v.numpy() for v in model.weights if "word_embeddings" in v.path)

    encoder = AlbertEncoder.from_preset("tiny_release")
    np.testing.assert_array_equal(word_embeddings(encoder), expected)
    classifier = AlbertClassifier.from_preset("tiny_release", num_labels=3)
    np.testing.assert_array_equal(word_embeddings(classifier), expected)
    assert server.gets("albert_tiny.tar.gz") == 1
    with pytest.raises(Exception, match="unknown preset 'tiny_release'"):
        AlbertEncoder.from_preset("tiny_release", load_weights=False)  # no config preset of that name
    random = AlbertEncoder.from_preset("albert_tiny")  # a config preset: random weights, nothing fetched
    assert word_embeddings(random).shape == (1000, 16) and server.gets("albert_tiny.tar.gz") == 1


def readme_engineer_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("**Engineer, fine-tuning a released model"):]
    block = section[section.index("```bash\n") + len("```bash\n"):]
    return block[: block.index("```")].strip()


@pytest.mark.slow
def test_readme_engineer_command_runs_as_written(tmp_path, server, release):
    """The README's first engineer command, verbatim, in an empty directory that holds only the GLUE data it names
    (``glue/MRPC``); ``albert_base_v2`` is redirected by ``$ALBERT_TF_PRESETS`` to the tiny release (a mirror)."""
    command = readme_engineer_command()
    assert "--init_checkpoint=albert_base_v2" in command
    assert "--albert_config_file" not in command and "--spm_model_file" not in command
    work = tmp_path / "work"
    (work / "glue").mkdir(parents=True)
    (work / "glue" / "MRPC").symlink_to(shared_path("glue", "MRPC"), target_is_directory=True)
    entry = {"url": server.url("albert_tiny.tar.gz"), "sha256": sha256(release["archive"])}
    env = cache_env(tmp_path, presets_file(tmp_path / "presets.json", {"albert_base_v2": entry}))
    proc = run(["bash", "-c", command], env, work)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert encoder_counts(proc.stderr)[1:] == (0, 0, 0)
    assert server.gets("albert_tiny.tar.gz") == 1
    exports = sorted((work / "out" / "mrpc" / "export").iterdir())
    assert exports and (exports[-1] / "saved_model.pb").exists()
    assert (work / "out" / "mrpc" / "eval_results.json").exists() and (work / "out" / "mrpc" / "MRPC.tsv").exists()
