"""The JSON files of a Hugging Face ALBERT directory, as plain dicts (no file access here).

* ``config.json`` <-> :class:`AlbertConfig`: the key and activation mapping of the two configs.
* The tokenizer files that make ``transformers.AutoTokenizer`` reproduce the official tokenizer:
  ``tokenizer_config.json`` and ``special_tokens_map.json`` (SentencePiece -> ``AlbertTokenizer``,
  WordPiece -> ``BertTokenizer``), and ``tokenizer.json`` for a SentencePiece model.

Why a ``tokenizer.json`` beside ``spiece.model``: from ``spiece.model`` alone transformers turns
the model's user-defined symbols (``( ) " - . – £ €`` in the official 30k-clean model) into
"added tokens" that split the text before SentencePiece sees it, so every word after one gets a
fresh ``▁`` (``self-evident`` -> ``▁self - ▁evident``, officially ``▁self - ev ident``). In
``tokenizer.json`` they are ordinary pieces of the Unigram vocabulary, as in the official
model; only the control pieces and ``<unk>`` are special tokens.

The official digit-comma rule (``encode_pieces``: a piece that ends in a digit and ``,``, such as
``▁1999,``, is split into the re-encoded digits and ``,``) is a rewrite after the model, which a
``tokenizer.json`` pipeline cannot express. What it can express is a Unigram vocabulary in which those
pieces (141 of the official 30k-clean model's) never win: their score becomes
:data:`DIGIT_COMMA_SCORE`, so the Viterbi search takes the digits and ``,`` as separate pieces, which is
what the official rule outputs. The ids are unchanged (the pieces stay in place), and ``<unk>`` scoring
is unaffected: an unknown character has only the ``<unk>`` node, in every segmentation alike. It is not
the rule itself (the rule re-encodes the digits alone, the search re-segments the whole word), but on
real text it gives the official pieces (measured in docs/checkpoints-and-presets.md), apart from ties between
segmentations of equal score, which SentencePiece and ``tokenizers`` break differently with or without it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from albert_tf.checkpoints.report import ConfigMismatchError
from albert_tf.tokenization.sentencepiece_tokenizer import needs_digit_comma_reencode

# The Unigram score given in tokenizer.json to pieces the official digit-comma rule always splits (module docstring):
# far below any path of real pieces (scores are log-probabilities, ~-14 at the lowest), so the search never takes them.
DIGIT_COMMA_SCORE = -1.0e6

_ACT_FROM_HF = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "gelu": "gelu_exact", "relu": "relu", "tanh": "tanh"}
_ACT_TO_HF = {"gelu": "gelu_new", "gelu_new": "gelu_new", "gelu_exact": "gelu", "relu": "relu", "tanh": "tanh"}
_SHARED_KEYS = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "num_hidden_groups",
    "num_attention_heads",
    "intermediate_size",
    "inner_group_num",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
)


def albert_config_from_huggingface(hf_config: Mapping[str, Any]) -> Any:
    """An :class:`AlbertConfig` from a transformers ``AlbertConfig`` dict (``config.json``).

    ``gelu_new`` (tanh approximation) becomes the official ``gelu``; HF's exact ``gelu``
    becomes ``gelu_exact``. A ``layer_norm_eps`` other than 1e-12 or a non-absolute position
    embedding cannot be reproduced and raises.
    """
    from albert_tf.config import AlbertConfig, ConfigError

    data = dict(hf_config)
    model_type = data.get("model_type", "albert")
    if model_type != "albert":
        raise ConfigError(f"Hugging Face config: model_type {model_type!r} is not 'albert'")
    eps = float(data.get("layer_norm_eps", 1e-12))
    if abs(eps - 1e-12) > 1e-15:
        raise ConfigError(f"Hugging Face config: layer_norm_eps {eps} is not ALBERT's 1e-12 (not supported)")
    pos = data.get("position_embedding_type", "absolute")
    if pos != "absolute":
        raise ConfigError(f"Hugging Face config: position_embedding_type {pos!r} is not supported (absolute only)")
    act = data.get("hidden_act", "gelu_new")
    if act not in _ACT_FROM_HF:
        raise ConfigError(f"Hugging Face config: hidden_act {act!r} is not supported")
    values = {k: data[k] for k in _SHARED_KEYS if k in data}
    values["hidden_act"] = _ACT_FROM_HF[act]
    return AlbertConfig.from_dict(values, source="Hugging Face config")


def label_names(hf_config: Mapping[str, Any]) -> list[str] | None:
    """The names of a head's rows in class-id order from a transformers ``config.json`` (``id2label``), or None
    where it has none, they are transformers' placeholders (``LABEL_<i>``) or they do not number 0 .. n-1."""
    id2label = hf_config.get("id2label") or {}
    try:
        by_id = {int(i): str(name) for i, name in id2label.items()}
    except (TypeError, ValueError):
        return None
    names = [by_id.get(i) for i in range(len(by_id))]
    if not names or None in names or names == [f"LABEL_{i}" for i in range(len(names))]:
        return None
    return names


