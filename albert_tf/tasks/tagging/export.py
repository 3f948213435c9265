"""SavedModel export of a fine-tuned tagger that TF Serving answers from raw sentences.

Signatures:

* ``serving_default``: ``sentence`` [B] raw UTF-8 strings. In the graph, as in training
  (``albert_tf.data.tagging.features``): the sentence is split into words at white space (Python's ``str.split()``:
  the characters ``str.isspace`` accepts), each word is tokenized on its own by the in-graph tokenizer
  (:class:`albert_tf.tokenization.AlbertPreprocessor`; a word with no piece gets the unknown piece), the pieces are
  cut into ``[CLS] pieces [SEP]`` windows of at most ``max_seq_length`` that start ``window_stride`` pieces apart
  (the last one ends with the sentence), and each word takes the tag of its first piece in the window where that
  piece has the most context. No word is dropped. Outputs, padded per batch:

  - ``words``, ``tags`` [B, W] strings (``""`` past a sentence's words), ``word_start``, ``word_end`` [B, W] int32:
    each word's character span in the sentence (``sentence[start:end]`` in Python; -1 past the words), and
    ``num_words`` [B];
  - the entities, read from the tags as ``conlleval`` reads them: ``entity_type``, ``entity_text`` [B, E] strings,
    ``entity_start``, ``entity_end`` [B, E] int32 character offsets (``entity_text == sentence[start:end]``, the
    words and the white space between them), and ``num_entities`` [B].

* ``serve_token_ids``: ``input_ids``, ``input_mask``, ``segment_ids`` int32 [B, S] -> ``logits`` [B, S, labels] and
  ``tag_id`` [B, S] (what ``--tflite`` / ``--onnx`` convert).

Character offsets count Unicode code points, as Python's ``str`` indexes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from albert_tf.data.tagging import features as tagging_features
from albert_tf.data.tagging import split_tag
from albert_tf.export.savedmodel import (
    IDS_SIGNATURE,
    REQUIRES,
    TEXT_SIGNATURE,
    checked_strings,
    checked_token_ids,
    write_archive,
)
from albert_tf.tokenization import unicode_tables
from albert_tf.tokenization.packing import INPUT_NAMES


def window_starts(num_pieces, capacity: int, stride: int):
    """In the graph, per sentence: the first piece of each window, as ``features.sentence_windows`` places them
    (``range(0, n - capacity, stride)`` and then ``n - capacity``; one window at 0 for a sentence that fits), a
    ragged ``[B, (windows)]`` int64, and each window's length ``min(capacity, n)`` per sentence."""
    import tensorflow as tf

    last = tf.maximum(num_pieces - capacity, 0)
    count = (last + stride - 1) // stride + 1
    index = tf.ragged.range(count)
    starts = tf.where(index.flat_values == tf.repeat(count - 1, count), tf.repeat(last, count),
                      index.flat_values * stride)
    return tf.RaggedTensor.from_row_lengths(starts, count), tf.minimum(num_pieces, capacity)


