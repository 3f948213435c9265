"""Ctrl-C and SIGTERM stop a command within seconds even while a long library call runs in C++ (SentencePiece
training, the TFLite converter), with exit status 130 / 143 and nothing new under a final name.

Such a call cannot be cut short by a Python signal handler in the process that makes it; the commands run it in a
child process (``albert_tf.interrupts.in_child``) that the signal abandons.
"""

from __future__ import annotations

import os
import pathlib
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import ROOT
from test_interrupts import children

from albert_tf import interrupts

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0", PYTHONUNBUFFERED="1")
SIGNALS = ((signal.SIGINT, 130), (signal.SIGTERM, 143))


def _stop(command: list[str], cwd, signum: int, event, what: str):
    """Start ``command``; once ``event(process, output so far)`` holds (looked at every 10 ms), send it ``signum``;
    returns (exit status, seconds from the signal to the exit, stdout + stderr). The wait for the event is bounded
    by a timeout that only a hang reaches; the command ending first fails the test, naming ``what`` it waited for."""
    proc = subprocess.Popen(command, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 600
        while not event(proc, "".join(output)):
            assert proc.poll() is None, f"the command ended before {what}: " + "".join(output)[-3000:]
            assert time.monotonic() < deadline, f"no {what} in 600 s: " + "".join(output)[-3000:]
            time.sleep(0.01)
        proc.send_signal(signum)
        sent = time.monotonic()
        proc.wait(timeout=60)
        elapsed = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=60)
    return proc.returncode, elapsed, "".join(output)


def _in_child_call(after_line: str = ""):
    """The event of a command waiting on the child process of ``albert_tf.interrupts.in_child`` (the long library
    call; spawned, so its command line names ``spawn_main``), after a line holding ``after_line`` (if given)."""

    def running(proc, output):
        if after_line not in output:
            return False
        for child in children(proc.pid):
            try:
                if b"spawn_main" in pathlib.Path(f"/proc/{child}/cmdline").read_bytes():
                    return True
            except OSError:
                pass
        return False

    return running


def _square(x):
    return x * x


def _fail(message):
    raise ValueError(message)


def test_in_child_returns_the_value_and_raises_the_error():
    assert interrupts.in_child(_square, 7) == 49
    with pytest.raises(ValueError, match="no such thing"):
        interrupts.in_child(_fail, "no such thing")


def test_in_child_names_a_child_killed_without_an_answer():
    with pytest.raises(RuntimeError, match="ended without a result"):
        interrupts.in_child(os._exit, 9)


