"""create_pretraining_data: the absl command line (official ``create_pretraining_data.py`` flag names and defaults,
plus additions)."""

from __future__ import annotations

import shlex
import sys

from absl import flags

from albert_tf import files as _fs
from albert_tf import interrupts
from albert_tf.cli import app
from albert_tf.data.pretraining.pipeline import PretrainingDataConfig, create_pretraining_data
from albert_tf.data.pretraining.reading import InputError
from albert_tf.data.pretraining.vocabulary import TokenizerSpec

__all__ = ["define_flags", "main", "run"]

HELP = """Create ALBERT pretraining TFRecords: n-gram masked LM + sentence-order prediction (official algorithm).

Input: one sentence per line, a blank line between documents (data/prepare_text.py converts plain text).

How this differs from the official create_pretraining_data.py:
  * Streaming: the official reads the whole corpus into RAM, shuffles all documents, creates every instance and
    shuffles all instances globally. Here the corpus is read in chunks of whole documents (--chunk_size_mb); each
    chunk is processed exactly like the official processes a corpus (document shuffle, --dupe_factor passes,
    instance shuffle), random-document negatives are drawn from the same chunk, and records from different chunks
    are mixed by a random-replacement buffer of --shuffle_buffer_size records before being written round-robin.
    Peak memory depends on those two flags and --num_workers, not on the corpus size (with one caveat: the
    official short-length draw is made once per document, so a chunk of book-sized documents may hold several
    times its usual records; --short_seq_scope=instance draws per instance). Data loaders shuffle again.
  * Reproducible: every random draw comes from generators seeded by --random_seed and the chunk index (the official
    draws n-gram lengths from numpy's unseeded global RNG), so the output is byte-identical for the same inputs and
    flags whatever --num_workers is. Changing --chunk_size_mb changes the output.
  * --sentence_order picks the negatives explicitly (official|pure|nsp|none); label 1 = swapped or random.
  * --vocab_file is not needed with --spm_model_file; --input_encoding decodes the input (errors name the byte).

Apache Beam (pip install 'albert-tf[beam]'): --runner=DirectRunner|DataflowRunner|FlinkRunner|SparkRunner runs the
same per-chunk code as a Beam pipeline. Beam's own options go in --beam_pipeline_options="--project=P ..." or after
a lone "--" at the end of the command line. Same input and flags -> the same multiset of records and the same
counts as the local run; the order differs: records are spread over the shards and ordered within each by a
hash of (--random_seed, chunk, position), whatever the number of Beam workers (--shuffle_buffer_size and
--num_workers are not used; Beam's options set the workers).
"""

_DEFINED = False


def define_flags() -> None:
    """Define the flags once (idempotent, so tests and the console script can share them)."""
    global _DEFINED
    if _DEFINED:
        return
    _DEFINED = True
    d = PretrainingDataConfig.FIELDS
    flags.DEFINE_string("input_file", None, "Input raw text file(s): comma-separated list of files or globs.")
    flags.DEFINE_string("output_file", None,
                        "Output TFRecord file(s): comma-separated list, or PATH@N for N shards "
                        "(PATH-00000-of-0000N ...). Instances are written round-robin.")
    flags.DEFINE_string("vocab_file", None, "WordPiece vocab file (not needed when --spm_model_file is given).")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model; switches tokenizer and start-piece rule.")
    flags.DEFINE_string("input_file_mode", "r", "Accepted for compatibility; input is read as bytes and decoded "
                        "with --input_encoding.")
    flags.DEFINE_bool("do_lower_case", d["do_lower_case"], "Lower-case the input (SentencePiece: in preprocess_text).")
    flags.DEFINE_bool("do_whole_word_mask", d["do_whole_word_mask"], "Mask whole words (candidates are words).")
    flags.DEFINE_bool("do_permutation", d["do_permutation"], "Add the official permutation predictions.")
    flags.DEFINE_bool("favor_shorter_ngram", d["favor_shorter_ngram"], "p(n) ∝ 1/n; False reverses it.")
    flags.DEFINE_bool("random_next_sentence", False, "BERT next-sentence negatives; same as --sentence_order=nsp.")
    flags.DEFINE_integer("max_seq_length", d["max_seq_length"], "Maximum sequence length.")
    flags.DEFINE_integer("ngram", d["ngram"], "Maximum n-gram length (in words with whole-word masking).")
    flags.DEFINE_integer("max_predictions_per_seq", d["max_predictions_per_seq"], "Maximum masked LM predictions.")
    flags.DEFINE_integer("random_seed", d["random_seed"], "Seed of every random draw.")
    flags.DEFINE_integer("dupe_factor", d["dupe_factor"], "Passes over the data (different masks each).")
    flags.DEFINE_float("masked_lm_prob", d["masked_lm_prob"], "Masked LM probability.")
    flags.DEFINE_float("short_seq_prob", d["short_seq_prob"], "Probability of a shorter target sequence length.")
    flags.DEFINE_enum("sentence_order", d["sentence_order"], ["official", "pure", "nsp", "none"],
                      "Sentence-order negatives. official: ALBERT as released (swapped pairs, and a random other "
                      "document's text as B for one-segment chunks); pure: only swapped pairs (one-segment chunks "
                      "are cut in two); nsp: BERT next-sentence prediction (random-document negatives); none: one "
                      "segment per instance, label 0.")
    flags.DEFINE_enum("short_seq_scope", d["short_seq_scope"], ["document", "instance"],
                      "document: one short-target draw per document and pass (official); instance: a new draw for "
                      "every instance, so short_seq_prob is the share of short-target instances.")
    flags.DEFINE_bool("keep_accents", d["keep_accents"], "Keep diacritics (official: always stripped).")
    flags.DEFINE_string("input_encoding", d["input_encoding"], "Text encoding of the input files (ASCII-compatible).")
    flags.DEFINE_bool("file_is_document_boundary", d["file_is_document_boundary"],
                      "End a document at the end of every file (official: only blank lines end documents).")
    flags.DEFINE_integer("num_workers", 1, "Worker processes (output is identical for any value).")
    flags.DEFINE_float("chunk_size_mb", d["chunk_size_mb"],
                       "Characters (in MiB) of whole documents per chunk: the unit of work, of shuffling and of "
                       "random-document negatives. Documents longer than twice this are split (counted).")
    flags.DEFINE_integer("shuffle_buffer_size", d["shuffle_buffer_size"],
                         "Records held to mix chunks before writing (memory: this many serialized examples).")
    flags.DEFINE_string("metadata_file", None, "JSON sidecar path (default: <output>.json).")
    flags.DEFINE_string("runner", None,
                        "Run on Apache Beam with this runner (DirectRunner, DataflowRunner, FlinkRunner, SparkRunner, "
                        "or any runner Beam knows); unset: the local multi-process pipeline (--num_workers). Needs "
                        "pip install 'albert-tf[beam]'.")
    flags.DEFINE_string("beam_pipeline_options", "",
                        "Beam's own pipeline options as one string, e.g. \"--project=P --region=R "
                        "--temp_location=gs://B/tmp --setup_file=./setup.py\" (also accepted after a lone --).")


