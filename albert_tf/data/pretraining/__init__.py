"""Pretraining data: n-gram masked LM + sentence-order instances as TFRecords (official algorithm, streaming).

Modules, one job each: ``reading`` (input files, decode check, chunks), ``vocabulary`` (batched ids, start-piece
table), ``instances`` (sentence pairs and sentence-order policies), ``masking`` (n-gram masking), ``records``
(``tf.train.Example`` bytes, sharded TFRecord writing, read-back), ``pipeline`` (multi-process streaming driver,
sidecar, summary), ``beam`` (the same per-chunk work and sidecar as an Apache Beam pipeline; optional extra
``albert-tf[beam]``, not imported here), ``stats`` (statistics computed from written records), ``schema`` (the
record features), ``validation`` (the records checked against the flags and the vocabulary, without TensorFlow),
``dataset`` (reading records for training: ``tf.data``), ``online_masking`` (masks
drawn again in the ``tf.data`` graph each time a record is read, ``run_pretraining --masked_lm_budget``).
"""

from albert_tf.data.pretraining.chunks import PretrainingDataConfig, chunk_seeds
from albert_tf.data.pretraining.pipeline import create_pretraining_data, resolve_output_files
from albert_tf.data.pretraining.reading import InputError
from albert_tf.data.pretraining.vocabulary import TokenizerSpec

__all__ = [
    "InputError",
    "PretrainingDataConfig",
    "TokenizerSpec",
    "chunk_seeds",
    "create_pretraining_data",
    "resolve_output_files",
]
