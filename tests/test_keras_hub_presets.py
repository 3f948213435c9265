"""keras-hub presets in and out (``albert_tf.checkpoints.keras_hub``), checked against keras-hub itself.

keras-hub's own models compute the reference outputs: a randomly initialised ``AlbertBackbone`` /
``AlbertTextClassifier`` saved with ``save_to_preset`` must give albert-tf's encoder and classifier the same
sequence output and logits on real MRPC sentences, and an albert-tf classifier fine-tuned on MRPC and converted
with ``--output_format=keras_hub`` must answer through ``AlbertTextClassifier.from_preset`` as albert-tf does, with
keras-hub's tokenizer giving albert-tf's ids.
"""

from __future__ import annotations

import csv
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from conftest import shared_path

keras_hub = pytest.importorskip("keras_hub")

from albert_tf.checkpoints import CheckpointError, detect_format, init_from_checkpoint, restore_pretrained  # noqa: E402
from albert_tf.checkpoints.convert import convert  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.modeling import AlbertEncoder  # noqa: E402
from albert_tf.tasks.glue.model import AlbertClassifier, classifier_logits  # noqa: E402
from albert_tf.tasks.registry import task_heads  # noqa: E402
from albert_tf.tokenization import FullTokenizer  # noqa: E402

SEQ = 128
HEADS = tuple(task_heads())


def mrpc_pairs(split: str = "dev") -> list[tuple[str, str]]:
    with open(shared_path("glue", "MRPC", f"{split}.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [(row[3], row[4]) for row in rows]


@pytest.fixture(scope="module")
def spm() -> str:
    return str(shared_path("spm", "30k-clean.model"))


@pytest.fixture(scope="module")
def tokenizer(spm) -> FullTokenizer:
    return FullTokenizer(do_lower_case=True, spm_model_file=spm)


def albert_features(pairs, tokenizer) -> dict[str, np.ndarray]:
    """albert-tf's packing of ``pairs`` ([CLS] a [SEP] b [SEP], padded to SEQ); every pair fits whole."""
    from albert_tf.tokenization.packing import pack_inputs

    cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    rows = []
    for a, b in pairs:
        ids_a = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(a))
        ids_b = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(b))
        assert len(ids_a) + len(ids_b) + 3 <= SEQ, (a, b)
        rows.append(pack_inputs(ids_a, ids_b, SEQ, cls_id=cls_id, sep_id=sep_id))
    return {k: np.asarray([r[k] for r in rows], np.int32) for k in ("input_ids", "input_mask", "segment_ids")}


def rows(ids) -> list:
    """keras-hub's tokenizer output (a list, or a ragged tensor) as lists of ids."""
    return ids.to_list() if hasattr(ids, "to_list") else list(ids)


def keras_hub_inputs(features: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"token_ids": features["input_ids"], "segment_ids": features["segment_ids"],
            "padding_mask": features["input_mask"]}


@pytest.fixture(scope="module")
def presets(tmp_path_factory, spm):
    """A randomly initialised keras-hub backbone (2 groups of 2 inner layers, E != H) and a 3-class classifier on
    it, each saved with ``save_to_preset``."""
    root = tmp_path_factory.mktemp("keras_hub")
    tok = keras_hub.models.AlbertTokenizer(proto=spm)
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=30000, num_layers=4, num_heads=4, embedding_dim=16, hidden_dim=32, intermediate_dim=64,
        num_groups=2, num_inner_repetitions=2, max_sequence_length=SEQ, dropout=0.1)
    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(tok, sequence_length=SEQ)
    classifier = keras_hub.models.AlbertTextClassifier(backbone, num_classes=3, preprocessor=preprocessor)
    backbone.save_to_preset(str(root / "backbone"))
    classifier.save_to_preset(str(root / "classifier"))
    return {"root": root, "backbone": backbone, "classifier": classifier,
            "backbone_dir": str(root / "backbone"), "classifier_dir": str(root / "classifier")}


@pytest.fixture(scope="module")
def sentences(tokenizer):
    return albert_features(mrpc_pairs()[:24], tokenizer)


def test_a_keras_hub_preset_is_told_from_a_hugging_face_folder(presets, tmp_path):
    assert detect_format(presets["backbone_dir"]) == "keras_hub"
    assert detect_format(presets["classifier_dir"]) == "keras_hub"
    hf = tmp_path / "hf"
    convert(presets["backbone_dir"], "keras_hub", str(hf), "huggingface", heads=HEADS, log=lambda line: None)
    assert detect_format(str(hf)) == "huggingface"


