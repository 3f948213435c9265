"""A pretrained preset name wherever a checkpoint path goes: the runners (no config or vocabulary flags), the
converter, the encoder export, the models' ``from_preset``, and the README's engineer command exactly as written.
A loopback server plays storage.googleapis.com; the test counts its requests.

The README's command runs as a user types it (bash, the console script on ``PATH``); the other command lines are
about what the commands do with a name, not how they start, so they run through the fork server
(``tests/commands.py``), each console script's file run as ``__main__``."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import commands
import numpy as np
import pytest

from tests.conftest import shared_path
from tests.fresh_process import run_reporting_tensorflow
from tests.preset_server import PresetServer, cache_env, presets_file, sha256, tarball, write_release

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = pathlib.Path(sys.executable).parent
ENCODER_LINE = re.compile(r"encoder weights: loaded (\d+), missing (\d+), unused (\d+), shape mismatches (\d+)")


#: The released model's size: ``albert_tiny`` cut to one layer of one attention head. What these tests check does
#: not depend on the size, and the README's engineer command fine-tunes it as written: 800 steps of 32 sequences of
#: 512 tokens, whose cost grows with the layers and the heads (attention over 512 positions).
RELEASE_CONFIG = {"num_hidden_layers": 1, "num_attention_heads": 1}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A tiny model with the official 30k vocabulary, published as ``albert_tiny.tar.gz`` in Google's layout."""
    folder = write_release(tmp_path_factory.mktemp("release") / "albert_tiny", shared_path("spm", "30k-clean.model"),
                           RELEASE_CONFIG)
    return {"folder": folder, "archive": tarball(folder, "albert_tiny")}


@pytest.fixture
def server(release):
    with PresetServer() as s:
        s.files["albert_tiny.tar.gz"] = release["archive"]
        yield s


def runner_env(env: dict) -> dict:
    """``env`` with this interpreter's console scripts on ``PATH`` and the checkout importable."""
    return {**env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "PYTHONPATH": str(ROOT)}


def run(args: list[str], env: dict, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=runner_env(env), cwd=str(cwd), capture_output=True, text=True, timeout=900)


def run_forked(args: list[str], env: dict, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    """``args`` (a console script of this interpreter and its arguments) through the fork server: the script file
    run as ``__main__``, as its shebang would."""
    return commands.run([str(BIN / args[0]), *args[1:]], env=runner_env(env), cwd=cwd, timeout=900)


def encoder_counts(stderr: str) -> tuple[int, ...]:
    found = ENCODER_LINE.findall(stderr)
    assert found, stderr[-3000:]
    return tuple(int(x) for x in found[-1])


@pytest.mark.slow
def test_runner_converter_and_export_take_a_preset_name(tmp_path, server, release):
    entry = {"url": server.url("albert_tiny.tar.gz"), "sha256": sha256(release["archive"])}
    env = cache_env(tmp_path, presets_file(tmp_path / "presets.json", {"tiny_release": entry}))
    glue = shared_path("glue")
    common = [f"--data_dir={glue}", "--task_name=MRPC", "--init_checkpoint=tiny_release", "--do_train",
              "--train_step=4", "--max_seq_length=32", "--train_batch_size=8", "--save_checkpoints_steps=4"]
    first = run_forked(["run_classifier", *common, "--output_dir=out1"], env, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    loaded, missing, unused, mismatched = encoder_counts(first.stderr)
    assert loaded > 0 and (missing, unused, mismatched) == (0, 0, 0)
    assert server.gets("albert_tiny.tar.gz") == 1
    assert "RANDOM initialisation" not in first.stderr
    # Online again, another command: the cache answers (no second request).
    convert = run_forked(["albert_convert_checkpoint", "convert", "--input=tiny_release", "--output=hf",
                          "--output_format=huggingface"], env, tmp_path)
    assert convert.returncode == 0, convert.stderr[-3000:]
    assert server.gets("albert_tiny.tar.gz") == 1  # the cache answered
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == (release["folder"] / "30k-clean.model").read_bytes()
    offline = {**env, "ALBERT_TF_OFFLINE": "1"}
    third = run_forked(["run_classifier", *common, "--output_dir=out3"], offline, tmp_path)
    assert third.returncode == 0, third.stderr[-3000:]
    assert encoder_counts(third.stderr)[1:] == (0, 0, 0)
    export = run_forked(["export_savedmodel", "--task=encoder", "--init_checkpoint=tiny_release",
                         "--max_seq_length=32", "--export_dir=hub"], offline, tmp_path)
    assert export.returncode == 0, export.stderr[-3000:]
    assert (tmp_path / "hub" / "encoder" / "saved_model.pb").exists()
    unknown = run_forked(["run_classifier", *common[:2], "--init_checkpoint=albert_huge_v9", "--output_dir=out4",
                          "--do_train"], offline, tmp_path)
    assert unknown.returncode != 0
    assert "Traceback" not in unknown.stderr
    assert "--init_checkpoint albert_huge_v9: no such file or folder, and not a pretrained preset name" in \
        unknown.stderr
    assert server.gets("albert_tiny.tar.gz") == 1


def test_models_from_preset_load_the_released_weights(tmp_path, monkeypatch, server, release):
    import tensorflow as tf

    from albert_tf import AlbertClassifier, AlbertEncoder

    entry = {"url": server.url("albert_tiny.tar.gz"), "sha256": sha256(release["archive"])}
    monkeypatch.setenv("ALBERT_TF_PRESETS", presets_file(tmp_path / "presets.json", {"tiny_release": entry}))
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path / "cache"))
    reader = tf.train.load_checkpoint(str(release["folder"] / "model.ckpt-best"))
    expected = reader.get_tensor("bert/embeddings/word_embeddings")

    def word_embeddings(model) -> np.ndarray:
        return next(v.numpy() for v in model.weights if "word_embeddings" in v.path)

    encoder = AlbertEncoder.from_preset("tiny_release")
    np.testing.assert_array_equal(word_embeddings(encoder), expected)
    classifier = AlbertClassifier.from_preset("tiny_release", num_labels=3)
    np.testing.assert_array_equal(word_embeddings(classifier), expected)
    assert server.gets("albert_tiny.tar.gz") == 1
    with pytest.raises(Exception, match="unknown preset 'tiny_release'"):
        AlbertEncoder.from_preset("tiny_release", load_weights=False)  # no model config of that name
    random = AlbertEncoder.from_preset("albert_tiny")  # a model config: random weights, nothing fetched
    assert word_embeddings(random).shape == (1000, 16) and server.gets("albert_tiny.tar.gz") == 1


