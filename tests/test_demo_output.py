"""What a new user sees from the demo: the project's own lines only (no warning from setuptools, TensorFlow, absl
or Keras), a closing summary with its SVG learning curve, and the same command working a second time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from conftest import ROOT

# Lines that libraries print and the demo must not: absl/TF C++ log prefixes (I1126 22:47:37.6 ...), Python warnings,
# TensorFlow's Python logger, deprecation notices.
FOREIGN = re.compile(r"^[IWEF]\d{4} \d\d:\d\d|Warning\b|WARNING|^W\d{4}|deprecat|tensorflow:", re.IGNORECASE)


def run_demo(workdir, steps: int = 30) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_CPP", "ALBERT_TF_VERBOSE"))}
    return subprocess.run(
        [sys.executable, "-m", "albert_tf.demo", f"--workdir={workdir}", "--stages=pretraining_data,pretrain",
         f"--pretrain_steps={steps}"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=1200,
    )


@pytest.mark.slow
def test_demo_prints_only_its_own_lines_ends_with_a_summary_and_runs_twice(tmp_path):
    work = tmp_path / "demo"
    first = run_demo(work)
    output = first.stdout + first.stderr
    assert first.returncode == 0, output[-3000:]
    foreign = [line for line in output.splitlines() if FOREIGN.search(line)]
    assert not foreign, "\n".join(foreign[:20])
    lines = first.stdout.rstrip().splitlines()
    done = next(i for i, line in enumerate(lines) if line.startswith("== demo done in"))
    assert any("learning curve (SVG)" in line for line in lines[done:])
    svg = ET.parse(work / "pretrain_curve.svg").getroot()
    assert len(svg.findall("{http://www.w3.org/2000/svg}polyline")) == 2  # held-out MLM and SOP accuracy

    again = run_demo(work)  # nothing left to train: the same figures from what the first run recorded
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    figure = re.compile(r"held-out MLM accuracy [0-9.]+ -> [0-9.]+")
    assert figure.findall(again.stdout) == figure.findall(first.stdout) != []


def test_the_foreign_line_check_sees_library_output():
    for line in ("I1126 22:47:37.647765 140 experiment.py:116] strategy", "W0000 00:00:1.2 123 x.cc:1] slow",
                 "E0000 00:00:1795 123 cuda_platform.cc:52] failed call to cuInit",
                 "/x/keras/layer.py:1: UserWarning: Do not pass", "WARNING:tensorflow:From x: is deprecated"):
        assert FOREIGN.search(line), line
    assert not FOREIGN.search("step 25/600 | loss 6.066 | 70.4 examples/s")
