r"""Train an ALBERT SentencePiece vocabulary with the official ``spm_train`` settings (official ``tokenization.py``).

The official models were built with::

    spm_train --input all.txt --model_prefix=30k-clean --vocab_size=30000 --pad_id=0 --unk_id=1 --eos_id=-1
      --bos_id=-1 --control_symbols=[CLS],[SEP],[MASK] --user_defined_symbols="(,),\",-,.,–,£,€"
      --shuffle_input_sentence=true --input_sentence_size=10000000 --character_coverage=0.99995
      --model_type=unigram

This command uses those values as flag defaults (same flag names), so the ids come out as ``<pad>`` = 0,
``<unk>`` = 1, ``[CLS]`` = 2, ``[SEP]`` = 3, ``[MASK]`` = 4, then the user-defined symbols. Differences from running
``spm_train`` by hand:

* ``--input`` takes files *or folders* (recursively); each file is read as UTF-8, or as ISO-8859-1 when it is not
  valid UTF-8 (reported per file), and blank lines are skipped;
* ``--preprocess`` (off by default, as the official) first applies ``preprocess_text(lower=--do_lower_case,
  keep_accents=--keep_accents)``, so the vocabulary is learned on exactly what ``FullTokenizer`` feeds the model;
* lines longer than ``--max_sentence_length`` bytes (which SentencePiece would drop) are counted and reported;
* the result is loaded with ``FullTokenizer`` and its special ids checked before the command reports success;
* inputs and ``--model_prefix`` may be on any TensorFlow filesystem (``gs://``): inputs are read through
  ``tf.io.gfile``. SentencePiece's trainer can only write local files, so for a ``scheme://`` prefix it trains into
  a local temporary directory (removed afterwards) and the ``.model`` / ``.vocab`` are copied with
  :mod:`albert_tf.files`.

Example::

    python -m albert_tf.tokenization.train_vocab --input=../shared/data/text --model_prefix=out/my-2k \
        --vocab_size=2000 --input_sentence_size=200000
"""

from __future__ import annotations

import collections
import os
import re
import tempfile
from collections.abc import Callable, Iterator

from albert_tf import files as _fs
from albert_tf import interrupts
from albert_tf.progress import Progress

__all__ = ["train_vocab"]

OFFICIAL_CONTROL_SYMBOLS = ["[CLS]", "[SEP]", "[MASK]"]
OFFICIAL_USER_DEFINED_SYMBOLS = ["(", ")", '"', "-", ".", "–", "£", "€"]
EXPECTED_FIRST_PIECES = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]


def train_vocab(
    inputs: list[str | os.PathLike],
    model_prefix: str,
    vocab_size: int = 30000,
    model_type: str = "unigram",
    character_coverage: float = 0.99995,
    input_sentence_size: int = 10_000_000,
    shuffle_input_sentence: bool = True,
    control_symbols: list[str] | None = None,
    user_defined_symbols: list[str] | None = None,
    pad_id: int = 0,
    unk_id: int = 1,
    bos_id: int = -1,
    eos_id: int = -1,
    max_sentence_length: int = 4192,
    preprocess: bool = False,
    do_lower_case: bool = True,
    keep_accents: bool = False,
    num_threads: int = 1,
    random_seed: int | None = 12345,
    log: Callable[[str], None] | None = None,
) -> dict:
    """Train ``<model_prefix>.model`` / ``.vocab``; returns a summary (line counts, encodings, first pieces).
    ``log`` gets a line every few seconds while SentencePiece trains."""
    from albert_tf.tokenization.corpus import corpus_files
    from albert_tf.tokenization.full_tokenizer import FullTokenizer

    if vocab_size < 10:
        raise ValueError(f"--vocab_size must be at least 10, got {vocab_size}")
    files = corpus_files(inputs)  # raises before any work if an input is missing
    model_prefix = os.fspath(model_prefix)
    remote = "://" in model_prefix
    prefix_dir = os.path.dirname(model_prefix) if remote else os.path.dirname(os.path.abspath(model_prefix))
    if _fs.exists(prefix_dir) and not _fs.isdir(prefix_dir):
        raise FileNotFoundError(f"--model_prefix {model_prefix}: {prefix_dir} is a file, not a folder")
    _fs.makedirs(prefix_dir)  # like every other output flag: the folder is created
    control_symbols = OFFICIAL_CONTROL_SYMBOLS if control_symbols is None else control_symbols
    user_defined_symbols = OFFICIAL_USER_DEFINED_SYMBOLS if user_defined_symbols is None else user_defined_symbols

    options = dict(model_type=model_type, character_coverage=character_coverage,
                   input_sentence_size=input_sentence_size, shuffle_input_sentence=shuffle_input_sentence,
                   control_symbols=control_symbols, user_defined_symbols=user_defined_symbols, pad_id=pad_id,
                   unk_id=unk_id, bos_id=bos_id, eos_id=eos_id, max_sentence_length=max_sentence_length,
                   num_threads=num_threads)
    text_options = dict(preprocess=preprocess, do_lower_case=do_lower_case, keep_accents=keep_accents,
                        max_sentence_length=max_sentence_length)
    # SentencePiece writes local files only, and its final names at once: it trains into a scratch folder (beside
    # a local prefix, so that the rename is atomic) in a child process that a Ctrl-C abandons; the checked
    # .model and .vocab are then published under their names, or nothing is.
    scratch_parent = tempfile.gettempdir() if remote else prefix_dir
    with tempfile.TemporaryDirectory(prefix=f".{os.path.basename(model_prefix)}.partial-", dir=scratch_parent) as tmp:
        local_prefix = os.path.join(tmp, os.path.basename(model_prefix))
        interrupts.advise(interrupts.AGAIN)
        interrupts.note("while training the vocabulary")
        progress = Progress("training the vocabulary", log=log)  # SentencePiece reports nothing while it works
        arguments = ([str(f) for f in files], local_prefix, vocab_size, random_seed, text_options, options)
        if any(_fs.is_ram(str(f)) for f in files):  # TensorFlow's in-memory files exist in this process only
            stats, encodings = _train_from_files(*arguments)
        else:
            stats, encodings = interrupts.in_child(_train_from_files, *arguments, tick=progress.tick)
        tok = FullTokenizer(spm_model_file=f"{local_prefix}.model", do_lower_case=do_lower_case)
        first = tok.convert_ids_to_tokens(range(5))
        official_layout = control_symbols == OFFICIAL_CONTROL_SYMBOLS and (pad_id, unk_id) == (0, 1)
        if official_layout and first != EXPECTED_FIRST_PIECES:
            raise RuntimeError(f"{model_prefix}.model: first pieces {first}, expected {EXPECTED_FIRST_PIECES}")
        with interrupts.deferred():
            for suffix in (".vocab", ".model"):  # the .model last: it is what every other command reads
                if remote:
                    _fs.copy(local_prefix + suffix, model_prefix + suffix)
                else:
                    os.replace(local_prefix + suffix, model_prefix + suffix)
    non_utf8 = sorted(f for f, e in encodings.items() if e != "utf-8")
    return {
        "model": f"{model_prefix}.model",
        "vocab_size": tok.vocab_size,
        "first_pieces": first,
        "files": len(files),
        "files_read_as_iso_8859_1": non_utf8,
        **dict(stats),
        "identity": tok.identity(),
    }


