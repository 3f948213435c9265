"""The benchmark scripts run end to end (their --smoke modes) and print the JSON the README's tables are read from.

No figure is checked against a time: the smoke shapes measure nothing. What is checked: every implementation
answered, the derived fields follow from the measured ones (per-token time = step time / tokens, ratios of the
medians), every JSON records the machine's CPU flags, and the bfloat16 runs really compute in bfloat16.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _run(*args: str, timeout: int = 600) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _machine_ok(report: dict) -> None:
    flags = report["machine"]["cpu_flags"]
    assert {"avx512_bf16", "amx_bf16", "avx2"} <= set(flags)
    assert all(isinstance(v, bool) for v in flags.values())
    assert report["machine"]["date_utc"]


@pytest.mark.slow
def test_pretraining_step_smoke_with_bf16():
    names = ("albert_tf,albert_tf_full_last_layer,albert_tf_bf16,transformers_torch,transformers_torch_bf16_autocast,"
             "keras_hub_bf16")
    report = _run("benchmarks/pretraining_step.py", "--smoke", "--bf16", "--steps", "2", "--warmup", "0",
                  "--only", names)
    results = report["results"]
    assert set(results) == set(names.split(","))
    for r in results.values():
        assert len(r["step_times_s"]) == 2 and r["median_step_s"] > 0
    _machine_ok(report)
    # float32 headline only from float32 runs; bf16 ratios from the medians
    assert report["best_albert_tf"] in ("albert_tf", "albert_tf_full_last_layer")
    assert report["best_peer"] == "transformers_torch"
    bf16 = report["bf16"]
    expected = results["albert_tf"]["median_step_s"] / results["albert_tf_bf16"]["median_step_s"]
    assert bf16["albert_tf_bf16_speedup"] == pytest.approx(expected, abs=2e-3)
    expected = results["transformers_torch"]["median_step_s"] / \
        results["transformers_torch_bf16_autocast"]["median_step_s"]
    assert bf16["torch_autocast_speedup"] == pytest.approx(expected, abs=2e-3)
    assert bf16["best_albert_tf_bf16"] == "albert_tf_bf16"
    peer = bf16["best_bf16_peer"]
    assert peer in ("transformers_torch_bf16_autocast", "keras_hub_bf16")
    expected = results["albert_tf_bf16"]["examples_per_s"] / results[peer]["examples_per_s"]
    assert bf16["albert_tf_bf16_over_best_bf16_peer"] == pytest.approx(expected, abs=2e-3)
    assert "last_layer_subset_gain" in report


@pytest.mark.heavy
def test_bf16_step_computes_in_bfloat16():
    """The benchmark's albert_tf_bf16 and keras_hub_bf16 workers set mixed_bfloat16 before building: the encoder's
    matmuls then run in bfloat16 with float32 variables, and the loss stays float32 and close to the float32
    model's."""
    code = """
import sys, json
sys.path.insert(0, '.')
import keras, tensorflow as tf
from benchmarks import pretraining_step as ps
d = dict(ps.SMOKE)
losses, hub = {}, {}
for policy in ("float32", "mixed_bfloat16"):
    losses[policy] = ps.albert_tf_step(d, True, False, policy)()
    hub[policy] = ps.keras_hub_step(d, False, policy)()
print(json.dumps({"policy": keras.mixed_precision.global_policy().name, "losses": losses, "hub": hub}))
"""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", KERAS_BACKEND="tensorflow")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["policy"] == "mixed_bfloat16"
    for key in ("losses", "hub"):
        f32, bf16 = out[key]["float32"], out[key]["mixed_bfloat16"]
        assert f32 != bf16, key  # another compute dtype gives another rounding
        assert bf16 == pytest.approx(f32, rel=2e-2), key  # same seed, same weights: the same loss to bf16 precision


