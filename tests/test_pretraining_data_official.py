"""Parity with the official create_pretraining_data.py, re-stated below from its source (spec section 2).

``OfficialReference`` is a line-by-line re-statement of the official algorithm (pieces as strings, the per-call
``_is_start_piece_sp``, numpy's *global* RNG for n-gram lengths, ``tf.train.Example`` protos). It is independent of
``albert_tf.data.pretraining`` (it shares only the project tokenizer, whose official behaviour has its own golden
tests). The benchmark imports it as the "official single-process, fully in-memory" design.

With one chunk and a shuffle buffer larger than the corpus, the project writes the very records the official code
writes when numpy's global RNG is seeded with the chunk's n-gram seed: every instance, mask and label, in order.
"""

from __future__ import annotations

import collections
import os
import random

import numpy as np
import pytest

from albert_tf.data.pretraining import PretrainingDataConfig, TokenizerSpec, chunk_seeds, create_pretraining_data
from albert_tf.data.pretraining.records import parse_examples


class OfficialFlags:
    """The official FLAGS that the algorithm reads."""

    def __init__(self, **kw):
        self.spm_model_file = kw.get("spm_model_file")
        self.do_lower_case = kw.get("do_lower_case", True)
        self.do_whole_word_mask = kw.get("do_whole_word_mask", True)
        self.do_permutation = kw.get("do_permutation", False)
        self.favor_shorter_ngram = kw.get("favor_shorter_ngram", True)
        self.random_next_sentence = kw.get("random_next_sentence", False)
        self.max_seq_length = kw.get("max_seq_length", 512)
        self.ngram = kw.get("ngram", 3)
        self.max_predictions_per_seq = kw.get("max_predictions_per_seq", 20)
        self.random_seed = kw.get("random_seed", 12345)
        self.dupe_factor = kw.get("dupe_factor", 40)
        self.masked_lm_prob = kw.get("masked_lm_prob", 0.15)
        self.short_seq_prob = kw.get("short_seq_prob", 0.1)


TrainingInstance = collections.namedtuple(
    "TrainingInstance", ["tokens", "segment_ids", "masked_lm_positions", "masked_lm_labels", "is_random_next",
                         "token_boundary"])
MaskedLmInstance = collections.namedtuple("MaskedLmInstance", ["index", "label"])


