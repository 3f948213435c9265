"""The same pretraining records on Apache Beam: one algorithm (``pipeline.py``'s functions), a second executor.

``pip install 'albert-tf[beam]'``; runs on the DirectRunner (in memory or multi-process) and, unchanged, on
Dataflow, Flink or Spark. Stages:

1. **read and cut** (one element, so one worker): :func:`~albert_tf.data.pretraining.reading.scan_inputs` (the
   local up-front decode check and file counts; an undecodable byte fails the pipeline with the local message),
   then :func:`~albert_tf.data.pretraining.reading.iter_chunks`, the local chunking itself. Chunks are the unit of
   randomness (``chunk_seeds(random_seed, chunk index)``) and of random-document negatives, and their boundaries
   depend on the text read so far across files, so cutting is one sequential pass, as in the local main process.
   It only reads and decodes; everything that costs CPU comes after a ``Reshuffle`` that spreads the chunks.
2. **instances** (parallel, one tokenizer per worker built in ``DoFn.setup`` from the model's bytes):
   :func:`~albert_tf.data.pretraining.chunks.process_chunk`, the very function local workers run, so every
   chunk yields the local records in the local per-chunk order, and the local counters.
3. **shuffle and shard**: record ``i`` of chunk ``c`` gets the key ``sha256(random_seed, c, i)`` (63 bits); it goes
   to shard ``key % N`` and each shard is written sorted by key. Shard contents and order are therefore a function
   of the input and flags alone (no worker count, bundle size or runner changes them). Each shard is sorted in one
   worker's memory: choose ``N`` so that a shard fits (e.g. at most ~1 GB per shard).
4. **publish** (after every shard is written, through side inputs): shards are written under the local pipeline's
   hidden ``.NAME.partial`` names, then renamed, then the JSON sidecar is written last, as locally.

What equals the local pipeline for the same input and flags: the multiset of serialized records, and every count
in the sidecar except the per-file ones (``counts.instances_per_output_file``, ``files[].records/bytes/sha256``).
What differs: the order of records and their assignment to shards (local: a bounded random-replacement buffer and
round-robin; here: the keyed sort above; ``--shuffle_buffer_size`` is not used). The sidecar says which executor
wrote it (``executor``). All file access goes through ``tf.io.gfile`` (``gs://`` for Dataflow); ``ram://`` works
only in-process (the in-memory DirectRunner).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

try:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
except ImportError as _error:  # pragma: no cover - exercised only without the extra
    raise ImportError("Apache Beam is not installed: pip install 'albert-tf[beam]'") from _error

from albert_tf import files as _fs
from albert_tf.data.pretraining.chunks import ChunkContext, PretrainingDataConfig, hash_int, new_counters, process_chunk
from albert_tf.data.pretraining.pipeline import (
    file_entry,
    format_summary,
    input_counts,
    make_sidecar,
    prepare_run,
    publish,
)
from albert_tf.data.pretraining.reading import Chunk, InputError, iter_chunks, scan_inputs
from albert_tf.data.pretraining.records import TFRecordShardWriter
from albert_tf.data.pretraining.vocabulary import TokenizerSpec

__all__ = ["RUNNERS", "create_pretraining_data_beam", "pipeline_options", "record_key"]

RUNNERS = ("DirectRunner", "DataflowRunner", "FlinkRunner", "SparkRunner")
_SCAN = "scan"
_COUNTS = "counts"
_KEY_MASK = (1 << 63) - 1
_METRICS = "albert_tf.create_pretraining_data"
_WHILE_RUNNING = re.compile(r"""(\s*\[while running '[^']*'\])+\s*$""")


def record_key(random_seed: int, chunk_index: int, position: int) -> int:
    """The sort key of record ``position`` (in the chunk's own shuffled order) of chunk ``chunk_index``.

    63 bits of sha256, so Beam's coders carry it as a plain integer; it picks the shard (``key % N``) and the
    place in the shard, independently of how the work was split."""
    return hash_int("albert-tf", "beam-shuffle", random_seed, chunk_index, position) & _KEY_MASK


class _ReadAndCut(beam.DoFn):
    """All input files -> the scan's counts (tagged output) and the local pipeline's chunks, in order."""

    def __init__(self, input_files: Sequence[str], config: PretrainingDataConfig):
        self.input_files = list(input_files)
        self.config = config

    def process(self, _unused) -> Iterator:
        c = self.config
        yield beam.pvalue.TaggedOutput(_SCAN, scan_inputs(self.input_files, c.input_encoding))
        for chunk in iter_chunks(self.input_files, c.input_encoding, int(c.chunk_size_mb * (1 << 20)),
                                 c.file_is_document_boundary):
            yield chunk.index, chunk.lines, chunk.split_documents


class _CreateInstances(beam.DoFn):
    """A chunk -> its serialized records keyed by shard (``(shard, (sort key, record))``) + its counters."""

    def __init__(self, config: PretrainingDataConfig, worker_spec: TokenizerSpec, num_shards: int):
        self.config = config
        self.worker_spec = worker_spec  # carries the model's bytes: a worker opens no tokenizer file
        self.num_shards = num_shards
        self.ctx: ChunkContext | None = None
        self.instances = beam.metrics.Metrics.counter(_METRICS, "instances")
        self.chunks = beam.metrics.Metrics.counter(_METRICS, "chunks")

    def setup(self) -> None:
        self.ctx = ChunkContext(self.config, self.worker_spec)  # once per worker: tokenizer and tables

    def process(self, element: tuple[int, list[str], int]) -> Iterator:
        index, lines, split_documents = element
        _, records, counters = process_chunk(Chunk(index, lines, split_documents), self.ctx)
        self.chunks.inc()
        self.instances.inc(len(records))
        yield beam.pvalue.TaggedOutput(_COUNTS, counters)
        seed, n = self.config.random_seed, self.num_shards
        for position, record in enumerate(records):
            key = record_key(seed, index, position)
            yield key % n, (key, record)


class _SumCounters(beam.CombineFn):
    """Sums the per-chunk counters (a combine, not Beam metrics: exact on every runner, retries included)."""

    def create_accumulator(self) -> dict:
        return new_counters()

    @staticmethod
    def _add(total: dict, counters: dict) -> dict:
        # Adds key by key: right whether a runner hands back a Counter or a plain dict (dict.update would replace).
        for key, value in counters.items():
            total[key] = total.get(key, 0) + value
        return total

    def add_input(self, accumulator, counters: dict):
        return self._add(accumulator, counters)

    def merge_accumulators(self, accumulators: Iterable):
        total = new_counters()
        for acc in accumulators:
            self._add(total, acc)
        return total

    def extract_output(self, accumulator) -> dict:
        return dict(accumulator)


class _WriteShard(beam.DoFn):
    """One shard's records, sorted by key, into its hidden partial file; yields ``(shard, sidecar entry)``."""

    def __init__(self, partial_files: Sequence[str], output_files: Sequence[str]):
        self.partial_files = list(partial_files)
        self.output_files = list(output_files)

    def process(self, element: tuple[int, dict]) -> Iterator:
        shard, grouped = element
        records = sorted(grouped["records"])
        partial = self.partial_files[shard]
        with TFRecordShardWriter([partial]) as writer:  # a retried bundle rewrites the whole file
            for _, record in records:
                writer.write(record)
        yield shard, file_entry(partial, os.path.basename(self.output_files[shard]), len(records))


class _Publish(beam.DoFn):
    """Runs once every shard is written (its side inputs): rename the shards, then write the sidecar last."""

    def __init__(self, partial_files: Sequence[str], output_files: Sequence[str], metadata_file: str,
                 sidecar: dict):
        self.partial_files = list(partial_files)
        self.output_files = list(output_files)
        self.metadata_file = metadata_file
        self.sidecar = sidecar

    def process(self, _unused, entries: list, totals: dict, scan: dict) -> Iterator:
        files = [entry for _, entry in sorted(entries, key=lambda e: e[0])]
        counts = input_counts(scan, totals)
        counts["instances_per_output_file"] = [entry["records"] for entry in files]
        sidecar = dict(self.sidecar, files=files, counts=counts)
        # A retried bundle finds some shards already renamed: rename only what is still partial (idempotent).
        pending = [(tmp, final) for tmp, final in zip(self.partial_files, self.output_files, strict=True)
                   if _fs.exists(tmp) or not _fs.exists(final)]
        publish([tmp for tmp, _ in pending], [final for _, final in pending], self.metadata_file, sidecar)
        yield counts["instances"]


def pipeline_options(runner: str | None = None, args: Sequence[str] | PipelineOptions | None = None
                     ) -> PipelineOptions:
    """Beam's own options from command-line style ``args`` (``--project=...``, ``--direct_num_workers=2``, ...);
    ``runner`` (one of :data:`RUNNERS`, or any runner name Beam accepts) overrides a ``--runner`` among them."""
    if isinstance(args, PipelineOptions):
        options = args
    else:
        options = PipelineOptions(flags=list(args or ()))
    if runner:
        options.view_as(beam.options.pipeline_options.StandardOptions).runner = runner
    return options


def _input_error(error: BaseException) -> InputError | None:
    """The :class:`InputError` a worker raised, recovered from the runner's wrapper (runners re-raise worker
    failures as their own exception types, or append `` [while running 'STEP']``, with the original in the
    message or the cause chain), so the command line prints the local pipeline's one line."""

    def clean(message: str) -> str:
        return _WHILE_RUNNING.sub("", message.strip().splitlines()[0] if message.strip() else message).strip()

    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, InputError):
            return InputError(clean(str(seen)))
        seen = seen.__cause__ or seen.__context__
    match = re.search(r"InputError: (.+)", str(error))
    return InputError(clean(match.group(1)).strip("'\"")) if match else None


