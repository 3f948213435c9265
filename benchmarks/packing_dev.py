"""Packed against unpacked fine-tuning on real SST-2: dev accuracy of a small model, over seeds.

``run_classifier``'s GLUE task with ``--packing=first_fit`` and ``--packing=none``, the same seeds, the same
examples per step (the first ``--train_examples`` rows of ``<shared data>/glue/SST-2/train.tsv``, the whole dev
set, or its first ``--dev_examples`` rows). Two starts:

* from scratch (default): 2 layers, H 64, E 32, learning rate 1e-3. A model this small either leaves the loss
  plateau of the majority class or stays on it, and small perturbations decide which, so seeds spread widely;
* from pretrained weights (``--init_checkpoint`` with ``--albert_config_file``, e.g. the Hugging Face folder that
  ``finetune_parity.py --prepare_only`` makes): ``finetune_parity.py``'s settings (AdamW, learning rate 1e-4,
  10% warm-up), so the comparison is between two runs that both learn.

Encoder dropout is ``--dropout`` in both (its masks follow the layout, so the two runs of one seed draw different
masks); the classifier's is 0.1. Prints one JSON object: every run's dev accuracy and training time, each mode's
mean and standard error over seeds, and the packed-minus-unpacked difference of the means with its standard error.
Smoke run: ``--steps 20 --seeds 1``; the test suite's: ``--steps 4 --seeds 2 --train_examples 256 --dev_examples 64``
(figures that mean nothing: it checks the script end to end).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import emit, machine_info, shared_data_dir  # noqa: E402

MODES = ("first_fit", "none")


def _se(values: list[float]) -> float | None:
    return statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else None


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000, help="training steps of every run")
    parser.add_argument("--seeds", type=int, default=3, help="seeds first_seed ... first_seed + n - 1 for each mode")
    parser.add_argument("--first_seed", type=int, default=0, help="the first seed")
    parser.add_argument("--train_examples", type=int, default=32000, help="first rows of train.tsv")
    parser.add_argument("--dev_examples", type=int, default=0,
                        help="first rows of dev.tsv scored (0: the whole dev set, the measurement's; a few for a smoke "
                             "run)")
    parser.add_argument("--dropout", type=float, default=0.1, help="encoder hidden and attention dropout")
    parser.add_argument("--init_checkpoint", default="",
                        help="pretrained weights (a checkpoint, a Hugging Face folder or a preset name)")
    parser.add_argument("--albert_config_file", default="", help="the model config of --init_checkpoint")
    parser.add_argument("--output", default="", help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.dev_examples < 0:
        parser.error("--dev_examples must be >= 0")
    if bool(args.init_checkpoint) != bool(args.albert_config_file):
        parser.error("--init_checkpoint and --albert_config_file go together")
    from albert_tf.tasks import glue
    from albert_tf.tasks.glue.task import run as run_glue

    shared = shared_data_dir()
    runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="packing_dev_") as work:
        data = pathlib.Path(work, "SST-2")
        data.mkdir()
        for split, rows in (("train.tsv", args.train_examples), ("dev.tsv", args.dev_examples or None)):
            lines = (shared / "glue" / "SST-2" / split).read_text(encoding="utf-8").splitlines(keepends=True)
            (data / split).write_text("".join(lines if rows is None else lines[: rows + 1]), encoding="utf-8")
        config = pathlib.Path(work, "albert_config.json")
        if args.init_checkpoint:
            model = json.loads(pathlib.Path(args.albert_config_file).read_text(encoding="utf-8"))
            settings = dict(optimizer="adamw", learning_rate=1e-4, classifier_dropout=0.1)
        else:
            model = {"vocab_size": 30000, "embedding_size": 32, "hidden_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "intermediate_size": 128, "max_position_embeddings": 128,
                     "type_vocab_size": 2}
            settings = dict(learning_rate=1e-3)
        model.update(hidden_dropout_prob=args.dropout, attention_probs_dropout_prob=args.dropout)
        config.write_text(json.dumps(model))
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for mode in MODES:
                start = time.time()
                with contextlib.redirect_stdout(sys.stderr):  # the runner's progress lines: stdout holds the JSON
                    summary = run_glue(glue.make_config(
                        task_name="SST-2", data_dir=str(data), output_dir=os.path.join(work, f"{mode}_{seed}"),
                        spm_model_file=str(shared / "spm" / "30k-clean.model"), albert_config_file=str(config),
                        max_seq_length=128, do_train=True, do_eval=True, num_train_steps=args.steps,
                        train_batch_size=32, eval_batch_size=64, num_warmup_steps=args.steps // 10,
                        steps_per_loop=max(1, args.steps // 4), save_checkpoints_steps=args.steps, seed=seed,
                        packing=mode, init_checkpoint=args.init_checkpoint or None, **settings,
                    ))
                runs[mode].append({"seed": seed, "dev_accuracy": round(summary["best"]["accuracy"], 4),
                                   "seconds": round(time.time() - start, 1)})
    out: dict = {"benchmark": "packing_dev_sst-2", "start": "pretrained" if args.init_checkpoint else "scratch",
                 "steps": args.steps, "seeds": args.seeds, "train_examples": args.train_examples,
                 **({"dev_examples": args.dev_examples} if args.dev_examples else {}),
                 "encoder_dropout": args.dropout, "settings": settings, "runs": runs, "machine": machine_info()}
    for mode in MODES:
        values = [r["dev_accuracy"] for r in runs[mode]]
        out[f"{mode}_mean"] = round(statistics.mean(values), 4)
        out[f"{mode}_se"] = None if _se(values) is None else round(_se(values), 4)
    diff = [a["dev_accuracy"] - b["dev_accuracy"] for a, b in zip(runs["first_fit"], runs["none"])]
    out["packed_minus_unpacked"] = round(statistics.mean(diff), 4)
    out["packed_minus_unpacked_se"] = None if _se(diff) is None else round(_se(diff), 4)
    return emit(out, args.output)


if __name__ == "__main__":
    main()
