"""RACE (official ``race_utils.py``): the passage reader, the four-choice feature conversion, the keyed TFRecord cache
and
``tf.data``.

Modules, one job each: ``reader`` (``data_dir/RACE/<split>/{middle,high}`` -> :class:`RaceExample`, validation,
:class:`RaceDataError`), ``features`` (:func:`convert_example`: ``[CLS] article [SEP] question+option [SEP]`` for
each of the 4 options, flattened), ``cache`` (records keyed by everything that affects them, :func:`cached_features`)
and ``dataset`` (:func:`load_dataset`, ``[B, 4, L]``). Every name is re-exported here:
``from albert_tf.data import race; race.cached_features(...)``. TensorFlow is imported on first use.

Where we differ from the official ``race_utils.py`` on purpose (details in each module):

* both layouts are read: ``all.txt`` (official: one passage per line) or, without it, the original release's one
  passage per ``*.txt`` file in name order (the official PR #186 that did this was reverted);
* bad input raises one line naming the file, line and question index before any tokenisation (the official fails
  with a bare ``KeyError`` / ``IndexError`` or keeps a question with 3 options until an assertion deep in training);
* example ids are ``"<passage id>-<question index>"`` (official: the passage id for every question);
* unlabelled questions (``answers`` missing outside train/dev) get ``label_ids = -1`` (:data:`UNLABELLED`);
* articles are tokenized once per passage; cut articles / qa texts are counted in a report;
* the cache is keyed (the official reuses ``train_file`` whenever it exists).
"""

from albert_tf.data.race.cache import (
    FEATURE_FORMAT_VERSION,
    CachedRace,
    cache_key,
    cached_features,
    feature_spec,
    write_features,
)
from albert_tf.data.race.dataset import load_dataset
from albert_tf.data.race.features import (
    UNLABELLED,
    RaceFeature,
    check_lengths,
    convert_example,
    convert_examples,
    qa_text,
)
from albert_tf.data.race.reader import (
    LABELS,
    LEVELS,
    NUM_CHOICES,
    RaceDataError,
    RaceExample,
    race_source_files,
    read_race_examples,
    read_race_split,
)

__all__ = [
    "FEATURE_FORMAT_VERSION",
    "LABELS",
    "LEVELS",
    "NUM_CHOICES",
    "UNLABELLED",
    "CachedRace",
    "RaceDataError",
    "RaceExample",
    "RaceFeature",
    "cache_key",
    "cached_features",
    "check_lengths",
    "convert_example",
    "convert_examples",
    "feature_spec",
    "load_dataset",
    "qa_text",
    "race_source_files",
    "read_race_examples",
    "read_race_split",
    "write_features",
]