def _train_from_files(files: list[str], model_prefix: str, vocab_size: int, random_seed: int | None,
                      text_options: dict, options: dict) -> tuple[dict[str, int], dict[str, str]]:
    """The child process's work (:func:`albert_tf.interrupts.in_child`): read ``files``, train into the local
    ``model_prefix``; returns the line counts and each file's encoding."""
    import sentencepiece as spm

    from albert_tf.tokenization.corpus import decode_text_file, split_lines
    from albert_tf.tokenization.preprocess import preprocess_text

    stats: collections.Counter[str] = collections.Counter()
    encodings: dict[str, str] = {}
    refused: list[ValueError] = []
    max_bytes = text_options["max_sentence_length"]

    def sentences() -> Iterator[str]:
        for f in files:
            text, encoding = decode_text_file(f)
            encodings[f] = encoding
            if "\x00" in text:  # decodes, but no corpus holds NUL characters: a binary file given by mistake
                # (raised after training returns: SentencePiece's C++ loop takes an error here for the end of input)
                refused.append(ValueError(f"{f}: a binary file (a NUL byte at character {text.index(chr(0))}), not "
                                          "text of one sentence per line"))
                return
            for line in split_lines(text):
                if text_options["preprocess"]:
                    line = preprocess_text(line, lower=text_options["do_lower_case"],
                                           keep_accents=text_options["keep_accents"])
                if not line.strip():
                    stats["blank_lines_skipped"] += 1
                    continue
                if len(line.encode("utf-8")) > max_bytes:
                    stats["too_long_lines_skipped_by_sentencepiece"] += 1
                stats["lines"] += 1
                yield line

    if random_seed is not None:
        spm.set_random_generator_seed(random_seed)
    try:
        _train(spm, sentences(), model_prefix, vocab_size, **options)
    except (RuntimeError, ValueError) as e:
        if refused:
            raise refused[0] from None
        shown = _fs.named([str(f) for f in files])
        if isinstance(e, ValueError):  # _train's own message (a vocabulary larger than the corpus allows)
            raise ValueError(f"{shown}: {e}") from None
        if "sentences_.empty()" not in str(e):
            raise
        raise ValueError(f"no text to train on in {shown}: {len(files)} file(s) with {stats['blank_lines_skipped']} "
                         "blank line(s) and no other (expected one sentence per line)") from None
    if refused:
        raise refused[0]
    return dict(stats), encodings


def _train(spm, sentences: Iterator[str], model_prefix: str, vocab_size: int, **options) -> None:
    """``SentencePieceTrainer.train`` into the local ``model_prefix``; a too-large vocab is a one-line error."""
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=sentences, model_prefix=model_prefix, vocab_size=vocab_size, minloglevel=1, **options
        )
    except RuntimeError as e:  # SentencePiece's message names its C++ source line; say what to do instead
        limit = re.search(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)", str(e))
        if limit is None:
            raise
        raise ValueError(f"--vocab_size {limit.group(1)} is more than this corpus supports (at most "
                         f"{limit.group(2)} pieces): lower it or add text") from None