@pytest.mark.parametrize("holds", ["nothing", "files", "albert_config"])
def test_a_folder_of_neither_format_is_one_line_naming_what_it_holds(tmp_path, holds):
    folder = tmp_path / "folder"
    folder.mkdir()
    if holds == "files":
        (folder / "notes.txt").write_text("hello")
        (folder / "weights.bin").write_bytes(b"\0" * 8)
    elif holds == "albert_config":  # an albert_config.json saved as config.json: no model_type, no module
        AlbertConfig.from_name("albert_tiny").to_json_file(str(folder / "config.json"))
    with pytest.raises(CheckpointError) as e:
        detect_format(str(folder))
    message = str(e.value)
    assert "\n" not in message and "no checkpoint albert-tf reads" in message
    assert {"nothing": "an empty folder", "files": "notes.txt, weights.bin",
            "albert_config": "neither a Hugging Face config"}[holds] in message


@pytest.mark.heavy
def test_backbone_preset_loads_into_the_encoder_with_the_same_sequence_output(presets, sentences):
    config = AlbertConfig.from_dict({**AlbertConfig.from_name("albert_tiny").to_dict(), "vocab_size": 30000,
                                     "num_hidden_layers": 4, "num_hidden_groups": 2, "inner_group_num": 2,
                                     "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1})
    encoder = AlbertEncoder(config)
    report = restore_pretrained(encoder, presets["backbone_dir"])
    assert report.loaded and not report.missing and not report.unused and not report.shape_mismatches
    want = presets["backbone"](keras_hub_inputs(sentences))
    got = encoder(sentences)
    mask = sentences["input_mask"][..., None]
    np.testing.assert_allclose(np.asarray(got["sequence_output"]) * mask, np.asarray(want["sequence_output"]) * mask,
                               atol=1e-5)
    np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5)
    # from_preset takes the folder, with the config it holds
    same = AlbertEncoder.from_preset(presets["backbone_dir"])
    np.testing.assert_allclose(same(sentences)["pooled_output"], want["pooled_output"], atol=1e-5)


@pytest.mark.heavy
def test_classifier_preset_loads_with_its_head_everywhere_a_checkpoint_is_taken(presets, sentences):
    want = np.asarray(presets["classifier"](keras_hub_inputs(sentences)))
    from_preset = AlbertClassifier.from_preset(presets["classifier_dir"], num_labels=3)
    np.testing.assert_allclose(classifier_logits(from_preset(sentences)), want, atol=1e-5)
    config = from_preset.config
    restored = AlbertClassifier(config, num_labels=3)
    report = restore_pretrained(restored, presets["classifier_dir"])
    assert not report.missing and not report.unused and {"output_weights", "output_bias"} <= set(report.loaded)
    np.testing.assert_allclose(classifier_logits(restored(sentences)), want, atol=1e-5)
    initialised = AlbertClassifier(config, num_labels=3)
    report = init_from_checkpoint(initialised, presets["classifier_dir"])
    assert not report.missing and not report.unused
    np.testing.assert_allclose(classifier_logits(initialised(sentences)), want, atol=1e-5)


@pytest.mark.heavy
def test_keras_hub_round_trip_and_hugging_face_keep_the_classifier(presets, sentences, tmp_path, spm):
    want = np.asarray(presets["classifier"](keras_hub_inputs(sentences)))
    logs = []
    convert(presets["classifier_dir"], "keras_hub", str(tmp_path / "back"), "keras_hub", heads=HEADS,
            spm_model_file=spm, log=logs.append)
    assert "missing 0, unused 0" in logs[0]
    back = keras_hub.models.TextClassifier.from_preset(str(tmp_path / "back"))
    assert type(back).__name__ == "AlbertTextClassifier"
    np.testing.assert_allclose(back(keras_hub_inputs(sentences)), want, atol=1e-5)
    convert(presets["classifier_dir"], "keras_hub", str(tmp_path / "hf"), "huggingface", heads=HEADS,
            spm_model_file=spm, log=logs.append)
    hf = AlbertClassifier.from_preset(str(tmp_path / "back"), num_labels=3)  # keras-hub output read back too
    np.testing.assert_allclose(classifier_logits(hf(sentences)), want, atol=1e-5)


@pytest.mark.heavy
def test_keras_hub_tokenizer_written_by_albert_tf_gives_albert_tf_ids(tokenizer, spm):
    """The rewritten SentencePiece model: every MRPC dev and train sentence (numbers with commas, quotes,
    accents, capitals) and a few hard cases get the official ids through keras-hub's tokenizer."""
    from albert_tf.checkpoints.keras_hub_tokenizer import preprocessing_proto

    with open(spm, "rb") as f:
        proto = preprocessing_proto(f.read(), do_lower_case=True)
    theirs = keras_hub.models.AlbertTokenizer(proto=proto)
    texts = [s for pair in mrpc_pairs("dev") + mrpc_pairs("train")[:600] for s in pair]
    texts += ["Tiếng Việt", "  Hello\u3000World\u00a0X ", "İstanbul", "Ａb ﬁ ½", "naïve CAFÉ", "``quote''",
              "1,000,000 and 3,5", "\u200bzero width"]
    got = [list(map(int, ids)) for ids in rows(theirs(texts))]
    want = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t)) for t in texts]
    different = [t for t, a, b in zip(texts, got, want) if a != b]
    assert different == [], different[:5]
    untouched = keras_hub.models.AlbertTokenizer(proto=spm)  # the plain model: capitals and "1," differ
    assert [list(map(int, i)) for i in rows(untouched(texts[:50]))] != want[:50]


