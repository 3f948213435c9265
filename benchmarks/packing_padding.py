"""How much of the computed work is padding, per batching method, on real GLUE, SQuAD and RACE features.

Counts token positions, not time: a method's ``padding_fraction`` is the share of the positions it computes (rows x
padded row length, summed over the batches of one epoch) that hold no real token. The sequence lengths are those of
albert-tf's own features (the official preprocessing): GLUE SST-2 and MRPC at ``max_seq_length`` 128, SQuAD 2.0
windows at 384 (stride 128, query 64; a 2.0 dev subset), RACE at 512 (each question's four choices are four
sequences, and a batch holds ``--batch`` sequences: 8 questions at 32; the shared RACE sample is small), WNUT 2017's
tagging windows at 128 (``albert_tf.data.tagging.sentence_windows``: each word's pieces, ``[CLS]`` and ``[SEP]``).
Batches are random draws of ``--batch`` sequences (seeded), as in training. Methods:

* ``fixed``: every row padded to ``max_seq_length`` (the official code; keras-hub's preprocessors).
* ``bucketed``: albert-tf ``--packing=none``: each batch cut to its longest sequence rounded up to the next of
  ``--bucket_lengths``.
* ``dynamic``: transformers' ``DataCollatorWithPadding``: each batch padded to its longest sequence.
* ``grouped``: transformers' ``group_by_length`` (``LengthGroupedSampler``: random mega-batches of
  ``min(n // (4 * batch), 50)`` batches sorted by length), then dynamic padding. It changes which examples train
  together.
* ``packed``: albert-tf ``--packing=first_fit``: each batch packed first-fit decreasing into rows of
  ``max_seq_length`` (``albert_tf.data.packing``), rows rounded up to a multiple of ``batch // 16`` and the row
  length to the next bucket, as ``GlueTask`` does.

Prints one JSON object; ``packed_over_bucketed`` is the ratio of computed positions (bucketed / packed: > 1 means
packing computes fewer). Smoke run: ``python benchmarks/packing_padding.py --examples 64``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import emit, shared_data_dir  # noqa: E402

METHODS = ("fixed", "bucketed", "dynamic", "grouped", "packed")


def glue_lengths(task: str, data_dir: str, tokenizer, max_seq_length: int, n: int) -> list[int]:
    from albert_tf.data import glue
    from albert_tf.data.glue.features import convert_example

    processor = glue.get_processor(task)
    examples = processor.get_examples(data_dir, glue.TRAIN)[:n]
    return [sum(convert_example(e, processor, max_seq_length, tokenizer).input_mask) for e in examples]


def squad_lengths(path: str, tokenizer, n: int) -> list[int]:
    from albert_tf.data.squad.features import convert_examples_to_features
    from albert_tf.data.squad.reader import read_squad_examples

    examples = read_squad_examples(path, is_training=False, version_2_with_negative=True)[:n]
    features, _ = convert_examples_to_features(examples, tokenizer, 384, 128, 64, is_training=False)
    return [sum(f.input_mask) for f in features]


def race_lengths(data_dir: str, tokenizer, n: int) -> list[int]:
    from albert_tf.data.race.features import convert_examples
    from albert_tf.data.race.reader import read_race_examples

    examples = (read_race_examples(data_dir, "train") + read_race_examples(data_dir, "dev"))[: max(1, n // 4)]
    lengths = []
    for feature in convert_examples(examples, tokenizer, 512, 128):
        mask = list(feature.input_mask)
        per_choice = len(mask) // 4
        lengths += [sum(mask[k * per_choice : (k + 1) * per_choice]) for k in range(4)]
    return lengths


def tagging_lengths(path: str, tokenizer, max_seq_length: int, n: int) -> list[int]:
    from albert_tf.data.tagging import read_conll, sentence_windows

    windows = (w for s in read_conll(path) for w in sentence_windows(tokenizer, s.words, None, max_seq_length))
    return [len(w.input_ids) for _, w in zip(range(n), windows)]


def _bucket(n: int, boundaries: tuple[int, ...]) -> int:
    return next(b for b in boundaries if b >= n)


def computed_positions(lengths: list[int], method: str, batch: int, max_seq_length: int,
                       boundaries: tuple[int, ...], seed: int) -> tuple[int, int]:
    """(rows x padded length, real tokens) summed over one epoch of ``lengths`` in whole batches of ``batch`` under
    ``method``."""
    from albert_tf.data.packing import packed_rows, row_multiple

    order = list(range(len(lengths)))
    random.Random(seed).shuffle(order)
    if method == "grouped":
        mega = min(len(lengths) // (4 * batch), 50) or 1
        chunks = [order[i : i + mega * batch] for i in range(0, len(order), mega * batch)]
        order = [i for chunk in chunks for i in sorted(chunk, key=lambda j: -lengths[j])]
    total = real = 0
    for start in range(0, len(order) - batch + 1, batch):
        group = [lengths[i] for i in order[start : start + batch]]
        real += sum(group)
        if method == "fixed":
            total += batch * max_seq_length
        elif method == "bucketed":
            total += batch * _bucket(max(group), boundaries)
        elif method in ("dynamic", "grouped"):
            total += batch * max(group)
        else:
            fills = packed_rows(group, max_seq_length)
            multiple = row_multiple(batch)
            rows = -(-len(fills) // multiple) * multiple
            total += rows * _bucket(max(fills), boundaries)
    return total, real


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=4096, help="sequences per task (first rows / windows)")
    parser.add_argument("--batch", type=int, default=32, help="sequences per batch")
    parser.add_argument("--seed", type=int, default=0, help="batch draw seed")
    parser.add_argument("--output", default="", help="also write the JSON here")
    args = parser.parse_args(argv)
    from albert_tf.data.batching import DEFAULT_BUCKET_LENGTHS, bucket_boundaries
    from albert_tf.data.packing import padding_fraction
    from albert_tf.tokenization import FullTokenizer

    shared = shared_data_dir()
    tokenizer = FullTokenizer(do_lower_case=True, spm_model_file=str(shared / "spm" / "30k-clean.model"))
    tasks = {
        "sst-2": (128, args.batch, lambda: glue_lengths("sst-2", str(shared / "glue" / "SST-2"), tokenizer, 128,
                                                         args.examples)),
        "mrpc": (128, args.batch, lambda: glue_lengths("mrpc", str(shared / "glue" / "MRPC"), tokenizer, 128,
                                                        args.examples)),
        "squad_v2": (384, args.batch, lambda: squad_lengths(str(shared / "squad" / "dev-v2.0-subset-a.json"), tokenizer,
                                                            args.examples)),
        "race": (512, args.batch, lambda: race_lengths(str(shared / "race"), tokenizer, args.examples)),
        "wnut17": (128, args.batch, lambda: tagging_lengths(str(shared / "ner" / "wnut17" / "wnut17train.conll"),
                                                            tokenizer, 128, args.examples)),
    }
    out: dict = {"benchmark": "packing_padding", "batch": args.batch, "seed": args.seed, "tasks": {}}
    for name, (max_seq_length, batch, read) in tasks.items():
        if not os.path.exists(shared):
            break
        lengths = read()
        if len(lengths) < batch:
            out["tasks"][name] = {"skipped": f"{len(lengths)} sequences, fewer than a batch of {batch}"}
            continue
        boundaries = bucket_boundaries(DEFAULT_BUCKET_LENGTHS, max_seq_length)
        row: dict = {"max_seq_length": max_seq_length, "sequences": len(lengths),
                     "mean_length": round(sum(lengths) / len(lengths), 1), "max_length": max(lengths)}
        for method in METHODS:
            computed, real = computed_positions(lengths, method, batch, max_seq_length, boundaries, args.seed)
            row[method] = {"computed_positions": computed,
                           "padding_fraction": round(padding_fraction(real, computed), 3)}
        row["packed_over_bucketed"] = round(row["bucketed"]["computed_positions"]
                                            / row["packed"]["computed_positions"], 3)
        row["packed_over_dynamic"] = round(row["dynamic"]["computed_positions"]
                                           / row["packed"]["computed_positions"], 3)
        out["tasks"][name] = row
    return emit(out, args.output)


if __name__ == "__main__":
    main()
