"""``--num_trials``: one fine-tuning run several times with consecutive seeds, summarised, the median trial exported
(``training.experiment.run_trials``). MRPC with a tiny model through the real command line."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from conftest import ROOT, shared_path

from albert_tf.config import AlbertConfig
from albert_tf.tasks import glue as glue_task
from albert_tf.tasks.glue.task import run as run_glue
from albert_tf.training.run_config import RunError

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)}


def _arrays(prefix):
    reader = tf.train.load_checkpoint(str(prefix))
    return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
            if "OBJECT_GRAPH" not in k and "ITERATOR" not in k and "optimizer" not in k and "_CHECKPOINTABLE" not in k}


@pytest.mark.heavy
def test_three_trials_on_mrpc_report_the_median_and_export_its_trial(tmp_path):
    config = tmp_path / "albert_tiny_30k.json"
    AlbertConfig.from_name("albert_tiny").replace(vocab_size=30000).to_json_file(str(config))
    out, export = tmp_path / "mrpc", tmp_path / "export"
    args = [sys.executable, os.path.join(ROOT, "run_classifier.py"), "--task_name=MRPC",
            f"--data_dir={shared_path('glue')}", f"--spm_model_file={shared_path('spm', '30k-clean.model')}",
            f"--albert_config_file={config}", f"--output_dir={out}", f"--export_dir={export}",
            f"--cached_dir={tmp_path / 'cache'}", "--do_train", "--do_eval", "--max_seq_length=32",
            "--train_batch_size=16", "--eval_batch_size=128", "--train_step=16", "--save_checkpoints_steps=8",
            "--learning_rate=2e-3", "--seed=7", "--num_trials=3"]
    result = subprocess.run(args, capture_output=True, text=True, env=ENV, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]

    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["num_trials"] == 3 and summary["key_metric"] == "accuracy" and summary["selection"] == "median"
    # each trial's own evaluation record, read independently of the summary
    scores = []
    for k in range(3):
        record = json.loads((out / f"trial_{k}" / "eval_results.json").read_text())
        assert [h["global_step"] for h in record["checkpoints"]] == [8, 16]
        scores.append(max(h["accuracy"] for h in record["checkpoints"]))
        assert summary["trials"][k]["score"] == pytest.approx(scores[-1])
    assert [t["seed"] for t in summary["trials"]] == [7, 8, 9]
    weights = [_arrays(out / f"trial_{k}" / "ckpt-16") for k in range(3)]
    key = next(k for k in weights[0] if "output.Skernel" in k)  # the classifier head
    assert not np.allclose(weights[0][key], weights[1][key]) and not np.allclose(weights[1][key], weights[2][key])
    assert summary["median"] == pytest.approx(statistics.median(scores))
    assert summary["mean"] == pytest.approx(statistics.fmean(scores))
    assert summary["std"] == pytest.approx(statistics.stdev(scores))
    median_trial = sorted(range(3), key=lambda k: (scores[k], k))[1]
    assert summary["chosen_trial"] == median_trial and summary["chosen_score"] == pytest.approx(summary["median"])
    # the export is that trial's best checkpoint: its metadata says so and its variables are those weights
    (saved,) = [p for p in export.iterdir() if p.is_dir()]
    meta = json.loads((saved / "assets.extra" / "albert_export.json").read_text())
    best = out / f"trial_{median_trial}" / "best" / "ckpt-best"
    assert os.path.realpath(meta["checkpoint"]) == os.path.realpath(best)
    import tensorflow_text  # noqa: F401 - registers SentencepieceOp, which the raw-text signature holds

    loaded = tf.saved_model.load(str(saved))
    exported = {v.name.split(":")[0]: v.numpy() for v in loaded.variables
                if "seed_generator" not in v.name}  # dropout's RNG state is not a weight
    best_weights = _arrays(best)
    matches = [name for name, value in exported.items()
               if any(value.shape == w.shape and np.array_equal(value, w) for w in best_weights.values())]
    assert len(matches) == len(exported), sorted(set(exported) - set(matches))
    assert "3 trials, dev accuracy: median" in result.stderr + result.stdout

    # the same command again: every trial is finished, the summary the same
    again = subprocess.run(args, capture_output=True, text=True, env=ENV, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((out / "run_summary.json").read_text())["chosen_trial"] == median_trial


def test_trials_need_training_and_evaluation(tmp_path):
    base = dict(data_dir=str(tmp_path), task_name="MRPC", output_dir=str(tmp_path / "out"),
                albert_config_file="albert_tiny", num_trials=3)
    with pytest.raises(RunError, match="--num_trials needs --do_train and --do_eval"):
        run_glue(glue_task.make_config(**base, do_train=True))
    with pytest.raises(RunError, match="--num_trials must be >= 1"):
        run_glue(glue_task.make_config(**{**base, "num_trials": 0}, do_train=True, do_eval=True))