@pytest.mark.slow
def test_mrpc_classifier_fine_tuned_by_albert_tf_answers_through_keras_hub(tmp_path, tokenizer, spm):
    """A few MRPC steps with run_classifier, the run's checkpoint converted by the console script (its config and
    tokenizer found from the run), then keras-hub's AlbertTextClassifier.from_preset on the MRPC dev pairs: the
    same ids and logits within 1e-5 of albert-tf's."""
    from albert_tf.tasks import glue
    from albert_tf.tasks.glue.task import run

    config = tmp_path / "albert_tiny_30k.json"
    AlbertConfig.from_name("albert_tiny").replace(vocab_size=30000).to_json_file(str(config))
    out = tmp_path / "mrpc"
    run(glue.make_config(
        data_dir=str(shared_path("glue")), task_name="MRPC", output_dir=str(out), albert_config_file=str(config),
        spm_model_file=spm, max_seq_length=SEQ, train_batch_size=16, learning_rate=1e-3, train_step=6,
        save_checkpoints_steps=6, do_train=True, cached_dir=str(tmp_path / "cache")))
    script = pathlib.Path(sys.executable).with_name("albert_convert_checkpoint")  # the installed console script
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "albert_tf.cli.convert_checkpoint"]
    done = subprocess.run([*argv, "convert", f"--input={out / 'ckpt-6'}", "--input_format=albert_tf",
                           f"--output={tmp_path / 'keras_hub'}", "--output_format=keras_hub"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "missing 0, unused 0" in done.stdout and "output_weights" not in done.stderr
    model = AlbertClassifier(AlbertConfig.from_json_file(str(config)), num_labels=2)
    assert not restore_pretrained(model, str(out / "ckpt-6")).missing
    pairs = mrpc_pairs()
    features = albert_features(pairs, tokenizer)
    want = np.asarray(classifier_logits(model(features)))
    theirs = keras_hub.models.AlbertTextClassifier.from_preset(str(tmp_path / "keras_hub"))
    # x= by name: a positional pair would be read as (x, y)
    packed = theirs.preprocessor(x=([a for a, _ in pairs], [b for _, b in pairs]))
    np.testing.assert_array_equal(np.asarray(packed["token_ids"]), features["input_ids"])
    np.testing.assert_array_equal(np.asarray(packed["segment_ids"]), features["segment_ids"])
    got = np.asarray(theirs(packed))
    assert np.abs(got - want).max() <= 1e-5
    assert np.abs(want).max() > 1e-3  # a trained head, not zeros


def test_keras_hub_names_without_keras_hub_say_what_to_install(monkeypatch, tmp_path):
    """keras-hub's own handles are routed to it (not called a misspelt preset), and without keras-hub the line
    says what to install."""
    from albert_tf.checkpoints.pretrained import check_bare_name

    check_bare_name("albert_base_en_uncased")  # not "no such file or folder, and not a pretrained preset name"
    assert detect_format("albert_base_en_uncased") == "keras_hub"
    assert detect_format("kaggle://keras/albert/keras/albert_base_en_uncased") == "keras_hub"
    monkeypatch.setitem(sys.modules, "keras_hub", None)
    with pytest.raises(CheckpointError, match=r"needs keras-hub: pip install 'albert-tf\[keras_hub\]'"):
        convert("albert_base_en_uncased", "keras_hub", str(tmp_path / "o"), "official", heads=HEADS,
                log=lambda line: None)
    assert not (tmp_path / "o").exists()


def test_a_run_starts_from_a_keras_hub_preset_with_its_config_and_tokenizer(presets, tmp_path, monkeypatch):
    """``--init_checkpoint=<keras-hub preset folder>`` alone: the preset supplies the config (written into the
    cache) and the SentencePiece model, as a pretrained preset name does."""
    from albert_tf.checkpoints.pretrained import fill_from_preset

    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path / "cache"))
    values = fill_from_preset({"init_checkpoint": presets["classifier_dir"], "albert_config_file": None,
                               "spm_model_file": None, "do_lower_case": None}, given={"init_checkpoint"})
    assert values["init_checkpoint"] == presets["classifier_dir"]
    assert values["spm_model_file"].endswith("vocabulary.spm") and values["do_lower_case"] is True
    config = AlbertConfig.from_json_file(values["albert_config_file"])
    assert (config.hidden_size, config.num_hidden_groups, config.inner_group_num) == (32, 2, 2)
    assert str(tmp_path / "cache") in values["albert_config_file"]
    mine = fill_from_preset({"init_checkpoint": presets["classifier_dir"], "albert_config_file": "mine.json"},
                            given={"init_checkpoint", "albert_config_file"})
    assert mine["albert_config_file"] == "mine.json"  # what the user gave wins