def huggingface_config_from_albert(config: Any, architecture: str = "AlbertForPreTraining") -> dict[str, Any]:
    """A transformers ``config.json`` dict for ``config`` (``hidden_act`` gelu -> gelu_new)."""
    act = config.hidden_act or "linear"
    out = {k: getattr(config, k) for k in _SHARED_KEYS}
    out.update(
        {
            "architectures": [architecture],
            "model_type": "albert",
            "hidden_act": _ACT_TO_HF.get(act, act),
            "layer_norm_eps": 1e-12,
            "position_embedding_type": "absolute",
            "tie_word_embeddings": True,
        }
    )
    return out


def check_configs_agree(expected: Any, found: Any, source: str) -> None:
    """Raise :class:`ConfigMismatchError` naming the first architecture keys that differ."""
    keys = _SHARED_KEYS[:8] + ("max_position_embeddings", "type_vocab_size", "hidden_act")
    diffs = [
        f"{k} {getattr(found, k)!r} in the checkpoint vs {getattr(expected, k)!r} in the config"
        for k in keys
        if getattr(found, k) != getattr(expected, k)
    ]
    if diffs:
        raise ConfigMismatchError(f"{source}: checkpoint and config disagree: " + "; ".join(diffs))


# ---------------------------------------------------------------------------- tokenizer files

#: The official ALBERT SentencePiece special tokens, named as transformers' ``AlbertTokenizer`` names them.
SPM_SPECIAL_TOKENS = {
    "bos_token": "[CLS]",
    "eos_token": "[SEP]",
    "unk_token": "<unk>",
    "sep_token": "[SEP]",
    "pad_token": "<pad>",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}
#: The WordPiece (Chinese ALBERT, BERT vocab.txt) special tokens, as transformers' ``BertTokenizer`` names them.
WORDPIECE_SPECIAL_TOKENS = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}
_SPM_UNIGRAM = 1  # sentencepiece ModelProto.TrainerSpec.ModelType.UNIGRAM
_SPM_UNKNOWN, _SPM_CONTROL = 2, 3  # ModelProto.SentencePiece.Type
_METASPACE = "\u2581"


def sentencepiece_tokenizer_config(
    do_lower_case: bool, model_max_length: int | None = None, add_prefix_space: bool = True
) -> dict[str, Any]:
    """``tokenizer_config.json`` for an official-style SentencePiece ALBERT tokenizer.

    ``keep_accents`` is False and ``remove_space`` True because the official ``preprocess_text``
    always strips accents and collapses whitespace; ``do_lower_case`` is the model's (True for the
    released English models). ``model_input_names`` includes ``token_type_ids``: transformers'
    ``AlbertTokenizer`` leaves them out by default, and ``AlbertModel`` then treats the second
    segment of a pair as segment 0.
    """
    out: dict[str, Any] = {
        "tokenizer_class": "AlbertTokenizer",
        "do_lower_case": bool(do_lower_case),
        "keep_accents": False,
        "remove_space": True,
        "add_prefix_space": bool(add_prefix_space),
        "model_input_names": ["input_ids", "token_type_ids", "attention_mask"],
        **SPM_SPECIAL_TOKENS,
    }
    if model_max_length:
        out["model_max_length"] = int(model_max_length)
    return out


def wordpiece_tokenizer_config(do_lower_case: bool, model_max_length: int | None = None) -> dict[str, Any]:
    """``tokenizer_config.json`` for a WordPiece ALBERT (the official BERT ``FullTokenizer``: basic + WordPiece).

    ``strip_accents`` None follows ``do_lower_case``, as the official BasicTokenizer does, and CJK
    characters are split one by one (``tokenize_chinese_chars``).
    """
    out: dict[str, Any] = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": bool(do_lower_case),
        "do_basic_tokenize": True,
        "tokenize_chinese_chars": True,
        "strip_accents": None,
        **WORDPIECE_SPECIAL_TOKENS,
    }
    if model_max_length:
        out["model_max_length"] = int(model_max_length)
    return out


