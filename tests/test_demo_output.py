"""What a new user sees from the demo: the project's own lines only (no warning from setuptools, TensorFlow, absl
or Keras), a pretraining that learns both tasks, a closing summary with its SVG learning curve, and the same command
working a second time: every stage (the README's ``make demo``, its fine-tuning steps reduced) run twice in one work
dir, each time as a user starts it (a fresh interpreter, no ``TF_CPP_*`` in the environment: the demo quiets
TensorFlow itself); then a stage stopped half-way run again from its start. That third run is about the stage
records, not the start-up, so it goes through the fork server (``tests/commands.py``), whose TensorFlow C++ log
level is its own (so its C++ log lines are not the command's to hide).

Where the time goes (the demo's ``== stage ... done in`` lines): the first run's pretraining (the default 600
steps, which the learning check needs: SOP is learned between steps 200 and 400); the second run reuses every stage
(seconds after the start-up); the third redoes the fine-tuning stage only. The fine-tuning stage's learning, from a
random start, is ``test_run_classifier_demo.py``'s.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import commands
import pytest
from conftest import ROOT

# Lines that libraries print and the demo must not: absl/TF C++ log prefixes (I1126 22:47:37.6 ...), Python warnings,
# TensorFlow's Python logger, deprecation notices.
FOREIGN = re.compile(r"^[IWEF]\d{4} \d\d:\d\d|Warning\b|WARNING|^W\d{4}|deprecat|tensorflow:", re.IGNORECASE)
#: A line of TensorFlow's C++ logging (``E0000 00:00:1.2 123 file.cc:52] ...``). For a command run through the fork
#: server its level is the server's (``TF_CPP_MIN_LOG_LEVEL``, read when TensorFlow loads), not the command's.
CPP_LOG = re.compile(r"^[IWEF]\d{4} [\d:. ]+ \d+ [\w./-]+\.(cc|h):\d+\]")
#: ``make demo`` with its fine-tuning cut to two checkpoints of two steps (its pretraining is the default's).
DEMO_ARGS = ["--finetune_steps=4"]


def demo_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("TF_CPP", "ALBERT_TF_VERBOSE"))}


def run_demo(workdir) -> subprocess.CompletedProcess:
    """``make demo`` (every stage) with the fine-tuning step count reduced, as a user starts it."""
    return subprocess.run([sys.executable, "-m", "albert_tf.demo", f"--workdir={workdir}", *DEMO_ARGS],
                          capture_output=True, text=True, cwd=ROOT, env=demo_env(), timeout=1800)


def assert_clean_run(result: subprocess.CompletedProcess, cpp_log_lines_too: bool = True) -> list[str]:
    """Exit 0, no traceback, no library line, and the closing summary; returns the lines from the summary on."""
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    foreign = [line for line in output.splitlines()
               if FOREIGN.search(line) and (cpp_log_lines_too or not CPP_LOG.search(line))]
    assert not foreign, "\n".join(foreign[:20])
    lines = result.stdout.rstrip().splitlines()
    done = next(i for i, line in enumerate(lines) if line.startswith("== demo done in"))
    return lines[done:]


@pytest.mark.slow
def test_demo_learns_prints_only_its_own_lines_ends_with_a_summary_and_runs_twice(tmp_path):
    work = tmp_path / "demo"
    first = run_demo(work)
    summary = assert_clean_run(first)
    # The pretraining learns both tasks: held-out MLM and SOP accuracy (documents never seen in training) beat the
    # best constant predictions, as the stage recorded them.
    from albert_tf.demo import pretrain

    learned = json.loads((work / "stages" / "pretrain.json").read_text(encoding="utf-8"))["result"]
    after, base = learned["after"], learned["baselines"]
    assert learned["steps"] == pretrain.DEFAULT_STEPS
    assert after["masked_lm_accuracy"] > base["masked_lm_accuracy_majority_token"] + 0.03
    assert after["sentence_order_accuracy"] > base["sentence_order_accuracy_majority_label"] + 0.2
    assert any("learning curve (SVG)" in line for line in summary)
    assert any("SavedModel" in line for line in summary)
    svg = ET.parse(work / "pretrain_curve.svg").getroot()
    assert len(svg.findall("{http://www.w3.org/2000/svg}polyline")) == 2  # held-out MLM and SOP accuracy

    again = run_demo(work)  # every stage finished: each reused, with the figures the first run recorded
    assert assert_clean_run(again)[1:] == summary[1:]  # all but the time
    for stage in ("table1", "pretraining_data", "pretrain", "finetune"):
        assert f"== stage {stage}: finished by an earlier run" in again.stdout
    for pattern in (r"held-out MLM accuracy [0-9.]+ -> [0-9.]+", r"-> label \d[^,]*, probabilities \[[^]]*\]"):
        assert re.findall(pattern, again.stdout) == re.findall(pattern, first.stdout) != []

    # The fine-tuning stage stopped half-way (its run folder written, its record not): run again from its start.
    (work / "stages" / "finetune.json").unlink()
    third = commands.run(["-m", "albert_tf.demo", f"--workdir={work}", *DEMO_ARGS], cwd=ROOT, env=demo_env(),
                         timeout=1800)
    assert_clean_run(third, cpp_log_lines_too=False)
    assert "== stage finetune: finished by an earlier run" not in third.stdout
    for stage in ("table1", "pretraining_data", "pretrain"):
        assert f"== stage {stage}: finished by an earlier run" in third.stdout
    assert "left by an earlier run of this stage that did not finish" in third.stdout
    assert (work / "stages" / "finetune.json").exists()


def test_the_foreign_line_check_sees_library_output():
    for line in ("I1126 22:47:37.647765 140 experiment.py:116] strategy", "W0000 00:00:1.2 123 x.cc:1] slow",
                 "E0000 00:00:1795 123 cuda_platform.cc:52] failed call to cuInit",
                 "/x/keras/layer.py:1: UserWarning: Do not pass", "WARNING:tensorflow:From x: is deprecated"):
        assert FOREIGN.search(line), line
        assert bool(CPP_LOG.search(line)) == (".cc:" in line), line  # TensorFlow's C++ lines, not absl's Python ones
    assert not FOREIGN.search("step 25/600 | loss 6.066 | 70.4 examples/s")
