"""What a TPU needs, checked without one: every train/eval step compiles with XLA (``jit_compile=True``, the TPU
compiler's constraints: static shapes, no host ops in a step) and answers like the uncompiled step; the TPU
strategy connects only to remote TPUs; a missing TPU is one clear error.

The padded evaluation under two replicas is in ``test_padded_eval_distributed.py`` (fresh processes)."""

from __future__ import annotations

import json
import os

import commands
import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import ROOT, shared_path, write_small_config
from synthetic_records import write_synthetic_records

from albert_tf.config import AlbertConfig
from albert_tf.tasks import glue, race, squad, tagging
from albert_tf.tasks.glue.task import run as run_glue
from albert_tf.tasks.pretraining.task import PretrainingTask
from albert_tf.tasks.race.task import run as run_race
from albert_tf.tasks.squad.task import run as run_squad
from albert_tf.tasks.tagging.task import run as run_tagging
from albert_tf.training import strategy as strategy_lib
from albert_tf.training.optimizers import create_optimizer
from albert_tf.training.schedules import WarmupPolynomialDecay
from albert_tf.training.summaries import read_scalars
from albert_tf.training.trainer import Trainer, TrainerConfig

SEQ, PRED = 32, 5


def _xla_function(fn) -> bool:
    """Whether ``fn`` is a ``tf.function`` that XLA compiles as a whole."""
    return bool(getattr(fn, "_jit_compile", False))


def _pretraining_trainer(model_dir, records, jit_compile: bool) -> Trainer:
    keras.utils.set_random_seed(7)
    task = PretrainingTask(AlbertConfig.from_name("albert_tiny"), [records], [records], SEQ, PRED, seed=11,
                           shuffle_buffer_size=1)
    config = TrainerConfig(model_dir=str(model_dir), train_batch_size=8, num_train_steps=3, steps_per_loop=1,
                           save_checkpoints_steps=1000, gradient_accumulation_steps=2, eval_batch_size=16,
                           max_eval_steps=0, jit_compile=jit_compile)
    schedule = WarmupPolynomialDecay(1e-2, num_train_steps=100, num_warmup_steps=0)
    return Trainer(task, tf.distribute.OneDeviceStrategy("/cpu:0"), config,
                   lambda: create_optimizer("lamb", schedule))


@pytest.mark.heavy
def test_pretraining_step_compiles_whole_with_xla_and_trains_like_the_graph(tmp_path):
    """LAMB, two accumulated micro-batches and the update in one XLA cluster per step; evaluation compiled too;
    losses and metrics as without XLA. 37 records at eval batch 16: the last batch is padded (21 -> 16 + 5 + pad)."""
    records = str(write_synthetic_records(str(tmp_path / "r.tfrecord"), 37, SEQ, PRED, 1000, seed=3))
    plain = _pretraining_trainer(tmp_path / "plain", records, jit_compile=False)
    xla = _pretraining_trainer(tmp_path / "xla", records, jit_compile=True)
    assert xla.compiles_whole_step and not plain.compiles_whole_step
    plain.train()
    xla.train()
    assert int(xla.optimizer.iterations.numpy()) == 3
    for key in ("loss", "mlm_loss", "sop_loss"):
        a = [v for _, v in read_scalars(str(tmp_path / "plain" / "train"))[key]]
        b = [v for _, v in read_scalars(str(tmp_path / "xla" / "train"))[key]]
        np.testing.assert_allclose(b, a, rtol=1e-4, err_msg=key)
    assert _xla_function(xla.replica_functions["train"]) and not _xla_function(plain.replica_functions["train"])
    outputs_plain, batches = plain.collect_outputs("eval", "eval_outputs", 16)
    outputs_xla, _ = xla.collect_outputs("eval", "eval_outputs", 16)
    assert batches == 3 and _xla_function(xla.replica_functions["eval_outputs"])
    assert {k: v.shape[0] for k, v in outputs_xla.items()} == {k: v.shape[0] for k, v in outputs_plain.items()}
    assert all(v.shape[0] == 37 for v in outputs_xla.values())  # padding removed: one row per record
    metrics_plain, metrics_xla = plain.evaluate(), xla.evaluate()
    for key in ("masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy", "sentence_order_loss"):
        assert metrics_xla[key] == pytest.approx(metrics_plain[key], rel=1e-4, abs=1e-6), key


