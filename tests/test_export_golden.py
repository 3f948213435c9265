"""Behaviour unchanged across the redesign of the exports: a raw-text SavedModel of each task (classifier,
regression, SQuAD v1, SQuAD v2, RACE), built from the same seed and asked the same questions, answers as the stored
answers of the code before it (``tests/data/export_golden.json``, written by ``tests/export_golden.py`` in a
checkout of the commit it names)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from conftest import shared_path

from tests.export_golden import answers

GOLDEN = pathlib.Path(__file__).parent / "data" / "export_golden.json"


@pytest.mark.slow  # five exports in a fresh process (~40 s)
def test_every_task_export_answers_as_before_the_redesign():
    stored = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = answers(str(shared_path("spm", "30k-clean.model")))
    assert set(got) == set(stored["answers"]) == {"classifier", "regression", "squad_v1", "squad_v2", "race"}
    for task, outputs in stored["answers"].items():
        assert set(got[task]) == set(outputs), task
        for name, expected in outputs.items():
            value = got[task][name]
            if np.asarray(expected).dtype.kind == "f":
                np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-5, err_msg=f"{task} {name}")
            else:
                assert value == expected, (task, name)
