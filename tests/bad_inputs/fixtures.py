"""Small valid inputs that the bad-input cases corrupt one at a time (built once per session, in a temp dir)."""

from __future__ import annotations

import hashlib
import os
import pathlib

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
    AlbertConfig.from_preset("albert_tiny").replace(vocab_size=vocab).to_json_file(config)
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
    (bad / "hf_no_weights").mkdir()
    (bad / "hf_no_weights" / "config.json").write_text('{"model_type": "albert", "vocab_size": 300}')
    paths["bad"] = str(bad)
    paths["squad"] = write_squad_files(root / "squad", bad)
    paths["race"] = write_race_files(root / "race", bad)
    return paths


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