def _squad_file(tmp_path, n: int, answerable_only: bool) -> str:
    """The first ``n`` questions of subset-a (answerable ones only for a v1.1 file)."""
    data = json.loads(shared_path("squad", "dev-v2.0-subset-a.json").read_text())["data"]
    kept, articles = 0, []
    for article in data:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = [qa for qa in paragraph["qas"] if qa["answers"] or not answerable_only][: max(0, n - kept)]
            kept += len(qas)
            if qas:
                paragraphs.append(dict(paragraph, qas=qas))
        if paragraphs:
            articles.append(dict(article, paragraphs=paragraphs))
    path = tmp_path / f"squad-{n}-{'v1' if answerable_only else 'v2'}.json"
    path.write_text(json.dumps({"version": "v1.1" if answerable_only else "v2.0", "data": articles}))
    return str(path)


def _glue_head(tmp_path, train: int, dev: int) -> str:
    """A GLUE data folder holding STS-B's first ``train`` training and ``dev`` dev examples."""
    out = tmp_path / "glue" / "STS-B"
    if not out.is_dir():
        out.mkdir(parents=True)
        for split, n in (("train", train), ("dev", dev)):
            lines = shared_path("glue", "STS-B", f"{split}.tsv").read_text("utf-8").split("\n")
            (out / f"{split}.tsv").write_text("\n".join(lines[: n + 1]) + "\n", encoding="utf-8")  # the header too
    return str(out.parent)


def _conll_head(tmp_path, name: str, n: int) -> str:
    """The first ``n`` sentences of a WNUT 2017 file (sentences end at a blank line)."""
    out = tmp_path / name
    if not out.is_file():
        kept, sentences = [], 0
        for line in shared_path("ner", "wnut17", name).read_text("utf-8").split("\n"):
            kept.append(line)
            if not line.strip() and len(kept) > 1 and kept[-2].strip():
                sentences += 1
                if sentences == n:
                    break
        out.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return str(out)


def _task_run(name: str, tmp_path, jit_compile: bool) -> tuple[dict, str]:
    """Train 3 steps, evaluate, predict: the run summary and the output dir. No dropout anywhere (XLA draws other
    random numbers), so the two runs compute the same function. The data: what 3 training steps of 8 and 5 evaluation
    batches of 8 read (the heads of STS-B and WNUT 2017, 37 SQuAD questions, the shared RACE dev set); the two runs
    share the feature caches where the task has them."""
    spm = str(shared_path("spm", "30k-clean.model"))
    out = str(tmp_path / f"{name}-{'xla' if jit_compile else 'plain'}")
    common = dict(albert_config_file=write_small_config(tmp_path / "c.json", 128), spm_model_file=spm,
                  output_dir=out, do_train=True, do_eval=True, num_train_steps=3, steps_per_loop=3,
                  save_checkpoints_steps=3, learning_rate=1e-3, train_batch_size=8, eval_batch_size=8,
                  predict_batch_size=8, jit_compile=jit_compile, seed=5)
    if name == "glue":  # 3 steps of 8 training examples, 5 evaluation batches of 8
        summary = run_glue(glue.make_config(task_name="STS-B", data_dir=_glue_head(tmp_path, 64, 40), max_seq_length=64,
                                            max_eval_steps=5, classifier_dropout=0.0,
                                            cached_dir=str(tmp_path / "glue_cache"), **common))
    elif name in ("squad_v1", "squad_v2"):
        v2 = name == "squad_v2"
        data = _squad_file(tmp_path, 37, answerable_only=not v2)
        summary = run_squad(squad.make_config(train_file=data, predict_file=data, version_2_with_negative=v2,
                                              max_seq_length=128, doc_stride=64, max_query_length=32,
                                              dropout_prob=0.0, do_predict=True, **common))
    elif name == "tagging":  # packed training batches (unpadded=False under XLA); 5 dev batches of 8 windows
        summary = run_tagging(tagging.make_config(
            train_file=_conll_head(tmp_path, "wnut17train.conll", 128), max_eval_steps=5,
            dev_file=_conll_head(tmp_path, "emerging.dev.conll", 64), max_seq_length=64,
            classifier_dropout=0.0, **common))
    else:
        summary = run_race(race.make_config(data_dir=str(shared_path("race")), max_seq_length=64, max_qa_length=16,
                                            dropout_prob=0.0, **common))  # the shared data has no test split
    return summary, out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["glue", "squad_v1", "squad_v2", "race", "tagging"])