@pytest.fixture(scope="module")
def long_corpus(tmp_path_factory):
    """Made-up words in 600,000 lines: SentencePiece needs about a minute on it here."""
    path = tmp_path_factory.mktemp("long_corpus") / "corpus.txt"
    rng = random.Random(0)
    syllables = ["ka", "to", "mi", "ra", "ne", "su", "lo", "pi", "den", "vor", "ul", "esh", "tra", "gim", "bo", "fe"]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(30000)]
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(600_000):
            f.write(" ".join(rng.choices(words, k=rng.randint(5, 20))) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("signum,status", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_train_vocab_stops_within_seconds_and_publishes_nothing(tmp_path, long_corpus, signum, status):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "albert_tf.cli.train_vocab", f"--input={long_corpus}",
               f"--model_prefix={out}/vocab", "--vocab_size=16000"]
    # SentencePiece trains in the command's child process (``interrupts.in_child``): the signal goes once it is
    # there, when the command waits on it, a minute of training ahead.
    code, elapsed, output = _stop(command, tmp_path, signum, _in_child_call(), "the training's child process")
    assert code == status, output[-3000:]
    assert elapsed < 5, elapsed
    assert "Traceback" not in output, output[-3000:]
    assert output.rstrip().splitlines()[-1].startswith("interrupted while training the vocabulary; nothing was "
                                                       "published"), output[-2000:]
    assert sorted(os.listdir(out)) == [], os.listdir(out)  # no .model / .vocab, no scratch folder left
    lingering = subprocess.run(["pgrep", "-f", f"{out}/vocab"], capture_output=True, text=True).stdout.split()
    assert lingering == [], "a child is still training"


@pytest.fixture(scope="module")
def classifier_checkpoint(tmp_path_factory):
    """A tiny SST-2 classifier checkpoint with its tokenizer and config."""
    import numpy as np
    from bad_inputs import fixtures

    from albert_tf.checkpoints.trainer_layout import write_weights
    from albert_tf.config import AlbertConfig
    from albert_tf.tasks.glue.model import AlbertClassifier

    paths = fixtures.build(tmp_path_factory.mktemp("tflite_inputs"))
    classifier = AlbertClassifier(AlbertConfig.from_json_file(paths["config"]), num_labels=2)
    ids = np.ones((1, 8), "int32")
    classifier({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids})
    return paths, write_weights(classifier, os.path.join(paths["root"], "sst2", "ckpt-5"), step=5)


@pytest.mark.slow
@pytest.mark.parametrize("signum,status", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_export_stops_during_the_tflite_conversion_and_publishes_nothing(tmp_path, classifier_checkpoint, signum,
                                                                         status):
    paths, checkpoint = classifier_checkpoint
    export_dir = tmp_path / "export"
    command = [sys.executable, str(ROOT / "export_savedmodel.py"), "--task_name=SST-2", f"--checkpoint={checkpoint}",
               f"--albert_config_file={paths['config']}", f"--spm_model_file={paths['spm']}",
               "--max_seq_length=16", f"--export_dir={export_dir}", "--tflite", "--quantize=dynamic"]
    # The conversion line comes when the SavedModel is written; the child process then imports TensorFlow, loads
    # the export and converts it, seconds of work. The signal goes once that child is there: the command waits on
    # it, which is the long call this test is about.
    code, elapsed, output = _stop(command, tmp_path, signum, _in_child_call("to TFLite"), "the converter's child")
    assert code == status, output[-3000:]
    assert elapsed < 5, elapsed
    assert "Traceback" not in output, output[-3000:]
    assert "nothing was published" in output.rstrip().splitlines()[-1], output[-2000:]
    assert not export_dir.exists() or os.listdir(export_dir) == [], list(export_dir.rglob("*"))


@pytest.fixture(scope="module")
def large_task_inputs(tmp_path_factory):
    """The bad-input corpus's SST-2, SQuAD 2.0 and RACE inputs, each grown until its feature caching takes seconds:
    60,000 SST-2 sentences, 5,000 copies of the SQuAD paragraph (15,000 questions), 20,000 RACE passages."""
    import json
    import shutil

    from bad_inputs import fixtures

    paths = fixtures.build(tmp_path_factory.mktemp("caching_inputs"))
    root = tmp_path_factory.mktemp("large")
    rng = random.Random(0)
    sentences = [line for line in open(paths["corpus"], encoding="utf-8").read().splitlines() if line.strip()]
    (root / "glue" / "SST-2").mkdir(parents=True)
    with open(root / "glue" / "SST-2" / "train.tsv", "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n")
        f.writelines(f"{rng.choice(sentences)}\t{i % 2}\n" for i in range(60_000))
    shutil.copy(os.path.join(paths["glue"], "SST-2", "dev.tsv"), root / "glue" / "SST-2" / "dev.tsv")
    squad = json.loads(open(os.path.join(paths["squad"], "train.json"), encoding="utf-8").read())
    paragraph = squad["data"][0]["paragraphs"][0]
    copies = [{"context": paragraph["context"], "qas": [{**qa, "id": f"{qa['id']}-{i}"} for qa in paragraph["qas"]]}
              for i in range(5000)]
    squad["data"][0]["paragraphs"] = copies
    (root / "squad").mkdir()
    (root / "squad" / "train.json").write_text(json.dumps(squad), encoding="utf-8")
    passage = json.loads((pathlib.Path(paths["race"]) / "RACE" / "train" / "middle" / "1.txt").read_text("utf-8"))
    for split in ("train", "dev"):
        folder = root / "race" / "RACE" / split / "middle"
        folder.mkdir(parents=True)
        for i in range(20_000 if split == "train" else 2):
            (folder / f"{i}.txt").write_text(json.dumps({**passage, "id": f"middle{i}.txt"}), encoding="utf-8")
    return {**paths, "glue": str(root / "glue"), "squad": str(root / "squad"), "race": str(root / "race")}


@pytest.mark.slow
@pytest.mark.parametrize("signum,status", SIGNALS, ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("runner", ["rc", "rs", "rr"])
def test_each_runner_stops_within_seconds_during_feature_caching(tmp_path, large_task_inputs, runner, signum,
                                                                 status):
    from bad_inputs.test_bad_inputs import _args

    out = tmp_path / "out"
    command = [sys.executable, *_args(runner, {"train_step": "100000"}, large_task_inputs, str(out))]
    # The signal goes once the first cache file is being written under its temporary name (``<cache>.tmp-<pid>``):
    # the command is converting and caching its features, seconds of work ahead.
    def caching(proc, output):
        return out.is_dir() and any(".tmp-" in p.name for p in out.rglob("*"))

    code, elapsed, output = _stop(command, large_task_inputs["root"], signum, caching, "a cache being written")
    assert code == status, output[-3000:]
    assert elapsed < 5, elapsed
    assert "Traceback" not in output and "step 1" not in output, output[-3000:]
    published = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert published == [], published  # no cache file, no run.json, no lock: nothing under a final name
