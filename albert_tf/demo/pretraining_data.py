"""Demo stage 2: sample corpus -> SentencePiece vocab -> n-gram MLM + SOP TFRecords, with the summary.

Writes under ``<workdir>/pretraining_data/``: ``sample_corpus.txt`` (the deterministic generator of
:mod:`albert_tf.data.sample_corpus`), ``sample_spm.model`` (trained with the official ``spm_train`` settings on
pre-processed text, small vocabulary), ``pretrain.tfrecord-0000{0,1}-of-00002`` and the JSON sidecar. The returned
dict tells the next stage where the records are and with which lengths they were made.
"""

from __future__ import annotations

import os

from albert_tf.data.pretraining import PretrainingDataConfig, TokenizerSpec, create_pretraining_data
from albert_tf.data.sample_corpus import write_sample_corpus

NUM_DOCUMENTS = 3000
VOCAB_SIZE = 250  # the sample corpus supports at most ~280 SentencePiece pieces
MAX_SEQ_LENGTH = 128
MAX_PREDICTIONS_PER_SEQ = 20
DUPE_FACTOR = 5


def run(workdir: str, args) -> dict:
    from albert_tf.tokenization.train_vocab import train_vocab

    seed = int(getattr(args, "seed", 12345))
    out_dir = os.path.join(workdir, "pretraining_data")
    os.makedirs(out_dir, exist_ok=True)
    corpus = os.path.join(out_dir, "sample_corpus.txt")
    corpus_counts = write_sample_corpus(corpus, num_documents=NUM_DOCUMENTS, seed=seed)
    print(f"sample corpus: {corpus_counts['documents']} documents, {corpus_counts['sentences']} sentences, "
          f"{corpus_counts['bytes']:,} bytes -> {corpus}")
    prefix = os.path.join(out_dir, "sample_spm")
    vocab = train_vocab([corpus], prefix, vocab_size=VOCAB_SIZE, preprocess=True, do_lower_case=True,
                        random_seed=seed)
    print(f"vocab: {vocab['vocab_size']} pieces, first {vocab['first_pieces']} -> {vocab['model']}")
    config = PretrainingDataConfig(max_seq_length=MAX_SEQ_LENGTH, max_predictions_per_seq=MAX_PREDICTIONS_PER_SEQ,
                                   dupe_factor=DUPE_FACTOR, random_seed=seed)
    summary = create_pretraining_data([corpus], os.path.join(out_dir, "pretrain.tfrecord@2"),
                                      TokenizerSpec(spm_model_file=vocab["model"]), config, num_workers=1)
    return {
        "input_files": summary["output_files"],
        "metadata_file": summary["metadata_file"],
        "spm_model_file": vocab["model"],
        "vocab_size": vocab["vocab_size"],
        "max_seq_length": MAX_SEQ_LENGTH,
        "max_predictions_per_seq": MAX_PREDICTIONS_PER_SEQ,
        "instances": summary["counts"]["instances"],
        "corpus": corpus,
    }
