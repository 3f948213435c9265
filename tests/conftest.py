"""Shared test fixtures.

* ``shared_data`` / ``shared_path(...)``: the real data in ``../shared/data`` beside the
  project root (or ``$ALBERT_TF_SHARED_DATA``); tests that need it skip cleanly where it is
  absent, as in a user's fresh clone.
* ``@pytest.mark.slow`` tests run when ``CI`` is set or with ``--run-slow``.
"""

from __future__ import annotations

import os
import pathlib

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = pathlib.Path(__file__).resolve().parent.parent


def shared_data_dir() -> pathlib.Path | None:
    """The real-data folder, or None where this checkout has none beside it."""
    env = os.environ.get("ALBERT_TF_SHARED_DATA")
    candidate = pathlib.Path(env) if env else ROOT.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


def shared_path(*parts: str) -> pathlib.Path:
    """Path under the shared data folder; skips the calling test when it is absent."""
    base = shared_data_dir()
    if base is None:
        pytest.skip("../shared/data is not present (real-data test)")
    path = base.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data file missing: {'/'.join(parts)}")
    return path


def shared_reference(*parts: str) -> pathlib.Path:
    """Path under ``../shared/reference`` (golden files); skips where absent."""
    base = shared_data_dir()
    ref = (base.parent if base is not None else ROOT.parent / "shared") / "reference"
    path = ref.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared reference file missing: {'/'.join(parts)}")
    return path


GOLDEN = ROOT / "tests" / "data" / "official-tokenizer-golden.jsonl.gz"


def golden_cases() -> list[dict]:
    """The official tokenizer's outputs on 304 cases (``../shared/reference/official-tokenizer-golden.jsonl``,
    carried gzipped in ``tests/data`` so a fresh clone has it; ``test_golden_copy_is_the_reference`` checks the
    copy against the reference wherever ``../shared`` is present)."""
    import gzip
    import json

    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture
def shared_data() -> pathlib.Path:
    base = shared_data_dir()
    if base is None:
        pytest.skip("../shared/data is not present (real-data test)")
    return base


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow") or os.environ.get("CI"):
        return
    skip = pytest.mark.skip(reason="slow: set CI=1 or pass --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
