"""The tokenizer files of a Hugging Face export: ``spiece.model`` + ``tokenizer.json`` (SentencePiece) or
``vocab.txt`` (WordPiece), with ``tokenizer_config.json`` and ``special_tokens_map.json``. Without them transformers
silently builds a 5-token tokenizer from the directory and keras-hub refuses it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from albert_tf import files as _fs
from albert_tf.checkpoints.huggingface_config import (
    SPM_SPECIAL_TOKENS,
    WORDPIECE_SPECIAL_TOKENS,
    check_sentencepiece_proto,
    sentencepiece_tokenizer_config,
    sentencepiece_tokenizer_json,
    wordpiece_tokenizer_config,
)
from albert_tf.checkpoints.report import (
    CheckpointError,
)
from albert_tf.files import makedirs, write_bytes_atomic

SPM_FILE = "spiece.model"  # the names transformers' AlbertTokenizer / BertTokenizer look for
WORDPIECE_FILE = "vocab.txt"


def _read_bytes(path: str, what: str) -> bytes:
    """The bytes of ``path`` (local or remote); one-line error naming ``what`` when it is missing."""
    if not _fs.isfile(path):
        raise CheckpointError(f"{path}: {what} not found")
    return _fs.read_bytes(path)


def _json_bytes(payload: Mapping[str, Any]) -> bytes:
    return (json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _parse_sentencepiece(data: bytes, source: str) -> Any:
    """A ``sentencepiece_model_pb2.ModelProto`` from the bytes of a ``.model`` file; one-line error otherwise."""
    from google.protobuf.message import DecodeError
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    try:
        proto.ParseFromString(data)
    except DecodeError:
        proto.Clear()
    if not proto.pieces:
        raise CheckpointError(f"{source}: not a SentencePiece model file")
    return proto


def huggingface_tokenizer_files(
    *,
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    vocab_size: int | None = None,
    model_max_length: int | None = None,
) -> dict[str, bytes]:
    """The tokenizer files of an HF model directory, by file name, checked but not written.

    SentencePiece (``spm_model_file``): ``spiece.model`` (a byte copy), ``tokenizer.json``,
    ``tokenizer_config.json`` (``AlbertTokenizer``) and ``special_tokens_map.json``. WordPiece
    (``vocab_file``): ``vocab.txt`` (a byte copy), ``tokenizer_config.json`` (``BertTokenizer``)
    and ``special_tokens_map.json``. Raises :class:`CheckpointError` when both or neither file is
    given, the file is missing or not a tokenizer, it lacks ALBERT's special tokens, or its size
    differs from ``vocab_size`` (the tokenizer of another model: every id would be wrong).
    """
    if bool(spm_model_file) == bool(vocab_file):
        raise CheckpointError("give exactly one of spm_model_file (SentencePiece) and vocab_file (WordPiece)")
    if spm_model_file:
        data = _read_bytes(spm_model_file, "SentencePiece model")
        proto = _parse_sentencepiece(data, spm_model_file)
        problems = check_sentencepiece_proto(proto, spm_model_file)
        size, source, specials = len(proto.pieces), spm_model_file, SPM_SPECIAL_TOKENS
    else:
        data = _read_bytes(vocab_file, "WordPiece vocab file")
        try:
            lines = data.decode("utf-8").split("\n")  # the official load_vocab: one token per readline()
        except UnicodeDecodeError as e:
            raise CheckpointError(f"{vocab_file}: not a UTF-8 WordPiece vocab file ({e.reason})") from None
        entries = [line.strip() for line in (lines[:-1] if lines[-1] == "" else lines)]
        missing = [t for t in dict.fromkeys(WORDPIECE_SPECIAL_TOKENS.values()) if t not in set(entries)]
        problems = [f"{vocab_file}: no WordPiece special token(s) {', '.join(missing)}"] if missing else []
        size, source, specials = len(entries), vocab_file, WORDPIECE_SPECIAL_TOKENS
    if vocab_size is not None and size != vocab_size:
        problems.append(
            f"{source}: {size} tokens but the model's vocab_size is {vocab_size} (the tokenizer of another model?)"
        )
    if problems:
        raise CheckpointError("; ".join(problems))
    special_map = _json_bytes(specials)
    if spm_model_file:
        add_prefix = bool(proto.normalizer_spec.add_dummy_prefix)
        return {
            SPM_FILE: data,
            "tokenizer.json": _json_bytes(sentencepiece_tokenizer_json(proto, do_lower_case)),
            "tokenizer_config.json": _json_bytes(
                sentencepiece_tokenizer_config(do_lower_case, model_max_length, add_prefix)
            ),
            "special_tokens_map.json": special_map,
        }
    return {
        WORDPIECE_FILE: data,
        "tokenizer_config.json": _json_bytes(wordpiece_tokenizer_config(do_lower_case, model_max_length)),
        "special_tokens_map.json": special_map,
    }


def write_files(output_dir: str, files: Mapping[str, bytes]) -> list[str]:
    """Write ``{name: bytes}`` into ``output_dir`` (any ``tf.io.gfile`` filesystem), each file under a temporary
    name renamed when complete; returns the paths."""
    if not files:
        return []
    makedirs(output_dir)
    written = []
    for name, data in files.items():
        path = os.path.join(output_dir, name)
        write_bytes_atomic(path, data)
        written.append(path)
    return written


def save_huggingface_tokenizer(
    output_dir: str,
    *,
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    vocab_size: int | None = None,
    model_max_length: int | None = None,
) -> list[str]:
    """Write only the tokenizer files of :func:`huggingface_tokenizer_files` into ``output_dir``; returns them."""
    files = huggingface_tokenizer_files(
        spm_model_file=spm_model_file,
        vocab_file=vocab_file,
        do_lower_case=do_lower_case,
        vocab_size=vocab_size,
        model_max_length=model_max_length,
    )
    return write_files(output_dir, files)