def sentencepiece_tokenizer_json(proto: Any, do_lower_case: bool) -> dict[str, Any]:
    """A ``tokenizers`` ``tokenizer.json`` dict equivalent to the official ALBERT tokenizer for ``proto``.

    ``proto`` is a parsed ``sentencepiece_model_pb2.ModelProto`` (a unigram model with ``[CLS]`` and
    ``[SEP]``; the caller checks that). The pipeline is the official one: NFKD and accent stripping,
    lower-casing when ``do_lower_case``, the model's own normaliser (its precompiled charsmap),
    whitespace split with the ``▁`` dummy prefix, then the Unigram vocabulary with the model's
    scores, except that pieces ending in a digit and ``,`` get :data:`DIGIT_COMMA_SCORE` (the official
    digit-comma rule; module docstring). Control pieces and ``<unk>`` become special added tokens;
    user-defined pieces stay ordinary pieces (see the module docstring). The post-processor adds
    ``[CLS] A [SEP] (B [SEP])``.
    """
    pieces = list(proto.pieces)
    ids = {p.piece: i for i, p in enumerate(pieces)}
    normalizers: list[dict[str, Any]] = [{"type": "NFKD"}, {"type": "StripAccents"}]
    if do_lower_case:
        normalizers.append({"type": "Lowercase"})
    charsmap = bytes(proto.normalizer_spec.precompiled_charsmap)
    if charsmap:
        normalizers.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")})
    prepend = "always" if proto.normalizer_spec.add_dummy_prefix else "never"
    metaspace = {"type": "Metaspace", "replacement": _METASPACE, "prepend_scheme": prepend, "split": True}
    cls, sep = SPM_SPECIAL_TOKENS["cls_token"], SPM_SPECIAL_TOKENS["sep_token"]

    def special(name: str, type_id: int) -> dict[str, Any]:
        return {"SpecialToken": {"id": name, "type_id": type_id}}

    def sequence(name: str, type_id: int) -> dict[str, Any]:
        return {"Sequence": {"id": name, "type_id": type_id}}

    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": p.piece,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for i, p in enumerate(pieces)
            if p.type in (_SPM_UNKNOWN, _SPM_CONTROL)
        ],
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, metaspace]},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special(cls, 0), sequence("A", 0), special(sep, 0)],
            "pair": [special(cls, 0), sequence("A", 0), special(sep, 0), sequence("B", 1), special(sep, 1)],
            "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]} for t in (cls, sep)},
        },
        "decoder": dict(metaspace),
        "model": {
            "type": "Unigram",
            "unk_id": int(proto.trainer_spec.unk_id),
            "vocab": [[p.piece, _unigram_score(p)] for p in pieces],
            "byte_fallback": False,
        },
    }


def _unigram_score(piece: Any) -> float:
    """A piece's score in tokenizer.json: the model's, or DIGIT_COMMA_SCORE for a (non-special) piece the
    official digit-comma rule would split."""
    if piece.type not in (_SPM_UNKNOWN, _SPM_CONTROL) and needs_digit_comma_reencode(piece.piece):
        return DIGIT_COMMA_SCORE
    return float(piece.score)


def check_sentencepiece_proto(proto: Any, source: str) -> list[str]:
    """Reasons (empty when none) why ``proto`` cannot be written as an official-style ALBERT tokenizer.

    transformers' ``AlbertTokenizer`` is a Unigram model without byte fallback, and ALBERT's inputs
    need the five pieces ``<pad> <unk> [CLS] [SEP] [MASK]``.
    """
    problems = []
    if proto.trainer_spec.model_type != _SPM_UNIGRAM:
        problems.append(f"{source}: not a unigram SentencePiece model (ALBERT's is; transformers' AlbertTokenizer is)")
    if proto.trainer_spec.byte_fallback:
        problems.append(f"{source}: byte-fallback SentencePiece models are not ALBERT tokenizers")
    names = {p.piece for p in proto.pieces}
    missing = [t for t in dict.fromkeys(SPM_SPECIAL_TOKENS.values()) if t not in names]
    if missing:
        problems.append(f"{source}: no ALBERT special piece(s) {', '.join(missing)} in the SentencePiece model")
    return problems
