"""The converter CLI: format round trips, refusals with one-line reasons, the printed report."""

from __future__ import annotations

import functools
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from test_checkpoints_official import TINY, random_official_arrays, write_with_tf1_saver

from albert_tf.checkpoints import convert as convert_module
from albert_tf.checkpoints.official import list_checkpoint, read_official_checkpoint
from albert_tf.checkpoints.report import CheckpointError, ConfigMismatchError, NotAlbertCheckpointError
from albert_tf.config import AlbertConfig
from albert_tf.tasks.registry import task_heads

ROOT = pathlib.Path(__file__).resolve().parent.parent

# What albert_convert_checkpoint does: every task's heads are carried through.
convert = functools.partial(convert_module.convert, heads=tuple(task_heads()))


def official_dir(tmp_path, groups=2, inner=2, drop=(), extra=None, name="orig"):
    """A released-style folder: albert_config.json + model.ckpt-best written by a TF1 Saver."""
    c = AlbertConfig(**TINY, num_hidden_groups=groups, inner_group_num=inner)
    arrays = random_official_arrays(c, seed=11)
    for n in drop:
        arrays.pop(n)
    arrays.update(extra or {})
    folder = tmp_path / name
    folder.mkdir()
    c.to_json_file(str(folder / "albert_config.json"))
    prefix = write_with_tf1_saver(arrays, str(folder / "model.ckpt-best"), optimizer_slots=True)
    return c, arrays, prefix


@pytest.mark.heavy
def test_official_to_hf_to_keras_to_official_is_lossless(tmp_path):
    pytest.importorskip("safetensors")
    c, arrays, prefix = official_dir(tmp_path)
    logs = []
    first = convert(prefix, "official", str(tmp_path / "hf"), "huggingface", log=logs.append)
    assert first.report.complete and not first.report.unused
    assert "loaded 80, missing 0, unused 0, shape mismatches 0, ignored 162" in logs[0]
    convert(str(tmp_path / "hf"), "huggingface", str(tmp_path / "k" / "model.keras"), "albert_tf", log=logs.append)
    convert(
        str(tmp_path / "k" / "model.keras"), "albert_tf", str(tmp_path / "tf2" / "ckpt-1"), "albert_tf", log=[].append
    )
    last = convert(
        str(tmp_path / "tf2" / "ckpt-1"), "albert_tf", str(tmp_path / "out" / "model.ckpt-1"), "official", log=[].append
    )
    assert last.report.complete
    back, ignored, _ = read_official_checkpoint(str(tmp_path / "out" / "model.ckpt-1"))
    assert back.keys() == arrays.keys() and ignored == ["global_step"]
    for name in arrays:
        assert np.array_equal(back[name], arrays[name]), name
    assert (tmp_path / "out" / "albert_config.json").exists()
    assert AlbertConfig.from_json_file(str(tmp_path / "out" / "albert_config.json")).num_hidden_groups == 2


