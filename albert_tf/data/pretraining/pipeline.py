"""The streaming, multi-process driver: chunks of documents -> instances -> shuffled, sharded TFRecords + sidecar.

Data flow (memory is bounded by the records of the chunks in flight, ``num_workers`` and ``shuffle_buffer_size``,
not by the corpus; a chunk's records are packed in one buffer, :class:`~chunks.PackedRecords`, and the C heap's
free pages are returned after every chunk, :mod:`memory`). A chunk's record count follows its text, except that the
official short-length draw, once per document, cuts 10% of documents into short instances: with book-sized documents one
such chunk holds several times the records of another, so the peak is that of the unluckiest chunk in flight.
``benchmarks/scaling.py`` measures peak memory against corpus size (results in ``benchmarks/README.md``).

1. the main process checks every input file decodes (:func:`scan_inputs`), then reads chunks of whole documents;
2. each chunk is processed on its own (in a worker process when ``num_workers > 1``), exactly as the official
   script processes a whole corpus: tokenize, ``rng.shuffle(documents)``, ``dupe_factor`` passes of
   ``create_instances_from_document``, ``rng.shuffle(instances)``. Random-document negatives come from the same
   chunk. The chunk's generators are ``random.Random`` (seeded with ``random_seed`` itself for chunk 0, as the
   official, and with a hash of (random_seed, chunk index) for the others) and a ``RandomState`` for the n-gram
   lengths (hash of (random_seed, chunk index)), so nothing depends on the number of workers;
3. the main process takes chunk results *in chunk order*, passes the records through a random-replacement buffer of
   ``shuffle_buffer_size`` records (its own seeded generator; what is left at the end is written in buffer order),
   and writes record k to output file k % len(output_files), as the official does.

Only the main process touches files (inputs, records, sidecar; through ``tf.io.gfile`` for ``gs://`` and other
TensorFlow filesystems, through Python for local paths): workers get chunks of lines and the tokenizer model's bytes,
never a path. So every ``--num_workers`` works with ``gs://`` and with ``ram://``, whose files exist only in the main
process' memory. With every path local, neither the main process nor a worker imports TensorFlow (TFRecord framing
and ``tf.train.Example`` bytes are written by ``records.py``): a run's start-up is Python's and the tokenizer's.

Difference from the official (stated in ``--help``): the official shuffles all documents and all instances of the
whole corpus in RAM; here shuffling is global within a chunk and across chunks only as far as the buffer reaches.
A corpus that fits in one chunk, with ``shuffle_buffer_size`` at least its instance count, gives the official
instances in the official order (with numpy's global RNG seeded as :func:`chunk_seeds` says; tested).
"""

from __future__ import annotations

import collections
import hashlib
import json
import multiprocessing
import os
import random
import time
from collections.abc import Callable, Sequence

from albert_tf import files as _fs
from albert_tf import interrupts
from albert_tf.data.pretraining.chunks import (
    ChunkContext,
    PretrainingDataConfig,
    hash_int,
    new_counters,
    process_chunk,
)
from albert_tf.data.pretraining.memory import release_free_memory
from albert_tf.data.pretraining.reading import Chunk, InputError, iter_chunks, resolve_input_files, scan_inputs
from albert_tf.data.pretraining.records import TFRecordShardWriter
from albert_tf.data.pretraining.schema import SIDECAR_FORMAT
from albert_tf.data.pretraining.vocabulary import TokenizerSpec
from albert_tf.progress import Progress

__all__ = [
    "PretrainingDataConfig",
    "PreparedRun",
    "create_pretraining_data",
    "file_entry",
    "format_summary",
    "input_counts",
    "make_sidecar",
    "prepare_run",
    "publish",
    "resolve_output_files",
]


def resolve_output_files(spec: str) -> list[str]:
    """Comma-separated output files; an item ``path@N`` expands to ``path-00000-of-0000N`` ... (N shards)."""
    out: list[str] = []
    for item in [p.strip() for p in (spec or "").split(",") if p.strip()]:
        if "@" in os.path.basename(item):
            base, _, n = item.rpartition("@")
            if not n.isdigit() or int(n) < 1:
                raise InputError(f"--output_file: {item!r}: expected PATH@N with N >= 1 shards")
            n = int(n)
            out.extend(f"{base}-{i:05d}-of-{n:05d}" for i in range(n))
        else:
            out.append(item)
    if not out:
        raise InputError("--output_file is empty (give a file, a comma-separated list, or PATH@N)")
    if len(set(out)) != len(out):
        raise InputError("--output_file names the same file twice")
    return out