class OfficialReference:
    """The official script's functions, bound to a FLAGS object and a project ``FullTokenizer``."""

    def __init__(self, flags: OfficialFlags, tokenizer):
        self.FLAGS = flags
        self.tokenizer = tokenizer

    # --- reading (create_training_instances)
    def create_training_instances(self, input_files, rng, encoding="utf-8"):
        F, tok = self.FLAGS, self.tokenizer
        all_documents = [[]]
        for input_file in input_files:
            with open(input_file, encoding=encoding, newline="\n") as reader:
                while True:
                    line = reader.readline()
                    if not line:
                        break
                    if F.spm_model_file:
                        line = tok.preprocess(line)
                    else:
                        line = line.strip()
                    if not line:
                        all_documents.append([])
                    tokens = tok.tokenize(line, preprocessed=True) if line else []
                    if tokens:
                        all_documents[-1].append(tokens)
        all_documents = [x for x in all_documents if x]
        rng.shuffle(all_documents)
        vocab_words = list(tok.vocab.keys())
        instances = []
        for _ in range(F.dupe_factor):
            for document_index in range(len(all_documents)):
                instances.extend(self.create_instances_from_document(all_documents, document_index, vocab_words, rng))
        rng.shuffle(instances)
        return instances

    def create_instances_from_document(self, all_documents, document_index, vocab_words, rng):
        F = self.FLAGS
        document = all_documents[document_index]
        max_num_tokens = F.max_seq_length - 3
        target_seq_length = max_num_tokens
        if rng.random() < F.short_seq_prob:
            target_seq_length = rng.randint(2, max_num_tokens)
        instances = []
        current_chunk = []
        current_length = 0
        i = 0
        while i < len(document):
            segment = document[i]
            current_chunk.append(segment)
            current_length += len(segment)
            if i == len(document) - 1 or current_length >= target_seq_length:
                if current_chunk:
                    a_end = 1
                    if len(current_chunk) >= 2:
                        a_end = rng.randint(1, len(current_chunk) - 1)
                    tokens_a = []
                    for j in range(a_end):
                        tokens_a.extend(current_chunk[j])
                    tokens_b = []
                    if len(current_chunk) == 1 or (F.random_next_sentence and rng.random() < 0.5):
                        is_random_next = True
                        target_b_length = target_seq_length - len(tokens_a)
                        for _ in range(10):
                            random_document_index = rng.randint(0, len(all_documents) - 1)
                            if random_document_index != document_index:
                                break
                        random_document = all_documents[random_document_index]
                        random_start = rng.randint(0, len(random_document) - 1)
                        for j in range(random_start, len(random_document)):
                            tokens_b.extend(random_document[j])
                            if len(tokens_b) >= target_b_length:
                                break
                        num_unused_segments = len(current_chunk) - a_end
                        i -= num_unused_segments
                    elif not F.random_next_sentence and rng.random() < 0.5:
                        is_random_next = True
                        for j in range(a_end, len(current_chunk)):
                            tokens_b.extend(current_chunk[j])
                        tokens_a, tokens_b = tokens_b, tokens_a
                    else:
                        is_random_next = False
                        for j in range(a_end, len(current_chunk)):
                            tokens_b.extend(current_chunk[j])
                    self.truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
                    assert len(tokens_a) >= 1
                    assert len(tokens_b) >= 1
                    tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
                    segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
                    tokens, positions, labels, token_boundary = self.create_masked_lm_predictions(
                        tokens, F.masked_lm_prob, F.max_predictions_per_seq, vocab_words, rng)
                    instances.append(TrainingInstance(tokens, segment_ids, positions, labels, is_random_next,
                                                      token_boundary))
                current_chunk = []
                current_length = 0
            i += 1
        return instances

    @staticmethod
    def _is_start_piece_sp(piece):
        special_pieces = set(list('!"#$%&"()*+,-./:;?@[\\]^_`{|}~'))
        special_pieces.add("€".encode())
        special_pieces.add("£".encode())
        english_chars = set(list("abcdefghijklmnopqrstuvwxyz"))
        if (piece.startswith("▁") or piece.startswith("<") or piece in special_pieces
                or not all([str(i).lower() in english_chars.union(special_pieces) for i in piece])):
            return True
        return False

    def is_start_piece(self, piece):
        if self.FLAGS.spm_model_file:
            return self._is_start_piece_sp(piece)
        return not piece.startswith("##")

    def create_masked_lm_predictions(self, tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng):
        F = self.FLAGS
        cand_indexes = []
        token_boundary = [0] * len(tokens)
        for (i, token) in enumerate(tokens):
            if token == "[CLS]" or token == "[SEP]":
                token_boundary[i] = 1
                continue
            if F.do_whole_word_mask and len(cand_indexes) >= 1 and not self.is_start_piece(token):
                cand_indexes[-1].append(i)
            else:
                cand_indexes.append([i])
                if self.is_start_piece(token):
                    token_boundary[i] = 1
        output_tokens = list(tokens)
        masked_lm_positions = []
        masked_lm_labels = []
        if masked_lm_prob == 0:
            return output_tokens, masked_lm_positions, masked_lm_labels, token_boundary
        num_to_predict = min(max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob))))
        ngrams = np.arange(1, F.ngram + 1, dtype=np.int64)
        pvals = 1.0 / np.arange(1, F.ngram + 1)
        pvals /= pvals.sum(keepdims=True)
        if not F.favor_shorter_ngram:
            pvals = pvals[::-1]
        ngram_indexes = []
        for idx in range(len(cand_indexes)):
            ngram_index = []
            for n in ngrams:
                ngram_index.append(cand_indexes[idx:idx + n])
            ngram_indexes.append(ngram_index)
        rng.shuffle(ngram_indexes)
        masked_lms = []
        covered_indexes = set()
        for cand_index_set in ngram_indexes:
            if len(masked_lms) >= num_to_predict:
                break
            if not cand_index_set:
                continue
            for index_set in cand_index_set[0]:
                for index in index_set:
                    if index in covered_indexes:
                        continue
            n = np.random.choice(ngrams[:len(cand_index_set)],
                                 p=pvals[:len(cand_index_set)] / pvals[:len(cand_index_set)].sum(keepdims=True))
            index_set = sum(cand_index_set[n - 1], [])
            n -= 1
            while len(masked_lms) + len(index_set) > num_to_predict:
                if n == 0:
                    break
                index_set = sum(cand_index_set[n - 1], [])
                n -= 1
            if len(masked_lms) + len(index_set) > num_to_predict:
                continue
            is_any_index_covered = False
            for index in index_set:
                if index in covered_indexes:
                    is_any_index_covered = True
                    break
            if is_any_index_covered:
                continue
            for index in index_set:
                covered_indexes.add(index)
                if rng.random() < 0.8:
                    masked_token = "[MASK]"
                else:
                    if rng.random() < 0.5:
                        masked_token = tokens[index]
                    else:
                        masked_token = vocab_words[rng.randint(0, len(vocab_words) - 1)]
                output_tokens[index] = masked_token
                masked_lms.append(MaskedLmInstance(index=index, label=tokens[index]))
        assert len(masked_lms) <= num_to_predict
        rng.shuffle(ngram_indexes)
        select_indexes = set()
        if F.do_permutation:
            for cand_index_set in ngram_indexes:
                if len(select_indexes) >= num_to_predict:
                    break
                if not cand_index_set:
                    continue
                n = np.random.choice(ngrams[:len(cand_index_set)],
                                     p=pvals[:len(cand_index_set)] / pvals[:len(cand_index_set)].sum(keepdims=True))
                index_set = sum(cand_index_set[n - 1], [])
                n -= 1
                while len(select_indexes) + len(index_set) > num_to_predict:
                    if n == 0:
                        break
                    index_set = sum(cand_index_set[n - 1], [])
                    n -= 1
                if len(select_indexes) + len(index_set) > num_to_predict:
                    continue
                is_any_index_covered = False
                for index in index_set:
                    if index in covered_indexes or index in select_indexes:
                        is_any_index_covered = True
                        break
                if is_any_index_covered:
                    continue
                for index in index_set:
                    select_indexes.add(index)
            assert len(select_indexes) <= num_to_predict
            select_indexes = sorted(select_indexes)
            permute_indexes = list(select_indexes)
            rng.shuffle(permute_indexes)
            orig_token = list(output_tokens)
            for src_i, tgt_i in zip(select_indexes, permute_indexes, strict=True):
                output_tokens[src_i] = orig_token[tgt_i]
                masked_lms.append(MaskedLmInstance(index=src_i, label=orig_token[src_i]))
        masked_lms = sorted(masked_lms, key=lambda x: x.index)
        for p in masked_lms:
            masked_lm_positions.append(p.index)
            masked_lm_labels.append(p.label)
        return output_tokens, masked_lm_positions, masked_lm_labels, token_boundary

    @staticmethod
    def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
        while True:
            total_length = len(tokens_a) + len(tokens_b)
            if total_length <= max_num_tokens:
                break
            trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
            assert len(trunc_tokens) >= 1
            if rng.random() < 0.5:
                del trunc_tokens[0]
            else:
                trunc_tokens.pop()

    # --- writing (write_instance_to_example_files)
    def write_instance_to_example_files(self, instances, output_files):
        import tensorflow as tf

        F, tok = self.FLAGS, self.tokenizer
        writers = [tf.io.TFRecordWriter(p) for p in output_files]
        writer_index = 0
        for instance in instances:
            input_ids = tok.convert_tokens_to_ids(instance.tokens)
            input_mask = [1] * len(input_ids)
            segment_ids = list(instance.segment_ids)
            token_boundary = list(instance.token_boundary)
            while len(input_ids) < F.max_seq_length:
                input_ids.append(0)
                input_mask.append(0)
                segment_ids.append(0)
                token_boundary.append(0)
            masked_lm_positions = list(instance.masked_lm_positions)
            masked_lm_ids = tok.convert_tokens_to_ids(instance.masked_lm_labels)
            masked_lm_weights = [1.0] * len(masked_lm_ids)
            multiplier = 1 + int(F.do_permutation)
            while len(masked_lm_positions) < F.max_predictions_per_seq * multiplier:
                masked_lm_positions.append(0)
                masked_lm_ids.append(0)
                masked_lm_weights.append(0.0)
            sentence_order_label = 1 if instance.is_random_next else 0

            def ints(v):
                return tf.train.Feature(int64_list=tf.train.Int64List(value=list(v)))

            features = collections.OrderedDict()
            features["input_ids"] = ints(input_ids)
            features["input_mask"] = ints(input_mask)
            features["segment_ids"] = ints(segment_ids)
            features["token_boundary"] = ints(token_boundary)
            features["masked_lm_positions"] = ints(masked_lm_positions)
            features["masked_lm_ids"] = ints(masked_lm_ids)
            features["masked_lm_weights"] = tf.train.Feature(float_list=tf.train.FloatList(value=masked_lm_weights))
            features["next_sentence_labels"] = ints([sentence_order_label])
            example = tf.train.Example(features=tf.train.Features(feature=features))
            writers[writer_index].write(example.SerializeToString())
            writer_index = (writer_index + 1) % len(writers)
        for w in writers:
            w.close()

    def run(self, input_files, output_files, ngram_seed, encoding="utf-8"):
        """The official ``main``; numpy's global RNG seeded with ``ngram_seed`` (the official leaves it unseeded)."""
        rng = random.Random(self.FLAGS.random_seed)
        np.random.seed(ngram_seed)
        instances = self.create_training_instances(input_files, rng, encoding)
        self.write_instance_to_example_files(instances, output_files)
        return len(instances)