def test_fine_tuning_steps_compile_with_xla(tmp_path, name):
    """Each fine-tuning task's train, eval and predict steps under ``jit_compile=True`` (one XLA cluster per step)
    answer like the uncompiled steps: same training losses, same evaluation metrics."""
    (plain, plain_dir), (xla, xla_dir) = (_task_run(name, tmp_path, jit_compile=j) for j in (False, True))
    a, b = plain["eval"][-1], xla["eval"][-1]
    print(json.dumps({"plain": a, "xla": b}, default=str))
    assert plain["key_metric"] in a
    for metric, value in a.items():
        # Spearman ranks the near-tied scores of a 3-step model: float rounding reorders ties; the other metrics
        # (losses, Pearson, accuracies, F1, EM) must agree.
        if isinstance(value, float) and "seconds" not in metric and metric != "spearman":
            assert b[metric] == pytest.approx(value, rel=1e-3, abs=1e-3), metric
    losses = [[v for _, v in read_scalars(os.path.join(d, "train"))["loss"]] for d in (plain_dir, xla_dir)]
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4)
    if "predict" in plain:
        for metric, value in plain["predict"].get("scores", {}).items():
            if isinstance(value, float):
                assert xla["predict"]["scores"][metric] == pytest.approx(value, rel=1e-3, abs=1e-3), metric


def test_tpu_strategy_connects_only_to_remote_tpus(monkeypatch):
    """``--tpu=NAME`` / a grpc address: connect, then initialise; ``--tpu=local`` (TPU VM, Colab): initialise the
    host's chips without connecting (connecting there fails), as Model Garden's ``tpu_initialize``."""
    calls = []

    class Resolver:
        def __init__(self, tpu="", zone=None, project=None):
            self.tpu = tpu
            calls.append(("resolve", tpu, zone, project))

        def master(self):
            return "" if self.tpu in ("", "local") else f"grpc://{self.tpu}:8470"

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", Resolver)
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster", lambda r: calls.append(("connect", r.tpu)))
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system", lambda r: calls.append(("init", r.tpu)))
    monkeypatch.setattr(tf.distribute, "TPUStrategy", lambda r: ("TPUStrategy", r.tpu))
    assert strategy_lib.make_strategy("tpu", tpu="my-tpu", tpu_zone="us-central1-b") == ("TPUStrategy", "my-tpu")
    assert calls == [("resolve", "my-tpu", "us-central1-b", None), ("connect", "my-tpu"), ("init", "my-tpu")]
    calls.clear()
    assert strategy_lib.make_strategy("tpu", tpu="local") == ("TPUStrategy", "local")
    assert calls == [("resolve", "local", None, None), ("init", "local")]
    calls.clear()
    strategy_lib.make_strategy("tpu")
    assert ("connect", "") not in calls


_MISSING_TPU = """
from albert_tf.training import strategy
from albert_tf.training.run_config import RunError

try:
    strategy.make_strategy("tpu", tpu="local")
except RunError as e:
    print("RunError:", e)
"""


@pytest.mark.heavy
def test_missing_tpu_is_one_clear_error():
    """In a process of its own (the fork server's): TensorFlow's TPU initialisation clears the process's function
    and kernel caches and collects its garbage, slow in a test worker that holds what hundreds of tests left and
    quick in a fresh process."""
    done = commands.run(["-c", _MISSING_TPU], cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("RunError: --strategy=tpu, --tpu=local: no TPU answered"), done.stdout[-3000:]