_WORKER_CTX: ChunkContext | None = None


def _init_worker(config: PretrainingDataConfig, tokenizer_spec: TokenizerSpec) -> None:
    global _WORKER_CTX
    interrupts.ignore_in_worker()  # Ctrl-C is the main process's to handle; it stops the pool
    _WORKER_CTX = ChunkContext(config, tokenizer_spec)


def _work(chunk: Chunk):
    release_free_memory()  # what the previous chunk's records and their pickled result left in the heap
    return process_chunk(chunk, _WORKER_CTX)


class ShuffleBuffer:
    """Random-replacement buffer: when full, a uniformly chosen slot is emitted and replaced by the new record."""

    def __init__(self, size: int, seed: int, sink: Callable[[bytes], None]):
        self.size = size
        self.buf: list[bytes] = []
        self.rng = random.Random(seed)
        self.sink = sink

    def push(self, record: bytes) -> None:
        if len(self.buf) < self.size:
            self.buf.append(record)
            return
        j = self.rng.randrange(self.size)
        self.sink(self.buf[j])
        self.buf[j] = record

    def finish(self) -> None:
        for record in self.buf:
            self.sink(record)
        self.buf = []


def _chunk_results(chunks, ctx: ChunkContext, ctx_args, num_workers: int):
    """Results of process_chunk in chunk order; at most 2 * num_workers chunks in flight."""
    if num_workers <= 1:
        for chunk in chunks:
            yield process_chunk(chunk, ctx)
        return
    mp = multiprocessing.get_context("spawn")  # workers never inherit TensorFlow state
    pool = None
    try:
        with interrupts.deferred():  # a pool half started would leave workers reading a pipe that closed
            pool = mp.Pool(num_workers, initializer=_init_worker, initargs=ctx_args)
        pending: collections.deque = collections.deque()
        for chunk in chunks:
            pending.append(pool.apply_async(_work, (chunk,)))
            if len(pending) >= 2 * num_workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
        pool.close()
    except BaseException:  # also a Ctrl-C held while the pool started: it is raised inside this block
        if pool is not None:
            pool.terminate()
        raise
    finally:  # every worker gone before the caller goes on (after Ctrl-C too: none left reading a closed pipe)
        if pool is not None:
            pool.join()


class PreparedRun:
    """What both executors settle before any work starts: resolved files, a checked tokenizer, the sidecar path.

    Built by :func:`prepare_run` in the process that launches the work (the local main process, or the machine
    that submits a Beam pipeline): tokenizer files exist and load (a bad model or a vocab without
    [CLS]/[SEP]/[MASK] fails here), outputs are not inputs, output folders exist.
    """

    def __init__(self, input_files: list[str], output_files: list[str], metadata_file: str, ctx: ChunkContext,
                 identity: dict, worker_spec: TokenizerSpec):
        self.input_files = input_files
        self.output_files = output_files
        self.metadata_file = metadata_file
        self.ctx = ctx
        self.identity = identity
        self.worker_spec = worker_spec  # the tokenizer recipe carrying the model's bytes: workers open no file
        self.partial_files = [partial_name(p) for p in output_files]


def prepare_run(
    input_files: Sequence[str] | str,
    output_files: Sequence[str] | str,
    tokenizer_spec: TokenizerSpec,
    config: PretrainingDataConfig,
    metadata_file: str | None = None,
) -> PreparedRun:
    """Resolve and check files and tokenizer (see :class:`PreparedRun`); shared by the local and Beam executors."""
    if isinstance(input_files, str):
        input_files = resolve_input_files(input_files)
    if isinstance(output_files, str):
        output_files = resolve_output_files(output_files)
    input_files, output_files = list(input_files), list(output_files)
    _check_tokenizer_files(tokenizer_spec)
    ctx = ChunkContext(config, tokenizer_spec)
    identity = ctx.encoder.tokenizer.identity()
    metadata_file = metadata_file or default_metadata_file(output_files)
    _check_outputs_are_not_inputs(input_files, [*output_files, metadata_file])
    for path in [*output_files, metadata_file]:
        _fs.makedirs_for(path)
    worker_spec = tokenizer_spec.with_model_bytes(ctx.encoder.tokenizer.model_bytes)
    return PreparedRun(input_files, output_files, metadata_file, ctx, identity, worker_spec)


