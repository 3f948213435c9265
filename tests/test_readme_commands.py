"""The README's commands work as written in a fresh shell after the README's own set-up lines (``make demo`` /
``make test`` made ``.venv``; ``source .venv/bin/activate`` puts the commands on PATH): every command a README block
starts with is found there and answers ``--help``, every flag it is given is one of its flags, and the
``albert_prepare_text`` example runs on text laid out as it expects."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest
from conftest import ROOT

BLOCK = re.compile(r"```bash\n(.*?)```", re.S)


def blocks() -> list[str]:
    return BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))


def setup_lines() -> list[str]:
    """The Quickstart block's lines after its make targets (which this test's environment has already run)."""
    first = [line.split("#")[0].strip() for line in blocks()[0].splitlines()]
    return [line for line in first if line and not line.startswith("make ")]


def commands() -> list[list[str]]:
    """Each command line of the blocks after the Quickstart (continuation lines joined), as words."""
    out = []
    for block in blocks()[1:]:
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line and not line.startswith("make "):
                out.append(shlex.split(line))
    return out


def fresh_shell(script: str, cwd) -> subprocess.CompletedProcess:
    """``script`` after the README's set-up lines, in a new login-less bash with a PATH that has no venv on it."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    setup = "\n".join(f"cd {shlex.quote(str(ROOT))} && {line} && cd - >/dev/null" for line in setup_lines())
    return subprocess.run(["bash", "--noprofile", "--norc", "-c", f"set -e\n{setup}\n{script}"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_readme_has_set_up_lines_and_commands():
    assert setup_lines() == ["source .venv/bin/activate"]
    assert {words[0] for words in commands()} >= {"albert_prepare_text", "run_classifier"}


@pytest.mark.slow
def test_every_readme_command_is_on_path_and_takes_its_flags(tmp_path):
    if not (ROOT / ".venv" / "bin" / "activate").exists():
        pytest.skip("no .venv in the checkout (the README's make targets make it)")
    for words in commands():
        result = fresh_shell(f"{shlex.quote(words[0])} --help", tmp_path)
        assert result.returncode == 0, (words[0], result.stderr[-2000:])
        for flag in (w.split("=")[0] for w in words[1:] if w.startswith("--")):
            assert re.search(rf"(^|\s){re.escape(flag)}\b|--\[no\]{re.escape(flag[2:])}\b", result.stdout), (
                words[0], flag)


@pytest.mark.slow
def test_the_prepare_text_example_runs_as_written(tmp_path):
    if not (ROOT / ".venv" / "bin" / "activate").exists():
        pytest.skip("no .venv in the checkout (the README's make targets make it)")
    from albert_tf.data.sample_corpus import generate_documents

    (tmp_path / "books").mkdir()
    for i, document in enumerate(generate_documents(6, seed=0)):
        (tmp_path / "books" / f"book{i}.txt").write_text(" ".join(document) + "\n\n", encoding="utf-8")
    (example,) = [w for w in commands() if w[0] == "albert_prepare_text"]
    result = fresh_shell(shlex.join(example), tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "corpus.txt").stat().st_size > 0
