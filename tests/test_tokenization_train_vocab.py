"""Vocabulary training with the official spm_train settings: ids, loadability, input handling, CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT, shared_path

from albert_tf.tokenization import FullTokenizer
from albert_tf.tokenization.train_vocab import train_vocab


@pytest.mark.heavy
def test_train_2000_piece_vocab_on_real_text(tmp_path):
    summary = train_vocab(
        [shared_path("text")], str(tmp_path / "v2k"), vocab_size=2000, input_sentence_size=5000, num_threads=2
    )
    tok = FullTokenizer(spm_model_file=tmp_path / "v2k.model")
    assert tok.vocab_size == 2000
    assert tok.convert_ids_to_tokens(range(13)) == [
        "<pad>",
        "<unk>",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "(",
        ")",
        '"',
        "-",
        ".",
        "–",
        "£",
        "€",
    ]
    assert [tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id] == [0, 1, 2, 3, 4]
    # control symbols are not produced from text; user-defined symbols are never split
    sp = tok.sp_model
    assert sp.is_control(2) and sp.is_control(3) and sp.is_control(4) and sp.is_unknown(1)
    assert tok.tokenize("In the beginning (Genesis).") and 2 not in tok.encode("[CLS]")
    assert "." in tok.tokenize("end.") and summary["lines"] > 50_000
    # the corpus has ISO-8859-1 files; they are read, and reported
    assert summary["files_read_as_iso_8859_1"]


def test_bad_input_fails_before_training(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such-dir"):
        train_vocab([tmp_path / "no-such-dir"], str(tmp_path / "m"), vocab_size=100)
    (tmp_path / "t.txt").write_text("a b\n", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="is a file, not a folder"):
        train_vocab([tmp_path / "t.txt"], str(tmp_path / "t.txt" / "m"), vocab_size=100)


def test_model_prefix_folder_is_created(tmp_path):
    (tmp_path / "t.txt").write_text("\n".join(f"word{i} and more words here" for i in range(200)), encoding="utf-8")
    train_vocab([tmp_path / "t.txt"], str(tmp_path / "new" / "deeper" / "m"), vocab_size=40)
    assert (tmp_path / "new" / "deeper" / "m.model").exists()


def test_latin1_file_and_preprocess_switch(tmp_path):
    text = "Café déjà vu, naïve façade. " * 3
    lines = [f"{text} line {i}" for i in range(300)]
    (tmp_path / "latin1.txt").write_bytes("\n".join(lines).encode("iso-8859-1"))
    summary = train_vocab(
        [tmp_path / "latin1.txt"], str(tmp_path / "m"), vocab_size=50, input_sentence_size=1000, preprocess=True
    )
    assert summary["files_read_as_iso_8859_1"] == [str(tmp_path / "latin1.txt")]
    vocab = FullTokenizer(spm_model_file=tmp_path / "m.model").vocab
    assert not any(c in piece for piece in vocab for c in "éàïç")  # preprocess: accents stripped
    assert not any(ch.isupper() for piece in vocab if piece[:1] != "[" for ch in piece)  # and lower-cased


@pytest.mark.heavy
def test_cli_help_lists_the_official_flags():
    out = subprocess.run(
        [sys.executable, "-m", "albert_tf.cli.train_vocab", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode in (0, 1), out.stderr[-2000:]  # absl's --help exits with status 1
    for flag in (
        "--input",
        "--model_prefix",
        "--vocab_size",
        "--character_coverage",
        "--control_symbols",
        "--user_defined_symbols",
        "--input_sentence_size",
        "--shuffle_input_sentence",
        "--model_type",
    ):
        assert flag in out.stdout