def readme_engineer_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("**Engineer, fine-tuning a released model"):]
    block = section[section.index("```bash\n") + len("```bash\n"):]
    return block[: block.index("```")].strip()


@pytest.mark.slow
def test_readme_engineer_command_runs_as_written(tmp_path, server, release):
    """The README's first engineer command, verbatim, in an empty directory that holds only the GLUE data it names
    (``glue/MRPC``); ``albert_base_v2`` is redirected by ``$ALBERT_TF_PRESETS`` to the tiny release (a mirror)."""
    command = readme_engineer_command()
    assert "--init_checkpoint=albert_base_v2" in command
    assert "--albert_config_file" not in command and "--spm_model_file" not in command
    work = tmp_path / "work"
    (work / "glue").mkdir(parents=True)
    (work / "glue" / "MRPC").symlink_to(shared_path("glue", "MRPC"), target_is_directory=True)
    entry = {"url": server.url("albert_tiny.tar.gz"), "sha256": sha256(release["archive"])}
    env = cache_env(tmp_path, presets_file(tmp_path / "presets.json", {"albert_base_v2": entry}))
    proc = run(["bash", "-c", command], env, work)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert encoder_counts(proc.stderr)[1:] == (0, 0, 0)
    assert server.gets("albert_tiny.tar.gz") == 1
    exports = sorted((work / "out" / "mrpc" / "export").iterdir())
    assert exports and (exports[-1] / "saved_model.pb").exists()
    assert (work / "out" / "mrpc" / "eval_results.json").exists() and (work / "out" / "mrpc" / "MRPC.tsv").exists()


# Per runner: (arguments with one input mistake, the words of its one error line, the same arguments with the
# mistake mended). The inputs are written by ``_write_inputs``; none of them needs the pretrained model.
INPUT_MISTAKES = {
    "run_classifier": (["--task_name=SST-2", "--data_dir=glue_bad", "--do_train"],
                       "glue_bad/SST-2/train.tsv:3: label '7' is not one of ['0', '1']",
                       ["--task_name=SST-2", "--data_dir=glue", "--do_train"]),
    "run_squad": (["--train_file=cut.json", "--do_train"], "cut.json: not JSON",
                  ["--train_file=train.json", "--do_train", "--version_2_with_negative"]),
    "run_race": (["--data_dir=race_bad", "--do_train"], "answer 'E' is not one of A, B, C, D",
                 ["--data_dir=race", "--do_train"]),
    "run_pretraining": (["--input_file=missing-*.tfrecord"], "--input_file: no file matches 'missing-*.tfrecord'",
                        ["--input_file=records-*.tfrecord"]),
    "run_pretraining:records": (["--input_file=records-*.tfrecord", "--max_seq_length=128"],
                                "records-0.tfrecord: record 0: 'input_ids' has 512 values but --max_seq_length=128",
                                ["--input_file=records-*.tfrecord"]),
}