def word_tags_in_graph(model: Any, preprocessor: Any, words, stride: int, real_tokens: bool = False):
    """The tag id of each word of ``words`` (ragged ``[B, (W)]`` strings), as a ragged ``[B, (W)]`` int32: windows
    built and scored as the module docstring says. ``real_tokens``: one window per row, the dense layers on the real
    tokens only (``AlbertTagger.packed_logits``; positions past a window are never read)."""
    import tensorflow as tf

    capacity = int(preprocessor.max_seq_length) - 2
    pieces = tf.cast(preprocessor.tokenize(words.flat_values), tf.int64)  # [words, (pieces)]
    lengths = pieces.row_lengths()
    unknown = tf.RaggedTensor.from_row_lengths(tf.fill([tf.size(lengths)], tf.cast(preprocessor.unk_id, tf.int64)),
                                               tf.ones_like(lengths))
    pieces = tf.gather(tf.concat([pieces, unknown], axis=1), tf.ragged.range(tf.maximum(lengths, 1)),
                       batch_dims=1)  # a word with no piece keeps the unknown piece appended to every word
    per_word = pieces.row_lengths()
    sentence_pieces = tf.RaggedTensor.from_row_lengths(pieces, words.row_lengths()).merge_dims(1, 2)  # [B, (P)]
    first_piece = tf.cumsum(per_word, exclusive=True)  # flat index of each word's first piece
    num_pieces = sentence_pieces.row_lengths()
    piece_offset = sentence_pieces.row_starts()

    starts, length = window_starts(num_pieces, capacity, stride)
    windows_per_sentence = starts.row_lengths()
    window_sentence = tf.repeat(tf.range(tf.size(num_pieces, out_type=tf.int64)), windows_per_sentence)
    window_length = tf.gather(length, window_sentence)
    window_number = tf.ragged.range(windows_per_sentence).flat_values  # within its sentence
    inside = tf.ragged.range(window_length)  # [windows, (positions)]: position i holds piece start + i
    flat_piece = (inside + tf.gather(piece_offset, window_sentence)[:, None] + starts.flat_values[:, None])

    ids = tf.gather(sentence_pieces.flat_values, flat_piece)
    cls = tf.fill([tf.size(window_length), 1], tf.cast(preprocessor.cls_id, tf.int64))
    sep = tf.fill([tf.size(window_length), 1], tf.cast(preprocessor.sep_id, tf.int64))
    input_ids = tf.concat([tf.RaggedTensor.from_tensor(cls), ids, tf.RaggedTensor.from_tensor(sep)], axis=1)
    features = {"input_ids": tf.cast(input_ids.to_tensor(), tf.int32),
                "input_mask": tf.cast(tf.ones_like(input_ids).to_tensor(), tf.int32)}
    features["segment_ids"] = tf.zeros_like(features["input_ids"])
    if real_tokens:  # a request without padding takes the rows path (AlbertEncoder.call_packed)
        from albert_tf.data.packing import one_example_per_row

        logits = model.packed_logits(one_example_per_row(features), tf.shape(features["input_ids"])[1])
    else:
        logits = model(features, training=False)
    tag_ids = tf.argmax(logits, -1, output_type=tf.int32)  # [windows, T]

    # Each piece's window: the most context min(left, right), the earliest window on a tie.
    i = inside.flat_values
    span = tf.repeat(window_length, window_length)
    context = tf.minimum(i, span - 1 - i)
    key = context * (1 << 20) - tf.repeat(window_number, window_length)
    pieces_total = tf.size(sentence_pieces.flat_values, out_type=tf.int64)
    best = tf.math.unsorted_segment_max(key, flat_piece.flat_values, pieces_total)
    chosen = tf.equal(key, tf.gather(best, flat_piece.flat_values))
    pair = tf.range(tf.size(i, out_type=tf.int64))
    pair_of_piece = tf.math.unsorted_segment_max(tf.where(chosen, pair, -1), flat_piece.flat_values, pieces_total)
    pair_window = tf.repeat(tf.range(tf.size(window_length, out_type=tf.int64)), window_length)
    pair_tag = tf.gather_nd(tag_ids, tf.stack([pair_window, i + 1], axis=1))  # +1: [CLS]
    word_tag = tf.gather(pair_tag, tf.gather(pair_of_piece, first_piece))
    return words.with_flat_values(word_tag)


def entities_in_graph(tags, begin, end, labels: Sequence[str]):
    """The entities of each sentence from its words' tag ids (ragged ``[B, (W)]``; ``conlleval``'s chunks: an entity
    starts at ``B-X`` or at an ``I-X`` that continues no ``X``) and their character spans: per entity its type
    string, its sentence, the start of its first word and the end of its last, and the count per sentence [B]."""
    import tensorflow as tf

    kinds = sorted({split_tag(label)[1] for label in labels if split_tag(label)[1]})
    kind_of = tf.constant([kinds.index(split_tag(lb)[1]) if split_tag(lb)[1] else -1 for lb in labels], tf.int64)
    is_b = tf.constant([split_tag(label)[0] == "B" for label in labels])
    flat = tags.flat_values
    kind = tf.gather(kind_of, flat)
    first_word = tf.equal(tf.ragged.range(tags.row_lengths()).flat_values, 0)
    previous = tf.where(first_word, tf.constant(-1, tf.int64), tf.concat([[-1], kind[:-1]], axis=0))
    starts = tf.logical_and(kind >= 0, tf.logical_or(tf.gather(is_b, flat), tf.not_equal(previous, kind)))
    inside = kind >= 0
    member = tf.boolean_mask(tf.cumsum(tf.cast(starts, tf.int64)) - 1, inside)  # the entity of each word in one
    number = tf.reduce_sum(tf.cast(starts, tf.int64))
    first = tf.math.unsorted_segment_min(tf.boolean_mask(begin.flat_values, inside), member, number)
    last = tf.math.unsorted_segment_max(tf.boolean_mask(end.flat_values, inside), member, number)
    sentence = tf.boolean_mask(tf.repeat(tf.range(tf.size(tags.row_lengths(), out_type=tf.int64)),
                                         tags.row_lengths()), starts)
    count = tf.math.bincount(tf.cast(sentence, tf.int32), minlength=tf.size(tags.row_lengths()),
                             maxlength=tf.size(tags.row_lengths()), dtype=tf.int64)
    return tf.gather(tf.constant(kinds or [""]), tf.boolean_mask(kind, starts)), sentence, first, last, count


