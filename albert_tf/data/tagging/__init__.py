"""Token tagging data: CoNLL column files (``reader``) and the model's windows of pieces (``features``)."""

from albert_tf.data.tagging.features import (
    IGNORE,
    TaggingWindow,
    sentence_windows,
    window_arrays,
    window_stride,
    word_pieces,
    word_tags,
)
from albert_tf.data.tagging.reader import (
    DOCSTART,
    OUTSIDE,
    SCHEMES,
    Repairs,
    TaggedSentence,
    TaggingDataError,
    check_scheme,
    detect_scheme,
    entity_spans,
    labels_of,
    read_conll,
    split_tag,
    to_iob2,
)

__all__ = ["DOCSTART", "IGNORE", "OUTSIDE", "SCHEMES", "Repairs", "TaggedSentence", "TaggingDataError", "TaggingWindow",
           "check_scheme", "detect_scheme", "entity_spans", "labels_of", "read_conll", "sentence_windows",
           "split_tag", "to_iob2", "window_arrays", "window_stride", "word_pieces", "word_tags"]