def _run_beam(input_file: str, output_file: str, spec: TokenizerSpec, config: PretrainingDataConfig,
              runner: str, beam_args: list[str], metadata_file: str | None) -> None:
    """The Beam executor, imported only when asked for (apache-beam is an optional extra)."""
    try:
        from albert_tf.data.pretraining.beam import create_pretraining_data_beam
    except ImportError as e:
        raise InputError(f"--runner={runner}: {e}") from None
    create_pretraining_data_beam(input_file, output_file, spec, config, options=beam_args, runner=runner,
                                 metadata_file=metadata_file)


def run(argv=None) -> int:
    """Entry point after absl parsed the flags; returns the process exit code.

    ``argv[1:]`` (what follows a lone ``--``) are Beam pipeline options; they need ``--runner``.
    """
    f = flags.FLAGS
    interrupts.advise("nothing was published (the records appear only complete); run the same command to start again")
    beam_args = [*shlex.split(f.beam_pipeline_options or ""), *list(argv or [])[1:]]
    try:
        if not f.input_file:
            raise InputError("--input_file is required")
        if not f.output_file:
            raise InputError("--output_file is required")
        if _fs.isdir(f.output_file.rsplit("@", 1)[0]):
            raise InputError(f"--output_file={f.output_file}: is a directory; the records go to a file "
                             "(e.g. <dir>/train.tfrecord, or <dir>/train.tfrecord@N for N shards)")
        order = f.sentence_order
        if f.random_next_sentence:
            if order not in ("official", "nsp"):
                raise InputError(f"--random_next_sentence contradicts --sentence_order={order}")
            order = "nsp"
        config = PretrainingDataConfig(
            max_seq_length=f.max_seq_length, max_predictions_per_seq=f.max_predictions_per_seq,
            random_seed=f.random_seed, dupe_factor=f.dupe_factor, masked_lm_prob=f.masked_lm_prob,
            short_seq_prob=f.short_seq_prob, ngram=f.ngram, do_whole_word_mask=f.do_whole_word_mask,
            do_permutation=f.do_permutation, favor_shorter_ngram=f.favor_shorter_ngram, sentence_order=order,
            short_seq_scope=f.short_seq_scope, do_lower_case=f.do_lower_case, keep_accents=f.keep_accents,
            input_encoding=f.input_encoding, file_is_document_boundary=f.file_is_document_boundary,
            chunk_size_mb=f.chunk_size_mb, shuffle_buffer_size=f.shuffle_buffer_size,
        )
        spec = TokenizerSpec(vocab_file=f.vocab_file, spm_model_file=f.spm_model_file,
                             do_lower_case=f.do_lower_case, keep_accents=f.keep_accents)
        if f.runner:
            if f.num_workers != 1:
                raise InputError("--num_workers is the local pipeline's; with --runner, Beam's options set the "
                                 "workers (e.g. --direct_num_workers=N, Dataflow's --max_num_workers=N)")
            _run_beam(f.input_file, f.output_file, spec, config, f.runner, beam_args, f.metadata_file)
        else:
            if beam_args:
                raise InputError(f"Beam pipeline options ({' '.join(beam_args)}) need --runner=...")
            create_pretraining_data(f.input_file, f.output_file, spec, config, num_workers=f.num_workers,
                                    metadata_file=f.metadata_file)
    except (InputError, ValueError, OSError, KeyError) as e:
        print(f"error: {app.describe(e)}", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> None:
    """Console-script entry point."""
    define_flags()
    app.run(run, HELP, argv=argv, max_args=1 << 16)  # arguments after "--": Beam pipeline options


if __name__ == "__main__":
    main()
