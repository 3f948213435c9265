"""``python -m albert_tf.demo``: the main job on a built-in default (what ``make demo`` runs).

Stages, each a module of this package with ``run(workdir, args) -> dict``:

1. ``table1``: the paper's Table 1 measured from the code.
2. ``pretraining_data``: sample corpus -> SentencePiece vocab -> n-gram MLM + SOP TFRecords.
3. ``pretrain``: a small ALBERT pretrained on those records; MLM/SOP accuracy before and after.
4. ``finetune``: fine-tune on a classification task, export a SavedModel, answer raw text.

A stage whose module is not part of this build is reported and skipped.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

from albert_tf.cli.quiet import quiet_logs, set_cpp_log_level
from albert_tf.demo.summary import print_summary

STAGES = ("table1", "pretraining_data", "pretrain", "finetune")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m albert_tf.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="demo_output", help="where every stage writes (default: demo_output)")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated subset of {','.join(STAGES)}")
    parser.add_argument("--glue_dir", default=None, help="fine-tune on real GLUE data (a folder with MRPC/...)")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--pretrain_steps", type=int, default=0, help="pretraining steps (default: the stage's 600)")
    # absl programs answer --helpfull; so does this one (it has no other flags to list)
    parser.add_argument("--helpfull", action="help", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    set_cpp_log_level()
    quiet_logs()
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        print(f"unknown stage(s) {unknown}; known: {', '.join(STAGES)}", file=sys.stderr)
        return 2
    os.makedirs(args.workdir, exist_ok=True)
    results = {}
    begin = time.time()
    for stage in stages:
        try:
            module = importlib.import_module(f"albert_tf.demo.{stage}")
        except ModuleNotFoundError as e:
            if e.name == f"albert_tf.demo.{stage}":
                print(f"\n== stage {stage}: not part of this build yet, skipped")
                continue
            raise
        print(f"\n== stage {stage}")
        start = time.time()
        results[stage] = module.run(args.workdir, args)
        if isinstance(results[stage], dict):
            args.__dict__[f"{stage}_result"] = results[stage]
        print(f"== stage {stage} done in {time.time() - start:.1f}s")
    print_summary(results, time.time() - begin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
