"""The SentencePiece model a keras-hub ``AlbertTokenizer`` needs to give the official ids.

keras-hub's ``AlbertTokenizer`` runs the ``.model`` file alone, while the official tokenizer first runs
``preprocess_text`` in Python (accents stripped, lower-cased with ``do_lower_case``; official ``tokenization.py``)
and afterwards splits every piece that is a number followed by a comma (``encode_pieces``: ``"▁1,"`` becomes
``"▁1"``, ``","``). Both are moved into the model file here, so that keras-hub's ids equal albert-tf's:

* the normaliser's character map becomes ``preprocess_text`` followed by the model's own map, one character at a
  time (a rule for every character that either step changes; whitespace stays whitespace, which SentencePiece
  then collapses as ``preprocess_text`` does);
* the ``<digits>,`` pieces become ``UNUSED``: the encoder never picks them, as the official code never emits them.

Not carried: Python's context-dependent lower-casing (a Greek final sigma) and ``keep_accents=True`` models (their
normaliser's multi-character compositions cannot be rebuilt per character); :func:`preprocessing_proto` refuses the
latter.
"""

from __future__ import annotations

import io
import os
import tempfile

from albert_tf.checkpoints.report import CheckpointError

#: The name the rewritten normaliser carries (SentencePiece uses the character map, the name is informative).
NORMALIZER_NAME = "albert_tf_preprocess_text"
_SURROGATES = range(0xD800, 0xE000)


def _rules(model_proto: bytes, do_lower_case: bool) -> list[tuple[str, str]]:
    """``(character, what the official pipeline makes of it)`` for every character it changes."""
    import sentencepiece

    from albert_tf.tokenization.preprocess import preprocess_text

    model_map = sentencepiece.SentencePieceNormalizer(model_proto=model_proto)
    rules = []
    for code in range(0x110000):
        if code in _SURROGATES:
            continue
        char = chr(code)
        if char.isspace():
            target = " "
        else:
            target = preprocess_text(char, remove_space=False, lower=do_lower_case)
            target = model_map.normalize(target) if target else target
        if target != char:
            rules.append((char, target))
    return rules


def _charsmap(rules: list[tuple[str, str]]) -> bytes:
    """SentencePiece's compiled character map of ``rules`` (built by its trainer from a rule TSV)."""
    import sentencepiece
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    def hex_codes(text: str) -> str:
        return " ".join(f"{ord(c):X}" for c in text)

    with tempfile.TemporaryDirectory() as folder:
        tsv = os.path.join(folder, "rules.tsv")
        with open(tsv, "w", encoding="utf-8") as f:
            f.writelines(f"{hex_codes(src)}\t{hex_codes(dst)}\n" for src, dst in rules)
        out = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(["a b c d e f g h"] * 8), model_writer=out, vocab_size=12, model_type="char",
            normalization_rule_tsv=tsv, minloglevel=2,
        )
    return model_pb2.ModelProto.FromString(out.getvalue()).normalizer_spec.precompiled_charsmap


def preprocessing_proto(model_proto: bytes, do_lower_case: bool, source: str = "the SentencePiece model") -> bytes:
    """``model_proto`` (a ``.model`` file's bytes) with the official preprocessing in its normaliser and its
    ``<digits>,`` pieces unused (module docstring); the piece ids are unchanged."""
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    try:
        proto = model_pb2.ModelProto.FromString(model_proto)
    except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and friends: not a model file
        raise CheckpointError(f"{source}: not a SentencePiece model ({type(e).__name__})") from None
    if proto.normalizer_spec.name == NORMALIZER_NAME:
        return model_proto  # rewritten already (a keras-hub preset albert-tf wrote)
    proto.normalizer_spec.precompiled_charsmap = _charsmap(_rules(model_proto, do_lower_case))
    proto.normalizer_spec.name = NORMALIZER_NAME
    unused = model_pb2.ModelProto.SentencePiece.UNUSED
    for piece in proto.pieces:
        text = piece.piece
        if len(text) > 1 and text[-1] == "," and text[-2].isdigit():
            piece.type = unused
    return proto.SerializeToString()