def make_sidecar(run: PreparedRun, tokenizer_spec: TokenizerSpec, config: PretrainingDataConfig, counts: dict,
                 files: list[dict]) -> dict:
    """The JSON sidecar's content (one layout for both executors): flags, tokenizer identity, files, counts."""
    return {
        "format": SIDECAR_FORMAT,
        "flags": config.as_dict(),
        "tokenizer": {"identity": run.identity, "vocab_file": tokenizer_spec.vocab_file,
                      "spm_model_file": tokenizer_spec.spm_model_file},
        "input_files": run.input_files,
        "output_files": [os.path.basename(p) for p in run.output_files],
        "files": files,
        "counts": counts,
    }


def input_counts(scan: dict, totals: dict) -> dict:
    """The sidecar's counts before the per-output-file list: the input scan's file counts, then the chunk totals."""
    return {**{k: scan[k] for k in ("files", "empty_files", "blank_only_files", "input_bytes")}, **dict(totals)}


def create_pretraining_data(
    input_files: Sequence[str] | str,
    output_files: Sequence[str] | str,
    tokenizer_spec: TokenizerSpec,
    config: PretrainingDataConfig,
    num_workers: int = 1,
    metadata_file: str | None = None,
    log: Callable[[str], None] | None = print,
) -> dict:
    """Create the TFRecords and the JSON sidecar; returns the summary (counts, files, timings)."""
    t0 = time.perf_counter()
    if isinstance(input_files, str):
        input_files = resolve_input_files(input_files)
    if isinstance(output_files, str):
        output_files = resolve_output_files(output_files)
    if num_workers < 1:
        raise InputError(f"--num_workers must be >= 1, got {num_workers}")
    _check_tokenizer_files(tokenizer_spec)
    scan = scan_inputs(list(input_files), config.input_encoding)
    # Fail fast on a bad model / vocab (also a vocab without [CLS]/[SEP]/[MASK]) before any worker starts.
    run = prepare_run(input_files, output_files, tokenizer_spec, config, metadata_file)
    input_files, output_files, metadata_file = run.input_files, run.output_files, run.metadata_file
    ctx = run.ctx
    if log:
        log(f"create_pretraining_data: {len(input_files)} input file(s), {scan['input_bytes']:,} bytes, "
            f"{scan['text_lines']:,} text lines -> {len(output_files)} output file(s), {num_workers} worker(s)")
    partial_files = run.partial_files

    chunks = iter_chunks(input_files, config.input_encoding, int(config.chunk_size_mb * (1 << 20)),
                         config.file_is_document_boundary)
    totals = new_counters()
    progress = Progress("create_pretraining_data", total=scan["text_lines"], unit="lines", log=log)
    try:
        with TFRecordShardWriter(partial_files) as writer, progress.ticking():
            buffer = ShuffleBuffer(config.shuffle_buffer_size, hash_int("albert-tf", "shuffle", config.random_seed),
                                   writer.write)
            # Workers get the model's bytes, never its path: they open no file (see TokenizerSpec).
            for _, records, counters in _chunk_results(chunks, ctx, (config, run.worker_spec), num_workers):
                totals.update(counters)
                progress.update(counters["lines"])
                for record in records:
                    buffer.push(record)
                del records
                release_free_memory()  # peak memory must not grow with the corpus (see memory.py)
                interrupts.note(f"after {totals['documents']:,} documents")
            buffer.finish()
            per_shard = list(writer.counts)
    except BaseException:  # an error or Ctrl-C: the hidden partial shards go too
        for path in partial_files:
            if _fs.exists(path):
                _fs.remove(path)
        raise
    elapsed = time.perf_counter() - t0

    counts = input_counts(scan, totals)
    counts["instances_per_output_file"] = per_shard
    files = [file_entry(tmp, os.path.basename(final), n) for tmp, final, n in zip(partial_files, output_files,
                                                                                  per_shard)]
    sidecar = make_sidecar(run, tokenizer_spec, config, counts, files)
    publish(partial_files, output_files, metadata_file, sidecar)
    summary = {"counts": counts, "output_files": output_files, "metadata_file": metadata_file,
               "seconds": elapsed, "instances_per_second": counts["instances"] / elapsed if elapsed > 0 else 0.0}
    if log:
        log(format_summary(summary))
        few = few_instances_warning(counts, config)
        if few:
            log(few)
    if counts["instances"] == 0:
        raise InputError("no instances were created (every document was empty); see the counts above")
    return summary


