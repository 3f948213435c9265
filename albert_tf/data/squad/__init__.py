"""SQuAD v1.1 / v2.0 (official ``squad_utils.py``): the JSON reader, feature conversion, the keyed TFRecord cache and
``tf.data``.

Modules, one job each: ``reader`` (the JSON file -> :class:`SquadExample`, validation, :class:`SquadDataError`),
``alignment`` (paragraph characters <-> SentencePiece pieces, the official XLNet-style DP, banded and once per
paragraph), ``features`` (windows, layout, labels, :class:`ConversionReport`), ``cache`` (records + JSON side file
keyed by everything that affects them; replaces the official pickle) and ``dataset`` (``load_dataset``). Every
name is re-exported here: ``from albert_tf.data import squad; squad.cached_features(...)``. SQuAD is SentencePiece
only, as the official. TensorFlow is imported on first use, not by importing the package.

Where we differ from the official ``squad_utils.py`` on purpose (details in each module):

* answers are read for prediction files too, and gold token spans are computed for every labelled question;
* bad input raises one line naming the file and question id before any tokenisation; what the conversion cannot
  use (alignment mismatches, unmappable answers, truncated questions) is counted and reported, not just logged;
* the alignment counts characters everywhere (the official Python 3 code mixes UTF-8 byte and character offsets,
  which shifts the token maps after any non-ASCII piece);
* the cache is keyed, and the prediction metadata is JSON instead of a pickle.
"""

from albert_tf.data.squad.alignment import ParagraphAlignment, align_paragraph, convert_index
from albert_tf.data.squad.cache import (
    FEATURE_FORMAT_VERSION,
    TRAIN_SHUFFLE_SEED,
    CachedSquad,
    cached_features,
    feature_spec,
    features_from_json,
    features_to_json,
    write_features,
)
from albert_tf.data.squad.dataset import load_dataset
from albert_tf.data.squad.features import (
    FIRST_UNIQUE_ID,
    ConversionReport,
    SquadFeature,
    check_window_settings,
    convert_examples_to_features,
)
from albert_tf.data.squad.reader import SquadDataError, SquadExample, read_squad_examples, read_squad_json

__all__ = [
    "FEATURE_FORMAT_VERSION",
    "FIRST_UNIQUE_ID",
    "TRAIN_SHUFFLE_SEED",
    "CachedSquad",
    "ConversionReport",
    "ParagraphAlignment",
    "SquadDataError",
    "SquadExample",
    "SquadFeature",
    "align_paragraph",
    "cached_features",
    "check_window_settings",
    "convert_examples_to_features",
    "convert_index",
    "feature_spec",
    "features_from_json",
    "features_to_json",
    "load_dataset",
    "read_squad_examples",
    "read_squad_json",
    "write_features",
]
