"""The Hugging Face export carries the tokenizer: transformers and keras-hub read the exported directory.

Without tokenizer files transformers silently builds a 5-token tokenizer from an exported directory
and keras-hub refuses it. With ``spm_model_file`` the export writes ``spiece.model``,
``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``; these tests read
the directory back with the independent implementations and compare their ids with the official
tokenizer's (the golden file ``../shared/reference/official-tokenizer-golden.jsonl``, 296
SentencePiece cases, lower-cased and cased, and 8 WordPiece cases):

* ``transformers.AutoTokenizer``: 292 of 296 equal; the other 4 are transformers' quote rewriting
  (:data:`HF_DIFFERS`). The official digit-comma re-encoding is carried by ``tokenizer.json``'s scores
  (``huggingface_config`` module docstring).
* the ``tokenizer.json`` pipeline alone (``tokenizers.Tokenizer``): 296 of 296; and on every MRPC
  training sentence the official tokenizer's pieces, but for segmentations of equal score that the two
  libraries break differently (checked to be ties: same text, same total score).
* keras-hub's ``AlbertTokenizer.from_preset``: the raw SentencePiece model without the official
  pre-processing (no lower-casing, no accent stripping) and without the digit-comma rule, so it is
  compared on the golden *pre-processed* text: 286 of 296, digit-comma only.
* WordPiece (``vocab_file``) -> ``BertTokenizer``: 8 of 8.

And the weights: ``transformers.AlbertModel`` and keras-hub's ``AlbertBackbone`` loaded from the
same directory give albert-tf's ``AlbertEncoder`` outputs within 1e-5 on ids from the exported
tokenizer.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import numpy as np
import pytest
from conftest import golden_cases, shared_path

from albert_tf.checkpoints.huggingface import require_safetensors, save_huggingface
from albert_tf.checkpoints.huggingface_tokenizer import save_huggingface_tokenizer
from albert_tf.checkpoints.report import CheckpointError
from albert_tf.config import AlbertConfig
from albert_tf.tokenization.sentencepiece_tokenizer import needs_digit_comma_reencode

pytestmark = pytest.mark.shared_data

SPM_FILES = sorted(
    ["config.json", "model.safetensors", "spiece.model", "tokenizer.json", "tokenizer_config.json"]
    + ["special_tokens_map.json"]
)
SPM_VOCAB = 30000
TOL = 1e-5


def _digit_comma(case: dict, sp) -> bool:
    """The official ``encode_pieces`` re-encodes a piece ending in digit + ',' ("▁1999," -> "▁1999" ","); the
    SentencePiece model itself, and so every Hugging Face / keras-hub tokenizer, keeps the piece whole."""
    return any(needs_digit_comma_reencode(p) for p in sp.encode(case["preprocessed"], out_type=str))


def _quotes(case: dict, sp) -> bool:
    """transformers' ``AlbertTokenizer`` always rewrites two backquotes or two apostrophes to a double quote in its
    normaliser (built by the class, not read from tokenizer.json); the official ``preprocess_text`` keeps them."""
    return "``" in case["text"] or "''" in case["text"]


# Cases where an implementation legitimately differs from the official tokenizer: category -> test.
HF_DIFFERS = {"digit-comma": _digit_comma, "quotes": _quotes}
SPM_ONLY_DIFFERS = {"digit-comma": _digit_comma}


def golden(model: str = "30k-clean", do_lower_case: bool | None = None) -> list[dict]:
    cases = golden_cases()
    return [c for c in cases if c["model"] == model and (do_lower_case is None or c["do_lower_case"] == do_lower_case)]


def compare(cases: list[dict], encode, categories: dict, field: str = "text") -> tuple[int, dict, list]:
    """``(equal, {category: [texts that differ]}, [uncategorised differences])`` of ``encode`` vs the golden ids."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(shared_path("spm", "30k-clean.model")))
    equal, known, unknown = 0, {name: [] for name in categories}, []
    for case in cases:
        ids = list(encode(case[field]))
        if ids == case["ids"]:
            equal += 1
            continue
        names = [name for name, test in categories.items() if test(case, sp)]
        if names:
            known[names[0]].append(case["text"][:40])
        else:
            unknown.append((case["text"], ids, case["ids"]))
    return equal, known, unknown


