"""The token tagging task: its input checks (one line naming file and line, before TensorFlow), its loss against
numpy, its model's config, the raw-sentence signature against the Python evaluation path on WNUT 2017's dev file
(every word tagged, entity offsets that cut the sentence into the entity texts), and a run of ``run_tagging``'s job
whose scores equal seqeval's on its own predictions."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import shared_path

from albert_tf.data.tagging import IGNORE, TaggingDataError, entity_spans, read_conll
from albert_tf.tasks.tagging.inputs import check_inputs
from albert_tf.tasks.tagging.options import TaggingOptions
from albert_tf.training.run_config import RunOptions
from albert_tf.training.task import EVAL, TaskError

WNUT = ("ner", "wnut17")
TINY = {"vocab_size": 30000, "embedding_size": 16, "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 128,
        "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def _file(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


GOOD = "Paris\tB-location\nis\tO\nnice\tO\n\nBob\tB-person\nSmith\tI-person\n\n"


@pytest.mark.parametrize(("text", "scheme", "words"), [
    ("a\tO\nb\tX-foo\n\n", "auto", ["bad.conll:2", "'X-foo'", "expected O, B-TYPE, I-TYPE"]),
    ("a\tO\nb\n\n", "auto", ["bad.conll:2", "no tag column"]),
    ("", "auto", ["bad.conll", "no sentence"]),
    ("a\tO\nb\tS-person\n\n", "iob2", ["bad.conll:2", "'S-person' is not IOB2"]),
    ("a\tO\nb\tB-person\n\n", "bioes", []),  # a BIOES file may use B- and I- alone: no error
])
def test_a_bad_training_file_is_one_line_with_its_place(tmp_path, text, scheme, words):
    options = TaggingOptions(train_file=_file(tmp_path, "bad.conll", text), tag_scheme=scheme)
    if not words:
        check_inputs(options, RunOptions(do_train=True))
        return
    with pytest.raises(TaggingDataError) as error:
        check_inputs(options, RunOptions(do_train=True))
    message = str(error.value)
    assert "\n" not in message and all(w in message for w in words), message


def test_a_tag_the_model_does_not_know_is_refused_with_its_line(tmp_path):
    train = _file(tmp_path, "train.conll", GOOD)
    dev = _file(tmp_path, "dev.conll", "x\tO\n\ny\tO\nz\tB-product\n\n")
    with pytest.raises(TaggingDataError, match=r"dev.conll:4: tag 'B-product' is not one the model knows \(5 labels"):
        check_inputs(TaggingOptions(train_file=train, dev_file=dev), RunOptions(do_train=True, do_eval=True))
    with pytest.raises(TaggingDataError, match="dev.conll:4"):  # the labels given, no training file
        check_inputs(TaggingOptions(predict_file=dev, labels="O,B-person,I-person"), RunOptions(do_predict=True))


def test_an_i_tag_after_another_type_starts_an_entity_and_is_said_once(tmp_path, caplog):
    train = _file(tmp_path, "train.conll", "a\tB-person\nb\tI-location\nc\tO\n\n")
    inputs = check_inputs(TaggingOptions(train_file=train), RunOptions(do_train=True))
    assert inputs.sentences["train"][0].tags == ("B-person", "B-location", "O")
    assert inputs.repairs["train"].count == 1 and inputs.repairs["train"].first.endswith("train.conll:2: I-location "
                                                                                         "after B-person")
    check_inputs(TaggingOptions(train_file=train), RunOptions(do_train=True))  # the task checks again: no new line
    said = [r.getMessage() for r in caplog.records if "I- tags continue no entity" in r.getMessage()]
    assert len(said) == 1 and "read as the start of a new entity of its own type" in said[0], said


def test_labels_scheme_and_required_files(tmp_path):
    train = _file(tmp_path, "train.conll", "a\tI-person\nb\tI-person\nc\tB-person\nd\tO\n\n")  # IOB1
    inputs = check_inputs(TaggingOptions(train_file=train), RunOptions(do_train=True))
    assert inputs.scheme == "iob1" and inputs.labels == ("O", "B-person", "I-person")
    assert inputs.sentences["train"][0].tags == ("B-person", "I-person", "B-person", "O")
    with pytest.raises(TaskError, match="--dev_file is required with --do_eval"):
        check_inputs(TaggingOptions(train_file=train), RunOptions(do_train=True, do_eval=True))
    with pytest.raises(TaskError, match="give --train_file"):
        check_inputs(TaggingOptions(dev_file=train), RunOptions(do_eval=True))
    with pytest.raises(TaskError, match="label 'person' is not O, B-TYPE or I-TYPE"):
        check_inputs(TaggingOptions(dev_file=train, labels="O,person"), RunOptions(do_eval=True))
    with pytest.raises(TaskError, match="--tag_scheme='iob3'"):
        TaggingOptions(tag_scheme="iob3")


def test_the_loss_is_the_mean_over_labelled_positions():
    from albert_tf.tasks.tagging.model import tagging_loss

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 7, 5)).astype("float32")
    labels = rng.integers(0, 5, size=(3, 7)).astype("int32")
    labels[rng.random((3, 7)) < 0.4] = IGNORE
    loss, count = tagging_loss(logits, labels)
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    kept = labels != IGNORE
    expected = -np.mean(log_probs[kept, labels[kept]])
    assert int(count) == kept.sum()
    np.testing.assert_allclose(float(loss), expected, rtol=1e-6)


def test_the_tagger_keeps_its_labels_in_its_config():
    from albert_tf.config import AlbertConfig
    from albert_tf.tasks.tagging.model import AlbertTagger

    config = AlbertConfig(**{**TINY, "vocab_size": 100})
    model = AlbertTagger(config, ["O", "B-x", "I-x"], classifier_dropout=0.2)
    ids = np.ones((2, 5), np.int32)
    assert model({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids}).shape == (2, 5, 3)
    again = AlbertTagger.from_config(model.get_config())
    assert again.labels == ["O", "B-x", "I-x"] and again.classifier_dropout == 0.2
    with pytest.raises(ValueError, match="at least two labels"):
        AlbertTagger(config, ["O"])


def test_packed_windows_give_the_unpacked_loss_and_logits():
    """Packing (``--packing=first_fit``): windows of several lengths packed into shared rows give every labelled
    position the logits and the batch the loss of one window per row, up to float rounding."""
    import tensorflow as tf

    from albert_tf.config import AlbertConfig
    from albert_tf.data.packing import merge_slices, pack_batch
    from albert_tf.tasks.tagging.model import AlbertTagger, tagging_loss

    rng = np.random.default_rng(1)
    model = AlbertTagger(AlbertConfig(**{**TINY, "vocab_size": 100}), ["O", "B-x", "I-x", "B-y", "I-y"])
    lengths, seq = [5, 17, 3, 30, 9, 12, 24, 7], 32
    batch = {k: np.zeros((len(lengths), seq), np.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    batch["label_ids"] = np.full((len(lengths), seq), IGNORE, np.int32)
    for row, n in enumerate(lengths):
        batch["input_ids"][row, :n] = rng.integers(5, 100, n)
        batch["input_mask"][row, :n] = 1
        batch["label_ids"][row, 1:n - 1] = np.where(rng.random(n - 2) < 0.3, IGNORE, rng.integers(0, 5, n - 2))
    unpacked = model({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}).numpy()
    packed_batch = merge_slices(pack_batch(batch, seq, slices=2, boundaries=(16, 32)))
    assert packed_batch["input_ids"].shape[0] < len(lengths)  # windows share rows
    packed = model.packed_logits(packed_batch, seq).numpy()
    kept = batch["label_ids"] != IGNORE
    np.testing.assert_allclose(packed[kept], unpacked[kept], atol=1e-5)
    loss_unpacked, count = tagging_loss(unpacked, batch["label_ids"])
    loss_packed, _ = tagging_loss(packed, tf.constant(batch["label_ids"]))
    assert int(count) == kept.sum()
    np.testing.assert_allclose(float(loss_packed), float(loss_unpacked), rtol=1e-6)


@pytest.fixture(scope="module")
def dev_task(tmp_path_factory):
    """A tagging task over WNUT 2017's dev file at max_seq_length 32 (many sentences need several windows), with a
    tiny random tagger whose head is scaled up so that it predicts every kind of tag."""
    import keras

    from albert_tf.config import AlbertConfig
    from albert_tf.tasks.tagging.task import TaggingTask

    dev = str(shared_path(*WNUT, "emerging.dev.conll"))
    spm = str(shared_path("spm", "30k-clean.model"))
    root = tmp_path_factory.mktemp("tagging")
    config_file = root / "config.json"
    AlbertConfig(**TINY).to_json_file(str(config_file))
    options = TaggingOptions(dev_file=dev, train_file=str(shared_path(*WNUT, "wnut17train.conll")),
                             albert_config_file=str(config_file), spm_model_file=spm, max_seq_length=32)
    task = TaggingTask.from_options(options, RunOptions(do_eval=True, output_dir=str(root / "out")), seed=0)
    task.prepare()
    keras.utils.set_random_seed(0)  # the weights must not depend on what ran before in this process
    model = task.build_model()
    kernel = model.head.kernel
    kernel.assign(kernel.numpy() * 400.0)
    arrays = task.arrays(EVAL)
    logits = model.predict({k: arrays[k] for k in ("input_ids", "input_mask", "segment_ids")}, verbose=0)
    real = arrays["label_ids"] != IGNORE
    margin = logits[..., 1:].max(-1) - logits[..., 0]  # how far "O" is behind the best entity tag
    model.head.bias.assign(np.eye(len(task.labels))[0] * np.median(margin[real]))  # "O" for about half the words
    return task, model, root


@pytest.mark.heavy
def test_the_raw_sentence_signature_tags_every_word_as_the_evaluation_does(dev_task):
    """The export's in-graph windows and max-context choice give every dev word the tag the Python evaluation path
    gives it (the 1,009 sentences joined by spaces, plus one of 300 words); the word and entity offsets cut each
    sentence into its words and into the texts of the entities conlleval reads from those tags."""
    import tensorflow as tf

    from albert_tf.tasks.tagging.export import export_tagger
    from albert_tf.tokenization import AlbertPreprocessor

    task, model, root = dev_task
    arrays = task.arrays(EVAL)
    logits = model.predict({k: arrays[k] for k in ("input_ids", "input_mask", "segment_ids")}, batch_size=256,
                           verbose=0)
    expected = task.predicted_tags(EVAL, np.argmax(logits, -1))
    sentences = task.inputs.sentences[EVAL]
    assert sum(len(w) > 1 for w in task.windows[EVAL]) > 50  # the windows are exercised
    predicted = {tag for tags in expected for tag in tags}
    assert "O" in predicted and len(predicted) >= 9, predicted  # entities of many types, B- and I-, between O

    path = export_tagger(model, str(root / "export"),
                         preprocessor=AlbertPreprocessor.from_tokenizer(task.tokenizer, 32))
    serve = tf.saved_model.load(path).signatures["serving_default"]
    texts = [" ".join(s.words) for s in sentences]
    long = [f"word{i % 17}" for i in range(300)]
    out = {k: v.numpy() for k, v in serve(sentence=tf.constant([*texts, " ".join(long)])).items()}
    assert out["num_words"][-1] == 300 and all(t for t in out["tags"][-1][:300])
    found = 0
    for i, (sentence, text) in enumerate(zip(sentences, texts)):
        n = out["num_words"][i]
        assert [t.decode() for t in out["tags"][i][:n]] == expected[i], i
        spans = list(zip(out["word_start"][i][:n], out["word_end"][i][:n]))
        assert [text[a:b] for a, b in spans] == list(sentence.words)
        entities = [(kind, spans[first][0], spans[last - 1][1]) for kind, first, last in entity_spans(expected[i])]
        got = [(out["entity_type"][i][k].decode(), out["entity_start"][i][k], out["entity_end"][i][k])
               for k in range(out["num_entities"][i])]
        assert got == entities, i
        assert [out["entity_text"][i][k].decode() for k in range(len(got))] == [text[a:b] for _, a, b in got]
        found += len(got)
    assert found > 1000


@pytest.mark.heavy
def test_white_space_and_characters_beyond_ascii_keep_their_offsets(dev_task):
    import tensorflow as tf

    from albert_tf.tasks.tagging.export import export_tagger
    from albert_tf.tokenization import AlbertPreprocessor

    task, model, root = dev_task
    path = export_tagger(model, str(root / "export_spaces"),
                         preprocessor=AlbertPreprocessor.from_tokenizer(task.tokenizer, 32))
    serve = tf.saved_model.load(path).signatures["serving_default"]
    texts = ["  Zoë\tvisited  Kraków \u3000today 😀 ", "", "\u00a0single"]
    out = serve(sentence=tf.constant(texts))
    for i, text in enumerate(texts):
        n = int(out["num_words"][i])
        starts, ends = out["word_start"][i][:n].numpy(), out["word_end"][i][:n].numpy()
        assert [text[a:b] for a, b in zip(starts, ends)] == text.split(), (i, starts, ends)


@pytest.fixture(scope="module")
def tagging_run(tmp_path_factory):
    """``run_tagging``'s job through its Python API: a tiny model trained 400 steps on WNUT 2017's first 64 training
    sentences, evaluated on them and on the first 150 dev sentences at max_seq_length 32 (it learns its training
    sentences, so its predictions hold entities of several types), exported."""
    from albert_tf.config import AlbertConfig
    from albert_tf.tasks import tagging
    from albert_tf.tasks.tagging.task import run

    root = tmp_path_factory.mktemp("tagging_run")

    def head(name: str, count: int) -> str:
        blocks = shared_path(*WNUT, name).read_text(encoding="utf-8").replace("\t\n", "\n").split("\n\n")
        return _file(root, name, "\n\n".join(blocks[:count]) + "\n\n")

    AlbertConfig(**TINY).to_json_file(str(root / "config.json"))
    out = root / "out"
    train = head("wnut17train.conll", 64)
    config = tagging.make_config(
        albert_config_file=str(root / "config.json"), spm_model_file=str(shared_path("spm", "30k-clean.model")),
        train_file=train, dev_file=train, predict_file=head("emerging.dev.conll", 150), output_dir=str(out),
        do_train=True, do_eval=True, do_predict=True, max_seq_length=32, train_batch_size=16, num_train_steps=400,
        save_checkpoints_steps=200, learning_rate=3e-3, num_warmup_steps=40, classifier_dropout=0.0,
        export_dir=str(out / "export"))
    return run(config), out


@pytest.mark.slow
def test_a_run_scores_its_predictions_as_seqeval_does(tagging_run):
    from seqeval.metrics import accuracy_score, classification_report

    summary, out = tagging_run
    rows = [block.split("\n") for block in (out / "predictions.conll").read_text("utf-8").strip("\n").split("\n\n")]
    gold = [[line.split(" ")[1] for line in block] for block in rows]
    predicted = [[line.split(" ")[2] for line in block] for block in rows]
    assert len(rows) == 150 and summary["predict"]["num_sentences"] == 150
    reference = classification_report(gold, predicted, output_dict=True, zero_division=0)
    scores = json.loads((out / "predict_results.json").read_text("utf-8"))
    assert summary["best"]["f1"] > 0.5, summary["best"]  # it learned its training sentences
    assert scores["predicted_entities"] > 0, scores
    assert scores["f1"] == reference["micro avg"]["f1-score"]
    assert scores["precision"] == reference["micro avg"]["precision"]
    assert scores["recall"] == reference["micro avg"]["recall"]
    assert scores["accuracy"] == accuracy_score(gold, predicted)
    for kind, values in reference.items():
        if "avg" not in kind:
            assert scores[f"f1_{kind}"] == values["f1-score"], kind
    data = summary["data"]
    assert data["tag_scheme"] == "iob2" and data["train"]["sentences"] == data["eval"]["sentences"] == 64
    assert data["predict"]["words"] == sum(len(b) for b in rows) and data["predict"]["sentences_in_windows"] > 0
    assert summary["best"]["f1"] == max(h["f1"] for h in summary["eval"])


@pytest.mark.slow
def test_a_run_exports_and_export_savedmodel_reexports_its_checkpoint(tagging_run, tmp_path):
    import tensorflow as tf

    from albert_tf.tasks.tagging.task import TaggingTask

    summary, out = tagging_run
    exported = tf.saved_model.load(summary["export_dir"]).signatures["serving_default"]
    sentences = read_conll(str(out.parent / "emerging.dev.conll"))
    rows = (out / "predictions.conll").read_text("utf-8").strip("\n").split("\n\n")
    texts = [" ".join(s.words) for s in sentences[:40]]
    tags = exported(sentence=tf.constant(texts))["tags"].numpy()
    for i, block in enumerate(rows[:40]):
        assert [t.decode() for t in tags[i][:len(sentences[i].words)]] == [ln.split(" ")[2] for ln in block.split("\n")]
    again = TaggingTask.export_checkpoint(
        summary["inference_checkpoint"], str(tmp_path / "again"), albert_config_file=str(out.parent / "config.json"),
        spm_model_file=str(shared_path("spm", "30k-clean.model")), max_seq_length=32)  # labels from its run.json
    info = json.loads(open(os.path.join(again, "assets.extra", "albert_export.json"), encoding="utf-8").read())
    assert info["labels"] == summary["data"]["labels"] and info["task"] == "tagging"


@pytest.mark.slow
def test_the_token_id_signature_converts_to_tflite_and_onnx(dev_task):
    """``--tflite`` / ``--onnx`` convert ``serve_token_ids``: the same logits within 1e-4 on dev windows."""
    import onnxruntime
    import tensorflow as tf

    from albert_tf.export import onnx, tflite
    from albert_tf.tasks.tagging.export import export_tagger
    from albert_tf.tokenization import AlbertPreprocessor

    task, model, root = dev_task
    path = export_tagger(model, str(root / "export_convert"),
                         preprocessor=AlbertPreprocessor.from_tokenizer(task.tokenizer, 32))
    arrays = task.arrays(EVAL)
    feeds = {k: arrays[k][:4] for k in ("input_ids", "input_mask", "segment_ids")}
    expected = tf.saved_model.load(path).signatures["serve_token_ids"](**{k: tf.constant(v) for k, v in
                                                                          feeds.items()})["logits"].numpy()
    runner = tf.lite.Interpreter(model_path=tflite.convert_signature(path)).get_signature_runner("serve_token_ids")
    np.testing.assert_allclose(runner(**feeds)["logits"], expected, atol=1e-4)
    session = onnxruntime.InferenceSession(onnx.convert_signature(path))
    outputs = [o.name for o in session.get_outputs()]
    logits = session.run(None, {i.name: feeds[i.name.split(":")[0]] for i in session.get_inputs()})
    np.testing.assert_allclose(logits[outputs.index("logits")], expected, atol=1e-4)
