"""albert_train_vocab: a SentencePiece vocabulary with the official ALBERT settings (ids 0-4 = <pad> <unk> [CLS]
[SEP] [MASK]); the library function is :func:`albert_tf.tokenization.train_vocab.train_vocab`.

  albert_train_vocab --input=corpus/ --model_prefix=out/spm --vocab_size=30000
"""

from __future__ import annotations

import json
import sys

from absl import flags, logging

from albert_tf.cli import app as cli_app
from albert_tf.tokenization import train_vocab as library
from albert_tf.tokenization.train_vocab import (
    OFFICIAL_CONTROL_SYMBOLS,
    OFFICIAL_USER_DEFINED_SYMBOLS,
    train_vocab,
)

FLAGS = flags.FLAGS


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
    """The command's flags (idempotent)."""
    if "model_prefix" in fv:
        return
    flags.DEFINE_list(
        "input", None, "Text files or folders of them (recursive); one sentence per line.", flag_values=fv
    )
    flags.DEFINE_string(
        "model_prefix", None, "Output prefix: writes <prefix>.model and <prefix>.vocab.", flag_values=fv
    )
    flags.DEFINE_integer("vocab_size", 30000, "Vocabulary size (official: 30000).", flag_values=fv)
    flags.DEFINE_enum("model_type", "unigram", ["unigram", "bpe", "char", "word"], "Official: unigram.", flag_values=fv)
    flags.DEFINE_float("character_coverage", 0.99995, "Character coverage (official: 0.99995).", flag_values=fv)
    flags.DEFINE_integer(
        "input_sentence_size", 10_000_000, "Sentences sampled for training (official: 1e7).", flag_values=fv
    )
    flags.DEFINE_bool(
        "shuffle_input_sentence", True, "Sample the training sentences at random (official: true).", flag_values=fv
    )
    flags.DEFINE_list(
        "control_symbols", OFFICIAL_CONTROL_SYMBOLS, "Control symbols (ids right after pad/unk).", flag_values=fv
    )
    flags.DEFINE_list(
        "user_defined_symbols", OFFICIAL_USER_DEFINED_SYMBOLS, "Pieces that are never split.", flag_values=fv
    )
    flags.DEFINE_integer("pad_id", 0, "Id of <pad>.", flag_values=fv)
    flags.DEFINE_integer("unk_id", 1, "Id of <unk>.", flag_values=fv)
    flags.DEFINE_integer("bos_id", -1, "Id of <s> (-1: none, official).", flag_values=fv)
    flags.DEFINE_integer("eos_id", -1, "Id of </s> (-1: none, official).", flag_values=fv)
    flags.DEFINE_integer(
        "max_sentence_length", 4192, "Longer lines (bytes) are skipped by SentencePiece; counted.", flag_values=fv
    )
    flags.DEFINE_bool(
        "preprocess", False, "Apply preprocess_text before training (not in the official command).", flag_values=fv
    )
    flags.DEFINE_bool(
        "do_lower_case", True, "With --preprocess: lower-case (and the tokenizer flag for the check).", flag_values=fv
    )
    flags.DEFINE_bool("keep_accents", False, "With --preprocess: keep combining marks.", flag_values=fv)
    flags.DEFINE_integer("num_threads", 1, "SentencePiece trainer threads.", flag_values=fv)
    flags.DEFINE_integer(
        "random_seed", 12345, "Seed of SentencePiece's sampling (reproducible vocabularies).", flag_values=fv
    )


def _main(argv: list[str]) -> None:
    for name in ("input", "model_prefix"):
        if not getattr(FLAGS, name):
            raise ValueError(f"--{name} is required")
    summary = train_vocab(
        inputs=FLAGS.input,
        model_prefix=FLAGS.model_prefix,
        vocab_size=FLAGS.vocab_size,
        model_type=FLAGS.model_type,
        character_coverage=FLAGS.character_coverage,
        input_sentence_size=FLAGS.input_sentence_size,
        shuffle_input_sentence=FLAGS.shuffle_input_sentence,
        control_symbols=FLAGS.control_symbols,
        user_defined_symbols=FLAGS.user_defined_symbols,
        pad_id=FLAGS.pad_id,
        unk_id=FLAGS.unk_id,
        bos_id=FLAGS.bos_id,
        eos_id=FLAGS.eos_id,
        max_sentence_length=FLAGS.max_sentence_length,
        preprocess=FLAGS.preprocess,
        do_lower_case=FLAGS.do_lower_case,
        keep_accents=FLAGS.keep_accents,
        num_threads=FLAGS.num_threads,
        random_seed=FLAGS.random_seed,
        log=lambda line: print(line, file=sys.stderr, flush=True),  # stdout is the JSON summary
    )
    logging.info("trained %s", summary["model"])
    print(json.dumps(summary, ensure_ascii=False, indent=1))


def main(argv: list[str] | None = None) -> None:
    """Console script ``albert_train_vocab``."""
    define_flags()
    cli_app.run(_main, f"{__doc__}\n{library.__doc__}", errors=(ValueError, OSError, RuntimeError), argv=argv)


if __name__ == "__main__":
    main()