# ------------------------------------------------------------------------------------------------------- tests
def _parity(tmp_path, tokenizer_spec, corpus_files, official_kw, project_kw, n_out=2):
    tokenizer = tokenizer_spec.build()
    flags = OfficialFlags(spm_model_file=tokenizer_spec.spm_model_file, **official_kw)
    ref_out = [str(tmp_path / f"official-{i}.tfrecord") for i in range(n_out)]
    _, np_seed = chunk_seeds(flags.random_seed, 0)
    n_ref = OfficialReference(flags, tokenizer).run(corpus_files, ref_out, np_seed)
    ours_out = [str(tmp_path / f"ours-{i}.tfrecord") for i in range(n_out)]
    config = PretrainingDataConfig(chunk_size_mb=64, shuffle_buffer_size=10**7, **project_kw)
    summary = create_pretraining_data(corpus_files, ours_out, tokenizer_spec, config, log=None)
    assert summary["counts"]["instances"] == n_ref > 50
    for ref_path, our_path in zip(ref_out, ours_out, strict=True):
        ref = list(parse_examples([ref_path]))
        ours = list(parse_examples([our_path]))
        assert len(ref) == len(ours)
        for k, (a, b) in enumerate(zip(ref, ours, strict=True)):
            assert a == b, f"record {k} of {os.path.basename(our_path)} differs"