@pytest.mark.slow
def test_scaling_smoke_and_markdown(tmp_path):
    report = _run("benchmarks/scaling.py", "--smoke", "--skip_data", "--plot", str(tmp_path / "s.png"))
    _machine_ok(report)
    rows = report["train"]
    assert [(r["seq"], r["batch"]) for r in rows] == [(32, 2), (64, 2)]
    for r in rows:
        assert r["predictions"] == {32: 5, 64: 10}[r["seq"]]  # ceil(0.15 * seq)
        a = r["albert_tf"]
        tokens = r["seq"] * r["batch"]  # median_step_s is rounded to 0.1 ms: that much slack, per token
        assert a["us_per_token"] == pytest.approx(a["median_step_s"] / tokens * 1e6, abs=0.5e-4 / tokens * 1e6 + 0.01)
    assert (tmp_path / "s.png").stat().st_size > 10_000
    saved = tmp_path / "s.json"
    saved.write_text(json.dumps(report))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    md = subprocess.run([sys.executable, "benchmarks/scaling.py", "--markdown", str(saved)], capture_output=True,
                        text=True, cwd=ROOT, env=env, timeout=120).stdout
    assert md.count("| tiny |") == 2 and "µs/token" in md


@pytest.mark.slow
def test_scaling_data_rows_on_paragraph_documents():
    from conftest import shared_data_dir

    shared = shared_data_dir()
    if shared is None or not (shared / "text").is_dir():
        pytest.skip("needs ../shared/data/text")
    report = _run("benchmarks/scaling.py", "--smoke", "--skip_train", "--corpus_documents=paragraphs",
                  f"--shared_data={shared}")
    data = report["data"]
    assert data["setup"]["corpus_documents"] == "paragraphs" and data["setup"]["short_seq_scope"] == "document"
    # paragraph documents: many more than the 141 files, each a few kB
    assert data["setup"]["corpus_1x_documents"] > 1000
    (row,) = data["rows"]
    assert row["corpus_multiple"] == 1 and row["instances"] > 10_000 and row["peak_pss_mb"] > 0
    assert row["pss_over_1x"] == 1.0


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


@pytest.mark.slow
def test_pretraining_parity_smoke(tmp_path):
    from conftest import shared_data_dir

    shared = shared_data_dir()
    if shared is None or not (shared / "text").is_dir() or not (shared / "glue" / "SST-2").is_dir():
        pytest.skip("needs ../shared/data (text, spm, glue/SST-2)")
    report = _run("benchmarks/pretraining_parity.py", "--smoke", f"--shared_data={shared}",
                  f"--workdir={tmp_path}")
    _machine_ok(report)
    assert report["settings"]["budget"] == "tiny" and report["settings"]["optimizer"] == "lamb"
    ours, theirs = report["albert_tf"]["curve"], report["transformers_torch"]["curve"]
    assert [p["step"] for p in ours] == [p["step"] for p in theirs] == [0, 10, 20]
    for a, b, d in zip(ours, theirs, report["albert_tf_minus_transformers"]):
        assert d["masked_lm_accuracy"] == pytest.approx(a["masked_lm_accuracy"] - b["masked_lm_accuracy"], abs=1e-4)
    # both start from an untrained model: MLM loss near ln(30000) = 10.3
    assert abs(ours[0]["masked_lm_loss"] - 10.3) < 0.3 and abs(theirs[0]["masked_lm_loss"] - 10.3) < 0.3

    # --export_npz then --torch_only (the path for a machine without TensorFlow): the same records, the same
    # initialisation (seed) and the same held-out set give the same step-0 evaluation as the run above.
    npz = tmp_path / "records.npz"
    exported = _run("benchmarks/pretraining_parity.py", "--smoke", f"--shared_data={shared}", f"--workdir={tmp_path}",
                    f"--export_npz={npz}")
    assert exported["bytes"] == npz.stat().st_size > 0
    saved = tmp_path / "torch_only.json"
    alone = _run("benchmarks/pretraining_parity.py", "--smoke", "--torch_only", f"--records_npz={npz}",
                 "--steps", "4", "--eval_every", "2", f"--output={saved}")
    assert alone["complete"] and json.loads(saved.read_text())["complete"]
    made_by = alone["settings"]["records_made_by"]  # the .npz says whose records it holds
    assert made_by["budget"] == "tiny" and made_by["dupe_factor"] == 1 and made_by["max_seq_length"] == 64

    # --albert_tf_only with --dupe_factor: albert-tf alone, on records made with two maskings
    ours_only = _run("benchmarks/pretraining_parity.py", "--smoke", "--albert_tf_only", "--dupe_factor", "2",
                     f"--shared_data={shared}", f"--workdir={tmp_path / 'dupe2'}", "--steps", "4", "--eval_every", "2")
    assert "transformers_torch" not in ours_only and ours_only["settings"]["dupe_factor"] == 2
    assert [p["step"] for p in ours_only["albert_tf"]["curve"]] == [0, 2, 4]
    curve = alone["transformers_torch"]["curve"]
    assert [p["step"] for p in curve] == [0, 2, 4]
    assert curve[0]["masked_lm_loss"] == theirs[0]["masked_lm_loss"]
    assert curve[0]["sentence_order_accuracy"] == theirs[0]["sentence_order_accuracy"]


