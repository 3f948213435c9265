"""One chunk's work, the same in both executors (local worker processes, :mod:`pipeline`; Apache Beam, :mod:`beam`):
its lines -> documents -> instances (the official ``create_instances_from_document`` passes) -> masked, serialized
records in the official shuffled order, with the counters of what was made and dropped. :class:`PretrainingDataConfig`
holds every setting; :func:`chunk_seeds` makes a chunk's generators depend on the seed and the chunk index only, so
nothing depends on the number of workers.
"""

from __future__ import annotations

import array
import collections
import hashlib
import random

import numpy as np

from albert_tf.data.pretraining.instances import Instance, InstanceConfig, create_instances_from_document
from albert_tf.data.pretraining.masking import MaskingConfig, NgramSampler, shuffle
from albert_tf.data.pretraining.reading import Chunk, InputError
from albert_tf.data.pretraining.records import ExampleEncoder
from albert_tf.data.pretraining.vocabulary import LineEncoder, TokenizerSpec


class PretrainingDataConfig:
    """Every flag that changes the records (official names and defaults, plus this project's additions)."""

    FIELDS = {
        "max_seq_length": 512,
        "max_predictions_per_seq": 20,
        "random_seed": 12345,
        "dupe_factor": 40,
        "masked_lm_prob": 0.15,
        "short_seq_prob": 0.1,
        "ngram": 3,
        "do_whole_word_mask": True,
        "do_permutation": False,
        "favor_shorter_ngram": True,
        "sentence_order": "official",
        "short_seq_scope": "document",
        "do_lower_case": True,
        "keep_accents": False,
        "input_encoding": "utf-8",
        "file_is_document_boundary": False,
        "chunk_size_mb": 1.0,
        "shuffle_buffer_size": 100_000,
    }

    def __init__(self, **kwargs):
        unknown = set(kwargs) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"unknown PretrainingDataConfig fields: {sorted(unknown)}")
        for k, v in self.FIELDS.items():
            setattr(self, k, kwargs.get(k, v))
        self.validate()

    def validate(self) -> None:
        def need(cond: bool, msg: str) -> None:
            if not cond:
                raise InputError(msg)

        need(self.max_seq_length >= 5, f"--max_seq_length must be >= 5, got {self.max_seq_length}")
        need(self.max_predictions_per_seq >= 1,
             f"--max_predictions_per_seq must be >= 1, got {self.max_predictions_per_seq}")
        need(self.dupe_factor >= 1, f"--dupe_factor must be >= 1, got {self.dupe_factor}")
        need(0.0 <= self.masked_lm_prob <= 1.0, f"--masked_lm_prob must be in [0, 1], got {self.masked_lm_prob}")
        need(0.0 <= self.short_seq_prob <= 1.0, f"--short_seq_prob must be in [0, 1], got {self.short_seq_prob}")
        need(self.ngram >= 1, f"--ngram must be >= 1, got {self.ngram}")
        need(self.chunk_size_mb > 0, f"--chunk_size_mb must be > 0, got {self.chunk_size_mb}")
        need(self.shuffle_buffer_size >= 1, f"--shuffle_buffer_size must be >= 1, got {self.shuffle_buffer_size}")
        need(self.sentence_order in ("official", "pure", "nsp", "none"),
             f"--sentence_order must be official|pure|nsp|none, got {self.sentence_order!r}")
        need(self.short_seq_scope in ("document", "instance"),
             f"--short_seq_scope must be document|instance, got {self.short_seq_scope!r}")

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.FIELDS}

    @property
    def max_predictions(self) -> int:
        return self.max_predictions_per_seq * (1 + int(self.do_permutation))


def hash_int(*parts) -> int:
    """A 128-bit integer from sha256 of the parts: seeds (and Beam's sort keys) that no process or run changes."""
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:16], "little")


def chunk_seeds(random_seed: int, chunk_index: int) -> tuple[int, int]:
    """(Python ``random.Random`` seed, numpy ``RandomState`` seed < 2**32) of a chunk.

    Chunk 0 uses ``random_seed`` itself for ``random.Random``, as the official script does for the whole corpus.
    """
    py_seed = random_seed if chunk_index == 0 else hash_int("albert-tf", "chunk", random_seed, chunk_index)
    np_seed = hash_int("albert-tf", "ngram", random_seed, chunk_index) % (1 << 32)
    return py_seed, np_seed


class ChunkContext:
    """Everything a process needs to turn chunks into records (built once per process)."""

    def __init__(self, config: PretrainingDataConfig, tokenizer_spec: TokenizerSpec):
        self.config = config
        self.encoder = LineEncoder(tokenizer_spec.build())
        masking = MaskingConfig(
            start_table=self.encoder.start_table,
            mask_id=self.encoder.mask_id,
            random_word_ids=self.encoder.random_word_ids,
            masked_lm_prob=config.masked_lm_prob,
            max_predictions_per_seq=config.max_predictions_per_seq,
            do_whole_word_mask=config.do_whole_word_mask,
            do_permutation=config.do_permutation,
        )
        self.instance_config = InstanceConfig(
            max_seq_length=config.max_seq_length,
            short_seq_prob=config.short_seq_prob,
            cls_id=self.encoder.cls_id,
            sep_id=self.encoder.sep_id,
            masking=masking,
            sentence_order=config.sentence_order,
            short_seq_scope=config.short_seq_scope,
        )
        self.example_encoder = ExampleEncoder(config.max_seq_length, config.max_predictions, self.encoder.vocab_size)


