"""Resume is all or nothing: every runner, rerun on a trained output folder damaged in one way, refuses with one line
naming the damaged file and leaves every file of the folder byte-identical (never a silent start from step 0 that
writes new ``ckpt-N`` files over the trained ones)."""

from __future__ import annotations

import concurrent.futures
import os
import pathlib
import shutil
import subprocess

import commands
import pytest
from bad_inputs import fixtures
from bad_inputs.test_bad_inputs import BASE, CLI, _args

from albert_tf.config import AlbertConfig

RUNNERS = ("rp", "rc", "rs", "rr")
OUTPUT = {"rp": "run", "rc": "rc", "rs": "rs", "rr": "rr"}  # BASE's --output_dir under {out}
DATA = "ckpt-2.data-00000-of-00001"


def _run(command: str, changes: dict, paths: dict, out: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONHASHSEED": "0"}
    return commands.run(_args(command, changes, paths, out), cwd=paths["root"], env=env, timeout=600)


def _cut(path: pathlib.Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _state_naming(name: str) -> bytes:
    return f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n'.encode()


def damage(kind: str, folder: pathlib.Path, other: pathlib.Path) -> str:
    """Damage the trained ``folder`` one way; returns the file name the refusal must name."""
    if kind == "state-names-missing":
        (folder / "checkpoint").write_bytes(_state_naming("ckpt-7"))
        return "ckpt-7"
    if kind == "state-binary":
        (folder / "checkpoint").write_bytes(bytes(range(256)) * 4)
        return "checkpoint"
    if kind == "state-deleted":
        (folder / "checkpoint").unlink()
        return "checkpoint"
    if kind == "index-cut":
        _cut(folder / "ckpt-2.index")
        return "ckpt-2.index"
    if kind == "data-cut":
        _cut(folder / DATA)
        return DATA
    if kind == "other-config":  # the latest checkpoint from a run of the same command with another config
        for suffix in (".index", ".data-00000-of-00001"):
            shutil.copy(other / f"ckpt-2{suffix}", folder / f"ckpt-4{suffix}")
        (folder / "checkpoint").write_bytes(_state_naming("ckpt-4"))
        return "ckpt-4"
    raise AssertionError(kind)


KINDS = ("state-names-missing", "state-binary", "state-deleted", "index-cut", "data-cut", "other-config")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """``{(runner, kind): (completed rerun, file the refusal must name, files of the folder changed by it)}``."""
    paths = fixtures.build(tmp_path_factory.mktemp("resume_inputs"))
    other_config = str(pathlib.Path(paths["root"]) / "albert_config_other.json")
    config = AlbertConfig.from_json_file(paths["config"])
    config.replace(intermediate_size=2 * config.intermediate_size).to_json_file(other_config)

    def train(job):
        runner, which = job
        out = str(tmp_path_factory.mktemp(f"{runner}_{which}") / "out")
        changes = {"albert_config_file": other_config} if which == "other" else {}
        result = _run(runner, changes, paths, out)
        assert result.returncode == 0, result.stderr[-3000:]
        return pathlib.Path(out) / OUTPUT[runner]

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        trained = dict(zip([(r, w) for r in RUNNERS for w in ("own", "other")],
                           pool.map(train, [(r, w) for r in RUNNERS for w in ("own", "other")])))

    def one(job):
        runner, kind = job
        out = tmp_path_factory.mktemp(f"{runner}_{kind}") / "out"
        folder = out / OUTPUT[runner]
        shutil.copytree(trained[(runner, "own")], folder)
        named = damage(kind, folder, trained[(runner, "other")])
        before = fixtures.checksums(str(folder), skip=())
        result = _run(runner, {}, paths, str(out))
        after = fixtures.checksums(str(folder), skip=())
        changed = sorted(os.path.relpath(p, folder) for p in set(before) | set(after) if before.get(p) != after.get(p))
        return result, named, changed

    jobs = [(r, k) for r in RUNNERS for k in KINDS]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return dict(zip(jobs, pool.map(one, jobs)))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("runner", RUNNERS)
def test_damaged_training_state_is_refused_and_left_as_it_was(runner, kind, outcomes):
    result, named, changed = outcomes[(runner, kind)]
    output = result.stdout + result.stderr
    assert result.returncode not in (0,) and result.returncode > 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr[-3000:]
    assert named in errors[0], errors[0]
    assert not changed, f"files of the output folder changed: {changed}"


def test_every_runner_has_a_base_command():
    assert set(RUNNERS) <= set(BASE) and set(RUNNERS) <= set(CLI)
