"""``AlbertPreprocessor``: raw strings -> ``input_ids`` / ``input_mask`` / ``segment_ids`` inside the graph.

The layer runs the same steps as the Python :class:`~albert_tf.tokenization.FullTokenizer` in SentencePiece mode
plus the official input packing, with TensorFlow / tensorflow-text ops only, so that a SavedModel answers raw text:

1. invalid UTF-8 -> U+FFFD (``tf.strings.unicode_transcode``; Python ``str`` cannot hold invalid bytes, and lone
   surrogates are replaced the same way by the Python path);
2. ``preprocess_text``: Python-whitespace collapse and strip (RE2 class built from ``str.isspace``), NFKD
   (``tensorflow_text.normalize_utf8``, ICU), removal of characters with a non-zero combining class (RE2 class from
   ``unicodedata.combining``), Python ``str.lower()`` (final-sigma rewrite, U+0130 rewrite, then a code point table
   from ``str.lower``; ``tf.strings.lower`` differs from Python and cuts strings at NUL);
3. SentencePiece ids (``tensorflow_text.SentencepieceTokenizer``, the same C++ library as the python package);
4. the official digit-comma re-encoding, precomputed per vocab entry with the Python code (a piece's re-encoding
   depends on the piece only), applied as one ragged gather;
5. ``[CLS] a [SEP] b [SEP]`` with the official pair truncation (pop from the end of the longer side, ``b`` on ties;
   closed form, core ops only), or ``[CLS] a [SEP]`` cut to ``max_seq_length - 2`` when ``b`` is absent or empty.

Known, measured differences from the Python path (benchmarks/tokenizer_parity.py; none on the 88,731 real lines):
118 code points that are unassigned in Python 3.11's ``unicodedata`` (Unicode 14.0) but assigned in the newer
Unicode of tensorflow-text's ICU decompose under NFKD in the graph and not in Python; and python sentencepiece
versions other than the pinned 0.2.1 break some Viterbi score ties differently from tensorflow-text.

The SentencePiece model proto is stored base64-encoded in the layer config, so ``.keras`` files are
self-contained; in a SavedModel it is part of the graph. Reloading a SavedModel needs ``import tensorflow_text``
(for the ``SentencepieceOp`` / ``NormalizeUTF8`` / ``RegexSplitWithOffsets`` kernels) and nothing from this
package. Truncation and packing use core TensorFlow ops only (no ``TFText>RoundRobinTrim``, which older TF Serving
builds lack).

WordPiece (vocab-file, the Chinese models): the official BasicTokenizer is rebuilt from RE2 classes derived from
Python's ``unicodedata`` (control-character removal, whitespace mapping, CJK spacing, Python ``lower()``, NFD and Mn
removal, punctuation split; ``tensorflow_text.BertTokenizer`` differs: it case-folds with NFKC), then
``tensorflow_text.WordpieceTokenizer`` does the greedy longest match with "##" and "[UNK]"; words over 200
characters become "[UNK]" as in the official. The vocab list is stored in the layer config.
"""

from __future__ import annotations

import base64
import os

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.tokenization import unicode_tables
from albert_tf.tokenization.packing import INPUT_NAMES
from albert_tf.tokenization.sentencepiece_tokenizer import (
    SPIECE_UNDERLINE,
    load_sentencepiece,
    needs_digit_comma_reencode,
)
from albert_tf.tokenization.wordpiece import load_vocab

__all__ = ["AlbertPreprocessor"]

