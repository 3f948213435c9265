"""SavedModel export of a fine-tuned RACE model (``AlbertMultipleChoice``) that TF Serving answers from raw text.

Signatures (batch-major; TF Serving's ``predict`` API):

* ``serving_default``: raw UTF-8 strings ``article`` [B], ``question`` [B] and ``options`` [B, 4]. Outputs:
  ``probabilities`` [B, 4] float32 (softmax over the four options), ``answer`` [B] string (the letter "A".."D"
  of the argmax) and ``logits`` [B, 4].
* ``serve_token_ids``: ``input_ids``, ``input_mask``, ``segment_ids`` int32 [B, 4, L] (the features of
  ``albert_tf.data.race.convert_example``, un-flattened), same outputs.

The raw-text path builds in the graph exactly the features of the Python pipeline
(:func:`albert_tf.data.race.convert_example`): each field (article, question, option) is pre-processed on its own
(the in-graph ``preprocess_text`` of :class:`~albert_tf.tokenization.AlbertPreprocessor`), *then* the cloze test
and the join: ``qa = question.replace("_", option)`` when the pre-processed question holds "_", else
``question + " " + option``; the joined text is tokenized without a second pre-processing pass (the official
``tokenize(..., preprocessed=True)``) by a second SentencePiece layer that only collapses and strips ASCII spaces,
which SentencePiece's own normaliser does anyway. Pre-processing the joined text instead would differ where
``preprocess_text`` is not idempotent (``"İ".lower()`` = "i" + U+0307, a combining mark a second pass removes) and
where NFKD makes a "_" (U+FF3F FULLWIDTH LOW LINE) that the raw question did not hold. Then the qa ids are cut to
their last ``max_qa_length``, the article ids to their first ``max_seq_length - 3 - len(qa)`` and the choice is
``[CLS] article [SEP] qa [SEP]``, segment 0 / 1, zero-padded, with RaggedTensor ops.

Bad inputs (``options`` not [B, 4], batch sizes that disagree, id tensors not [B, 4, L]) fail the request with an
``InvalidArgumentError`` naming the input, never a crash. Consumers ``import tensorflow_text`` before loading.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from albert_tf.evaluation.race_metrics import LETTERS
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

NUM_CHOICES = 4


def _preprocessed_text_tokenizer(preprocessor: Any) -> Any:
    """A layer whose ``tokenize`` encodes already pre-processed text (``tokenize(text, preprocessed=True)``)."""
    from albert_tf.tokenization import AlbertPreprocessor

    if preprocessor.kind != "spm":
        return preprocessor  # WordPiece: the official process_text is the identity, the text is tokenized raw
    config = {**preprocessor.get_config(), "do_lower_case": False, "keep_accents": True}
    config["name"] = f"{preprocessor.name}_preprocessed"
    return AlbertPreprocessor.from_config(config)


class RaceFeaturizer:
    """Raw ``article`` [B], ``question`` [B], ``options`` [B, 4] -> int32 features [B, 4, max_seq_length]."""

    def __init__(self, preprocessor: Any, max_qa_length: int) -> None:
        from albert_tf.data.race.features import check_lengths

        self.max_seq_length = int(preprocessor.max_seq_length)
        self.max_qa_length = int(max_qa_length)
        check_lengths(self.max_seq_length, self.max_qa_length)
        self.preprocessor = preprocessor
        self.joined = _preprocessed_text_tokenizer(preprocessor)

    def _field(self, text: Any) -> Any:
        return self.preprocessor.preprocess(text) if self.preprocessor.kind == "spm" else text

    @staticmethod
    def qa_text(question: Any, option: Any) -> Any:
        """In-graph :func:`albert_tf.data.race.qa_text` of string tensors ``[N]`` (every "_" becomes the option)."""
        import tensorflow as tf

        parts = tf.strings.split(question, sep="_")  # Python str.split("_"): n + 1 parts for n blanks
        lengths = parts.row_lengths()
        last = tf.ragged.range(lengths) == tf.expand_dims(lengths - 1, 1)
        filled = tf.strings.join([parts.flat_values, tf.repeat(option, lengths)])
        cloze = tf.strings.reduce_join(parts.with_flat_values(tf.where(last.flat_values, parts.flat_values, filled)),
                                       axis=1)
        return tf.where(lengths > 1, cloze, tf.strings.join([question, option], separator=" "))

    def __call__(self, article: Any, question: Any, options: Any) -> dict[str, Any]:
        import tensorflow as tf

        article = tf.convert_to_tensor(article, tf.string)
        question = tf.convert_to_tensor(question, tf.string)
        options = tf.convert_to_tensor(options, tf.string)
        batch = tf.shape(article)[0]
        checks = [
            tf.debugging.assert_rank(options, 2, message="options must be a [batch, 4] string tensor"),
            tf.debugging.assert_equal(tf.shape(options)[-1], NUM_CHOICES,
                                      message="options must hold exactly 4 strings per question ([batch, 4])"),
            tf.debugging.assert_equal(tf.shape(question)[0], batch,
                                      message="article and question must hold the same number of strings"),
            tf.debugging.assert_equal(tf.shape(options)[0], batch,
                                      message="options must have one row of 4 strings per article"),
        ]
        with tf.control_dependencies(checks):
            article, question = tf.identity(article), tf.identity(question)
            options = tf.reshape(options, [-1])
        seq, rows = self.max_seq_length, tf.shape(options, out_type=tf.int64)[0]
        question = tf.repeat(self._field(question), NUM_CHOICES)
        qa_ids = self.joined.tokenize(self.qa_text(question, self._field(options)))[:, -self.max_qa_length:]
        article_ids = tf.gather(self.preprocessor.tokenize(self._field(article)), tf.repeat(tf.range(batch),
                                                                                            NUM_CHOICES))
        room = tf.cast(seq - 3, tf.int64) - qa_ids.row_lengths()
        article_ids = tf.ragged.boolean_mask(article_ids,
                                             tf.ragged.range(article_ids.row_lengths()) < tf.expand_dims(room, 1))
        ones = tf.ones([rows], tf.int64)
        cls = tf.RaggedTensor.from_row_lengths(tf.fill([rows], self.preprocessor.cls_id), ones)
        sep = tf.RaggedTensor.from_row_lengths(tf.fill([rows], self.preprocessor.sep_id), ones)
        ids = tf.concat([cls, article_ids, sep, qa_ids, sep], axis=1)
        segments = tf.concat([cls * 0, article_ids * 0, sep * 0, tf.ones_like(qa_ids), tf.ones_like(sep)], axis=1)
        features = {
            "input_ids": ids,
            "input_mask": tf.ones_like(ids),
            "segment_ids": segments,
        }
        return {k: tf.reshape(v.to_tensor(0, shape=[None, seq]), [-1, NUM_CHOICES, seq]) for k, v in features.items()}


def _check_ids(features: Mapping[str, Any], config: Any) -> dict[str, Any]:
    import tensorflow as tf

    features = checked_token_ids(features, INPUT_NAMES, config, "[batch, 4, seq]")  # the ranks first
    checks = [tf.debugging.assert_equal(tf.shape(features["input_ids"])[1], NUM_CHOICES,
                                        message="input_ids must be [batch, 4, max_seq_length]")]
    with tf.control_dependencies(checks):
        return {k: tf.identity(v) for k, v in features.items()}


def _choice_outputs(model: Any, features: Mapping[str, Any], real_tokens: bool = False) -> dict[str, Any]:
    """Probabilities, answer letter and logits of [B, 4, S] choices. ``real_tokens``: every choice one row, cut to
    the longest choice, the dense layers on the real tokens only (``AlbertMultipleChoice.packed_logits``)."""
    import tensorflow as tf

    if real_tokens:
        from albert_tf.data.packing import one_example_per_row
        from albert_tf.tasks.race.model import flat_choices

        rows = one_example_per_row({k: flat_choices(features[k]) for k in INPUT_NAMES}, trim=True)
        logits = model.packed_logits(rows, training=False)
    else:
        logits = tf.cast(model(dict(features), training=False), tf.float32)
    answer = tf.gather(tf.constant(list(LETTERS[:NUM_CHOICES])), tf.argmax(logits, axis=-1, output_type=tf.int32))
    return {"probabilities": tf.nn.softmax(logits, axis=-1), "answer": answer, "logits": logits}


def export_multiple_choice(
    model: Any,
    export_dir: str,
    *,
    max_qa_length: int,
    preprocessor: Any | None = None,
    spm_model_file: str | bytes | None = None,
    max_seq_length: int | None = None,
    do_lower_case: bool = True,
    metadata: Mapping[str, Any] | None = None,
    real_tokens: bool = True,
) -> str:
    """Write ``model`` (an ``AlbertMultipleChoice`` with 4 choices) as a SavedModel with the raw-text
    ``serving_default`` and the token-id ``serve_token_ids`` signatures (see the module docstring); returns
    ``export_dir``.

    ``preprocessor`` (an ``AlbertPreprocessor`` whose ``max_seq_length`` is the length of one choice) is built from
    ``spm_model_file`` / ``max_seq_length`` / ``do_lower_case`` when not given. ``real_tokens``
    (``--export_real_tokens``): ``serving_default`` runs the dense layers on the real tokens only
    (:func:`_choice_outputs`); ``serve_token_ids`` always runs the plain call.
    """
    import tensorflow as tf

    if int(getattr(model, "num_choices", NUM_CHOICES)) != NUM_CHOICES:
        raise ValueError(f"the RACE export needs a {NUM_CHOICES}-choice model, got {model.num_choices} choices")
    if preprocessor is None:
        if spm_model_file is None or max_seq_length is None:
            raise ValueError("give a preprocessor or spm_model_file and max_seq_length for the raw-text signature")
        preprocessor = make_preprocessor(spm_model_file, max_seq_length, do_lower_case)
    featurizer = RaceFeaturizer(preprocessor, max_qa_length)
    refuse_non_empty(export_dir)

    strings = tf.TensorSpec([None], tf.string)

    @tf.function(input_signature=[strings, strings, tf.TensorSpec([None, None], tf.string)])
    def serve_text(article, question, options):
        text = checked_strings({"article": article, "question": question, "options": options},
                               {"options": "[batch, 4]"})
        return _choice_outputs(model, featurizer(text["article"], text["question"], text["options"]), real_tokens)

    ids = tf.TensorSpec([None, None, None], tf.int32)

    @tf.function(input_signature=[ids, ids, ids])
    def serve_ids(input_ids, input_mask, segment_ids):
        feats = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
        return _choice_outputs(model, _check_ids(feats, getattr(model, "config", None)))

    info = {
        "signatures": {TEXT_SIGNATURE: ["article", "question", "options"], IDS_SIGNATURE: list(INPUT_NAMES)},
        "max_seq_length": featurizer.max_seq_length,
        "max_qa_length": featurizer.max_qa_length,
        "num_choices": NUM_CHOICES,
        "labels": list(LETTERS[:NUM_CHOICES]),
        "outputs": ["probabilities", "answer", "logits"],
        "real_tokens": bool(real_tokens),
        "requires": REQUIRES,
        **dict(metadata or {}),
    }
    tracked = [model, preprocessor] + ([featurizer.joined] if featurizer.joined is not preprocessor else [])
    return write_archive(export_dir, tracked, {TEXT_SIGNATURE: serve_text, IDS_SIGNATURE: serve_ids}, info)
