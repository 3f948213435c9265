"""Smoke tests of the parity and quality benchmarks (``finetune_parity.py``, ``pretraining_parity.py``,
``packing_dev.py``, ``tflite_quantization.py``): each script's commands end to end on the smallest settings, both
sides' JSON side by side; and the in-process checks of what the parity scripts restate (the official update in
torch, the batch orders, the argument checks).
"""

from __future__ import annotations

import json
import math
import pathlib
import sys

import numpy as np
import pytest
from benchmark_smoke import ROOT, command
from benchmark_smoke import machine_ok as _machine_ok
from benchmark_smoke import run as _run


@pytest.mark.slow
def test_finetune_parity_smoke(tmp_path):
    """Both pipelines fine-tune the same converted weights; the summary is the statistics of the per-seed runs."""
    import statistics

    from conftest import shared_data_dir

    shared = shared_data_dir()
    if shared is None or not (shared / "text").is_dir() or not (shared / "glue" / "MRPC").is_dir():
        pytest.skip("needs ../shared/data (text, spm, glue/MRPC)")
    saved = tmp_path / "mrpc.json"
    report = _run("benchmarks/finetune_parity.py", "--smoke", "--task=MRPC", "--seeds=2", f"--shared_data={shared}",
                  f"--workdir={tmp_path}", f"--output={saved}")
    assert json.loads(saved.read_text()) == report
    _machine_ok(report)
    assert report["settings"]["steps"] == 4 and report["settings"]["warmup_steps"] == 0
    assert report["baseline"]["accuracy"] == pytest.approx(279 / 408)  # MRPC dev: 279 of 408 are paraphrases
    # the constant answer's dev loss: the training set's class frequencies, counted here from train.tsv
    with open(shared / "glue" / "MRPC" / "train.tsv", encoding="utf-8") as f:
        train_labels = [line.split("\t")[0] for line in list(f)[1:]]
    prior = train_labels.count("1") / len(train_labels)
    expected = -(279 * math.log(prior) + 129 * math.log(1 - prior)) / 408
    assert report["baseline"]["dev_loss"] == pytest.approx(expected, rel=1e-9)
    for side, summary in (("albert_tf", "albert_tf_summary"), ("transformers_torch", "transformers_summary")):
        runs = report[side]
        assert [r["seed"] for r in runs] == [0, 1]
        for key in ("accuracy", "f1", "dev_loss"):
            values = [r["metrics"][key] for r in runs]
            assert report[summary][key]["values"] == values
            assert report[summary][key]["mean"] == pytest.approx(statistics.fmean(values))
            assert report[summary][key]["se"] == pytest.approx(statistics.stdev(values) / math.sqrt(2))
    diff = report["comparison"]["accuracy"]
    ours, theirs = report["albert_tf_summary"]["accuracy"], report["transformers_summary"]["accuracy"]
    assert diff["difference"] == pytest.approx(ours["mean"] - theirs["mean"])
    assert diff["se_of_difference"] == pytest.approx(math.hypot(ours["se"], theirs["se"]))
    table = command("benchmarks/finetune_parity.py", "--markdown", str(saved)).stdout
    row = next(line for line in table.splitlines() if line.startswith("| MRPC (4, 2+2) | accuracy |"))
    assert f"{100 * ours['mean']:.1f} ± {100 * ours['se']:.1f}" in row and "| 68.4 |" in row
    loss_row = next(line for line in table.splitlines() if line.startswith("|  | dev_loss |"))
    assert f"{report['albert_tf_summary']['dev_loss']['mean']:.3f} ±" in loss_row  # a loss, not a percentage
    # a settings search: one side, other seeds, another learning rate; nothing to compare or tabulate
    search = tmp_path / "search.json"
    alone = _run("benchmarks/finetune_parity.py", "--smoke", "--task=MRPC", "--seeds=1", "--first_seed=7",
                 "--only=albert_tf", "--learning_rate=3e-4", "--encoder_dropout=0.1", "--dev_curve_every=2",
                 "--warmup_steps=1",
                 f"--shared_data={shared}", f"--workdir={tmp_path}", f"--output={search}")
    assert alone["settings"]["learning_rate"] == 3e-4 and alone["settings"]["encoder_dropout"] == 0.1
    assert alone["settings"]["warmup_steps"] == 1
    assert alone["transformers_torch"] == [] and "comparison" not in alone
    (run,) = alone["albert_tf"]
    assert run["seed"] == 7 and [p["step"] for p in run["dev_curve"]] == [2, 4]
    last = run["dev_curve"][-1]  # the last step, not the best
    assert run["metrics"] == {"accuracy": last["accuracy"], "f1": last["f1"], "dev_loss": last["eval_loss"]}
    folder = tmp_path / "finetune_MRPC_4_lr0.0003_dropout0.1_warmup1_initsmoke"
    used = json.loads((folder / "albert_config.json").read_text())
    assert used["hidden_dropout_prob"] == used["attention_probs_dropout_prob"] == 0.1
    assert alone["albert_tf_summary"]["accuracy"]["values"] == [alone["albert_tf"][0]["metrics"]["accuracy"]]
    refused = command("benchmarks/finetune_parity.py", "--markdown", str(search))
    assert refused.returncode != 0 and "one side" in refused.stderr
    # run_classifier in lockstep: the transformers head saved as both sides' start, the same batches, classifier
    # dropout 0: the same step losses and dev scores
    lock = _run("benchmarks/finetune_parity.py", "--smoke", "--task=MRPC", "--lockstep", "--seeds=1",
                f"--shared_data={shared}", f"--workdir={tmp_path}")
    assert lock["mode"] == "lockstep" and lock["settings"]["classifier_dropout"] == 0.0
    (row,) = lock["seeds"]
    assert len(row["albert_tf"]["losses"]) == len(row["transformers_torch"]["losses"]) == 4
    assert lock["max_loss_difference"] < 1e-4
    assert row["albert_tf"]["metrics"] == pytest.approx(row["transformers_torch"]["metrics"], abs=1e-5)
    assert set(lock["paired_difference"]) == {"accuracy", "f1", "dev_loss"}
    dev = shared / "ner" / "wnut17" / "emerging.dev.conll"
    if dev.is_file():  # run_tagging in lockstep against AlbertForTokenClassification (benchmarks/parity_tagging.py)
        lock = _run("benchmarks/finetune_parity.py", "--smoke", "--task=wnut17", "--lockstep", "--seeds=1",
                    f"--shared_data={shared}", f"--workdir={tmp_path}")
        (row,) = lock["seeds"]
        assert len(row["albert_tf"]["losses"]) == len(row["transformers_torch"]["losses"]) == 4
        assert lock["max_loss_difference"] < 1e-4
        assert row["albert_tf"]["metrics"] == pytest.approx(row["transformers_torch"]["metrics"], abs=1e-5)
        tags = [line.split()[-1] for line in dev.read_text("utf-8").splitlines() if line.strip()]
        assert lock["baseline"] == {"f1": 0.0, "precision": 0.0, "recall": 0.0,
                                    "accuracy": pytest.approx(tags.count("O") / len(tags))}
    if not (shared / "squad" / "dev-v2.0-subset-a.json").is_file():
        return
    # SQuAD v1 in lockstep: one head and the same batches on both sides, no dropout in the v1 model, transformers'
    # <pad> row trained as the official code trains it: the same step losses and the same answers
    lock = _run("benchmarks/finetune_parity.py", "--smoke", "--task=squad_v1", "--lockstep", "--seeds=1",
                "--transformers_pad_embedding=trained", f"--shared_data={shared}", f"--workdir={tmp_path}")
    assert lock["mode"] == "lockstep" and lock["settings"]["transformers_pad_embedding"] == "trained"
    (row,) = lock["seeds"]
    ours, theirs = row["albert_tf"], row["transformers_torch"]
    assert len(ours["losses"]) == len(theirs["losses"]) == 4
    assert ours["losses"][-1] < ours["losses"][0]  # it trained
    assert lock["max_loss_difference"] == row["max_loss_difference"] < 1e-4
    assert ours["metrics"] == pytest.approx(theirs["metrics"])



