"""run_pretraining.py end to end in real subprocesses: failures before work, a short run, eval files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import commands
import pytest
from synthetic_records import write_synthetic_records

from albert_tf.config import AlbertConfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ, PRED, VOCAB = 32, 5, 1000


def run_cli(args, env=None, timeout=600) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0", **(env or {}))
    return commands.run([os.path.join(ROOT, "run_pretraining.py"), *args], env=full_env, cwd=ROOT, timeout=timeout)


def base_args(records, output_dir, steps=6, batch=8, **extra):
    args = {
        "albert_config_file": "albert_tiny",
        "input_file": records,
        "output_dir": str(output_dir),
        "max_seq_length": SEQ,
        "max_predictions_per_seq": PRED,
        "train_batch_size": batch,
        "num_train_steps": steps,
        "num_warmup_steps": 0,
        "learning_rate": 0.01,
        "steps_per_loop": 1,
        "save_checkpoints_steps": steps,
    }
    args.update(extra)
    return [f"--{k}={v}" for k, v in args.items()]


def step_losses(stdout: str, key: str = "loss") -> list[float]:
    out = []
    for line in stdout.splitlines():
        if line.startswith("step "):
            fields = line.split("|")[1].split()
            out.append(float(fields[fields.index(key) + 1]))
    return out


def make_records(d) -> dict:
    """Two synthetic training shards and a held-out file in the official layout."""
    write_synthetic_records(str(d / "train-0.tfrecord"), 128, SEQ, PRED, VOCAB, seed=0)
    write_synthetic_records(str(d / "train-1.tfrecord"), 128, SEQ, PRED, VOCAB, seed=1)
    write_synthetic_records(str(d / "heldout.tfrecord"), 32, SEQ, PRED, VOCAB, seed=2)
    return {"train": str(d / "train-*.tfrecord"), "eval": str(d / "heldout.tfrecord"), "dir": d}


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return make_records(tmp_path_factory.mktemp("pretrain_records"))


# ---------------------------------------------------------------------- bad runs fail early and clearly
def assert_fails_early(result, *fragments):
    assert result.returncode != 0
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1, result.stderr[-2000:]
    for fragment in fragments:
        assert fragment in error_lines[0], error_lines[0]
    assert "step 1/" not in result.stdout  # nothing trained


@pytest.mark.heavy
def test_vocab_size_smaller_than_record_ids(tmp_path, records):
    config = str(tmp_path / "albert_config.json")
    AlbertConfig.from_name("albert_tiny").replace(vocab_size=300).to_json_file(config)
    result = run_cli(base_args(records["train"], tmp_path / "out", albert_config_file=config))
    assert_fails_early(result, "train-0.tfrecord: record 0", "vocab_size is 300")


@pytest.mark.heavy
def test_max_seq_length_different_from_records(tmp_path, records):
    result = run_cli(base_args(records["train"], tmp_path / "out", max_seq_length=64))
    assert_fails_early(result, "train-0.tfrecord: record 0", "'input_ids' has 32 values but --max_seq_length=64")


@pytest.mark.heavy
def test_max_predictions_different_from_records(tmp_path, records):
    result = run_cli(base_args(records["train"], tmp_path / "out", max_predictions_per_seq=20))
    assert_fails_early(result, "'masked_lm_positions' has 5 values but --max_predictions_per_seq=20")


@pytest.mark.heavy
def test_missing_input_glob(tmp_path, records):
    missing = str(tmp_path / "nope-*.tfrecord")
    result = run_cli(base_args(f"{records['train']},{missing}", tmp_path / "out"))
    assert_fails_early(result, "--input_file: no file matches", "nope-*.tfrecord")


@pytest.mark.heavy
def test_init_checkpoint_of_another_model_size(tmp_path, records):
    import tensorflow as tf

    from albert_tf import checkpoints as checkpointing
    from albert_tf.modeling import AlbertPretrainer

    big = AlbertPretrainer(AlbertConfig.from_name("albert_tiny").replace(embedding_size=24))
    prefix = tf.train.Checkpoint(**{checkpointing.WEIGHTS_KEY: checkpointing.model_weights(big)}).write(
        str(tmp_path / "other" / "ckpt-9")
    )
    result = run_cli(base_args(records["train"], tmp_path / "out", init_checkpoint=prefix))
    assert_fails_early(result, "does not fit this model", "another albert_config")


# ---------------------------------------------------------------------- a short real run
@pytest.mark.heavy
def test_short_run_loss_falls_and_eval_results(tmp_path, records):
    out = tmp_path / "out"
    result = run_cli(
        base_args(
            records["train"], out, steps=30, batch=16, steps_per_loop=5, save_checkpoints_steps=15,
            do_eval="true", eval_input_file=records["eval"], eval_batch_size=16, learning_rate=0.02,
        )
    )
    assert result.returncode == 0, result.stderr[-3000:]
    mlm = step_losses(result.stdout, "mlm_loss")
    assert len(mlm) == 6
    assert mlm[-1] < mlm[0] - 0.3, mlm
    text = (out / "eval_results.txt").read_text()
    for key in ("masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy", "sentence_order_loss"):
        assert f"{key} = " in text
    history = [json.loads(line) for line in (out / "eval_results.jsonl").read_text().splitlines()]
    assert [h["global_step"] for h in history] == [15.0, 30.0]
    assert history[-1]["masked_lm_loss"] < history[0]["masked_lm_loss"]
    assert sorted(p.name for p in out.glob("ckpt-*.index")) == ["ckpt-15.index", "ckpt-30.index"]
    assert (out / "albert_config.json").exists()


# ---------------------------------------------------------------------- flags: presets parse, --help is true
@pytest.mark.heavy
def test_flagfiles_parse_and_help_lists_official_flags():
    code = """