def few_instances_warning(counts: dict, config: PretrainingDataConfig) -> str | None:
    """A warning when the records hold far fewer instances than the input's tokens fill (under a tenth of
    ``tokens * dupe_factor / max_seq_length``): each instance takes whole lines as sentences, so text without line
    breaks (a corpus of one giant line) yields one instance per document however long it is."""
    expected = counts["tokens"] * config.dupe_factor / config.max_seq_length
    if counts["instances"] == 0 or expected < 10 or counts["instances"] >= expected / 10:
        return None
    return (f"warning: {counts['tokens']:,} tokens gave {counts['instances']:,} instance(s), where about "
            f"{expected:,.0f} would hold them (--max_seq_length={config.max_seq_length}, "
            f"--dupe_factor={config.dupe_factor}); the input has {counts['lines']:,} line(s) for "
            f"{counts['documents']:,} document(s): is it one sentence per line? (albert_prepare_text splits text into "
            "sentences)")


def partial_name(path: str) -> str:
    """Where a shard is written until the whole set is complete (hidden; no ``PATH*`` glob matches it)."""
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.partial")


def _check_outputs_are_not_inputs(input_files: Sequence[str], outputs: Sequence[str]) -> None:
    inputs = {_fs.canonical_path(p) for p in input_files}
    for path in outputs:
        if _fs.canonical_path(path) in inputs:
            raise InputError(f"{path} is both an input and an output: writing it would destroy the input")


def file_entry(path: str, name: str, records: int) -> dict:
    """The sidecar's entry for one written shard: final name, record count, size and sha256 of its bytes."""
    digest = hashlib.sha256()
    with _fs.open_file(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"name": name, "records": records, "bytes": _fs.size(path), "sha256": digest.hexdigest()}


def publish(partial_files: Sequence[str], output_files: Sequence[str], metadata_file: str, sidecar: dict) -> None:
    """Move the complete shards under their final names, then write the sidecar (the completion mark) last.

    The old sidecar goes first, so a set whose renaming was interrupted has no sidecar claiming it complete;
    a file under a final name is always a whole shard.
    """
    with interrupts.deferred():  # Ctrl-C waits for the set to be published whole
        if _fs.exists(metadata_file):
            _fs.remove(metadata_file)
        for partial, final in zip(partial_files, output_files):
            _fs.replace(partial, final)
        _fs.write_text_atomic(metadata_file, json.dumps(sidecar, indent=2, sort_keys=True) + "\n")


def default_metadata_file(output_files: Sequence[str]) -> str:
    """``<first output>.json``, or ``<prefix>.json`` for ``PATH-00000-of-0000N`` shards."""
    first = output_files[0]
    base = first.split("-00000-of-")[0] if "-00000-of-" in first else first
    return base + ".json"


def _check_tokenizer_files(spec: TokenizerSpec) -> None:
    if spec.spm_model_file:
        if not _fs.isfile(spec.spm_model_file):
            raise InputError(f"--spm_model_file={spec.spm_model_file}: file not found")
    elif spec.vocab_file:
        if not _fs.isfile(spec.vocab_file):
            raise InputError(f"--vocab_file={spec.vocab_file}: file not found")
    else:
        raise InputError("give --spm_model_file (SentencePiece model) or --vocab_file (WordPiece vocab)")


def format_summary(summary: dict) -> str:
    c = summary["counts"]
    masked = c["masked_positions"]
    lines = [
        "*** Summary ***",
        f"  input: {c['files']} file(s) ({c['empty_files']} empty, {c['blank_only_files']} blank-only), "
        f"{c['input_bytes']:,} bytes, {c['lines']:,} lines ({c['blank_lines']:,} separators, "
        f"{c['lines_without_tokens']:,} without tokens, skipped)",
        f"  documents: {c['documents']:,} ({c['empty_documents']:,} empty skipped, {c['split_documents']:,} split "
        f"at chunk boundaries), {c['tokens']:,} tokens, {c['chunks']:,} chunk(s)",
        f"  instances: {c['instances']:,} ({c['instance_tokens']:,} tokens, {masked:,} masked positions, "
        f"{masked / max(c['instances'], 1):.2f} per instance); sentence-order labels 0/1: "
        f"{c['label_0']:,}/{c['label_1']:,}"
        + (f"; {c['skipped_single_token_chunks']:,} single-token chunks skipped"
           if c["skipped_single_token_chunks"] else ""),
        f"  output: {len(summary['output_files'])} file(s), instances per file {c['instances_per_output_file']}; "
        f"sidecar {summary['metadata_file']}",
        f"  time: {summary['seconds']:.1f} s, {summary['instances_per_second']:,.0f} instances/s",
    ]
    return "\n".join(lines)