def documents_from_lines(encoder: LineEncoder, lines: list[str], counters: dict) -> list[list[list[int]]]:
    """Official reader semantics: separator lines start a new document, token-less lines are dropped, empty
    documents removed. Counts lines, blank_lines, lines_without_tokens, documents, empty_documents, tokens."""
    ids, no_tokens = encoder.encode_lines(lines)
    documents: list[list[list[int]]] = [[]]
    had_text = [False]
    for seg in ids:
        if seg is None:
            counters["blank_lines"] += 1
            documents.append([])
            had_text.append(False)
            continue
        had_text[-1] = True
        if seg:
            documents[-1].append(seg)
    counters["lines"] += len(lines)
    counters["lines_without_tokens"] += no_tokens
    counters["empty_documents"] += sum(1 for d, t in zip(documents, had_text, strict=True) if t and not d)
    documents = [d for d in documents if d]
    counters["documents"] += len(documents)
    counters["tokens"] += sum(len(s) for d in documents for s in d)
    return documents


def new_counters() -> dict:
    """Zeroed per-chunk counters (the sidecar's counts after the input scan's); sums of them are the totals."""
    return collections.Counter(
        {k: 0 for k in ("lines", "blank_lines", "lines_without_tokens", "documents", "empty_documents", "tokens",
                        "instances", "instance_tokens", "masked_positions", "label_0", "label_1",
                        "skipped_single_token_chunks", "split_documents", "chunks")}
    )


class PackedRecords:
    """A chunk's serialized records, packed: one buffer, the records' end offsets, and their (shuffled) order.

    Why not a list of ``bytes``: one buffer pickles, travels to the main process and is freed as one block, without
    a Python object and the allocator's slack per record, and without thousands of small allocations made by the
    pool's result thread and freed later by the main thread. It does not bound a chunk's size: a chunk's record
    count follows the official short-length draw, made once per document (``short_seq_scope=document``), which cuts
    10% of documents into instances of a few tokens, so with book-sized documents one seed can give a chunk several
    times the records another seed gives (see the ``pipeline`` module docstring). Iterating yields the records in
    order, each a fresh ``bytes``.
    """

    __slots__ = ("blob", "ends", "order")

    def __init__(self, blob: bytes | bytearray, ends: array.array, order: array.array):
        self.blob = blob  # the records back to back, in creation order
        self.ends = ends  # end offset of each record in blob: record i is blob[ends[i - 1]:ends[i]] (from 0 for i = 0)
        self.order = order  # output position -> record index

    def __len__(self) -> int:
        return len(self.order)

    def __iter__(self):
        view, ends = memoryview(self.blob), self.ends
        for i in self.order:
            yield bytes(view[ends[i - 1] if i else 0:ends[i]])


def process_chunk(chunk: Chunk, ctx: ChunkContext) -> tuple[int, PackedRecords, dict]:
    """One chunk -> (chunk index, serialized examples in their shuffled order, counters)."""
    config = ctx.config
    counters = new_counters()
    counters["chunks"] = 1
    counters["split_documents"] = chunk.split_documents
    documents = documents_from_lines(ctx.encoder, chunk.lines, counters)
    blob = bytearray()
    ends = array.array("Q")
    if not documents:
        return chunk.index, PackedRecords(blob, ends, array.array("I")), dict(counters)
    py_seed, np_seed = chunk_seeds(config.random_seed, chunk.index)
    rng = random.Random(py_seed)
    sampler = NgramSampler(np.random.RandomState(np_seed), config.ngram, config.favor_shorter_ngram)
    encode = ctx.example_encoder.encode
    extend, mark = blob.extend, ends.append
    stats = [0, 0, 0]  # real tokens, masked positions, label-1 count

    def emit(inst: Instance) -> None:
        extend(encode(inst))
        mark(len(blob))
        stats[0] += len(inst.ids)
        stats[1] += len(inst.positions)
        stats[2] += inst.label

    shuffle(documents, rng)
    icfg = ctx.instance_config
    for _ in range(config.dupe_factor):
        for document_index in range(len(documents)):
            create_instances_from_document(documents, document_index, icfg, rng, sampler, emit, counters)
    del documents
    # The official `rng.shuffle(instances)`: Fisher-Yates depends only on the length, so shuffling the indices
    # draws the same numbers and gives the same permutation.
    order = list(range(len(ends)))
    shuffle(order, rng)
    n = len(order)
    counters["instances"] += n
    counters["instance_tokens"] += stats[0]
    counters["masked_positions"] += stats[1]
    counters["label_1"] += stats[2]
    counters["label_0"] += n - stats[2]
    return chunk.index, PackedRecords(blob, ends, array.array("I", order)), dict(counters)