def create_pretraining_data_beam(
    input_files: Sequence[str] | str,
    output_files: Sequence[str] | str,
    tokenizer_spec: TokenizerSpec,
    config: PretrainingDataConfig,
    options: PipelineOptions | Sequence[str] | None = None,
    runner: str | None = None,
    metadata_file: str | None = None,
    log: Callable[[str], None] | None = print,
) -> dict:
    """Build and run the Beam pipeline (module docstring); returns the summary the local pipeline returns.

    ``options``: Beam's pipeline options (a ``PipelineOptions`` or its command-line flags); ``runner`` overrides
    the runner among them (default: Beam's, the DirectRunner). Waits for the pipeline to finish, then reads the
    published sidecar back (also from ``gs://``) for the counts.
    """
    t0 = time.perf_counter()
    run = prepare_run(input_files, output_files, tokenizer_spec, config, metadata_file)
    opts = pipeline_options(runner, options)
    runner_name = opts.view_as(beam.options.pipeline_options.StandardOptions).runner or "DirectRunner"
    if log:
        log(f"create_pretraining_data (Apache Beam {beam.__version__}, {runner_name}): {len(run.input_files)} input "
            f"file(s) -> {len(run.output_files)} output file(s)")
    header = make_sidecar(run, tokenizer_spec, config, counts={}, files=[])
    header["executor"] = {
        "engine": "apache_beam", "version": beam.__version__, "runner": str(runner_name),
        "record_order": "shard = key % N, sorted by key within a shard, key = sha256(random_seed, chunk, index in "
                        "chunk); the multiset of records equals the local pipeline's, the order does not "
                        "(shuffle_buffer_size unused)",
    }
    n = len(run.output_files)
    try:
        with beam.Pipeline(options=opts) as p:
            cut = (p | "Start" >> beam.Create([None])
                   | "ReadAndCut" >> beam.ParDo(_ReadAndCut(run.input_files, config)).with_outputs(_SCAN,
                                                                                                 main="chunks"))
            made = (cut.chunks
                    | "SpreadChunks" >> beam.Reshuffle()
                    | "CreateInstances" >> beam.ParDo(_CreateInstances(config, run.worker_spec, n)).with_outputs(
                        _COUNTS, main="records"))
            totals = made[_COUNTS] | "SumCounts" >> beam.CombineGlobally(_SumCounters())
            shard_ids = p | "ShardIds" >> beam.Create([(i, None) for i in range(n)])
            entries = ({"records": made.records, "ids": shard_ids}
                       | "GroupShards" >> beam.CoGroupByKey()
                       | "WriteShards" >> beam.ParDo(_WriteShard(run.partial_files, run.output_files)))
            _ = (p | "Finish" >> beam.Create([None])
                 | "Publish" >> beam.ParDo(_Publish(run.partial_files, run.output_files, run.metadata_file, header),
                                           beam.pvalue.AsList(entries), beam.pvalue.AsSingleton(totals),
                                           beam.pvalue.AsSingleton(cut[_SCAN])))
    except Exception as e:
        recovered = _input_error(e)
        if recovered is None:
            raise
        raise recovered from e
    elapsed = time.perf_counter() - t0
    sidecar = json.loads(_fs.read_text(run.metadata_file))
    counts = sidecar["counts"]
    summary = {"counts": counts, "output_files": run.output_files, "metadata_file": run.metadata_file,
               "seconds": elapsed, "instances_per_second": counts["instances"] / elapsed if elapsed > 0 else 0.0,
               "runner": str(runner_name)}
    if log:
        log(format_summary(summary))
    if counts["instances"] == 0:
        raise InputError("no instances were created (every document was empty); see the counts above")
    return summary