import glob, sys
from absl import flags
import run_pretraining
run_pretraining.define_flags()
F = flags.FLAGS
for path in sorted(glob.glob('configs/pretrain_*.flags')):
    F.unparse_flags()
    F(['x', '--flagfile=' + path, '--albert_config_file=albert_tiny', '--output_dir=o'])
    print(path, F.optimizer, F.learning_rate, F.train_batch_size, F.num_train_steps, F.steps_per_loop)
F.unparse_flags()
F(['x', '--iterations_per_loop=7', '--use_tpu', '--tpu_name=grpc://1.2.3.4:8470', '--albert_config_file=a',
   '--output_dir=o'])
from albert_tf.cli.flags import strategy_name_from_flags
print('alias', F.steps_per_loop, strategy_name_from_flags(), F.tpu)
print(F.get_help())
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    paper = [line for line in lines if line.startswith("configs/pretrain_base.flags")]
    assert paper == ["configs/pretrain_base.flags lamb 0.00176 4096 125000 1000"]
    assert any(line.startswith("configs/pretrain_small_cpu.flags lamb") for line in lines)
    assert "alias 7 tpu grpc://1.2.3.4:8470" in lines
    help_text = result.stdout
    for flag in (
        "albert_config_file", "input_file", "eval_input_file", "output_dir", "init_checkpoint", "max_seq_length",
        "max_predictions_per_seq", "do_train", "do_eval", "train_batch_size", "eval_batch_size", "optimizer",
        "learning_rate", "poly_power", "num_train_steps", "num_warmup_steps", "start_warmup_step",
        "save_checkpoints_steps", "keep_checkpoint_max", "iterations_per_loop", "steps_per_loop", "max_eval_steps",
        "use_tpu", "tpu_name", "strategy", "gradient_accumulation_steps", "mixed_precision", "jit_compile",
        "masked_lm_budget",
    ):
        assert f"--{flag}:" in help_text or f"--[no]{flag}:" in help_text, flag
