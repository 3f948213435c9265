"""Small valid inputs that the bad-input cases corrupt one at a time (built once per session, in a temp dir)."""

from __future__ import annotations

import hashlib
import os
import pathlib

import numpy as np

from albert_tf.config import AlbertConfig

SEQ, PRED = 32, 5


def build(root: pathlib.Path) -> dict[str, str]:
    """Corpus, SentencePiece model, matching tiny config, pretraining records + sidecar, a GLUE SST-2 folder,
    a pretrained checkpoint in the trainer layout, and a few bad files."""
    from albert_tf.data.pretraining import PretrainingDataConfig, TokenizerSpec, create_pretraining_data
    from albert_tf.data.sample_corpus import write_weather_task
    from albert_tf.demo.finetune import train_demo_spm

    root.mkdir(parents=True, exist_ok=True)
    spm = train_demo_spm(str(root), seed=0, vocab_size=300)
    import sentencepiece

    vocab = sentencepiece.SentencePieceProcessor(model_file=spm).GetPieceSize()
    config = str(root / "albert_config.json")
    AlbertConfig.from_name("albert_tiny").replace(vocab_size=vocab).to_json_file(config)
    corpus = str(root / "sample_corpus.txt")
    records_dir = root / "records"
    create_pretraining_data(
        [corpus],
        str(records_dir / "train.tfrecord@2"),
        TokenizerSpec(spm_model_file=spm),
        PretrainingDataConfig(max_seq_length=SEQ, max_predictions_per_seq=PRED, dupe_factor=1, random_seed=1),
        log=None,
    )
    glue = root / "glue"
    write_weather_task(str(glue), seed=0, per_class=40)
    paths = {
        "root": str(root),
        "spm": spm,
        "config": config,
        "corpus": corpus,
        "records": str(records_dir / "train.tfrecord-*"),
        "records_dir": str(records_dir),
        "shard0": str(records_dir / "train.tfrecord-00000-of-00002"),
        "glue": str(glue),
    }
    bad = root / "bad"
    bad.mkdir()
    (bad / "text.txt").write_text("this is not a TFRecord file\n" * 20)
    (bad / "nul.bin").write_bytes(b"\0" * 4096)
    (bad / "latin1.txt").write_bytes("caf\xe9 au lait\n\nune phrase\n".encode("latin-1"))
    (bad / "empty.txt").write_bytes(b"")
    (bad / "garbage.model").write_bytes(os.urandom(256))
    (bad / "not_json.json").write_text("{'vocab_size': 30000,")
    # the records' length (SEQ = 32) is over this config's positions
    AlbertConfig.from_name("albert_tiny").replace(vocab_size=vocab, max_position_embeddings=16).to_json_file(
        str(bad / "config_16_positions.json"))
    (bad / "config_bad_heads.json").write_text(
        '{"vocab_size": 300, "hidden_size": 30, "num_attention_heads": 4, "intermediate_size": 64}'
    )
    (bad / "ckpt-1.index").write_bytes(os.urandom(64))
    (bad / "ckpt-1.data-00000-of-00001").write_bytes(os.urandom(64))
    data = open(paths["shard0"], "rb").read()
    (bad / "cut.tfrecord").write_bytes(data[: len(data) // 2])
    flipped = bytearray(data)
    flipped[40] ^= 0x10
    (bad / "flipped.tfrecord").write_bytes(bytes(flipped))
    for name, rows in (
        ("header_only", "sentence\tlabel\n"),
        ("bad_columns", "sentence\tlabel\nfine sentence\t1\nonly one column\n"),
        ("bad_label", "sentence\tlabel\nfine sentence\t7\n"),
    ):
        (bad / name / "SST-2").mkdir(parents=True)
        (bad / name / "SST-2" / "train.tsv").write_text(rows)
    (bad / "bad_utf8" / "SST-2").mkdir(parents=True)
    (bad / "bad_utf8" / "SST-2" / "train.tsv").write_bytes(b"sentence\tlabel\ncaf\xe9\t1\n")
    (bad / "stsb" / "STS-B").mkdir(parents=True)
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    (bad / "stsb" / "STS-B" / "train.tsv").write_text(header + "0\tg\tf\t2012\t1\ts\ts\ta b\tc d\tnot-a-number\n")
    (bad / "not_zip.keras").write_text("a .keras file is a zip archive; this is text\n")
    (bad / "blank.txt").write_text("\n  \n\t\n\n")
    (bad / "giant_line.txt").write_text(open(corpus, encoding="utf-8").read().replace("\n", " "))  # no line breaks
    (bad / "stsb_range" / "STS-B").mkdir(parents=True)
    (bad / "stsb_range" / "STS-B" / "train.tsv").write_text(header + "0\tg\tf\t2012\t1\ts\ts\ta b\tc d\t7.5\n")
    for name, text in (("repro_cut", '{"pretraining": {"run": {"mlm'), ("repro_shape", '{"pretraining": {}}')):
        (bad / name).mkdir()
        (bad / name / "results.json").write_text(text)
    (bad / "hf_no_weights").mkdir()
    (bad / "hf_no_weights" / "config.json").write_text('{"model_type": "albert", "vocab_size": 300}')
    paths["bad"] = str(bad)
    paths["squad"] = write_squad_files(root / "squad", bad)
    paths["race"] = write_race_files(root / "race", bad)
    paths["tagging"] = write_tagging_files(root / "tagging", bad)
    paths["run"] = write_damaged_checkpoints(root, bad, paths)
    return paths


def _cut(path: pathlib.Path, keep: float = 0.1) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def write_damaged_checkpoints(root: pathlib.Path, bad: pathlib.Path, paths: dict[str, str]) -> str:
    """A real 2-step pretraining run (``root/run``, ``ckpt-2`` with optimizer state), and from it: copies with the
    ``.data`` cut short (``bad/cut/``), the ``.index`` corrupted (``bad/bad_index/``), the whole run with its latest
    checkpoint cut (``bad/run_cut/``), a Hugging Face folder with ``model.safetensors`` cut short (``bad/hf_cut/``),
    hard links to ``ckpt-2`` (``bad/hard.*``), a symlink to the run folder (``bad/run_link``) and to the corpus
    (``bad/corpus_link``), and a 2-label classifier checkpoint (``bad/sst2/ckpt-5``) for a task with other labels."""
    import shutil

    from albert_tf.checkpoints.convert import convert
    from albert_tf.checkpoints.trainer_layout import write_weights
    from albert_tf.tasks.glue.model import AlbertClassifier
    from albert_tf.tasks.pretraining import make_config
    from albert_tf.tasks.pretraining.task import run

    out = root / "run"
    run(make_config(albert_config_file=paths["config"], input_file=paths["records"], output_dir=str(out),
                    max_seq_length=SEQ, max_predictions_per_seq=PRED, train_batch_size=4, num_train_steps=2,
                    steps_per_loop=1, save_checkpoints_steps=2, num_warmup_steps=0), log=None)
    data = "ckpt-2.data-00000-of-00001"
    for name in ("cut", "bad_index"):
        (bad / name).mkdir()
        for suffix in (".index", ".data-00000-of-00001"):
            shutil.copy(out / f"ckpt-2{suffix}", bad / name / f"ckpt-2{suffix}")
    _cut(bad / "cut" / data)
    index = bytearray((bad / "bad_index" / "ckpt-2.index").read_bytes())
    for i in range(len(index) // 3, len(index) // 3 + 16):
        index[i] ^= 0xFF
    (bad / "bad_index" / "ckpt-2.index").write_bytes(bytes(index))
    shutil.copytree(out, bad / "run_cut")
    _cut(bad / "run_cut" / data)
    convert(str(out / "ckpt-2"), "albert_tf", str(bad / "hf_cut"), "huggingface", paths["config"],
            spm_model_file=paths["spm"], log=lambda line: None)
    _cut(bad / "hf_cut" / "model.safetensors")
    for suffix in (".index", ".data-00000-of-00001"):
        os.link(out / f"ckpt-2{suffix}", bad / f"hard{suffix}")
    os.symlink(os.path.join("..", "run"), bad / "run_link")  # relative: a copy of the inputs links into itself
    os.symlink(os.path.join("..", os.path.basename(paths["corpus"])), bad / "corpus_link")
    (bad / "savedmodel_no_variables" / "variables").mkdir(parents=True)  # a SavedModel copied without its weights
    (bad / "savedmodel_no_variables" / "saved_model.pb").write_bytes(b"\x08\x01")
    classifier = AlbertClassifier(AlbertConfig.from_json_file(paths["config"]), num_labels=2)
    ids = np.ones((1, 8), "int32")
    classifier({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids})
    write_weights(classifier, str(bad / "sst2" / "ckpt-5"), step=5)
    return str(out)


def _race_passage(**changes) -> dict:
    passage = {
        "id": "middle1.txt",
        "article": SQUAD_CONTEXT,
        "questions": ["What was bright?", "Where did rain fall? _ ."],
        "options": [["The sun", "The rain", "The river", "The night"], ["hills", "valley", "river", "sea"]],
        "answers": ["A", "B"],
    }
    passage.update(changes)
    return {k: v for k, v in passage.items() if v is not None}


def write_tagging_files(folder: pathlib.Path, bad: pathlib.Path) -> str:
    """Valid CoNLL files (``folder/{train,dev}.conll``) and one-defect variants (``bad/tagging_<defect>.conll``)."""
    sentence = "the\tO\nsun\tB-place\nrose\tO\nover\tO\nthe\tO\nhills\tB-place\n\nanna\tB-person\nsmiled\tO\n\n"
    folder.mkdir(parents=True)
    (folder / "train.conll").write_text(sentence * 4)
    (folder / "dev.conll").write_text(sentence)
    defects = {"not_iob": "the\tO\nsun\tX-place\n\n", "no_column": "the\tO\nsun\n\n", "empty": "",
               "unknown": "the\tO\n\nsun\tB-river\n\n", "i_after_b": sentence + "anna\tB-person\nhills\tI-place\n\n"}
    for name, text in defects.items():
        (bad / f"tagging_{name}.conll").write_text(text)
    return str(folder)


def write_race_files(folder: pathlib.Path, bad: pathlib.Path) -> str:
    """A valid RACE folder (``folder/RACE/{train,dev}/middle/1.txt``, original layout) and one-defect variants
    (``bad/race_<defect>/RACE/train/middle/1.txt``)."""
    import json

    for split in ("train", "dev"):
        (folder / "RACE" / split / "middle").mkdir(parents=True)
        (folder / "RACE" / split / "middle" / "1.txt").write_text(json.dumps(_race_passage()))
    three = _race_passage(options=[["The sun", "The rain", "The river"], ["hills", "valley", "river", "sea"]])
    defects = {"three_options": three, "answer_e": _race_passage(answers=["A", "E"]),
               "no_article": _race_passage(article=None)}
    for name, passage in defects.items():
        (bad / f"race_{name}" / "RACE" / "train" / "middle").mkdir(parents=True)
        (bad / f"race_{name}" / "RACE" / "train" / "middle" / "1.txt").write_text(json.dumps(passage))
    return str(folder)


SQUAD_CONTEXT = "The sun was bright over the hills. Rain fell in the valley at night, and the river rose."


def _squad(questions: list[dict]) -> dict:
    return {"version": "v2.0", "data": [{"title": "weather", "paragraphs": [{"context": SQUAD_CONTEXT,
                                                                            "qas": questions}]}]}


def _question(qid: str, question: str, answer: str | None, shift: int = 0) -> dict:
    if answer is None:
        return {"id": qid, "question": question, "answers": [], "is_impossible": True}
    start = SQUAD_CONTEXT.index(answer) + shift
    return {"id": qid, "question": question, "answers": [{"text": answer, "answer_start": start}],
            "is_impossible": False}


def write_squad_files(folder: pathlib.Path, bad: pathlib.Path) -> str:
    """A valid SQuAD 2.0 file (``folder/train.json``) and bad variants in ``bad/`` (one defect each)."""
    import json

    folder.mkdir()
    good = [
        _question("q-sun", "What was bright?", "The sun"),
        _question("q-rain", "Where did rain fall?", "in the valley"),
        _question("q-snow", "Where did snow fall?", None),
    ]
    (folder / "train.json").write_text(json.dumps(_squad(good)))
    (bad / "squad_not_squad.json").write_text(json.dumps([{"sentence": "not squad", "label": 1}]))
    no_answers = [dict(good[0]), good[1]]
    del no_answers[0]["answers"]
    (bad / "squad_no_answers.json").write_text(json.dumps(_squad(no_answers)))
    (bad / "squad_bad_start.json").write_text(json.dumps(_squad([good[0], _question("q-off", "Where?", "valley", 3)])))
    long_question = "Which " + " ".join(["very"] * 40) + " bright thing was there?"
    (bad / "squad_long_question.json").write_text(
        json.dumps(_squad([*good, _question("q-long", long_question, "The sun")]))
    )
    return str(folder)


def copy_inputs(paths: dict[str, str], root: pathlib.Path) -> dict[str, str]:
    """A second set of the inputs of :func:`build` under ``root``; the returned paths point into it."""
    import shutil

    shutil.copytree(paths["root"], root, symlinks=True, dirs_exist_ok=True)
    for suffix in (".index", ".data-00000-of-00001"):  # hard links are copied as files: link them again
        os.remove(root / "bad" / f"hard{suffix}")
        os.link(root / "run" / f"ckpt-2{suffix}", root / "bad" / f"hard{suffix}")
    return {key: value.replace(paths["root"], str(root), 1) for key, value in paths.items()}


def checksums(root: str, skip: tuple[str, ...] = ("out",)) -> dict[str, str]:
    """sha256 of every input file under ``root`` (outputs of the cases excluded)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        for name in filenames:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[path] = hashlib.sha256(f.read()).hexdigest()
    return out
