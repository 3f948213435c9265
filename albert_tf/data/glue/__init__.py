"""GLUE tasks (official ``classifier_utils.py``): TSV processors, feature conversion with a keyed TFRecord cache, the
``tf.data``
input pipeline and submission files.

Modules: ``tsv`` (the TSV reader, ``SplitLayout``, the ``GlueProcessor`` base), ``processors`` (the tasks and
their registry, ``get_processor``), ``features`` (``convert_example``, ``cached_features``), ``dataset``
(``load_dataset``) and ``submission`` (``submission_rows``, ``write_submission``). Every name is re-exported
here: use ``from albert_tf.data import glue; glue.get_processor(...)``. Every user path (data dir, cache dir,
submission file) goes through ``tf.io.gfile`` (``_fs``), so ``gs://`` paths work; outputs are written under a
temporary name and renamed when complete. TensorFlow is imported on first use, not by importing the package.

What the official ``classifier_utils.py`` does, and where we differ on purpose:

* Processors read the original GLUE TSV layouts: ``data_dir`` is the GLUE root and each task
  reads ``data_dir/<TASK DIR>/<split>.tsv`` with the official column indexes (0-based). CoLA
  train/dev have no header, every other file has one; MRPC files start with a UTF-8 BOM; QQP
  train/dev rows that are too short are skipped (the official ``except IndexError: continue``),
  but we **count** them and log the count (``GlueProcessor.last_report``).
* Bad input is an error, not a crash deep inside training: a row with a wrong column count, a
  label outside the task's label set (or a non-number for STS-B) or bytes that are not UTF-8
  raise ``GlueDataError`` naming the file, the 1-based line and the expected layout.
* Text goes through the tokenizer, whose ``tokenize`` applies the official ``preprocess_text``
  (the official processors apply it to every field first; it is idempotent, so the result is
  the same). Labels are stripped (and, as ``preprocess_text`` does, lower-cased).
* Pair truncation is the official ``_truncate_seq_pair`` (``albert_tf.tokenization.packing``,
  shared with the in-graph preprocessor): pop from the end of the longer side (the second on
  ties) until ``len(a) + len(b) <= max_seq_length - 3``; a single sentence is cut to
  ``max_seq_length - 2``.
* The official cache reuses ``<task>_train.tf_record`` whenever it exists, even after a flag
  changed. Ours is keyed by everything that affects the features (content hash of the TSV,
  tokenizer identity, ``max_seq_length``, task, split, labels, record order and layout, format
  version), so a stale cache is never read.
* ``mnli-mm`` (official key ``mismnli``) and ``ax`` (official ``AXProcessor``, not registered
  there) are registered here; AX is predicted with an MNLI model (same labels).
* MRPC can also be read from the raw Microsoft files (``msr_paraphrase_train.txt`` +
  ``dev_ids.tsv``), split exactly as GLUE's download script does, when ``train.tsv`` is absent.
"""

from albert_tf.data.glue.dataset import load_dataset
from albert_tf.data.glue.features import (
    FEATURE_FORMAT_VERSION,
    CachedSplit,
    InputFeatures,
    _serialize,  # noqa: F401  (tests serialize features exactly as the cache does)
    cache_key,
    cached_features,
    convert_example,
    feature_spec,
    write_features,
)
from albert_tf.data.glue.processors import (  # job 1: the tasks and the TSV layer they build on (tsv)
    DEV,
    PROCESSORS,
    TASK_ALIASES,
    TEST,
    TRAIN,
    AxProcessor,
    ColaProcessor,
    GlueDataError,
    GlueProcessor,
    InputExample,
    MnliMismatchedProcessor,
    MnliProcessor,
    MrpcProcessor,
    QnliProcessor,
    QqpProcessor,
    ReadReport,
    RteProcessor,
    SplitLayout,
    Sst2Processor,
    StsbProcessor,
    WnliProcessor,
    get_processor,
    read_tsv,
)
from albert_tf.data.glue.submission import submission_rows, write_submission

__all__ = [
    "DEV",
    "FEATURE_FORMAT_VERSION",
    "PROCESSORS",
    "TASK_ALIASES",
    "TEST",
    "TRAIN",
    "AxProcessor",
    "CachedSplit",
    "ColaProcessor",
    "GlueDataError",
    "GlueProcessor",
    "InputExample",
    "InputFeatures",
    "MnliMismatchedProcessor",
    "MnliProcessor",
    "MrpcProcessor",
    "QnliProcessor",
    "QqpProcessor",
    "ReadReport",
    "RteProcessor",
    "SplitLayout",
    "Sst2Processor",
    "StsbProcessor",
    "WnliProcessor",
    "cache_key",
    "cached_features",
    "convert_example",
    "feature_spec",
    "get_processor",
    "load_dataset",
    "read_tsv",
    "submission_rows",
    "write_features",
    "write_submission",
]
