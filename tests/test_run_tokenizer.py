"""run.json records a fine-tuning run's tokenizer; export_savedmodel refuses another one and convert_checkpoint
finds the recorded one (training.run_dir.tokenizer_record, checkpoints.run_meta.find_run_meta,
training.run_dir.check_run_tokenizer)."""

from __future__ import annotations

import hashlib
import json
import os
import types

import commands
import pytest
from conftest import ROOT

from albert_tf.checkpoints import CheckpointError
from albert_tf.checkpoints.run_meta import find_run_meta
from albert_tf.training.run_config import RunError
from albert_tf.training.run_dir import check_run_tokenizer, tokenizer_record


@pytest.fixture
def tokenizer(spm_model):
    from albert_tf.tokenization import FullTokenizer

    return FullTokenizer(spm_model_file=str(spm_model))


def _write_run(directory, record: dict | None) -> str:
    os.makedirs(directory, exist_ok=True)
    meta = {"task": "sst-2", **({"tokenizer": record} if record is not None else {})}
    path = os.path.join(directory, "run.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(meta, f)
    return path


def test_record_holds_the_absolute_file_its_sha256_and_lower_casing(tokenizer, spm_model, tmp_path, monkeypatch):
    monkeypatch.chdir(spm_model.parent)
    record = tokenizer_record("spm_model_file", spm_model.name, tokenizer)
    # absolute (a later tool may run from elsewhere); the cwd, not spm_model, as ../shared may be a symlink
    assert record["file"] == os.path.join(os.getcwd(), spm_model.name) and os.path.isabs(record["file"])
    assert record["sha256"] == hashlib.sha256(spm_model.read_bytes()).hexdigest()
    assert record["do_lower_case"] is True and record["flag"] == "spm_model_file"
    assert record["identity"] == tokenizer.identity()
    assert tokenizer_record("vocab_file", "gs://bucket/vocab.txt", tokenizer)["file"] == "gs://bucket/vocab.txt"


def test_run_meta_is_found_beside_a_checkpoint_or_above_its_best_copy_only(tmp_path):
    run = tmp_path / "run"
    meta = _write_run(run, {"flag": "spm_model_file"})
    assert find_run_meta(str(run / "ckpt-8"))[0] == meta
    assert find_run_meta(str(run))[0] == meta  # a directory
    assert find_run_meta(str(run / "best" / "ckpt-best"))[0] == meta
    sub = _write_run(tmp_path / "mnli", {"flag": "vocab_file"})
    assert find_run_meta(str(tmp_path / "mnli" / "mnli-mm" / "best" / "ckpt-best"))[0] == sub  # results sub-dir
    # Not further up: a checkpoint copied into some folder inside a run's directory is not that run's.
    assert find_run_meta(str(run / "copies" / "mine" / "ckpt-3")) is None
    (run / "other").mkdir()
    (run / "other" / "run.json").write_text("{not json")
    with pytest.raises(CheckpointError, match=r"run\.json: not valid JSON"):
        find_run_meta(str(run / "other" / "ckpt-1"))


def test_check_refuses_another_model_file_or_lower_casing(tokenizer, spm_model, tmp_path):
    run = tmp_path / "run"
    record = tokenizer_record("spm_model_file", str(spm_model), tokenizer)
    _write_run(run, record)
    assert "is the one recorded in" in check_run_tokenizer(str(run / "best" / "ckpt-best"), tokenizer, "--spm x")
    other = types.SimpleNamespace(model_sha256="f" * 64, do_lower_case=True)  # another file of any size
    with pytest.raises(RunError, match="--spm other.model is not the tokenizer the run in .* was trained with") as e:
        check_run_tokenizer(str(run / "ckpt-8"), other, "--spm other.model")
    assert str(spm_model) in str(e.value) and record["sha256"][:12] in str(e.value) and "ffffffffffff" in str(e.value)
    cased = types.SimpleNamespace(model_sha256=tokenizer.model_sha256, do_lower_case=False)
    with pytest.raises(RunError, match="--do_lower_case=False but the run .* --do_lower_case=True"):
        check_run_tokenizer(str(run / "ckpt-8"), cased, "--spm x")
    # Nothing recorded (an older run, a pretraining run, a checkpoint from elsewhere): nothing to check.
    _write_run(tmp_path / "old", None)
    assert "not checked" in check_run_tokenizer(str(tmp_path / "old" / "ckpt-1"), other, "--spm x")
    assert "not checked" in check_run_tokenizer(str(tmp_path / "nowhere" / "ckpt-1"), other, "--spm x")


def test_convert_finds_the_recorded_tokenizer_unless_it_is_gone_or_changed(tokenizer, spm_model, tmp_path):
    from albert_tf.checkpoints.convert import find_tokenizer

    copy = tmp_path / "kept.model"
    copy.write_bytes(spm_model.read_bytes())
    run = tmp_path / "run"
    _write_run(run, tokenizer_record("spm_model_file", str(copy), tokenizer))
    found, message = find_tokenizer(str(run / "ckpt-8"))
    assert found == {"spm_model_file": str(copy), "do_lower_case": True} and "recorded in" in message
    _write_run(run, {**tokenizer_record("spm_model_file", str(copy), tokenizer), "do_lower_case": False})
    assert find_tokenizer(str(run / "ckpt-8"))[0]["do_lower_case"] is False  # the run's setting, not the default
    assert find_tokenizer(str(run / "ckpt-8"), spm_model_file=str(spm_model))[0] == {"spm_model_file": str(spm_model)}
    copy.write_bytes(spm_model.read_bytes() + b"changed")
    found, message = find_tokenizer(str(run / "ckpt-8"))
    assert found == {} and "has changed since the run" in message
    copy.unlink()
    found, message = find_tokenizer(str(run / "ckpt-8"))
    assert found == {} and "is gone" in message


@pytest.mark.heavy
@pytest.mark.parametrize("lower, expect", [(True, "is not the tokenizer the run in"), (False, "--do_lower_case=False")])
def test_export_savedmodel_refuses_a_tokenizer_other_than_the_runs(spm_model, tmp_path, lower, expect):
    """The check runs before anything is built: one error line, nothing written."""
    run = tmp_path / "run"
    if lower:  # the run recorded another file
        record = {"flag": "spm_model_file", "file": "/elsewhere/30k-clean.model", "sha256": "0" * 64,
                  "do_lower_case": True}
    else:  # the same file, trained lower-cased
        record = {"flag": "spm_model_file", "file": str(spm_model),
                  "sha256": hashlib.sha256(spm_model.read_bytes()).hexdigest(), "do_lower_case": True}
    _write_run(run, record)
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps({"vocab_size": 30000, "hidden_size": 64, "num_hidden_layers": 1,
                                  "num_attention_heads": 2, "intermediate_size": 128, "embedding_size": 32}))
    proc = commands.run(
        [str(ROOT / "export_savedmodel.py"), "--task_name=SST-2", f"--albert_config_file={config}",
         f"--spm_model_file={spm_model}", f"--do_lower_case={lower}", "--max_seq_length=16",
         f"--checkpoint={run / 'best' / 'ckpt-best'}", f"--export_dir={tmp_path / 'serving'}"],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, cwd=str(ROOT), timeout=300,
    )
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode != 0 and len(errors) == 1 and expect in errors[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and not (tmp_path / "serving").exists()