def test_finetune_parity_refuses_weights_past_their_schedule(capsys):
    sys.path.insert(0, str(ROOT))
    from benchmarks.finetune_parity import parse_args

    with pytest.raises(SystemExit) as stop:
        parse_args(["--pretrain_steps=6000", "--pretrain_schedule_steps=3000"])
    assert stop.value.code == 2
    assert "--pretrain_schedule_steps=3000 is shorter than --pretrain_steps=6000" in capsys.readouterr().err
    kept = parse_args(["--pretrain_steps=6000", "--pretrain_schedule_steps=15000"])
    assert (kept.pretrain_steps, kept.pretrain_schedule_steps) == (6000, 15000)



@pytest.mark.parametrize("extra", ["--only=albert_tf", "--encoder_dropout=0.1", "--transformers_order=albert_tf_cache",
                                   "--reuse_transformers=earlier.json"])
def test_finetune_parity_lockstep_refuses_what_would_part_the_sides(capsys, extra):
    sys.path.insert(0, str(ROOT))
    from benchmarks.finetune_parity import parse_args, settings_of

    with pytest.raises(SystemExit) as stop:
        parse_args(["--lockstep", extra])
    assert stop.value.code == 2 and "--lockstep runs both sides" in capsys.readouterr().err
    assert settings_of(parse_args(["--lockstep", "--task=MRPC"]))["classifier_dropout"] == 0.0
    assert settings_of(parse_args(["--task=MRPC"]))["classifier_dropout"] == 0.1