def _wordpiece_vocab(tmp_path, corpus_files):
    """A small WordPiece vocab built from the corpus words (whole words + '##' suffix pieces)."""
    words = collections.Counter()
    for path in corpus_files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                for w in line.lower().replace(",", " , ").replace(".", " . ").split():
                    words[w] += 1
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ",", ".", "!", "?", ";", ":", "'", "-"]
    common = [w for w, _ in words.most_common(150) if w.isalpha()]
    vocab += common + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"] + list("abcdefghijklmnopqrstuvwxyz")
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture
def corpus(tmp_path):
    from albert_tf.data.sample_corpus import write_sample_corpus

    path = tmp_path / "corpus.txt"
    write_sample_corpus(str(path), num_documents=40, seed=3)
    return [str(path)]


@pytest.fixture
def spm_spec(spm_model):
    """30k-clean where ``../shared`` is present, else the sample-corpus substitute: parity holds for any model."""
    return TokenizerSpec(spm_model_file=str(spm_model))


@pytest.mark.parametrize(
    "official_kw,project_kw",
    [
        ({}, {}),
        ({"random_next_sentence": True}, {"sentence_order": "nsp"}),
        ({"do_permutation": True, "favor_shorter_ngram": False, "short_seq_prob": 0.5},
         {"do_permutation": True, "favor_shorter_ngram": False, "short_seq_prob": 0.5}),
        ({"do_whole_word_mask": False, "ngram": 2, "masked_lm_prob": 0.3, "max_predictions_per_seq": 10},
         {"do_whole_word_mask": False, "ngram": 2, "masked_lm_prob": 0.3, "max_predictions_per_seq": 10}),
    ],
    ids=["sop-default", "nsp", "permutation-longer-ngrams", "no-wwm"],
)
@pytest.mark.heavy
def test_records_equal_official_spm(tmp_path, corpus, spm_spec, official_kw, project_kw):
    common = {"max_seq_length": 64, "dupe_factor": 2, "random_seed": 7}
    _parity(tmp_path, spm_spec, corpus, {**common, **official_kw}, {**common, **project_kw})


def test_records_equal_official_wordpiece(tmp_path, corpus):
    spec = TokenizerSpec(vocab_file=_wordpiece_vocab(tmp_path, corpus))
    common = {"max_seq_length": 48, "dupe_factor": 2, "random_seed": 11}
    _parity(tmp_path, spec, corpus, dict(common), dict(common), n_out=1)
