"""SavedModel export of a fine-tuned SQuAD model (``AlbertSquad``, v1 or v2) that TF Serving answers from raw text.

Signatures (batch-major; TF Serving's ``predict`` API):

* ``serving_default``: raw UTF-8 strings ``question`` [B] and ``context`` [B]. Outputs per question:
  ``answer`` [B] string, ``start`` / ``end`` [B] int32 (the answer is ``context[start:end]`` in characters; -1
  when there is no span) and ``score`` [B] float32 (start + end logit in v1, log-probability in v2, of the best
  span). v2 also returns ``null_score`` [B] (the minimum over the question's windows of ``cls_logits``; high =
  unanswerable) and ``has_answer`` [B] bool (``null_score < null_score_diff_threshold`` and a span exists); in v2
  ``answer`` is ``""`` when ``has_answer`` is false, while ``start`` / ``end`` / ``score`` still describe the best
  non-null span so a client can apply its own threshold to ``null_score``.
* ``serve_token_ids``: the model on windows already built: ``input_ids``, ``input_mask``, ``segment_ids`` (and
  ``p_mask`` for v2) int32 [N, S] -> the model's raw outputs (v1 ``start_logits`` / ``end_logits``; v2 the beam
  ``start_top_*``, ``end_top_*`` and ``cls_logits``). This is the signature TFLite converts.

The raw-text path runs the steps of ``run_squad.py --do_predict`` in the graph (:class:`SquadFeaturizer`,
:class:`SquadAnswerer`):

1. the question: in-graph ``preprocess_text`` + SentencePiece (+ digit-comma), cut to ``max_query_length``;
2. the context is split at Python whitespace; each word is pre-processed and encoded on its own. SentencePiece
   never lets a piece cross a space, so the concatenated pieces equal the whole paragraph's pieces, except where a
   Viterbi tie inside a word is broken the other way (how often: docs/fine-tuning.md, "Serving SQuAD from raw
   text");
3. each piece's characters in the original context come from SentencePiece's byte offsets in the pre-processed
   word, mapped back through the per-character pre-processing (the normalised bytes of each original character,
   as the official alignment matches ``preprocess_text(char)``). A word whose characters do not add up to its
   pre-processed form (a rule that is not per character) maps each of its pieces to the whole word. The Python
   pipeline aligns the whole paragraph with a banded LCS instead; both give the same spans whenever the
   normalisation is per character, and the answer text is cut from the original context in both;
4. the official sliding windows (``max_seq_length - len(query) - 3`` document pieces, advancing by
   ``min(doc_stride, window)``), ``[CLS] query [SEP] doc [SEP]``, ``p_mask`` and the max-context table (score
   ``min(left, right) + 0.01 * length`` in float64, first window wins ties);
5. the official candidate filters and ranking over all windows of a question (v1: top ``n_best_size`` start and
   end logits; v2: the model's ``start_n_top`` x ``end_n_top`` beam; the start in the document where the window
   has the maximal context, ``start <= end``, at most ``max_answer_length`` pieces; score summed in float64);
   the text is the original context between the spans' characters, stripped. No candidate: v1 answers "empty"
   (official), v2 answers "".

Where the two can differ: logits of the same window computed in a different batch differ in the last bits, so
near-ties between candidates can flip; and the alignment rules above. ``tests/test_export_squad.py`` measures the
agreement with ``run_squad --do_predict`` on the shared SQuAD 2.0 subset. Bad requests (batch sizes that
disagree, id tensors of different shapes) fail with an ``InvalidArgumentError`` naming the input; invalid UTF-8
becomes U+FFFD (offsets count characters of the decoded context). Consumers ``import tensorflow_text`` first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from albert_tf.export.savedmodel import (
    IDS_SIGNATURE,
    REQUIRES,
    TEXT_SIGNATURE,
    checked_strings,
    checked_token_ids,
    make_preprocessor,
    refuse_non_empty,
    write_archive,
)
from albert_tf.tokenization.packing import INPUT_NAMES

V1_EMPTY = "empty"  # the official v1 answer when no span survives the filters
NO_WINDOW_NULL_SCORE = 1000000.0  # the official initial score_null (a question without windows)
V2_NO_SPAN_SCORE = -2000000.0  # the official v2 fallback candidate: start and end log-prob -1e6 each
_BIG = 2**62


def _ragged_cumsum_end(values: Any) -> Any:
    """Per row of a ragged int64 tensor, the inclusive running sum of its values (flat, aligned with values)."""
    import tensorflow as tf

    total = tf.cumsum(values.flat_values)
    before = tf.concat([tf.zeros([1], tf.int64), total], 0)
    return total - tf.gather(tf.gather(before, values.row_starts()), values.value_rowids())


def _count_at_most(sorted_rows: Any, values: Any) -> Any:
    """Per row, how many entries of the ragged ``sorted_rows`` are <= each entry of the ragged ``values``."""
    import tensorflow as tf

    table = sorted_rows.to_tensor(default_value=_BIG)
    table = tf.concat([table, tf.fill([tf.shape(table)[0], 1], tf.constant(_BIG, tf.int64))], axis=1)
    dense = values.to_tensor(default_value=0)
    counts = tf.cond(  # searchsorted cannot take values of no column ([0, 0]: an empty batch of questions)
        tf.size(dense) > 0, lambda: tf.searchsorted(table, dense, side="right"), lambda: tf.zeros_like(dense, tf.int32))
    return tf.RaggedTensor.from_tensor(tf.cast(counts, tf.int64), lengths=values.row_lengths())


class SquadFeaturizer:
    """Raw ``question`` [B] and ``context`` [B] -> the official windows of every question, in the graph."""

    def __init__(self, preprocessor: Any, doc_stride: int, max_query_length: int) -> None:
        from albert_tf.data.squad.features import check_window_settings
        from albert_tf.data.squad.reader import SquadDataError
        from albert_tf.tokenization import unicode_tables

        if preprocessor.kind != "spm":
            raise SquadDataError("the SQuAD export needs a SentencePiece model (the alignment works on pieces)")
        self.preprocessor = preprocessor
        self.max_seq_length = int(preprocessor.max_seq_length)
        self.doc_stride = int(doc_stride)
        self.max_query_length = int(max_query_length)
        check_window_settings(self.max_seq_length, self.doc_stride, self.max_query_length)
        self._whitespace = unicode_tables.whitespace_class_pattern() + "+"

    # ----------------------------------------------------------------------------------------------- context
    def paragraph(self, context: Any) -> tuple[Any, Any, Any]:
        """``(ids, begin, end)`` ragged ``[B, n]``: the context's pieces and each piece's characters
        ``[begin, end)`` in the context (see the module docstring, step 2-3)."""
        import tensorflow as tf
        import tensorflow_text as tf_text

        prep = self.preprocessor
        words, word_byte_begin, _ = tf_text.regex_split_with_offsets(context, self._whitespace)
        flat_words = words.flat_values
        word_row = tf.cast(words.value_rowids(), tf.int32)
        byte_begin_of_word = tf.cast(word_byte_begin.flat_values, tf.int32)
        word_char_begin = tf.cast(tf.strings.length(
            tf.strings.substr(tf.gather(context, word_row), tf.zeros_like(byte_begin_of_word), byte_begin_of_word),
            unit="UTF8_CHAR"), tf.int64)
        word_chars = tf.cast(tf.strings.length(flat_words, unit="UTF8_CHAR"), tf.int64)

        normalized = prep.preprocess(flat_words)
        ids, byte_begin, byte_end = prep.encode_with_offsets(normalized)  # bytes in the normalised word
        chars = tf.strings.unicode_split(flat_words, "UTF-8")
        char_bytes = tf.cast(tf.strings.length(prep.preprocess(chars.flat_values, remove_space=False)), tf.int64)
        char_end = chars.with_flat_values(_ragged_cumsum_end(chars.with_flat_values(char_bytes)))
        per_char = tf.equal(tf.reduce_sum(chars.with_flat_values(char_bytes), axis=1),
                            tf.cast(tf.strings.length(normalized), tf.int64))

        first = _count_at_most(char_end, byte_begin)  # the character holding the piece's first byte
        last = _count_at_most(char_end, tf.maximum(byte_end - 1, 0))  # ... and its last byte
        empty = byte_end <= byte_begin  # a "▁" added in front of a word covers no character
        begin_char = first.flat_values
        end_char = tf.where(empty.flat_values, begin_char, last.flat_values + 1)
        piece_word = tf.cast(ids.value_rowids(), tf.int32)
        exact = tf.gather(per_char, piece_word)
        length = tf.gather(word_chars, piece_word)
        begin_char = tf.where(exact, tf.minimum(begin_char, length), 0)
        end_char = tf.where(exact, tf.minimum(end_char, length), length)
        offset = tf.gather(word_char_begin, piece_word)

        def per_example(flat: Any) -> Any:
            return tf.RaggedTensor.from_row_splits(ids.with_flat_values(flat), words.row_splits).merge_dims(1, 2)

        return per_example(ids.flat_values), per_example(offset + begin_char), per_example(offset + end_char)

    # ----------------------------------------------------------------------------------------------- windows
    def __call__(self, question: Any, context: Any) -> dict[str, Any]:
        """Windows ``[N, S]`` of every question: model inputs (``input_ids``, ``input_mask``, ``segment_ids``,
        ``p_mask``) plus ``example`` [N] (row of the question), ``doc_offset`` [N] (position of the first document
        piece), ``doc_start`` / ``doc_length`` [N] (in the question's pieces), ``max_context`` [N, S] bool, the
        paragraph's pieces ``piece_begin`` / ``piece_end`` (ragged ``[B, n]`` characters) and ``context`` [B] (the
        context with invalid UTF-8 replaced, which the character offsets count)."""
        import tensorflow as tf

        prep = self.preprocessor
        question = tf.convert_to_tensor(question, tf.string)
        context = tf.convert_to_tensor(context, tf.string)
        checks = [
            tf.debugging.assert_rank(question, 1, message="question must be a [batch] string tensor"),
            tf.debugging.assert_rank(context, 1, message="context must be a [batch] string tensor"),
            tf.debugging.assert_equal(tf.shape(question), tf.shape(context),
                                      message="question and context must hold the same number of strings"),
        ]
        with tf.control_dependencies(checks):
            question, context = tf.identity(question), tf.identity(context)
        context = tf.strings.unicode_transcode(context, "UTF-8", "UTF-8", errors="replace",
                                               replacement_char=0xFFFD, replace_control_characters=False)
        seq = self.max_seq_length
        query = prep.tokenize(question)[:, : self.max_query_length]
        doc, piece_begin, piece_end = self.paragraph(context)

        q_len, n = query.row_lengths(), doc.row_lengths()
        room = seq - 3 - q_len
        stride = tf.minimum(tf.constant(self.doc_stride, tf.int64), room)
        windows = tf.where(n == 0, tf.zeros_like(n),
                           tf.where(n <= room, tf.ones_like(n), (n - room + stride - 1) // stride + 1))
        example = tf.repeat(tf.range(tf.shape(n, out_type=tf.int64)[0]), windows)
        index = tf.ragged.range(windows).flat_values
        start = index * tf.gather(stride, example)
        length = tf.minimum(tf.gather(n, example) - start, tf.gather(room, example))
        positions = tf.ragged.range(start, start + length)
        doc_ids = tf.gather(doc.flat_values,
                            positions + tf.expand_dims(tf.gather(doc.row_starts(), example), 1))
        query_ids = tf.gather(query, example)
        rows = tf.shape(example, out_type=tf.int64)[0]
        ones = tf.ones([rows], tf.int64)
        cls = tf.RaggedTensor.from_row_lengths(tf.fill([rows], prep.cls_id), ones)
        sep = tf.RaggedTensor.from_row_lengths(tf.fill([rows], prep.sep_id), ones)
        ids = tf.concat([cls, query_ids, sep, doc_ids, sep], axis=1)
        segments = tf.concat([cls * 0, query_ids * 0, sep * 0, tf.ones_like(doc_ids), tf.ones_like(sep)], axis=1)
        p_mask = tf.concat([cls * 0, tf.ones_like(query_ids), tf.ones_like(sep), doc_ids * 0, tf.ones_like(sep)],
                           axis=1)
        shape = [None, seq]
        doc_offset = tf.gather(q_len, example) + 2
        return {
            "input_ids": ids.to_tensor(0, shape=shape),
            "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),
            "segment_ids": segments.to_tensor(0, shape=shape),
            "p_mask": p_mask.to_tensor(1, shape=shape),
            "example": example,
            "doc_offset": doc_offset,
            "doc_start": start,
            "doc_length": length,
            "max_context": self._max_context(example, start, length, doc_offset, windows, stride, room, n),
            "piece_begin": piece_begin,
            "piece_end": piece_end,
            "context": context,
        }

    def _max_context(self, example, start, length, doc_offset, windows, stride, room, n) -> Any:
        """[N, S] bool: the window is the one where the document piece at this position has the most context
        (official ``_check_is_max_context``, float64 scores, the first window on ties)."""
        import tensorflow as tf

        seq = self.max_seq_length
        position = tf.range(seq, dtype=tf.int64)[None, :]
        token = tf.expand_dims(start, 1) + position - tf.expand_dims(doc_offset, 1)  # [N, S] piece index
        in_doc = (token >= tf.expand_dims(start, 1)) & (token < tf.expand_dims(start + length, 1))
        most = tf.reduce_max(tf.concat([windows, [1]], 0))
        other = tf.range(most)[None, :]  # [1, W] every window of the question
        other_start = other * tf.gather(stride, example)[:, None]
        other_length = tf.minimum(tf.gather(n, example)[:, None] - other_start, tf.gather(room, example)[:, None])
        other_end = other_start + other_length - 1
        exists = other < tf.gather(windows, example)[:, None]
        t = token[:, :, None]
        s, e = other_start[:, None, :], other_end[:, None, :]
        inside = (t >= s) & (t <= e) & exists[:, None, :]
        score = tf.cast(tf.minimum(t - s, e - t), tf.float64) + 0.01 * tf.cast(other_length[:, None, :], tf.float64)
        score = tf.where(inside, score, -1.0)
        best = tf.reduce_max(score, axis=-1, keepdims=True)
        first_best = tf.reduce_min(tf.where(score == best, tf.broadcast_to(other[:, None, :], tf.shape(score)),
                                            _BIG), axis=-1)
        own = tf.ragged.range(windows).flat_values[:, None]
        return in_doc & (first_best == own)


class SquadAnswerer:
    """Per-window model outputs -> one answer per question (the official post-processing, in the graph)."""

    def __init__(self, version_2_with_negative: bool, max_seq_length: int, *, n_best_size: int = 20,
                 max_answer_length: int = 30, start_n_top: int = 5, end_n_top: int = 5,
                 null_score_diff_threshold: float = 0.0) -> None:
        self.version_2_with_negative = bool(version_2_with_negative)
        self.max_seq_length = int(max_seq_length)
        self.n_best_size = int(n_best_size)
        self.max_answer_length = int(max_answer_length)
        self.start_n_top, self.end_n_top = int(start_n_top), int(end_n_top)
        self.null_score_diff_threshold = float(null_score_diff_threshold)

    def _window_best_v1(self, windows: Mapping[str, Any], outputs: Mapping[str, Any]) -> tuple[Any, Any, Any]:
        import tensorflow as tf

        seq = self.max_seq_length
        start_logits, end_logits = outputs["start_logits"], outputs["end_logits"]
        k = min(self.n_best_size, seq)

        def top(logits: Any) -> Any:
            return tf.reduce_any(tf.one_hot(tf.math.top_k(logits, k).indices, seq, on_value=True, off_value=False),
                                 axis=1)

        position = tf.range(seq, dtype=tf.int64)[None, :]
        offset = windows["doc_offset"][:, None]
        in_doc = (position >= offset) & (position < offset + windows["doc_length"][:, None])
        starts = top(start_logits) & windows["max_context"]
        ends = top(end_logits) & in_doc
        span = position[:, None, :] - position[:, :, None]  # end - start, [1, S, S]
        valid = starts[:, :, None] & ends[:, None, :] & (span >= 0) & (span < self.max_answer_length)
        score = tf.cast(start_logits, tf.float64)[:, :, None] + tf.cast(end_logits, tf.float64)[:, None, :]
        flat = tf.reshape(tf.where(valid, score, -float("inf")), [-1, seq * seq])
        best = tf.reduce_max(flat, axis=-1)
        which = tf.reduce_min(tf.where(flat == best[:, None], tf.range(seq * seq, dtype=tf.int64)[None, :], _BIG),
                              axis=-1)
        return best, which // seq, which % seq

    def _window_best_v2(self, windows: Mapping[str, Any], outputs: Mapping[str, Any]) -> tuple[Any, Any, Any]:
        import tensorflow as tf

        k1, k2 = self.start_n_top, self.end_n_top
        start = tf.cast(outputs["start_top_index"], tf.int64)  # [N, k1]
        end = tf.reshape(tf.cast(outputs["end_top_index"], tf.int64), [-1, k1, k2])
        start_lp = tf.cast(outputs["start_top_log_probs"], tf.float64)
        end_lp = tf.reshape(tf.cast(outputs["end_top_log_probs"], tf.float64), [-1, k1, k2])
        max_context = tf.gather(windows["max_context"], start, batch_dims=1)  # implies the start is in the doc
        offset = windows["doc_offset"][:, None, None]
        end_in_doc = end - offset < windows["doc_length"][:, None, None]
        span = end - start[:, :, None]
        valid = max_context[:, :, None] & end_in_doc & (span >= 0) & (span < self.max_answer_length)
        flat = tf.reshape(tf.where(valid, start_lp[:, :, None] + end_lp, -float("inf")), [-1, k1 * k2])
        best = tf.reduce_max(flat, axis=-1)
        which = tf.reduce_min(tf.where(flat == best[:, None], tf.range(k1 * k2, dtype=tf.int64)[None, :], _BIG),
                              axis=-1)
        pick = tf.stack([which // k2, which % k2], axis=1)
        return (best, tf.gather(start, which // k2, batch_dims=1),
                tf.gather_nd(end, pick, batch_dims=1))

    def __call__(self, windows: Mapping[str, Any], outputs: Mapping[str, Any]) -> dict[str, Any]:
        """Answers [B] from the featurizer's ``windows`` and the model's ``outputs`` on them."""
        import tensorflow as tf

        from albert_tf.tokenization import unicode_tables

        context = windows["context"]
        batch = tf.shape(context, out_type=tf.int64)[0]
        example = windows["example"]
        if self.version_2_with_negative:
            score, start, end = self._window_best_v2(windows, outputs)
        else:
            score, start, end = self._window_best_v1(windows, outputs)
        found = tf.math.is_finite(score)
        has_span = tf.math.unsorted_segment_max(tf.cast(found, tf.int32), example, batch) > 0
        best = tf.math.unsorted_segment_max(tf.where(found, score, -1e300), example, batch)
        window = tf.range(tf.shape(example, out_type=tf.int64)[0])
        first = tf.math.unsorted_segment_min(tf.where(found & (score == tf.gather(best, example)), window, _BIG),
                                             example, batch)
        first = tf.where(has_span, first, 0)
        safe = tf.minimum(first, tf.maximum(tf.shape(example, out_type=tf.int64)[0] - 1, 0))

        def at_window(values: Any) -> Any:
            return tf.gather(tf.concat([values, tf.zeros([1], values.dtype)], 0), safe)

        row_start = tf.gather(windows["piece_begin"].row_starts(), tf.range(batch))
        first_piece = row_start + at_window(windows["doc_start"]) - at_window(windows["doc_offset"])
        begin_flat = tf.concat([windows["piece_begin"].flat_values, [0]], 0)
        end_flat = tf.concat([windows["piece_end"].flat_values, [0]], 0)
        char_begin = tf.gather(begin_flat, tf.where(has_span, first_piece + at_window(start), 0))
        char_end = tf.gather(end_flat, tf.where(has_span, first_piece + at_window(end), 0))
        char_end = tf.maximum(char_end, char_begin)
        raw = tf.strings.substr(context, tf.cast(char_begin, tf.int32), tf.cast(char_end - char_begin, tf.int32),
                                unit="UTF8_CHAR")
        space = unicode_tables.whitespace_class_pattern()
        left = tf.strings.regex_replace(raw, f"^{space}+", "")
        text = tf.strings.regex_replace(left, f"{space}+$", "")
        char_begin += tf.cast(tf.strings.length(raw, unit="UTF8_CHAR") - tf.strings.length(left, unit="UTF8_CHAR"),
                              tf.int64)
        char_end = char_begin + tf.cast(tf.strings.length(text, unit="UTF8_CHAR"), tf.int64)
        minus_one = tf.fill([batch], tf.constant(-1, tf.int64))
        result = {
            "start": tf.cast(tf.where(has_span, char_begin, minus_one), tf.int32),
            "end": tf.cast(tf.where(has_span, char_end, minus_one), tf.int32),
        }
        if not self.version_2_with_negative:
            result["answer"] = tf.where(has_span, text, V1_EMPTY)
            result["score"] = tf.cast(tf.where(has_span, best, 0.0), tf.float32)
            return result
        null = tf.math.unsorted_segment_min(tf.cast(outputs["cls_logits"], tf.float64), example, batch)
        null = tf.minimum(null, NO_WINDOW_NULL_SCORE)
        has_answer = has_span & (null < self.null_score_diff_threshold)
        result["answer"] = tf.where(has_answer, text, "")
        result["score"] = tf.cast(tf.where(has_span, best, V2_NO_SPAN_SCORE), tf.float32)
        result["null_score"] = tf.cast(null, tf.float32)
        result["has_answer"] = has_answer
        return result


def _model_outputs(model: Any, features: Mapping[str, Any], version_2: bool, real_tokens: bool = False
                   ) -> dict[str, Any]:
    """The model's outputs on the windows [N, S]. ``real_tokens``: one window per row cut to the longest window,
    the dense layers on the real tokens only (``AlbertSquad.packed_outputs``); v1 logits come back at the ``S``
    positions with padding at ``-MASK_VALUE``, so padding never takes an n-best slot (the padded call's padding
    logits are the model's own: with them the official n-best over every position can differ where a padding
    logit ranks among the top ``n_best_size``)."""
    import tensorflow as tf

    inputs = {k: features[k] for k in INPUT_NAMES}
    if version_2:
        inputs["p_mask"] = features["p_mask"]
    if not real_tokens:
        return dict(model(inputs, training=False))
    from albert_tf.data.packing import one_example_per_row
    from albert_tf.tasks.squad.model import MASK_VALUE, window_mask

    # v2's beam takes the top start_n_top / end_n_top positions: a batch of short windows keeps that many columns
    top = max(getattr(model, "start_n_top", 1), getattr(model, "end_n_top", 1)) if version_2 else 1
    rows = one_example_per_row(inputs, trim=True, min_length=top)
    length = tf.shape(rows["input_ids"])[1]
    outputs = dict(model.packed_outputs(rows, length, training=False))
    if version_2:
        return outputs
    seq = tf.shape(features["input_ids"])[1]
    real = window_mask(rows["example_lengths"], length)
    return {k: tf.pad(tf.where(real, v, -MASK_VALUE), [[0, 0], [0, seq - length]], constant_values=-MASK_VALUE)
            for k, v in outputs.items()}


def export_squad(
    model: Any,
    export_dir: str,
    *,
    preprocessor: Any | None = None,
    spm_model_file: str | bytes | None = None,
    max_seq_length: int | None = None,
    do_lower_case: bool = True,
    doc_stride: int = 128,
    max_query_length: int = 64,
    max_answer_length: int = 30,
    n_best_size: int = 20,
    null_score_diff_threshold: float = 0.0,
    metadata: Mapping[str, Any] | None = None,
    real_tokens: bool = True,
) -> str:
    """Write ``model`` (an ``AlbertSquad``) as a SavedModel with the raw-text ``serving_default`` and the token-id
    ``serve_token_ids`` signatures (see the module docstring); returns ``export_dir``.

    ``preprocessor`` (an ``AlbertPreprocessor`` whose ``max_seq_length`` is the window length) is built from
    ``spm_model_file`` / ``max_seq_length`` / ``do_lower_case`` when not given. The other arguments are the
    ``run_squad`` flags of the same names; v2's ``start_n_top`` / ``end_n_top`` come from the model.
    ``real_tokens`` (``--export_real_tokens``): ``serving_default`` runs the dense layers on the windows' real
    tokens only (:func:`_model_outputs`); ``serve_token_ids`` always runs the plain call.
    """
    import tensorflow as tf

    version_2 = bool(model.version_2_with_negative)
    if preprocessor is None:
        if spm_model_file is None or max_seq_length is None:
            raise ValueError("give a preprocessor or spm_model_file and max_seq_length for the raw-text signature")
        preprocessor = make_preprocessor(spm_model_file, max_seq_length, do_lower_case)
    featurizer = SquadFeaturizer(preprocessor, doc_stride, max_query_length)
    answerer = SquadAnswerer(
        version_2, featurizer.max_seq_length, n_best_size=n_best_size, max_answer_length=max_answer_length,
        start_n_top=getattr(model, "start_n_top", 5), end_n_top=getattr(model, "end_n_top", 5),
        null_score_diff_threshold=null_score_diff_threshold,
    )
    refuse_non_empty(export_dir)

    strings = tf.TensorSpec([None], tf.string)

    @tf.function(input_signature=[strings, strings])
    def serve_text(question, context):
        text = checked_strings({"question": question, "context": context})
        windows = featurizer(text["question"], text["context"])
        return answerer(windows, _model_outputs(model, windows, version_2, real_tokens))

    names = (*INPUT_NAMES, "p_mask") if version_2 else INPUT_NAMES
    config = getattr(model, "config", None)  # None (a stand-in model): shapes and masks checked only
    ids = tf.TensorSpec([None, None], tf.int32)
    if version_2:

        @tf.function(input_signature=[ids] * 4)
        def serve_ids(input_ids, input_mask, segment_ids, p_mask):
            features = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids,
                        "p_mask": p_mask}
            return _model_outputs(model, checked_token_ids(features, names, config, "[windows, seq]"), True)

    else:

        @tf.function(input_signature=[ids] * 3)
        def serve_ids(input_ids, input_mask, segment_ids):
            features = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
            return _model_outputs(model, checked_token_ids(features, names, config, "[windows, seq]"), False)

    outputs = ["answer", "start", "end", "score"] + (["null_score", "has_answer"] if version_2 else [])
    info = {
        "task": "squad",
        "signatures": {TEXT_SIGNATURE: ["question", "context"], IDS_SIGNATURE: list(names)},
        "version_2_with_negative": version_2,
        "max_seq_length": featurizer.max_seq_length,
        "doc_stride": featurizer.doc_stride,
        "max_query_length": featurizer.max_query_length,
        "max_answer_length": answerer.max_answer_length,
        "n_best_size": answerer.n_best_size,
        "null_score_diff_threshold": answerer.null_score_diff_threshold if version_2 else None,
        "real_tokens": bool(real_tokens),
        "outputs": outputs,
        "requires": REQUIRES,
        **dict(metadata or {}),
    }
    endpoints = {TEXT_SIGNATURE: serve_text, IDS_SIGNATURE: serve_ids}
    return write_archive(export_dir, [model, preprocessor], endpoints, info)