def export_tagger(model: Any, export_dir: str, *, preprocessor: Any, window_stride: int = 0,
                  metadata: Mapping[str, Any] | None = None, real_tokens: bool = True) -> str:
    """Write ``model`` (an ``AlbertTagger``, its ``labels`` in output order) as a SavedModel with the raw-sentence
    and token-id signatures (module docstring). ``window_stride``: pieces between window starts (0: half a window,
    as ``--window_stride``). ``real_tokens`` (``--export_real_tokens``): the raw-sentence signature runs the dense
    layers on the real tokens only; ``serve_token_ids`` always runs the plain call. Returns ``export_dir``."""
    import tensorflow as tf

    labels = [str(label) for label in model.labels]
    stride = tagging_features.window_stride(int(preprocessor.max_seq_length), window_stride)
    label_strings = tf.constant(labels)
    whitespace = unicode_tables.whitespace_class_pattern() + "+"  # the characters str.isspace accepts

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve_text(sentence):
        import tensorflow_text as tf_text

        sentence = checked_strings({"sentence": sentence})["sentence"]
        words, byte_begin, byte_end = tf_text.regex_split_with_offsets(sentence, whitespace)
        owner = tf.repeat(sentence, words.row_lengths())
        start = byte_begin.flat_values
        begin = tf.strings.length(tf.strings.substr(owner, tf.zeros_like(start), start), unit="UTF8_CHAR")
        end = begin + tf.strings.length(words.flat_values, unit="UTF8_CHAR")
        begin, end = words.with_flat_values(tf.cast(begin, tf.int64)), words.with_flat_values(tf.cast(end, tf.int64))
        tags = word_tags_in_graph(model, preprocessor, words, stride, real_tokens)
        kinds, entity_sentence, first, last, count = entities_in_graph(tags, begin, end, labels)
        # the entity's text: the sentence's characters from its first word's start to its last word's end
        text = tf.strings.substr(tf.gather(sentence, entity_sentence), first, last - first, unit="UTF8_CHAR")

        def ragged(values):  # one row of entities per sentence
            return tf.RaggedTensor.from_row_lengths(values, count)

        return {
            "words": words.to_tensor(""),
            "tags": tf.gather(label_strings, tags).to_tensor(""),
            "word_start": tf.cast(begin.to_tensor(-1), tf.int32),
            "word_end": tf.cast(end.to_tensor(-1), tf.int32),
            "num_words": tf.cast(words.row_lengths(), tf.int32),
            "entity_type": ragged(kinds).to_tensor(""),
            "entity_text": ragged(text).to_tensor(""),
            "entity_start": tf.cast(ragged(first).to_tensor(-1), tf.int32),
            "entity_end": tf.cast(ragged(last).to_tensor(-1), tf.int32),
            "num_entities": tf.cast(count, tf.int32),
        }

    ids = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[ids, ids, ids])
    def serve_ids(input_ids, input_mask, segment_ids):
        feats = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
        feats = checked_token_ids(feats, INPUT_NAMES, getattr(model, "config", None), "[batch, seq]")
        logits = model(feats, training=False)
        return {"logits": logits, "tag_id": tf.argmax(logits, -1, output_type=tf.int32)}

    info = {
        "signatures": {TEXT_SIGNATURE: ["sentence"], IDS_SIGNATURE: list(INPUT_NAMES)},
        "max_seq_length": int(preprocessor.max_seq_length),
        "window_stride": stride,
        "labels": labels,
        "real_tokens": bool(real_tokens),
        "requires": REQUIRES,
        **dict(metadata or {}),
    }
    return write_archive(export_dir, [model, preprocessor], {TEXT_SIGNATURE: serve_text, IDS_SIGNATURE: serve_ids},
                         info)