def test_finetune_parity_cache_order_batches_draw_as_albert_tf_does():
    """``--transformers_order=albert_tf_cache``: batches from the cache's fixed permutation through a 1,000-record
    shuffle buffer, so the first k records drawn lie within the permutation's first k + 1,000 and each seed draws
    them in its own order."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from albert_tf.data.batching import SHUFFLE_BUFFER
    from albert_tf.data.cache import training_order
    from benchmarks.finetune_parity import _cache_order_batches

    n, batch, steps = 20_000, 32, 100
    order, _ = training_order(range(n), shuffle=True)
    position = {record: i for i, record in enumerate(order)}
    drawn = {}
    for seed in (0, 1):
        stream = _cache_order_batches(n, batch, seed)
        drawn[seed] = np.concatenate([next(stream) for _ in range(steps)]).tolist()
        assert len(set(drawn[seed])) == batch * steps  # without replacement within an epoch
        assert max(position[r] for r in drawn[seed]) < batch * steps + SHUFFLE_BUFFER
    assert drawn[0] != drawn[1]
    assert len(set(drawn[0]) & set(drawn[1])) > 0.5 * batch * steps  # mostly the same records, as albert-tf's seeds



@pytest.mark.slow
def test_pretraining_parity_smoke(tmp_path):
    """pretraining_parity.py's four commands on one set of records (the tiny budget's data, made once with
    ``--dupe_factor 2`` and reused from ``--workdir`` by the later commands), 4 steps each: both sides' curves and
    their difference; ``--export_npz`` then ``--torch_only`` (the path for a machine without TensorFlow), which
    evaluates as the transformers side above at step 0; ``--albert_tf_only``."""
    from conftest import shared_data_dir

    shared = shared_data_dir()
    if shared is None or not (shared / "text").is_dir() or not (shared / "glue" / "SST-2").is_dir():
        pytest.skip("needs ../shared/data (text, spm, glue/SST-2)")
    common = ("benchmarks/pretraining_parity.py", "--smoke", "--dupe_factor", "2", f"--shared_data={shared}",
              f"--workdir={tmp_path}")
    short = ("--steps", "4", "--eval_every", "2")
    report = _run(*common, *short)
    _machine_ok(report)
    assert report["settings"]["budget"] == "tiny" and report["settings"]["optimizer"] == "lamb"
    assert report["settings"]["dupe_factor"] == 2
    ours, theirs = report["albert_tf"]["curve"], report["transformers_torch"]["curve"]
    assert [p["step"] for p in ours] == [p["step"] for p in theirs] == [0, 2, 4]
    for a, b, d in zip(ours, theirs, report["albert_tf_minus_transformers"]):
        assert d["masked_lm_accuracy"] == pytest.approx(a["masked_lm_accuracy"] - b["masked_lm_accuracy"], abs=1e-4)
    # both start from an untrained model: MLM loss near ln(30000) = 10.3
    assert abs(ours[0]["masked_lm_loss"] - 10.3) < 0.3 and abs(theirs[0]["masked_lm_loss"] - 10.3) < 0.3

    # --export_npz then --torch_only (the path for a machine without TensorFlow): the same records, the same
    # initialisation (seed) and the same held-out set give the same step-0 evaluation as the run above.
    npz = tmp_path / "records.npz"
    exported = _run(*common, f"--export_npz={npz}")
    assert exported["bytes"] == npz.stat().st_size > 0
    saved = tmp_path / "torch_only.json"
    alone = _run("benchmarks/pretraining_parity.py", "--smoke", "--torch_only", f"--records_npz={npz}", *short,
                 f"--output={saved}")
    assert alone["complete"] and json.loads(saved.read_text())["complete"]
    made_by = alone["settings"]["records_made_by"]  # the .npz says whose records it holds
    assert made_by["budget"] == "tiny" and made_by["dupe_factor"] == 2 and made_by["max_seq_length"] == 64
    curve = alone["transformers_torch"]["curve"]
    assert [p["step"] for p in curve] == [0, 2, 4]
    assert curve[0]["masked_lm_loss"] == theirs[0]["masked_lm_loss"]
    assert curve[0]["sentence_order_accuracy"] == theirs[0]["sentence_order_accuracy"]

    # --albert_tf_only: albert-tf alone, on the same records (two maskings)
    ours_only = _run(*common, "--albert_tf_only", *short)
    assert "transformers_torch" not in ours_only and ours_only["settings"]["dupe_factor"] == 2
    assert [p["step"] for p in ours_only["albert_tf"]["curve"]] == [0, 2, 4]
    # the same seeded untrained model on the same held-out set
    assert ours_only["albert_tf"]["curve"][0] == pytest.approx(ours[0], abs=1e-6)



def test_parity_benchmark_torch_update_and_schedule_equal_the_keras_optimizers():
    """pretraining_parity.py restates the official update and schedule in torch for transformers' model; both
    restatements must equal albert-tf's Keras LAMB / AdamWeightDecay and WarmupPolynomialDecay (otherwise the
    two curves would not compare like with like)."""
    torch = pytest.importorskip("torch")
    import numpy as np
    import tensorflow as tf

    sys.path.insert(0, str(ROOT))
    from albert_tf.training.optimizers import create_optimizer
    from albert_tf.training.schedules import WarmupPolynomialDecay
    from benchmarks.pretraining_parity import OfficialUpdate, official_lr

    schedule = WarmupPolynomialDecay(4e-3, num_train_steps=20, num_warmup_steps=2)
    assert [round(official_lr(s, 4e-3, 20, 2), 9) for s in range(20)] == [round(float(schedule(s)), 9)
                                                                           for s in range(20)]
    rng = np.random.default_rng(0)
    shapes = {"encoder.dense.weight": (5, 3), "encoder.dense.bias": (3,), "encoder.LayerNorm.weight": (3,)}
    start = {n: rng.normal(size=s).astype(np.float32) for n, s in shapes.items()}
    grads = [{n: rng.normal(size=s).astype(np.float32) * 3 for n, s in shapes.items()} for _ in range(4)]
    for name, lamb in (("lamb", True), ("adamw", False)):
        for bc in (False, True):
            params = {n: torch.nn.Parameter(torch.from_numpy(v.copy())) for n, v in start.items()}
            update = OfficialUpdate(params.items(), lamb=lamb, bias_correction=bc)
            variables = {n: _scoped_variable(n.split("."), v.copy()) for n, v in start.items()}
            opt = create_optimizer(name, 1e-2, bias_correction=bc)
            for g in grads:
                for n, p in params.items():
                    p.grad = torch.from_numpy(g[n].copy())
                update.step(1e-2)
                opt.apply([tf.constant(g[n]) for n in shapes], [variables[n] for n in shapes])
            for n in shapes:
                np.testing.assert_allclose(params[n].detach().numpy(), variables[n].numpy(), atol=2e-6,
                                           err_msg=f"{name} bc={bc} {n}")
            assert not np.allclose(params["encoder.dense.weight"].detach().numpy(), start["encoder.dense.weight"])



def _scoped_variable(parts: list[str], value):
    """A Keras variable whose path is ``parts`` joined by "/" (so the exclusion regexes see the same name)."""
    import keras

    if len(parts) == 1:
        return keras.Variable(value, name=parts[0])
    with keras.name_scope(parts[0]):
        return _scoped_variable(parts[1:], value)



def test_parity_array_batches_cover_every_record_once_per_epoch():
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from benchmarks.pretraining_parity import array_batches

    arrays = {"input_ids": np.arange(10)[:, None], "next_sentence_labels": np.arange(10)}
    ordered = list(array_batches(arrays, 4, None))
    assert [len(b["input_ids"]) for b in ordered] == [4, 4, 2]
    assert np.concatenate([b["next_sentence_labels"] for b in ordered]).tolist() == list(range(10))
    stream = array_batches(arrays, 5, seed=3)
    epoch = np.concatenate([next(stream)["next_sentence_labels"] for _ in range(2)])
    assert sorted(epoch.tolist()) == list(range(10)) and epoch.tolist() != list(range(10))
    again = np.concatenate([next(array_batches(arrays, 5, seed=3))["next_sentence_labels"]])
    assert again.tolist() == epoch[:5].tolist()  # seeded: the same order



@pytest.mark.parametrize("args, expect", [
    ([], "needs --records_npz"),
    (["--records_npz=missing.npz"], "cannot read it"),
    (["--records_npz=NOT_NPZ"], "not an --export_npz file"),
])
def test_parity_torch_only_bad_records_is_one_line(tmp_path, args, expect):
    bogus = tmp_path / "bogus.npz"
    bogus.write_bytes(b"not a zip")
    args = [a.replace("NOT_NPZ", str(bogus)).replace("missing.npz", str(tmp_path / "missing.npz")) for a in args]
    proc = command("benchmarks/pretraining_parity.py", "--torch_only", *args)
    assert proc.returncode != 0 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and expect in lines[0], proc.stderr



@pytest.mark.slow
def test_packing_dev_smoke_from_pretrained_weights(tmp_path):
    """packing_dev.py's pretrained start: both modes fine-tune the given weights with finetune_parity's settings, and
    the summary is the statistics of the runs (4 steps, 2 seeds, 64 dev rows: it checks the script, measures
    nothing)."""
    from conftest import shared_data_dir

    from albert_tf.checkpoints.native import save_native
    from albert_tf.config import AlbertConfig
    from albert_tf.modeling import AlbertEncoder

    shared = shared_data_dir()
    if shared is None or not (shared / "glue" / "SST-2").is_dir() or not (shared / "spm").is_dir():
        pytest.skip("needs ../shared/data (glue/SST-2, spm)")
    fields = dict(vocab_size=30000, embedding_size=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=128)
    config_file = tmp_path / "albert_config.json"
    config_file.write_text(json.dumps(fields))
    encoder = AlbertEncoder(AlbertConfig(**fields))
    encoder({k: np.zeros((1, 8), np.int32) for k in ("input_ids", "input_mask", "segment_ids")})
    prefix = save_native(encoder, str(tmp_path / "init" / "ckpt-0"))
    saved = tmp_path / "packing_dev.json"
    proc = command("benchmarks/packing_dev.py", "--steps=4", "--seeds=2", "--train_examples=256", "--dev_examples=64",
                   f"--init_checkpoint={prefix}", f"--albert_config_file={config_file}", f"--output={saved}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RANDOM initialisation" not in proc.stderr  # every run starts from the given weights
    report = json.loads(proc.stdout)
    assert json.loads(saved.read_text()) == report
    assert report["start"] == "pretrained" and report["dev_examples"] == 64
    assert report["settings"] == {"optimizer": "adamw", "learning_rate": 1e-4, "classifier_dropout": 0.1}
    for mode in ("first_fit", "none"):
        runs = report["runs"][mode]
        assert [r["seed"] for r in runs] == [0, 1] and all(0.0 <= r["dev_accuracy"] <= 1.0 for r in runs)
        assert report[f"{mode}_mean"] == pytest.approx(sum(r["dev_accuracy"] for r in runs) / 2, abs=1e-4)
    diffs = [a["dev_accuracy"] - b["dev_accuracy"] for a, b in zip(report["runs"]["first_fit"], report["runs"]["none"])]
    assert report["packed_minus_unpacked"] == pytest.approx(sum(diffs) / 2, abs=1e-4)
    bad = command("benchmarks/packing_dev.py", f"--init_checkpoint={prefix}")
    assert bad.returncode == 2 and "go together" in bad.stderr


@pytest.mark.slow
def test_tflite_quantization_smoke_on_a_trained_run(shared_data, tmp_path, tmp_path_factory):
    """The session's two-step MRPC run (``artefacts.fine_tuned_run``, read, never written) exported, converted and
    scored on the whole MRPC dev set at 128 by the benchmark: the float32 and the int8-weight files beside the
    SavedModel."""
    import artefacts

    run = pathlib.Path(artefacts.fine_tuned_run(tmp_path_factory, "classifier")).parent
    # two of the three conversions (each loads the export again; float16's own file: test_export_tflite.py)
    report = _run("benchmarks/tflite_quantization.py", f"--mrpc_run={run}", f"--shared_data={shared_data}",
                  "--runs=1", "--warmup=0", f"--workdir={tmp_path / 'work'}", "--quantizations=none,dynamic")
    _machine_ok(report)
    assert report["settings"]["quantizations"] == ["none", "dynamic"]
    variants = report["mrpc"]["variants"]
    assert set(variants) == {"savedmodel", "tflite_none", "tflite_dynamic"}
    assert report["mrpc"]["num_examples"] == 408 and report["mrpc"]["seq_length"] == 128  # the whole dev set
    assert variants["tflite_dynamic"]["size_ratio_to_float32"] < 0.5
    assert abs(variants["tflite_none"]["metric_difference_to_savedmodel"]["accuracy"]) < 0.01