def tiny_config() -> AlbertConfig:
    return AlbertConfig.from_name("albert_tiny").replace(vocab_size=SPM_VOCAB)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """An ``AlbertEncoder`` (official 30k vocabulary, tiny dimensions) exported with its SentencePiece model."""
    pytest.importorskip("safetensors")
    import keras

    from albert_tf.modeling import AlbertEncoder

    spm_file = str(shared_path("spm", "30k-clean.model"))
    keras.utils.set_random_seed(5)
    encoder = AlbertEncoder(tiny_config())
    out = tmp_path_factory.mktemp("hf")
    files = save_huggingface(encoder, str(out), spm_model_file=spm_file)
    return encoder, out, files


@pytest.fixture(scope="module")
def exported_cased(tmp_path_factory):
    """Only the tokenizer files, for the cased golden cases (``do_lower_case=False``)."""
    out = tmp_path_factory.mktemp("hf_cased")
    spm_file = str(shared_path("spm", "30k-clean.model"))
    save_huggingface_tokenizer(str(out), spm_model_file=spm_file, do_lower_case=False, vocab_size=SPM_VOCAB)
    return out


def tokenizer_dir(do_lower_case: bool, exported, exported_cased):
    return exported[1] if do_lower_case else exported_cased


# ----------------------------------------------------------------------------- the files