_MAX_CHARS_PER_WORD = 200  # official WordpieceTokenizer(max_input_chars_per_word=200)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPreprocessor(keras.layers.Layer):
    """Keras layer: one string segment, or a pair, -> official ALBERT model inputs (int32 ``[B, max_seq_length]``).

    Args:
      spm_model_file: SentencePiece model path (local or ``gs://``) or the serialized proto ``bytes``.
      max_seq_length: output length (``[CLS]`` and ``[SEP]`` included).
      do_lower_case: lower-case in ``preprocess_text`` (as ``FullTokenizer(do_lower_case=...)``).
      keep_accents: skip NFKD and combining-mark removal (official: False).
      official_digit_comma: apply the official digit-comma re-encoding (official: True).
      spm_model_proto: base64 of the proto; used by ``from_config`` (give either this or ``spm_model_file``).
      vocab_file: WordPiece vocab file (the Chinese models) instead of a SentencePiece model.
      wordpiece_vocab: the WordPiece vocab as a list (id order); used by ``from_config``.

    Exactly one of ``spm_model_file``, ``spm_model_proto``, ``vocab_file``, ``wordpiece_vocab`` is given.
    ``keep_accents`` and ``official_digit_comma`` apply to SentencePiece only (the WordPiece path is the official
    BasicTokenizer, whose accent strip follows ``do_lower_case``).

    Call with a string tensor ``[B]`` (one segment), a pair ``(text_a, text_b)``, or a dict with ``text_a`` and
    optionally ``text_b``. Returns ``{"input_ids", "input_mask", "segment_ids"}``.
    """

    def __init__(
        self,
        spm_model_file: str | os.PathLike | bytes | None = None,
        max_seq_length: int = 128,
        do_lower_case: bool = True,
        keep_accents: bool = False,
        official_digit_comma: bool = True,
        spm_model_proto: str | None = None,
        vocab_file: str | os.PathLike | None = None,
        wordpiece_vocab: list[str] | None = None,
        **kwargs,
    ):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        sources = [spm_model_file, spm_model_proto, vocab_file, wordpiece_vocab]
        if sum(x is not None for x in sources) != 1:
            raise ValueError(
                "AlbertPreprocessor: give exactly one of spm_model_file, spm_model_proto (SentencePiece), "
                "vocab_file or wordpiece_vocab (WordPiece)"
            )
        if int(max_seq_length) < 3:
            raise ValueError(f"AlbertPreprocessor: max_seq_length must be >= 3, got {max_seq_length}")
        self.max_seq_length = int(max_seq_length)
        self.do_lower_case = bool(do_lower_case)
        self.keep_accents = bool(keep_accents)
        self.official_digit_comma = bool(official_digit_comma)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True

        self._whitespace = unicode_tables.whitespace_class_pattern() + "+"
        self._sigma_pattern, self._sigma_rewrite = unicode_tables.final_sigma_pattern()
        keys, values = unicode_tables.lowercase_table()
        self._lower_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(keys), tf.constant(values)), default_value=-1
        )
        if vocab_file is not None or wordpiece_vocab is not None:
            self._init_wordpiece(vocab_file, wordpiece_vocab)
        else:
            self._init_sentencepiece(spm_model_file, spm_model_proto)
        self.built = True

    def _init_sentencepiece(self, spm_model_file, spm_model_proto) -> None:
        self.kind = "spm"
        self._vocab_list = None
        proto = base64.b64decode(spm_model_proto) if spm_model_proto is not None else spm_model_file
        sp, proto = load_sentencepiece(proto)
        self._proto = proto
        self.vocab_size = sp.GetPieceSize()
        self.cls_id = sp.PieceToId("[CLS]")
        self.sep_id = sp.PieceToId("[SEP]")
        self.unk_id = sp.unk_id()  # the piece of a word that tokenizes to none (token tagging keeps its position)
        if sp.IsUnknown(self.cls_id) or sp.IsUnknown(self.sep_id):
            raise ValueError("AlbertPreprocessor: the SentencePiece model has no [CLS] / [SEP] pieces")
        self._combining = unicode_tables.combining_class_pattern()
        self._sp = tf_text.SentencepieceTokenizer(model=proto, out_type=tf.int32)
        self._reencode = self._digit_comma_table(sp) if self.official_digit_comma else None

    def _init_wordpiece(self, vocab_file, wordpiece_vocab) -> None:
        self.kind = "wordpiece"
        self._proto = None
        if wordpiece_vocab is None:
            vocab = load_vocab(vocab_file)
            wordpiece_vocab = list(vocab)
        self._vocab_list = [str(t) for t in wordpiece_vocab]
        ids = {t: i for i, t in enumerate(self._vocab_list)}
        if len(ids) != len(self._vocab_list):
            raise ValueError("AlbertPreprocessor: wordpiece_vocab has duplicate entries")
        for token in ("[CLS]", "[SEP]", "[UNK]"):
            if token not in ids:
                raise ValueError(f"AlbertPreprocessor: the WordPiece vocab has no {token} entry")
        self.vocab_size = len(self._vocab_list)
        self.cls_id, self.sep_id, self.unk_id = ids["[CLS]"], ids["[SEP]"], ids["[UNK]"]
        self._bert_control = unicode_tables.bert_control_class_pattern()
        self._bert_space = unicode_tables.bert_whitespace_class_pattern()
        self._cjk = "(" + unicode_tables.cjk_class_pattern() + ")"
        self._mn = unicode_tables.mn_class_pattern()
        self._punct = unicode_tables.bert_punctuation_class_pattern()
        self._split_delim = "(?:" + unicode_tables.whitespace_class_pattern() + "|" + self._punct + ")"
        self._wp_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(self._vocab_list), tf.range(len(self._vocab_list), dtype=tf.int64)
            ),
            default_value=-1,
        )
        self._wordpiece = tf_text.WordpieceTokenizer(
            self._wp_table,
            suffix_indicator="##",
            max_bytes_per_word=4 * _MAX_CHARS_PER_WORD + 4,
            token_out_type=tf.int64,
            unknown_token="[UNK]",
            split_unknown_characters=False,
        )

    # ------------------------------------------------------------------------------------------------ tables
    @staticmethod
    def _digit_comma_table(sp) -> tuple[np.ndarray, ...] | None:
        """Per vocab id, the ids the official ``encode_pieces`` puts in its place (row splits, values), and per
        value the UTF-8 bytes of its piece and of the pieces from it to the end of its row (``-1`` for an id kept
        as is): they place a re-encoded piece's parts inside the original piece's span (:meth:`encode_with_offsets`)."""
        comma = sp.PieceToId(",")
        splits, values, sizes, suffix_bytes = [0], [], [], []
        flagged = 0
        for i in range(sp.GetPieceSize()):
            piece = sp.IdToPiece(i)
            if needs_digit_comma_reencode(piece) and not (sp.IsControl(i) or sp.IsUnknown(i)):
                parts = [*sp.EncodeAsIds(piece[:-1].replace(SPIECE_UNDERLINE, "")), comma]
                part_sizes = [len(sp.IdToPiece(j).replace(SPIECE_UNDERLINE, "").encode("utf-8")) for j in parts]
                values.extend(parts)
                sizes.extend(part_sizes)
                suffix_bytes.extend(int(sum(part_sizes[k:])) for k in range(len(part_sizes)))
                flagged += 1
            else:
                values.append(i)
                sizes.append(-1)
                suffix_bytes.append(-1)
            splits.append(len(values))
        if not flagged:
            return None
        return (np.asarray(splits, np.int64), np.asarray(values, np.int32), np.asarray(sizes, np.int64),
                np.asarray(suffix_bytes, np.int64))

    # -------------------------------------------------------------------------------------------- text steps
    def preprocess(self, text: tf.Tensor, remove_space: bool = True) -> tf.Tensor:
        """In-graph ``preprocess_text(text, remove_space, lower=do_lower_case, keep_accents=keep_accents)``.

        (The SentencePiece path; the WordPiece path uses :meth:`basic_tokenize` instead, as the official.)
        ``remove_space=False`` skips the whitespace collapse and strip, as the SQuAD alignment's per-character
        normaliser does.
        """
        x = tf.strings.unicode_transcode(
            text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD, replace_control_characters=False
        )
        if remove_space:
            x = tf.strings.regex_replace(x, self._whitespace, " ")
            x = tf.strings.regex_replace(x, "^ | $", "")
        if not self.keep_accents:
            x = tf_text.normalize_utf8(x, "NFKD")
            x = tf.strings.regex_replace(x, self._combining, "")
        if self.do_lower_case:
            x = self._lower(x)
        return x

    def _lower(self, x: tf.Tensor) -> tf.Tensor:
        x = tf.strings.regex_replace(x, self._sigma_pattern, self._sigma_rewrite)
        x = tf.strings.regex_replace(x, "\u0130", "i\u0307")
        x = tf.strings.lower(x)  # ASCII only (no encoding): exact for ASCII, leaves other bytes alone
        non_ascii = tf.logical_not(tf.strings.regex_full_match(x, "[\\x00-\\x7f]*"))
        rows = tf.where(non_ascii)
        sub = tf.gather_nd(x, rows)
        cps = tf.strings.unicode_decode(sub, "UTF-8")
        flat = cps.flat_values
        mapped = tf.cast(self._lower_table.lookup(tf.cast(flat, tf.int64)), tf.int32)
        flat = tf.where(mapped >= 0, mapped, flat)
        sub = tf.strings.unicode_encode(cps.with_flat_values(flat), "UTF-8")
        return tf.tensor_scatter_nd_update(x, rows, sub)

    def basic_tokenize(self, text: tf.Tensor) -> tf.RaggedTensor:
        """WordPiece mode: the official BasicTokenizer in the graph; ragged words ``[B, None]``."""
        x = tf.strings.unicode_transcode(
            text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD, replace_control_characters=False
        )
        x = tf.strings.regex_replace(x, self._bert_control, "")
        x = tf.strings.regex_replace(x, self._bert_space, " ")
        x = tf.strings.regex_replace(x, self._cjk, " \\1 ")
        if self.do_lower_case:
            x = self._lower(x)
            x = tf_text.normalize_utf8(x, "NFD")
            x = tf.strings.regex_replace(x, self._mn, "")
        words = tf_text.regex_split(x, self._split_delim, keep_delim_regex_pattern=self._punct)
        too_long = tf.strings.length(words.flat_values, unit="UTF8_CHAR") > _MAX_CHARS_PER_WORD
        return words.with_flat_values(tf.where(too_long, "[UNK]", words.flat_values))

    def _sentencepiece(self, method: str, text: tf.Tensor):
        """``self._sp.<method>(text)``; called eagerly after ``tf.random.set_seed`` (``keras.utils.set_random_seed``),
        which resets the eager kernel cache that owns tensorflow-text's SentencePiece resource
        (tensorflow/text#570: "Resource ... SentencepieceOp ... does not exist"), it builds the resource again
        and retries. A ``tf.function`` traced before the reset keeps the dead handle: trace after seeding."""
        try:
            return getattr(self._sp, method)(text)
        except tf.errors.NotFoundError:
            if not tf.executing_eagerly():
                raise
            self._sp = tf_text.SentencepieceTokenizer(model=self._proto, out_type=tf.int32)
            return getattr(self._sp, method)(text)

    def tokenize(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Ragged int32 ids ``[B, None]`` of raw strings ``[B]``.

        SentencePiece: pre-processing + SentencePiece + digit-comma. WordPiece: BasicTokenizer + WordPiece.
        """
        if self.kind == "wordpiece":
            pieces = self._wordpiece.tokenize(self.basic_tokenize(text))
            return tf.cast(pieces.merge_dims(1, 2), tf.int32)
        ids = self._sentencepiece("tokenize", self.preprocess(text))
        if self._reencode is not None:
            splits, values = self._reencode[:2]
            table = tf.RaggedTensor.from_row_splits(tf.constant(values), tf.constant(splits), validate=False)
            ids = ids.with_flat_values(tf.gather(table, ids.flat_values)).merge_dims(1, 2)
        return ids

    def encode_with_offsets(self, preprocessed: tf.Tensor) -> tuple[tf.RaggedTensor, tf.RaggedTensor,
                                                                      tf.RaggedTensor]:
        """SentencePiece ids of already pre-processed strings ``[N]`` with each piece's UTF-8 byte span in its
        string: ``(ids, begin, end)``, ragged int32 / int64 / int64 ``[N, None]``.

        The spans are SentencePiece's own (a "▁" added in front of a word covers no byte). A piece the official
        digit-comma rule re-encodes ("▁1999," -> "▁1999" ",") is split into its parts' byte lengths counted
        from the end of the original span. SentencePiece only (the SQuAD character alignment works on pieces).
        """
        if self.kind != "spm":
            raise ValueError("encode_with_offsets needs a SentencePiece model")
        ids, begin, end = self._sentencepiece("tokenize_with_offsets", preprocessed)
        begin, end = tf.cast(begin, tf.int64), tf.cast(end, tf.int64)
        if self._reencode is None:
            return ids, begin, end
        splits, values, sizes, suffix_bytes = self._reencode
        rows = tf.RaggedTensor.from_row_splits(tf.range(len(values), dtype=tf.int64), tf.constant(splits),
                                               validate=False)
        slots = tf.gather(rows, ids.flat_values)  # [pieces, parts]: positions in ``values``
        parts = tf.gather(tf.constant(values), slots.flat_values)
        size = tf.gather(tf.constant(sizes), slots.flat_values)
        suffix = tf.gather(tf.constant(suffix_bytes), slots.flat_values)
        piece_begin = tf.repeat(begin.flat_values, slots.row_lengths())
        piece_end = tf.repeat(end.flat_values, slots.row_lengths())
        kept = suffix < 0
        part_begin = tf.where(kept, piece_begin, tf.maximum(piece_begin, piece_end - suffix))
        part_end = tf.where(kept, piece_end, tf.maximum(piece_begin, piece_end - suffix + size))

        def regroup(flat):
            return ids.with_flat_values(slots.with_flat_values(flat)).merge_dims(1, 2)

        return regroup(parts), regroup(part_begin), regroup(part_end)

    # -------------------------------------------------------------------------------------------------- packing
    def pack(self, ids_a: tf.RaggedTensor, ids_b: tf.RaggedTensor | None) -> dict[str, tf.Tensor]:
        """Official ``[CLS] a [SEP] b [SEP]`` packing, truncation and zero padding of ragged ids."""
        seq = self.max_seq_length
        budget = seq - 3
        ids_a = ids_a[:, :seq]
        len_a = ids_a.row_lengths()
        if ids_b is None:
            ids_b = tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), tf.zeros_like(len_a))
        ids_b = ids_b[:, :seq]
        len_b = ids_b.row_lengths()
        has_b = len_b > 0
        keep_b = tf.minimum(len_b, tf.maximum(tf.constant(budget // 2, tf.int64), budget - len_a))
        keep_b = tf.where(has_b, keep_b, 0)
        keep_a = tf.where(has_b, tf.minimum(len_a, budget - keep_b), tf.minimum(len_a, seq - 2))

        def head(r: tf.RaggedTensor, n: tf.Tensor) -> tf.RaggedTensor:
            return tf.ragged.boolean_mask(r, tf.ragged.range(r.row_lengths()) < tf.expand_dims(n, 1))

        ids_a, ids_b = head(ids_a, keep_a), head(ids_b, keep_b)
        batch = tf.shape(len_a, out_type=tf.int64)[0]
        ones = tf.ones([batch], tf.int64)
        cls = tf.RaggedTensor.from_row_lengths(tf.fill([batch], self.cls_id), ones)
        sep = tf.RaggedTensor.from_row_lengths(tf.fill([batch], self.sep_id), ones)
        b_len = tf.cast(has_b, tf.int64)
        sep_b = tf.RaggedTensor.from_row_lengths(tf.fill([tf.reduce_sum(b_len)], self.sep_id), b_len)
        ids = tf.concat([cls, ids_a, sep, ids_b, sep_b], axis=1)
        segments = tf.concat([cls * 0, ids_a * 0, sep * 0, tf.ones_like(ids_b), tf.ones_like(sep_b)], axis=1)
        shape = [None, seq]
        return {
            "input_ids": ids.to_tensor(default_value=0, shape=shape),
            "input_mask": tf.ones_like(ids).to_tensor(default_value=0, shape=shape),
            "segment_ids": segments.to_tensor(default_value=0, shape=shape),
        }

    # ------------------------------------------------------------------------------------------------- keras API
    @staticmethod
    def _split_inputs(inputs):
        if isinstance(inputs, dict):
            unknown = set(inputs) - {"text_a", "text_b"}
            if unknown or "text_a" not in inputs:
                raise ValueError(
                    f"AlbertPreprocessor: dict inputs need 'text_a' (+ optional 'text_b'), got {sorted(inputs)}"
                )
            return inputs["text_a"], inputs.get("text_b")
        if isinstance(inputs, (list, tuple)):
            if len(inputs) not in (1, 2):
                raise ValueError(f"AlbertPreprocessor: expected 1 or 2 segments, got {len(inputs)}")
            return inputs[0], (inputs[1] if len(inputs) == 2 else None)
        return inputs, None

    def call(self, inputs):
        text_a, text_b = self._split_inputs(inputs)
        text_a = tf.reshape(tf.convert_to_tensor(text_a, tf.string), [-1])
        ids_a = self.tokenize(text_a)
        ids_b = None
        if text_b is not None:
            text_b = tf.reshape(tf.convert_to_tensor(text_b, tf.string), [-1])
            check = tf.debugging.assert_equal(
                tf.size(text_a),
                tf.size(text_b),
                message="AlbertPreprocessor: text_a and text_b must hold the same number of strings (text_a size, "
                "text_b size)",
            )
            with tf.control_dependencies([check]):
                text_b = tf.identity(text_b)
            ids_b = self.tokenize(text_b)
        return self.pack(ids_a, ids_b)

    def compute_output_spec(self, inputs):
        text_a, _ = self._split_inputs(inputs)
        batch = text_a.shape[0] if len(text_a.shape) else 1
        return {k: keras.KerasTensor((batch, self.max_seq_length), dtype="int32") for k in INPUT_NAMES}

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "max_seq_length": self.max_seq_length,
                "do_lower_case": self.do_lower_case,
                "keep_accents": self.keep_accents,
                "official_digit_comma": self.official_digit_comma,
            }
        )
        if self.kind == "spm":
            config["spm_model_proto"] = base64.b64encode(self._proto).decode("ascii")
        else:
            config["wordpiece_vocab"] = list(self._vocab_list)
        return config

    @classmethod
    def from_tokenizer(cls, tokenizer, max_seq_length: int, **kwargs) -> AlbertPreprocessor:
        """The layer matching a :class:`FullTokenizer` (same model / vocab and switches)."""
        if tokenizer.sp_model is None:
            vocab = [tokenizer.inv_vocab[i] for i in range(len(tokenizer.inv_vocab))]
            return cls(
                wordpiece_vocab=vocab,
                max_seq_length=max_seq_length,
                do_lower_case=tokenizer.do_lower_case,
                **kwargs,
            )
        return cls(
            spm_model_file=tokenizer.model_bytes,
            max_seq_length=max_seq_length,
            do_lower_case=tokenizer.do_lower_case,
            keep_accents=tokenizer.keep_accents,
            official_digit_comma=tokenizer.official_digit_comma,
            **kwargs,
        )