def test_finetuned_classifier_head_carried_to_official_and_hf(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    H = TINY["hidden_size"]
    head = {"output_weights": np.full((3, H), 0.5, np.float32), "output_bias": np.arange(3, dtype=np.float32)}
    c, arrays, prefix = official_dir(tmp_path, groups=1, inner=1, drop=official_heads(), extra=head)
    logs = []
    result = convert(prefix, "official", str(tmp_path / "o" / "model.ckpt"), "official", log=logs.append)
    # the head is the classifier's (guessed from its names): the report counts it as loaded into the classifier
    assert result.carried == [] and {"output_bias", "output_weights"} <= set(result.report.loaded)
    assert "unused 0" in logs[0]
    back, _, _ = read_official_checkpoint(str(tmp_path / "o" / "model.ckpt"))
    assert np.array_equal(back["output_weights"], head["output_weights"])
    convert(prefix, "official", str(tmp_path / "hf"), "huggingface", log=[].append)
    state = safetensors_numpy.load_file(str(tmp_path / "hf" / "model.safetensors"))
    # transformers AlbertForSequenceClassification keeps classifier.weight [num_labels, H] like output_weights
    np.testing.assert_array_equal(state["classifier.weight"], head["output_weights"])
    np.testing.assert_array_equal(state["classifier.bias"], head["output_bias"])
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["AlbertForSequenceClassification"] and len(config["id2label"]) == 3


def official_heads():
    return [n for n in random_official_arrays(AlbertConfig(**TINY), 0) if n.startswith("cls/")]


@pytest.mark.heavy
def test_partial_load_prints_report_and_refuses_unless_allowed(tmp_path):
    c, arrays, prefix = official_dir(tmp_path, drop=["bert/pooler/dense/bias"])
    logs = []
    with pytest.raises(CheckpointError, match="partial load .*1 missing.*bert/pooler/dense/bias.*--allow_partial"):
        convert(prefix, "official", str(tmp_path / "x" / "m.ckpt"), "official", log=logs.append)
    assert "missing 1" in logs[0] and "bert/pooler/dense/bias" in logs[0]
    assert not (tmp_path / "x").exists()
    result = convert(prefix, "official", str(tmp_path / "y" / "m.ckpt"), "official", allow_partial=True, log=[].append)
    assert result.report.missing == ["bert/pooler/dense/bias"]
    assert "bert/pooler/dense/bias" in list_checkpoint(str(tmp_path / "y" / "m.ckpt"))


def test_refusals_are_one_line(tmp_path):
    c, arrays, prefix = official_dir(tmp_path)
    base = str(ROOT / "configs" / "albert_base_v2.json")
    cases = [
        (ConfigMismatchError, dict(albert_config_file=base), prefix, "hidden_size 12 in the checkpoint vs 768"),
        (CheckpointError, {}, str(tmp_path / "none" / "model.ckpt-best"), "checkpoint not found"),
        (CheckpointError, {}, str(tmp_path / "nohf"), "must be a directory"),
    ]
    for error, kwargs, path, text in cases:
        fmt = "huggingface" if path.endswith("nohf") else "official"
        with pytest.raises(error) as err:
            convert(path, fmt, str(tmp_path / "out"), "official", log=[].append, **kwargs)
        assert text in str(err.value) and "\n" not in str(err.value)
    # no albert_config.json beside the checkpoint and no --albert_config_file
    os.remove(tmp_path / "orig" / "albert_config.json")
    with pytest.raises(CheckpointError, match="no --albert_config_file given and no albert_config.json"):
        convert(prefix, "official", str(tmp_path / "out"), "official", log=[].append)


def test_refuses_brightmart_checkpoint(tmp_path):
    from albert_tf.checkpoints.official import write_official_arrays

    folder = tmp_path / "zh"
    folder.mkdir()
    AlbertConfig(**TINY).to_json_file(str(folder / "albert_config.json"))
    prefix = write_official_arrays(
        {"bert/embeddings/word_embeddings_2": np.zeros((4, 8)), "bert/encoder/layer_shared/output/dense/bias": [0.0]},
        str(folder / "albert_model.ckpt"),
    )
    with pytest.raises(NotAlbertCheckpointError, match="brightmart/albert_zh layout"):
        convert(prefix, "official", str(tmp_path / "out"), "huggingface", log=[].append)


@pytest.mark.slow  # a fresh TensorFlow process; the CLI logic itself is covered in-process below
def test_cli_module_prints_report(tmp_path):
    """``python -m albert_tf.cli.convert_checkpoint convert`` in a fresh process (the console script's entry point)."""
    pytest.importorskip("safetensors")
    c, arrays, prefix = official_dir(tmp_path)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    cmd = [sys.executable, "-m", "albert_tf.cli.convert_checkpoint", "convert", "--input", prefix]
    cmd += ["--input_format", "official"]
    ok = subprocess.run(
        cmd + ["--output", str(tmp_path / "hf"), "--output_format", "huggingface"],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(ROOT),
    )
    assert ok.returncode == 0, ok.stderr
    assert "loaded 80, missing 0, unused 0, shape mismatches 0, ignored 162" in ok.stdout
    assert (tmp_path / "hf" / "model.safetensors").exists()


def run_main(argv, capsys):
    from albert_tf.cli.convert_checkpoint import run_cli

    code = run_cli(["albert_convert_checkpoint", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_refuses_with_one_line(tmp_path, capsys):
    c, arrays, prefix = official_dir(tmp_path)
    common = ["--input_format", "official", "--output_format", "official", "--output", str(tmp_path / "o")]
    large = str(ROOT / "configs" / "albert_large_v2.json")
    code, out, err = run_main(["convert", "--input", prefix, "--albert_config_file", large, *common], capsys)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 1 and len(errors) == 1
    assert "checkpoint and config disagree" in errors[0] and "hidden_size 12 in the checkpoint vs 1024" in errors[0]
    code, out, err = run_main(["convert", "--input", str(tmp_path / "missing.ckpt"), *common], capsys)
    assert code == 1 and err.strip().count("\n") == 0 and "checkpoint not found" in err
    code, out, err = run_main(["convert", "--input", prefix, "--input_format", "official"], capsys)
    assert code == 2 and "--output is required" in err
    assert not (tmp_path / "o").exists()
    code, out, err = run_main(["convert", "--input", prefix, *common[:-1], str(tmp_path / "o" / "m.ckpt")], capsys)
    assert code == 0, err
    assert "loaded 80, missing 0, unused 0, shape mismatches 0, ignored 162" in out and "wrote official" in out


def test_squad_v2_heads_have_no_hf_equivalent(tmp_path):
    H = TINY["hidden_size"]
    heads = {"start_logits/dense/kernel": np.ones((H, 1), np.float32), "start_logits/dense/bias": np.zeros(1)}
    c, arrays, prefix = official_dir(tmp_path, groups=1, inner=1, drop=official_heads(), extra=heads)
    with pytest.raises(CheckpointError, match="2 head variables have no Hugging Face equivalent.*--encoder_only"):
        convert(prefix, "official", str(tmp_path / "hf"), "huggingface", log=[].append)
    logs = []
    result = convert(prefix, "official", str(tmp_path / "hf"), "huggingface", encoder_only=True, log=logs.append)
    assert result.dropped == ["start_logits/dense/bias", "start_logits/dense/kernel"]
    assert any("left out (--encoder_only): 2 head variables" in line for line in logs)
    official_out = convert(prefix, "official", str(tmp_path / "o" / "m.ckpt"), "official", log=[].append)
    assert official_out.carried == sorted(heads)


def test_a_runs_best_copy_finds_the_runs_config_and_model(tmp_path):
    """``runs/x/best/ckpt-best`` without ``--albert_config_file``: the run's ``albert_config.json`` and ``model.json``
    sit one folder up (the package's run layout); the head is read with the encoder, counted in the report."""
    from albert_tf.checkpoints.native import write_model_file
    from albert_tf.checkpoints.report import model_official_arrays
    from albert_tf.checkpoints.trainer_layout import write_weights
    from albert_tf.tasks.glue.model import AlbertClassifier

    config = AlbertConfig(**TINY)
    run = tmp_path / "runs" / "mrpc"
    (run / "best").mkdir(parents=True)
    model = AlbertClassifier(config, num_labels=3)
    config.to_json_file(str(run / "albert_config.json"))
    write_model_file(model, str(run))
    write_weights(model, str(run / "best" / "ckpt-best"), step=7)
    logs = []
    convert(str(run / "best" / "ckpt-best"), "albert_tf", str(tmp_path / "o" / "model.ckpt"), "official",
            log=logs.append)
    count = len(model_official_arrays(model))
    assert f"loaded {count}, missing 0, unused 0" in logs[0]
    back, _, _ = read_official_checkpoint(str(tmp_path / "o" / "model.ckpt"))
    np.testing.assert_array_equal(back["output_weights"], model.head.kernel.numpy().T)
    # without the run's files the folder is named in the one line
    (run / "albert_config.json").unlink()
    with pytest.raises(CheckpointError, match=r"no albert_config\.json beside the checkpoint or in its run's folder"):
        convert(str(run / "best" / "ckpt-best"), "albert_tf", str(tmp_path / "p" / "model.ckpt"), "official",
                log=logs.append)