@pytest.mark.slow
def test_finetune_parity_smoke(tmp_path):
    """Both pipelines fine-tune the same converted weights; the summary is the statistics of the per-seed runs."""
    import math
    import statistics

    from conftest import shared_data_dir

    shared = shared_data_dir()
    if shared is None or not (shared / "text").is_dir() or not (shared / "glue" / "MRPC").is_dir():
        pytest.skip("needs ../shared/data (text, spm, glue/MRPC)")
    saved = tmp_path / "mrpc.json"
    report = _run("benchmarks/finetune_parity.py", "--smoke", "--task=MRPC", "--seeds=2", f"--shared_data={shared}",
                  f"--workdir={tmp_path}", f"--output={saved}", timeout=1200)
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
    table = subprocess.run([sys.executable, "benchmarks/finetune_parity.py", "--markdown", str(saved)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120).stdout
    row = next(line for line in table.splitlines() if line.startswith("| MRPC (4, 2+2) | accuracy |"))
    assert f"{100 * ours['mean']:.1f} ± {100 * ours['se']:.1f}" in row and "| 68.4 |" in row
    loss_row = next(line for line in table.splitlines() if line.startswith("|  | dev_loss |"))
    assert f"{report['albert_tf_summary']['dev_loss']['mean']:.3f} ±" in loss_row  # a loss, not a percentage
    # a settings search: one side, other seeds, another learning rate; nothing to compare or tabulate
    search = tmp_path / "search.json"
    alone = _run("benchmarks/finetune_parity.py", "--smoke", "--task=MRPC", "--seeds=1", "--first_seed=7",
                 "--only=albert_tf", "--learning_rate=3e-4", "--encoder_dropout=0.1", "--dev_curve_every=2",
                 "--warmup_steps=1",
                 f"--shared_data={shared}", f"--workdir={tmp_path}", f"--output={search}", timeout=1200)
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
    refused = subprocess.run([sys.executable, "benchmarks/finetune_parity.py", "--markdown", str(search)], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "one side" in refused.stderr
    # run_classifier in lockstep: the transformers head saved as both sides' start, the same batches, classifier
    # dropout 0: the same step losses and dev scores
    lock = _run("benchmarks/finetune_parity.py", "--smoke", "--task=MRPC", "--lockstep", "--seeds=1",
                f"--shared_data={shared}", f"--workdir={tmp_path}", timeout=1200)
    assert lock["mode"] == "lockstep" and lock["settings"]["classifier_dropout"] == 0.0
    (row,) = lock["seeds"]
    assert len(row["albert_tf"]["losses"]) == len(row["transformers_torch"]["losses"]) == 4
    assert lock["max_loss_difference"] < 1e-4
    assert row["albert_tf"]["metrics"] == pytest.approx(row["transformers_torch"]["metrics"], abs=1e-5)
    assert set(lock["paired_difference"]) == {"accuracy", "f1", "dev_loss"}
    dev = shared / "ner" / "wnut17" / "emerging.dev.conll"
    if dev.is_file():  # run_tagging in lockstep against AlbertForTokenClassification (benchmarks/parity_tagging.py)
        lock = _run("benchmarks/finetune_parity.py", "--smoke", "--task=wnut17", "--lockstep", "--seeds=1",
                    f"--shared_data={shared}", f"--workdir={tmp_path}", timeout=1200)
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
                "--transformers_pad_embedding=trained", f"--shared_data={shared}", f"--workdir={tmp_path}",
                timeout=1200)
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
    proc = subprocess.run([sys.executable, "benchmarks/pretraining_parity.py", "--torch_only", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode != 0 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and expect in lines[0], proc.stderr


@pytest.mark.heavy
def test_activation_memory_smoke():
    """benchmarks/activation_memory.py on the tiny config: its processes run, the JSON has the two ratios the
    README reads and each process's floor, peak and step times."""
    out = _run("benchmarks/activation_memory.py", "--model=albert_tiny", "--seq=32", "--batch=2",
               "--steps=1", "--repeats=1", "--check_largest=0")
    assert {"activation_memory_ratio", "step_time_ratio", "largest_batch"} <= set(out)
    assert out["step_time_ratio"] > 0
    for mode in ("without", "with"):
        (run,) = out["runs"][mode]
        assert run["recompute_activations"] == (mode == "with") and run["blocks"] == 1
        assert run["peak_bytes"] >= run["floor_bytes"] > run["weight_bytes"] > 0 and len(run["step_seconds"]) == 1
        assert len(run["losses"]) == 2 and all(math.isfinite(x) for x in run["losses"])


@pytest.mark.slow
@pytest.mark.parametrize("task", ["sst-2", "mrpc"])
def test_finetune_throughput_smoke_counts_padding_and_kernel_speed(task):
    from conftest import shared_path

    shared_path("glue", task.upper(), "train.tsv")
    shared_path("spm", "30k-clean.model")
    report = _run("benchmarks/finetune_throughput.py", "--smoke", "--task", task, "--only",
                  "albert_tf,albert_tf_packed_rows,albert_tf_bucketed,transformers_torch,transformers_grouped,keras_hub")
    _machine_ok(report)
    results = report["results"]
    assert set(results) == {"albert_tf", "albert_tf_packed_rows", "albert_tf_bucketed", "transformers_torch",
                            "transformers_grouped", "keras_hub"}
    for name, r in results.items():
        assert r["padding_fraction"] == pytest.approx(1 - r["real_tokens"] / r["computed_tokens"], abs=1e-3), name
        assert r["matmul_gflops"] > 0
    # the same examples: packed and bucketed albert-tf hold the same tokens; transformers' tokenizer (the exported
    # files of the same SentencePiece model) within 1% of them
    assert results["albert_tf"]["real_tokens"] == results["albert_tf_bucketed"]["real_tokens"]
    assert results["albert_tf_packed_rows"]["computed_tokens"] == results["albert_tf"]["computed_tokens"]
    # the same packed steps, the same weights and seed: real-token dense layers train the same losses to rounding
    assert results["albert_tf_packed_rows"]["first_loss"] == pytest.approx(results["albert_tf"]["first_loss"],
                                                                           abs=1e-3)
    assert results["transformers_torch"]["real_tokens"] == pytest.approx(results["albert_tf"]["real_tokens"], rel=0.01)
    # packing computes no more positions than one example per row; keras-hub pads every row to 128
    assert results["albert_tf"]["computed_tokens"] <= results["albert_tf_bucketed"]["computed_tokens"]
    assert results["keras_hub"]["computed_tokens"] == report["examples"] * 128
    # packed albert-tf's dense layers run on the real tokens only; every other method's on all computed positions
    assert results["albert_tf"]["dense_tokens"] == results["albert_tf"]["real_tokens"]
    assert results["albert_tf"]["dense_padding_fraction"] == 0.0
    for name in set(results) - {"albert_tf"}:
        assert results[name]["dense_tokens"] == results[name]["computed_tokens"], name
    speed = {k: v["examples_per_s"] for k, v in results.items()}
    best_peer = max(speed["transformers_torch"], speed["keras_hub"])
    assert report["albert_tf_over_best_peer"] == pytest.approx(speed["albert_tf"] / best_peer, abs=2e-3)
    matmul = results["albert_tf"]["matmul_gflops"] / results["transformers_torch"]["matmul_gflops"]
    assert report["tf_over_torch_matmul"] == pytest.approx(matmul, rel=0.02)
    per_kernel = speed["albert_tf"] / speed["transformers_torch"] / report["tf_over_torch_matmul"]
    assert report["albert_tf_over_transformers_per_matmul_speed"] == pytest.approx(per_kernel, rel=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["squad_v1", "squad_v2", "race"])
def test_finetune_throughput_reading_tasks_smoke(task):
    """The default command of ``--task=squad_v1|squad_v2|race`` (every implementation, on the smoke model): the same
    windows (choices) on every side, albert-tf packs them and runs the dense layers on the real tokens only,
    transformers pads to max_seq_length or to the batch's longest."""
    pytest.importorskip("transformers")
    from conftest import shared_path

    shared_path("squad", "dev-v2.0-subset-a.json")
    shared_path("race", "RACE", "train")
    report = _run("benchmarks/finetune_throughput.py", "--smoke", "--task", task, "--only",
                  "albert_tf,albert_tf_bucketed,transformers_max_length,transformers_torch")
    _machine_ok(report)
    results = report["results"]
    seq = 512 if task == "race" else 384
    assert report["max_seq_length"] == seq and report["example"] == ("questions" if task == "race" else "windows")
    real = {r["real_tokens"] for r in results.values()}
    assert len(real) == 1, results  # the same tokens on every side
    assert results["transformers_max_length"]["mean_padded_length"] == seq
    assert results["transformers_torch"]["computed_tokens"] <= results["transformers_max_length"]["computed_tokens"]
    assert results["albert_tf"]["computed_tokens"] <= results["albert_tf_bucketed"]["computed_tokens"]
    assert results["albert_tf"]["dense_tokens"] == results["albert_tf"]["real_tokens"]
    for name in set(results) - {"albert_tf"}:
        assert results[name]["dense_tokens"] == results[name]["computed_tokens"], name
    # albert-tf's packed real-token step and its bucketed one train the same loss from the same weights
    assert results["albert_tf"]["first_loss"] == pytest.approx(results["albert_tf_bucketed"]["first_loss"], abs=1e-3)
    speed = {k: v["examples_per_s"] for k, v in results.items()}
    best = max(speed["transformers_max_length"], speed["transformers_torch"])
    assert report["albert_tf_over_best_peer"] == pytest.approx(speed["albert_tf"] / best, abs=2e-3)
    assert report["albert_tf_over_transformers_per_matmul_speed"] == pytest.approx(
        speed["albert_tf"] / best / report["tf_over_torch_matmul"], rel=0.01)


@pytest.mark.slow
def test_serving_exports_smoke_every_task_answers_alike():
    """benchmarks/serving_exports.py's default command on the smoke model: every task's real-token export answers
    as the every-position export does (SQuAD's texts and spans identical, the others within 1e-5)."""
    from conftest import shared_path

    for parts in (("glue", "MRPC", "dev.tsv"), ("squad", "dev-v2.0-subset-a.json"), ("race", "RACE", "dev"),
                  ("ner", "wnut17", "emerging.dev.conll")):
        shared_path(*parts)
    report = _run("benchmarks/serving_exports.py", "--smoke", timeout=1200)
    _machine_ok(report)
    assert set(report["results"]) == {"classifier", "squad_v1", "squad_v2", "race", "tagging"}
    for task, r in report["results"].items():
        assert r["answers_identical"], task
        assert r["max_output_difference"] < 1e-5, task
        assert r["mixed_speedup"] == pytest.approx(
            r["median_mixed_request_s"]["every_position"] / r["median_mixed_request_s"]["real_tokens"], rel=0.01)


@pytest.mark.heavy
def test_packing_padding_counts_follow_from_the_methods():
    from conftest import shared_path

    shared_path("glue", "SST-2", "train.tsv")
    shared_path("race")
    report = _run("benchmarks/packing_padding.py", "--examples", "256")
    for name, row in report["tasks"].items():
        if "skipped" in row:
            continue
        positions = {m: row[m]["computed_positions"] for m in ("fixed", "bucketed", "dynamic", "grouped", "packed")}
        # every method computes at least the real tokens; a bucket is never shorter than the batch's longest
        assert positions["fixed"] >= positions["bucketed"] >= positions["dynamic"], name
        for method, count in positions.items():
            assert 0 <= row[method]["padding_fraction"] < 1, (name, method)
            assert count >= row["max_length"], (name, method)
        assert row["packed_over_bucketed"] == pytest.approx(positions["bucketed"] / positions["packed"], abs=1e-3)
    assert {"sst-2", "mrpc", "wnut17"} <= set(report["tasks"])


@pytest.mark.slow
def test_packing_dev_smoke_from_pretrained_weights(tmp_path):
    """packing_dev.py's pretrained start: both modes fine-tune the given weights with finetune_parity's settings, and
    the summary is the statistics of the runs."""
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
    proc = subprocess.run([sys.executable, "benchmarks/packing_dev.py", "--steps=4", "--seeds=2",
                           "--train_examples=256", f"--init_checkpoint={prefix}", f"--albert_config_file={config_file}",
                           f"--output={saved}"], capture_output=True, text=True, cwd=ROOT, timeout=1200,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RANDOM initialisation" not in proc.stderr  # every run starts from the given weights
    report = json.loads(proc.stdout)
    assert json.loads(saved.read_text()) == report
    assert report["start"] == "pretrained"
    assert report["settings"] == {"optimizer": "adamw", "learning_rate": 1e-4, "classifier_dropout": 0.1}
    for mode in ("first_fit", "none"):
        runs = report["runs"][mode]
        assert [r["seed"] for r in runs] == [0, 1] and all(0.0 <= r["dev_accuracy"] <= 1.0 for r in runs)
        assert report[f"{mode}_mean"] == pytest.approx(sum(r["dev_accuracy"] for r in runs) / 2, abs=1e-4)
    diffs = [a["dev_accuracy"] - b["dev_accuracy"] for a, b in zip(report["runs"]["first_fit"], report["runs"]["none"])]
    assert report["packed_minus_unpacked"] == pytest.approx(sum(diffs) / 2, abs=1e-4)
    bad = subprocess.run([sys.executable, "benchmarks/packing_dev.py", f"--init_checkpoint={prefix}"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "go together" in bad.stderr


@pytest.mark.slow
def test_serving_batches_smoke_every_variant_gives_the_bucketed_answers():
    from conftest import shared_path

    shared_path("glue", "MRPC", "dev.tsv")
    shared_path("spm", "30k-clean.model")
    report = _run("benchmarks/serving_batches.py", "--smoke")
    _machine_ok(report)
    assert set(report["median_request_s"]) == {"bucketed", "sorted_split", "real_tokens", "packed"}
    # the same answers in request order: sorting puts them back, real tokens and packing change no output
    for name, difference in report["max_logit_difference_from_bucketed"].items():
        assert difference < 1e-4, name
    assert report["min_length"] < report["mean_length"] < report["max_length"] <= 128  # a mixed-length batch
    for name in ("sorted_split", "real_tokens", "packed"):
        assert report[f"{name}_over_bucketed"] == pytest.approx(
            report["median_request_s"]["bucketed"] / report["median_request_s"][name], rel=0.01)


@pytest.mark.slow
def test_serving_latency_default_runs_every_variant():
    """The script's default command (every variant, with the profile and op traces) end to end, with the fewest
    requests: a change to the package that breaks a variant fails here (the fused-QKV variants that patched a layer
    broke silently when the layer's signature changed)."""
    pytest.importorskip("transformers")
    from benchmarks.serving_latency import VARIANTS

    report = _run("benchmarks/serving_latency.py", "--runs", "3", "--warmup", "1", "--profile_runs", "2",
                  "--max_foreign", "1.0", timeout=1200)
    assert report["albert_tf_latency_over_transformers"] > 0
    assert report["sanity"]["input_ids_identical"] and report["results"]["albert_tf"]["median_ms"] > 0
    for name in VARIANTS:
        assert report["variants"][name]["median_ms"] > 0, name
    assert {"albert_tf", "transformers"} <= set(report["profile"])
    # the dense work of the long pair (128 tokens, ALBERT-base): albert-tf's last FFN runs on [CLS] alone
    ours = report["profile"]["albert_tf"]["op_breakdown"]["dense_positions"]["by_shape"]
    theirs = report["profile"]["transformers"]["op_breakdown"]["dense_positions"]["by_shape"]
    assert (ours["128x3072"], ours["1x3072"], theirs["128x3072"]) == (11, 1, 12)


# ------------------------------------------------------------------ every other script's default path, smallest shapes


@pytest.mark.slow
def test_encoder_throughput_smoke_every_implementation():
    report = _run("benchmarks/encoder_throughput.py", "--smoke", "--steps", "2", "--warmup", "0")
    _machine_ok(report)
    assert report["benchmark"] == "smoke_train_step" and (report["batch"], report["seq_len"]) == (2, 16)
    assert set(report["results"]) == {"albert_tf", "albert_tf_xla", "keras_hub", "keras_hub_xla", "transformers_torch"}
    for r in report["results"].values():
        assert len(r["step_times_s"]) == 2
        # median_step_s is rounded to 0.1 ms, which on smoke-sized steps (~4 ms) is more than 1%
        assert abs(2 / r["examples_per_s"] - r["median_step_s"]) <= 6e-5
    best_ours = max(r["examples_per_s"] for k, r in report["results"].items() if k.startswith("albert_tf"))
    best_peer = max(r["examples_per_s"] for k, r in report["results"].items() if not k.startswith("albert_tf"))
    assert math.isclose(report["best_albert_tf_over_best_peer"], best_ours / best_peer, rel_tol=0.01)


@pytest.mark.slow  # a TensorFlow start-up and a traced step: out of the fast tier
def test_profile_encoder_smoke():
    report = _run("benchmarks/profile_encoder.py", "--config", "albert_tiny", "--batch", "2", "--seq", "16",
                  "--runs", "1")
    assert (report["config"], report["batch"], report["seq"]) == ("albert_tiny", 2, 16)
    assert report["by_op_type_s"] and 0 < report["matmul_share_of_op_time"] <= 1
    assert report["sum_of_op_times_s"] >= max(report["by_op_type_s"].values())


@pytest.mark.slow  # a TensorFlow start-up and a traced step: out of the fast tier
def test_tokenizer_parity_smoke(shared_data):
    report = _run("benchmarks/tokenizer_parity.py", f"--input_file={shared_data / 'text' / 'nltk_genesis'}",
                  f"--spm_model_file={shared_data / 'spm' / '30k-clean.model'}", "--max_lines=200",
                  "--batch_size=64", "--max_seq_length=64")
    _machine_ok(report)
    assert report["lines"] == 200 and report["pairs"] == 199
    assert report["single_agree"] + sum(report["single_diff_causes"].values()) == 200
    assert report["single_agreement_pct"] == 100.0 and report["pair_agreement_pct"] == 100.0, report["differences"]


@pytest.mark.slow  # a TensorFlow start-up and a traced step: out of the fast tier
def test_tokenizer_throughput_smoke(shared_data):
    report = _run("benchmarks/tokenizer_throughput.py", f"--input_file={shared_data / 'text' / 'nltk_genesis'}",
                  f"--spm_model_file={shared_data / 'spm' / '30k-clean.model'}", "--max_lines=100",
                  "--batch_sizes=32", "--repeats=1")
    _machine_ok(report)
    assert report["lines"] == 100 and report["path"] == "spm"
    assert {"graph_tokenize_b32", "graph_pack_b32"} <= set(report["results"])


@pytest.mark.slow
def test_pretraining_learning_smoke(shared_data, tmp_path):
    report = _run("benchmarks/pretraining_learning.py", f"--shared_data={shared_data}", f"--workdir={tmp_path}",
                  "--max_train_mb=0.2", "--num_train_steps=4", "--train_batch_size=4", "--eval_every=2",
                  "--max_eval_steps=1", "--dupe_factor=1")
    assert report["steps_done"] == 4 and [p["step"] for p in report["curve"]][-1] == 4
    assert 0 <= report["final"]["masked_lm_accuracy"] <= 1
    assert report["chance"]["sentence_order_accuracy_balanced"] == 0.5


@pytest.mark.slow
def test_pretraining_data_smoke(shared_data, tmp_path):
    text = tmp_path / "text" / "genesis"
    text.mkdir(parents=True)
    for i, path in enumerate(sorted((shared_data / "text" / "nltk_genesis").iterdir())[:2]):
        (text / f"{i}.txt").write_bytes(path.read_bytes())
    report = _run("benchmarks/pretraining_data.py", f"--text_dir={tmp_path / 'text'}",
                  f"--spm_model_file={shared_data / 'spm' / '30k-clean.model'}", "--official_mb=0.05", "--repeats=1",
                  "--skip_4x", "--skip_beam", "--shuffle_buffer_size=100")
    assert report["setup"]["subset_bytes"] > 0
    assert report["ours_1x_w1"]["instances_per_s"] > 0 and report["ours_1x_w2"]["instances_per_s"] > 0


@pytest.mark.slow
def test_tflite_quantization_smoke_on_a_trained_run(shared_data, tmp_path):
    config = tmp_path / "albert_tiny_30k.json"
    from albert_tf.config import AlbertConfig

    AlbertConfig.from_name("albert_tiny").replace(vocab_size=30000).to_json_file(str(config))
    run = tmp_path / "mrpc"
    proc = subprocess.run(
        [sys.executable, "run_classifier.py", f"--data_dir={shared_data / 'glue'}", "--task_name=MRPC",
         f"--output_dir={run}", f"--albert_config_file={config}",
         f"--spm_model_file={shared_data / 'spm' / '30k-clean.model'}", "--max_seq_length=128", "--do_train",
         "--train_step=2", "--save_checkpoints_steps=2", "--train_batch_size=8"],
        capture_output=True, text=True, cwd=ROOT, timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = _run("benchmarks/tflite_quantization.py", f"--mrpc_run={run}", f"--shared_data={shared_data}",
                  "--runs=1", "--warmup=0", f"--workdir={tmp_path / 'work'}")
    variants = report["mrpc"]["variants"]
    assert set(variants) == {"savedmodel", "tflite_none", "tflite_dynamic", "tflite_float16"}
    assert variants["tflite_dynamic"]["size_ratio_to_float32"] < 0.5
    assert abs(variants["tflite_none"]["metric_difference_to_savedmodel"]["accuracy"]) < 0.01


def test_every_benchmark_script_has_a_smoke_test_here():
    """A benchmark without a test breaks unseen when the package changes under it (serving_latency.py did):
    every script in benchmarks/ (a file with a ``__main__`` block; the others are the scripts' helpers, run through
    them) is run by a test of this file."""
    text = pathlib.Path(__file__).read_text(encoding="utf-8")
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")
                     if '__name__ == "__main__"' in p.read_text(encoding="utf-8"))
    assert len(scripts) >= 17
    assert [s for s in scripts if f'"benchmarks/{s}"' not in text] == []