def _write_inputs(folder: pathlib.Path) -> None:
    import itertools
    import json

    for name, label in (("glue", "0"), ("glue_bad", "7")):
        (folder / name / "SST-2").mkdir(parents=True)
        (folder / name / "SST-2" / "train.tsv").write_text(f"sentence\tlabel\nit is good\t1\nit is bad\t{label}\n")
    context = "The sun was bright over the hills."
    question = {"id": "q1", "question": "What was bright?", "is_impossible": False,
                "answers": [{"text": "The sun", "answer_start": 0}]}
    squad = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": [question]}]}]}
    (folder / "train.json").write_text(json.dumps(squad))
    (folder / "cut.json").write_text(json.dumps(squad)[:40])
    for (name, answer), split in itertools.product((("race", "A"), ("race_bad", "E")), ("train", "dev")):
        (folder / name / "RACE" / split / "middle").mkdir(parents=True)
        passage = {"id": "middle1.txt", "article": context, "questions": ["What was bright?"],
                   "options": [["The sun", "The rain", "The river", "The night"]], "answers": [answer]}
        (folder / name / "RACE" / split / "middle" / "1.txt").write_text(json.dumps(passage))
    _write_pretraining_records(folder / "records-0.tfrecord")  # the defaults' lengths: 512 and 20


def _write_pretraining_records(path: pathlib.Path) -> None:
    """Two records with every feature run_pretraining reads, at its default lengths (its ids are checked against
    the preset's vocabulary only after the fetch)."""
    import tensorflow as tf

    from albert_tf.data.pretraining.schema import feature_lengths

    with tf.io.TFRecordWriter(str(path)) as writer:
        for label in (0, 1):
            feature = {}
            for name, length in feature_lengths(512, 20).items():
                if name == "masked_lm_weights":
                    feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * length))
                else:
                    values = [label] if name == "next_sentence_labels" else [1] * length
                    feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


@pytest.mark.parametrize("command", sorted(INPUT_MISTAKES))
def test_a_runner_checks_its_input_files_before_it_fetches_a_preset(tmp_path, command):
    """A mistake in the data a runner reads answers before the pretrained preset is downloaded (which can take
    minutes) and before TensorFlow starts: one line naming the file, and no request to the server. The same command
    with the mistake mended does fetch (the server is asked, and answers 404), so the order is what kept the first
    one off the network."""
    bad, words, good = INPUT_MISTAKES[command]
    command = command.split(":")[0]
    _write_inputs(tmp_path)
    with PresetServer() as server:  # holds no file: a fetch gets 404
        entry = {"url": server.url("tiny.tar.gz"), "sha256": "0" * 64}
        env = cache_env(tmp_path, presets_file(tmp_path / "presets.json", {"tiny_remote": entry}))
        common = ["--init_checkpoint=tiny_remote", "--output_dir=out"]
        refused = run_reporting_tensorflow(f"albert_tf.cli.{command}", command, [*bad, *common], tmp_path,
                                           runner_env(env))
        assert refused.returncode == 2, (refused.stdout[-1000:], refused.stderr[-2000:])
        assert words in refused.stderr and refused.stderr.count("error:") == 1, refused.stderr[-1000:]
        assert refused.stdout.rstrip().endswith("no tensorflow"), refused.stdout[-300:]
        assert server.requests == []
        fetched = run_reporting_tensorflow(f"albert_tf.cli.{command}", command, [*good, *common], tmp_path,
                                           runner_env(env))
        assert fetched.returncode == 2, (fetched.stdout[-1000:], fetched.stderr[-2000:])
        assert "preset 'tiny_remote'" in fetched.stderr and "404" in fetched.stderr, fetched.stderr[-1000:]
        assert server.gets("tiny.tar.gz") >= 1
    assert not (tmp_path / "out").exists()