def test_export_writes_the_tokenizer_files(exported):
    _, out, files = exported
    assert sorted(os.path.basename(f) for f in files) == SPM_FILES
    assert (out / "spiece.model").read_bytes() == shared_path("spm", "30k-clean.model").read_bytes()
    config = json.loads((out / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "AlbertTokenizer"
    assert (config["do_lower_case"], config["keep_accents"], config["remove_space"]) == (True, False, True)
    assert config["model_max_length"] == tiny_config().max_position_embeddings
    specials = json.loads((out / "special_tokens_map.json").read_text())
    assert specials == {
        "bos_token": "[CLS]",
        "cls_token": "[CLS]",
        "eos_token": "[SEP]",
        "mask_token": "[MASK]",
        "pad_token": "<pad>",
        "sep_token": "[SEP]",
        "unk_token": "<unk>",
    }
    tokenizer = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    # only <pad> <unk> [CLS] [SEP] [MASK] are special; the user-defined ( ) " - . – £ € stay ordinary pieces
    assert [(t["id"], t["content"]) for t in tokenizer["added_tokens"]] == list(
        enumerate(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"])
    )
    assert len(tokenizer["model"]["vocab"]) == SPM_VOCAB


# ----------------------------------------------------------------------------- transformers


@pytest.mark.heavy
@pytest.mark.parity
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_auto_tokenizer_gives_the_official_ids(do_lower_case, exported, exported_cased):
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(str(tokenizer_dir(do_lower_case, exported, exported_cased)))
    assert type(tok).__name__ == "AlbertTokenizer" and len(tok) == SPM_VOCAB
    assert tok.do_lower_case is do_lower_case
    assert [tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id] == [
        0,
        1,
        2,
        3,
        4,
    ]
    cases = golden(do_lower_case=do_lower_case)
    assert len(cases) == 148
    equal, known, unknown = compare(cases, lambda t: tok(t, add_special_tokens=False)["input_ids"], HF_DIFFERS)
    print(f"AutoTokenizer do_lower_case={do_lower_case}: {equal}/{len(cases)} equal, differ: {known}")  # with -s
    assert not unknown, f"{len(unknown)} cases differ outside the known categories, first: {unknown[:2]}"
    assert {k: len(v) for k, v in known.items()} == {"digit-comma": 0, "quotes": 2}
    assert equal == 146
    # the model inputs: [CLS] A [SEP] B [SEP] with segment ids, as the official create_examples
    pair = tok("this is a test", "i was born")
    assert pair["input_ids"] == [2, 48, 25, 21, 1289, 3, 31, 23, 386, 3]
    assert pair["token_type_ids"] == [0] * 6 + [1] * 4


@pytest.mark.parity
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_tokenizer_json_alone_gives_the_official_ids(do_lower_case, exported, exported_cased):
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_dir(do_lower_case, exported, exported_cased) / "tokenizer.json"))
    cases = golden(do_lower_case=do_lower_case)
    equal, known, unknown = compare(cases, lambda t: tok.encode(t, add_special_tokens=False).ids, SPM_ONLY_DIFFERS)
    assert not unknown, unknown[:2]
    assert (equal, len(known["digit-comma"])) == (148, 0)


@pytest.mark.heavy
@pytest.mark.parity
def test_tokenizer_json_applies_the_digit_comma_rule_on_real_text(exported):
    """Every MRPC training sentence (7,336): ``tokenizer.json`` against the official tokenizer (albert-tf's
    ``FullTokenizer``, equal to the golden file). Where they differ, the two piece runs must be a tie: the same
    text, the same total SentencePiece score (Unigram's Viterbi search breaks ties in its own order). The
    sentences whose raw SentencePiece pieces need the re-encoding are counted, so the test has something to
    catch: without the scores of ``DIGIT_COMMA_SCORE``, 453 of these sentences got other ids."""
    import sentencepiece as spm
    tokenizers = pytest.importorskip("tokenizers")

    from albert_tf.tokenization import FullTokenizer

    model = str(shared_path("spm", "30k-clean.model"))
    official = FullTokenizer(spm_model_file=model, do_lower_case=True)
    sp = spm.SentencePieceProcessor(model_file=model)
    score = {sp.id_to_piece(i): sp.get_score(i) for i in range(sp.get_piece_size())}
    tok = tokenizers.Tokenizer.from_file(str(exported[1] / "tokenizer.json"))
    rows = shared_path("glue", "MRPC", "train.tsv").read_text(encoding="utf-8").splitlines()[1:]
    sentences = [s for row in rows for s in row.split("\t")[3:5]]
    assert len(sentences) == 7336
    rule_applies, ties = 0, 0
    for text in sentences:
        want = official.tokenize(text)
        rule_applies += want != sp.encode(official.preprocess(text), out_type=str)
        got = tok.encode(text, add_special_tokens=False).tokens
        if got == want:
            continue
        head = next(i for i, (w, g) in enumerate(zip(want + [None], got + [None])) if w != g)
        tail = next(i for i, (w, g) in enumerate(zip(want[::-1] + [None], got[::-1] + [None])) if w != g)
        w_run, g_run = want[head:len(want) - tail], got[head:len(got) - tail]  # the pieces between the common ends
        assert "".join(w_run) == "".join(g_run), (text, w_run, g_run)
        w_score, g_score = sum(score[p] for p in w_run), sum(score[p] for p in g_run)
        assert w_score == pytest.approx(g_score, abs=1e-4), (text, w_run, g_run)
        ties += 1
    print(f"MRPC train: digit-comma rule applies in {rule_applies} sentences; {ties} equal-score ties")  # with -s
    assert rule_applies > 400 and ties <= 10


@pytest.mark.parity
def test_albert_model_from_the_directory_matches_the_encoder(exported):
    transformers = pytest.importorskip("transformers")
    from test_checkpoints_huggingface import hf_outputs, max_diff, ours

    encoder, out, _ = exported
    model, info = transformers.AlbertModel.from_pretrained(str(out), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    tok = transformers.AutoTokenizer.from_pretrained(str(out))
    batch = tok(["Hello World! It is a test.", "ALBERT is a lite BERT"], ["Second segment here", "and one more"])
    batch = tok.pad(batch, return_tensors="np")
    ids, mask = batch["input_ids"].astype(np.int32), batch["attention_mask"].astype(np.int32)
    seg = batch["token_type_ids"].astype(np.int32)
    assert mask.min() == 0  # one padded row: the key mask is exercised too
    want = hf_outputs(model.eval(), ids, mask, seg)
    got = ours(encoder, ids, mask, seg, pretraining=False)
    diffs = {
        "sequence_output": max_diff(got["sequence_output"], want.last_hidden_state),
        "pooled_output": max_diff(got["pooled_output"], want.pooler_output),
    }
    print("AlbertModel.from_pretrained(export) vs AlbertEncoder max |diff|:", json.dumps(diffs))  # with -s
    assert max(diffs.values()) < TOL, diffs


# ----------------------------------------------------------------------------- keras-hub


@pytest.mark.parity
def test_keras_hub_reads_the_directory(exported):
    keras_hub = pytest.importorskip("keras_hub")
    encoder, out, _ = exported
    tok = keras_hub.models.AlbertTokenizer.from_preset(str(out))
    assert tok.vocabulary_size() == SPM_VOCAB
    # keras-hub applies the SentencePiece model only (no lower-casing or accent stripping): give it the
    # official pre-processed text, as an ALBERT pipeline must
    cases = golden()
    equal, known, unknown = compare(cases, lambda t: np.asarray(tok(t)).tolist(), SPM_ONLY_DIFFERS, "preprocessed")
    print(f"keras-hub AlbertTokenizer: {equal}/{len(cases)} equal on the pre-processed text, differ: {known}")
    assert not unknown, unknown[:2]
    assert (equal, len(known["digit-comma"])) == (286, 10)

    backbone = keras_hub.models.AlbertBackbone.from_preset(str(out))
    ids = np.asarray([[2, 48, 25, 21, 1289, 3, 31, 23, 386, 3]], np.int32)
    seg = np.asarray([[0] * 6 + [1] * 4], np.int32)
    mask = np.ones_like(ids)
    got = backbone({"token_ids": ids, "segment_ids": seg, "padding_mask": mask})
    want = encoder({"input_ids": ids, "input_mask": mask, "segment_ids": seg})
    for key in ("sequence_output", "pooled_output"):
        assert float(np.abs(np.asarray(got[key]) - np.asarray(want[key])).max()) < TOL, key


# ----------------------------------------------------------------------------- WordPiece


@pytest.mark.parity
def test_wordpiece_vocab_exports_as_bert_tokenizer(tmp_path):
    transformers = pytest.importorskip("transformers")
    vocab = shared_path("spm", "chinese-wordpiece-vocab.txt")
    files = save_huggingface_tokenizer(str(tmp_path), vocab_file=str(vocab), vocab_size=21128)
    assert sorted(os.path.basename(f) for f in files) == [
        "special_tokens_map.json",
        "tokenizer_config.json",
        "vocab.txt",
    ]
    cases = golden("chinese-wordpiece")
    assert len(cases) == 8 and {c["do_lower_case"] for c in cases} == {True}
    tok = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert type(tok).__name__ == "BertTokenizer" and len(tok) == 21128
    assert [tok(c["text"], add_special_tokens=False)["input_ids"] for c in cases] == [c["ids"] for c in cases]


# ----------------------------------------------------------------------------- refusals


def test_wrong_or_missing_tokenizer_is_refused_before_anything_is_written(tmp_path):
    pytest.importorskip("safetensors")
    from albert_tf.modeling import AlbertEncoder

    spm_file = str(shared_path("spm", "30k-clean.model"))
    small = AlbertEncoder(AlbertConfig.from_name("albert_tiny"))  # vocab_size 1000
    with pytest.raises(CheckpointError, match="30000 tokens but the model's vocab_size is 1000") as err:
        save_huggingface(small, str(tmp_path / "a"), spm_model_file=spm_file)
    assert "\n" not in str(err.value) and not (tmp_path / "a").exists()
    with pytest.raises(CheckpointError, match="SentencePiece model not found"):
        save_huggingface(small, str(tmp_path / "b"), spm_model_file=str(tmp_path / "none.model"))
    (tmp_path / "bad.model").write_bytes(b"not a model")
    with pytest.raises(CheckpointError, match="not a SentencePiece model file"):
        save_huggingface_tokenizer(str(tmp_path / "c"), spm_model_file=str(tmp_path / "bad.model"))
    with pytest.raises(CheckpointError, match="no WordPiece special token"):
        save_huggingface_tokenizer(str(tmp_path / "d"), vocab_file=str(tmp_path / "bad.model"))
    assert not any((tmp_path / d).exists() for d in "bcd")


def test_missing_safetensors_fails_with_one_line_naming_the_fix(tmp_path, monkeypatch):
    from albert_tf.checkpoints.convert import convert

    for name in ("safetensors", "safetensors.numpy"):
        monkeypatch.setitem(sys.modules, name, None)  # "import safetensors" now raises ImportError
    with pytest.raises(CheckpointError, match=r"pip install safetensors$") as err:
        require_safetensors(str(tmp_path / "hf"))
    assert "\n" not in str(err.value)
    with pytest.raises(CheckpointError, match="pip install safetensors"):  # before the input is even read
        convert(str(tmp_path / "missing.ckpt"), "official", str(tmp_path / "hf"), "huggingface", log=[].append)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "config.json").write_text("{}")
    (tmp_path / "in" / "model.safetensors").write_bytes(b"")
    from albert_tf.checkpoints.huggingface import read_huggingface_dir

    with pytest.raises(CheckpointError, match="pip install safetensors"):
        read_huggingface_dir(str(tmp_path / "in"))


# ----------------------------------------------------------------------------- the converter and its CLI


def official_checkpoint(tmp_path, vocab_size: int = SPM_VOCAB, spm_beside: bool = True) -> str:
    """A released-style folder: albert_config.json, model.ckpt-best and (as in the tarballs) 30k-clean.model."""
    from test_checkpoints_official import TINY, random_official_arrays

    from albert_tf.checkpoints.official import write_official_arrays

    folder = tmp_path / "orig"
    folder.mkdir()
    c = AlbertConfig(**{**TINY, "vocab_size": vocab_size})
    c.to_json_file(str(folder / "albert_config.json"))
    if spm_beside:
        shutil.copy(shared_path("spm", "30k-clean.model"), folder / "30k-clean.model")
    return write_official_arrays(random_official_arrays(c, seed=2), str(folder / "model.ckpt-best"))


def test_convert_uses_the_model_file_beside_the_checkpoint(tmp_path):
    pytest.importorskip("safetensors")
    from albert_tf.checkpoints.convert import convert

    prefix = official_checkpoint(tmp_path)
    logs, warnings = [], []
    result = convert(prefix, "official", str(tmp_path / "hf"), "huggingface", log=logs.append, warn=warnings.append)
    assert sorted(os.path.basename(f) for f in result.outputs) == SPM_FILES
    assert not warnings and not result.warnings
    assert any("30k-clean.model (found beside the input checkpoint)" in line for line in logs)
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == (tmp_path / "orig" / "30k-clean.model").read_bytes()


def test_cli_flag_and_warning_on_stderr(tmp_path, capsys):
    pytest.importorskip("safetensors")
    from albert_tf.cli.convert_checkpoint import run_cli

    prefix = official_checkpoint(tmp_path, spm_beside=False)
    common = ["albert_convert_checkpoint", "convert", "--input", prefix, "--input_format", "official"]
    common += ["--output_format", "huggingface"]
    # nothing beside the checkpoint: the weights are written, stderr says that no tokenizer was
    assert run_cli([*common, "--output", str(tmp_path / "bare")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: no tokenizer written") and err.count("\n") == 1 and "--spm_model_file" in err
    assert sorted(os.listdir(tmp_path / "bare")) == ["config.json", "model.safetensors"]
    # --spm_model_file and --do_lower_case
    spm_file = str(shared_path("spm", "30k-clean.model"))
    flags = ["--spm_model_file", spm_file, "--nodo_lower_case"]
    assert run_cli([*common, "--output", str(tmp_path / "tok"), *flags]) == 0
    out = capsys.readouterr()
    assert not out.err and f"tokenizer: --spm_model_file {spm_file}" in out.out
    assert json.loads((tmp_path / "tok" / "tokenizer_config.json").read_text())["do_lower_case"] is False
    # a tokenizer of another size is refused in one line, nothing written
    small = tmp_path / "small"
    small.mkdir()
    prefix_small = official_checkpoint(small, vocab_size=40)
    code = run_cli(
        [*common[:3], prefix_small, *common[4:], "--output", str(tmp_path / "x"), "--spm_model_file", spm_file]
    )
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "30000 tokens but the model's vocab_size is 40" in err
    assert not (tmp_path / "x").exists()
    # tokenizer flags with a non-HF output are refused
    code = run_cli([*common[:-1], "official", "--output", str(tmp_path / "o" / "m"), "--spm_model_file", spm_file])
    assert code == 1 and "Hugging Face or keras-hub output only" in capsys.readouterr().err
