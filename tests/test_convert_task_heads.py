"""Conversions keep a fine-tuned model's task head, or refuse to drop it without ``--encoder_only``.

For each task (classifier, regression, SQuAD v1, SQuAD v2, RACE, tagging) a short real fine-tuning run is converted
from its checkpoint to every other format and back; the model read back must give the run's outputs, hold the same
variables and, for the tagger, the same tag names (a Hugging Face folder keeps them in ``id2label``). The Hugging
Face output is checked with transformers' own task class where transformers has one (SQuAD v2's head has none:
refused, or written as ``AlbertModel`` with ``--encoder_only``); keras-hub holds the classifier and regression heads
(``AlbertTextClassifier``) and refuses the others.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from conftest import shared_path, write_small_config

from albert_tf.checkpoints import CheckpointError
from albert_tf.checkpoints.convert import convert
from albert_tf.checkpoints.native import read_native
from albert_tf.checkpoints.report import model_official_arrays
from albert_tf.config import AlbertConfig
from albert_tf.tasks.registry import task_heads

pytestmark = pytest.mark.slow

HEADS = tuple(task_heads())
TASKS = ("classifier", "regression", "squad_v1", "squad_v2", "race", "tagging")
#: The transformers class of each head (None: transformers has none).
TRANSFORMERS = {"classifier": "AlbertForSequenceClassification", "regression": "AlbertForSequenceClassification",
                "squad_v1": "AlbertForQuestionAnswering", "squad_v2": None, "race": "AlbertForMultipleChoice",
                "tagging": "AlbertForTokenClassification"}
KERAS_HUB = ("classifier", "regression")
SEQ = 64


def _fine_tune(task: str, root: pathlib.Path) -> str:
    """A two-step fine-tuning run of ``task`` on real data; returns its last checkpoint."""
    config = write_small_config(root / "albert_config_small.json")
    spm = str(shared_path("spm", "30k-clean.model"))
    out = root / task
    common = dict(albert_config_file=config, spm_model_file=spm, output_dir=str(out), do_train=True)
    if task in ("classifier", "regression"):
        from albert_tf.tasks import glue
        from albert_tf.tasks.glue.task import run

        run(glue.make_config(data_dir=str(shared_path("glue")), task_name="MRPC" if task == "classifier" else "STS-B",
                             max_seq_length=SEQ, train_batch_size=8, learning_rate=1e-3, train_step=2,
                             save_checkpoints_steps=2, cached_dir=str(root / f"cache_{task}"), **common))
    elif task.startswith("squad"):
        from albert_tf.evaluation.squad_metrics import answerable_subset
        from albert_tf.tasks import squad
        from albert_tf.tasks.squad.task import run

        data = json.loads(shared_path("squad", "dev-v2.0-subset-a.json").read_text())
        v2 = task == "squad_v2"
        train = root / f"{task}.json"
        train.write_text(json.dumps(data if v2 else {"version": "1.1", "data": answerable_subset(data["data"])}))
        run(squad.make_config(train_file=str(train), version_2_with_negative=v2, max_seq_length=SEQ, doc_stride=32,
                              max_query_length=16, num_train_steps=2, train_batch_size=8, learning_rate=1e-3,
                              save_checkpoints_steps=2, steps_per_loop=1, **common))
    elif task == "tagging":
        from albert_tf.tasks import tagging
        from albert_tf.tasks.tagging.task import run

        sentences = shared_path("ner", "wnut17", "wnut17train.conll").read_text("utf-8").split("\n\n")[:32]
        train = root / "wnut17_head.conll"
        train.write_text("\n\n".join(sentences) + "\n\n", encoding="utf-8")
        run(tagging.make_config(train_file=str(train), max_seq_length=SEQ, num_train_steps=2, train_batch_size=8,
                                learning_rate=1e-3, save_checkpoints_steps=2, **common))
    else:
        from albert_tf.tasks import race
        from albert_tf.tasks.race.task import run

        run(race.make_config(data_dir=str(shared_path("race")), max_seq_length=SEQ, max_qa_length=16,
                             num_train_steps=2, train_batch_size=4, learning_rate=1e-3, save_checkpoints_steps=2,
                             steps_per_loop=1, **common))
    return str(out / "ckpt-2")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    made: dict[str, str] = {}

    def get(task: str) -> str:
        if task not in made:
            made[task] = _fine_tune(task, root)
        return made[task]

    return get


def _inputs(task: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    shape = (3, 4, SEQ) if task == "race" else (3, SEQ)
    ids = rng.integers(5, 30000, size=shape).astype(np.int32)
    mask = np.zeros(shape, np.int32)
    for i, n in enumerate((SEQ, 40, 17)):
        mask[i, ..., :n] = 1
    segments = np.zeros(shape, np.int32)
    segments[..., 10:] = 1
    ids[..., 0] = 2  # [CLS]
    out = {"input_ids": ids * mask, "input_mask": mask, "segment_ids": segments * mask}
    if task == "squad_v2":
        out["p_mask"] = 1 - mask
    return out


def _outputs(model, task: str) -> dict[str, np.ndarray]:
    result = model(_inputs(task), training=False)
    result = result if isinstance(result, dict) else {"logits": result}
    return {k: np.asarray(v) for k, v in result.items()}


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert sorted(a) == sorted(b)
    for key in a:
        if a[key].dtype.kind in "iu":
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        else:
            np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)


def _read(path: str, config_path: str):
    return read_native(path, AlbertConfig.from_json_file(config_path))


def _run_model(ckpt: str):
    model, unplaced = _read(ckpt, str(pathlib.Path(ckpt).parent / "albert_config.json"))
    assert unplaced == []
    return model


@pytest.mark.parametrize("task", TASKS)
def test_run_checkpoint_is_read_with_its_head_and_its_run_config(task, runs, tmp_path):
    """From the checkpoint alone (no --albert_config_file): the run's config and model are found, and an official
    output holds the head (variables counted in the report)."""
    ckpt = runs(task)
    model = _run_model(ckpt)
    assert type(model).__name__ != "AlbertEncoder"
    logs = []
    convert(ckpt, "albert_tf", str(tmp_path / "o" / "model.ckpt"), "official", heads=HEADS, log=logs.append)
    n = len(model_official_arrays(model))
    assert f"loaded {n}, missing 0, unused 0" in logs[0]


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("middle", ["official", "keras", "huggingface", "keras_hub"])
def test_converted_there_and_back_gives_the_same_outputs(task, middle, runs, tmp_path):
    ckpt = runs(task)
    model = _run_model(ckpt)
    want = _outputs(model, task)
    count = len(model_official_arrays(model))
    fmt, there = {"official": ("official", tmp_path / "o" / "model.ckpt"), "keras": ("albert_tf", tmp_path / "m.keras"),
                  "huggingface": ("huggingface", tmp_path / "hf"), "keras_hub": ("keras_hub", tmp_path / "kh")}[middle]
    refused = (middle == "huggingface" and TRANSFORMERS[task] is None) or (middle == "keras_hub"
                                                                           and task not in KERAS_HUB)
    if middle == "keras_hub":
        pytest.importorskip("keras_hub")
    if refused:
        with pytest.raises(CheckpointError, match="head has no .* equivalent .*pass --encoder_only") as e:
            convert(ckpt, "albert_tf", str(there), fmt, heads=HEADS, log=lambda line: None)
        assert "\n" not in str(e.value) and not there.exists()
        logs = []
        result = convert(ckpt, "albert_tf", str(there), fmt, heads=HEADS, encoder_only=True, log=logs.append)
        assert result.dropped and any(f"left out (--encoder_only): {len(result.dropped)} head variables" in line
                                      for line in logs)
        return
    convert(ckpt, "albert_tf", str(there), fmt, heads=HEADS, log=lambda line: None)
    back = tmp_path / "back" / "ckpt-1"
    logs = []
    convert(str(there), fmt, str(back), "albert_tf", heads=HEADS, log=logs.append)
    assert f"loaded {count}, missing 0, unused 0" in logs[0], logs[0]
    again, unplaced = _read(str(back), str(back.parent / "albert_config.json"))
    assert unplaced == [] and type(again) is type(model) and len(model_official_arrays(again)) == count
    assert getattr(again, "labels", None) == getattr(model, "labels", None)  # the tagger's tag names
    _same(_outputs(again, task), want)


@pytest.mark.parametrize("task", [t for t in TASKS if TRANSFORMERS[t]])
def test_transformers_task_class_gives_the_same_logits(task, runs, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    ckpt = runs(task)
    model = _run_model(ckpt)
    want = _outputs(model, task)
    convert(ckpt, "albert_tf", str(tmp_path / "hf"), "huggingface", heads=HEADS, log=lambda line: None)
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == [TRANSFORMERS[task]]
    theirs = getattr(transformers, TRANSFORMERS[task]).from_pretrained(str(tmp_path / "hf")).eval()
    x = _inputs(task)
    with torch.no_grad():
        out = theirs(input_ids=torch.tensor(x["input_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(x["input_mask"], dtype=torch.long),
                     token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long))
    if task == "squad_v1":
        got = {"start_logits": out.start_logits.numpy(), "end_logits": out.end_logits.numpy()}
        mask = x["input_mask"].astype(bool)  # transformers leaves padding logits unmasked, as albert-tf's v1 does
        for key in got:
            np.testing.assert_allclose(got[key][mask], want[key][mask], atol=1e-5, err_msg=key)
        return
    assert config.get("num_labels", len(config.get("id2label", {}))) == want["logits"].shape[-1] or task == "race"
    if task == "tagging":
        assert [config["id2label"][str(i)] for i in range(len(model.labels))] == model.labels
    np.testing.assert_allclose(out.logits.numpy(), want["logits"], atol=1e-5)


@pytest.mark.parametrize("task", TASKS)
def test_keras_file_of_each_task_model_converts_in_a_fresh_process(task, runs, tmp_path):
    """A ``.keras`` task model read by ``albert_convert_checkpoint`` in a new process (nothing imported first)."""
    ckpt = runs(task)
    convert(ckpt, "albert_tf", str(tmp_path / "m.keras"), "albert_tf", heads=HEADS, log=lambda line: None)
    script = pathlib.Path(sys.executable).with_name("albert_convert_checkpoint")
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "albert_tf.cli.convert_checkpoint"]
    done = subprocess.run([*argv, "convert", f"--input={tmp_path / 'm.keras'}", "--input_format=albert_tf",
                           f"--output={tmp_path / 'o' / 'model.ckpt'}", "--output_format=official"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    count = len(model_official_arrays(_run_model(ckpt)))
    assert f"loaded {count}" in done.stdout and "Traceback" not in done.stderr
