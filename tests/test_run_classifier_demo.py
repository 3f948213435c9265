"""The demo's fine-tuning stage: derived task -> fine-tune -> export -> raw sentences through the SavedModel."""

from __future__ import annotations

import argparse

import pytest

from albert_tf.data import sample_corpus
from albert_tf.demo import finetune


def test_weather_task_is_balanced_and_in_sst2_layout(tmp_path):
    counts = sample_corpus.write_weather_task(str(tmp_path), seed=3, per_class=50)
    assert counts == {"train": 60, "dev": 20, "test": 20}
    from albert_tf.data import glue

    proc = glue.get_processor("sst-2")
    train = proc.get_train_examples(str(tmp_path))
    labels = [e.label for e in train] + [e.label for e in proc.get_dev_examples(str(tmp_path))]
    assert 0.35 < labels.count("1") / len(labels) < 0.65
    for e in train:  # the label is what the sentence says about the weather
        assert (e.label == "1") == (sample_corpus.SUNNY in e.text_a)
    assert len(proc.get_test_examples(str(tmp_path))) == 20


@pytest.mark.slow
def test_finetune_stage_answers_raw_sentences(tmp_path):
    result = finetune.run(str(tmp_path), argparse.Namespace(seed=12345, glue_dir=None))
    assert result["best"]["accuracy"] >= 0.9
    assert [a["label"] for a in result["answers"]] == ["1", "0"]  # sunny, snow
