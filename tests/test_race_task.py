"""The RACE job end to end on the real shared passages: learning, per-level accuracy in one run, ``run_race``.

A small model fine-tuned from scratch on the 22 shared train questions must answer those same questions well above
chance (25%): the flattened 4 x L features, the shared head, the [B, 4] reshape and the loss fit together. The
train questions are also served as the dev and test splits (a copy of the files), so one run reports the
evaluation with ``accuracy_middle``/``accuracy_high`` and writes ``predictions.tsv``.
"""

from __future__ import annotations

import csv
import json
import os
import shutil

import commands
import pytest
from conftest import ROOT, shared_path, write_small_config

from albert_tf.tasks import race
from albert_tf.tasks.race.task import run as run_race


def _train_as_every_split(tmp_path) -> str:
    """``tmp/RACE/{train,dev,test}`` all holding the shared train passages (original per-file layout)."""
    source = shared_path("race", "RACE", "train")
    root = tmp_path / "data"
    for split in ("train", "dev", "test"):
        shutil.copytree(source, root / "RACE" / split)
    return str(root)


def _count(folder: str) -> dict[str, int]:
    counts = {}
    for level in ("middle", "high"):
        files = sorted(os.listdir(os.path.join(folder, level)))
        counts[level] = sum(len(json.load(open(os.path.join(folder, level, f)))["questions"]) for f in files)
    return counts


@pytest.mark.heavy
def test_race_fine_tuning_learns_the_train_questions(tmp_path):
    data_dir = _train_as_every_split(tmp_path)
    counts = _count(os.path.join(data_dir, "RACE", "train"))
    summary = run_race(race.make_config(
        data_dir=data_dir, albert_config_file=write_small_config(tmp_path / "c.json"),
        spm_model_file=str(shared_path("spm", "30k-clean.model")), max_seq_length=128, max_qa_length=32,
        output_dir=str(tmp_path / "run"), do_train=True, do_eval=True, do_predict=True, num_train_steps=160,
        num_warmup_steps=10, learning_rate=1e-3, train_batch_size=8, eval_batch_size=8, predict_batch_size=8,
        steps_per_loop=40, save_checkpoints_steps=40, dropout_prob=0.0,
    ))
    best = summary["best"]
    print(json.dumps(best, indent=1))
    assert best["num_questions"] == counts["middle"] + counts["high"] == 22
    assert (best["num_middle"], best["num_high"]) == (counts["middle"], counts["high"])
    assert best["accuracy"] >= 0.6, best  # chance is 0.25
    assert {"accuracy_middle", "accuracy_high"} <= set(best)
    expected = (best["accuracy_middle"] * counts["middle"] + best["accuracy_high"] * counts["high"]) / 22
    assert abs(best["accuracy"] - expected) < 1e-9
    with open(tmp_path / "run" / "predictions.tsv") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    assert rows[0] == ["id", "prediction", "probability_A", "probability_B", "probability_C", "probability_D"]
    assert len(rows) == 23 and all(r[1] in "ABCD" and abs(sum(map(float, r[2:])) - 1) < 1e-4 for r in rows[1:])
    assert summary["predict"]["scores"]["accuracy"] == best["accuracy"]
    assert summary["data"]["train"]["num_questions"] == 22
    # run.json records the tokenizer (a FineTuningTask: SQuAD and RACE), found from the best copy
    from albert_tf.checkpoints.run_meta import find_run_meta

    recorded = find_run_meta(str(tmp_path / "run" / "best" / "ckpt-best"))[1]["tokenizer"]
    assert recorded["file"] == str(shared_path("spm", "30k-clean.model")) and recorded["flag"] == "spm_model_file"


@pytest.mark.slow
def test_run_race_command_line_on_both_shared_splits(tmp_path):
    """``run_race.py`` with the official defaults for do_train/do_eval, --export_dir; --middle_only filters levels."""
    data_dir = str(shared_path("race"))
    config = write_small_config(tmp_path / "c.json")
    common = [f"--data_dir={data_dir}", f"--albert_config_file={config}",
              f"--spm_model_file={shared_path('spm', '30k-clean.model')}", "--max_seq_length=128",
              "--max_qa_length=32", "--train_step=4", "--warmup_step=0", "--save_checkpoints_steps=2",
              "--train_batch_size=4", "--steps_per_loop=2", "--learning_rate=1e-3"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONHASHSEED": "0"}
    run = commands.run([str(ROOT / "run_race.py"), *common, "--output_dir=run", "--export_dir=export"], cwd=tmp_path,
                       env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    best_step = json.loads((tmp_path / "run" / "eval_results.json").read_text())["best"]["global_step"]
    assert (tmp_path / "export" / str(best_step) / "saved_model.pb").is_file()  # the best weights, served
    assert "best accuracy = " in run.stdout and "accuracy_middle" in run.stdout
    results = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert [c["global_step"] for c in results["checkpoints"]] == [2, 4]
    dev = _count(str(shared_path("race", "RACE", "dev")))
    assert results["best"]["num_questions"] == dev["middle"] + dev["high"]
    middle = commands.run([str(ROOT / "run_race.py"), *common, "--output_dir=middle", "--middle_only"], cwd=tmp_path,
                          env=env, timeout=600)
    assert middle.returncode == 0, middle.stderr[-3000:]
    best = json.loads((tmp_path / "middle" / "eval_results.json").read_text())["best"]
    assert best["num_questions"] == best["num_middle"] == dev["middle"] and best["num_high"] == 0
