"""``python -m albert_tf.demo``: the main job on a built-in default (what ``make demo`` runs).

Stages, each a module of this package with ``run(workdir, args) -> dict``:

1. ``table1``: the paper's Table 1 measured from the code.
2. ``pretraining_data``: sample corpus -> SentencePiece vocab -> n-gram MLM + SOP TFRecords.
3. ``pretrain``: a small ALBERT pretrained on those records; MLM/SOP accuracy before and after.
4. ``finetune``: fine-tune on a classification task, export a SavedModel, answer raw text.

A stage whose module is not part of this build is reported and skipped. Run again in the same ``--workdir``, each
finished stage is reused from its record (``stage_records``), and an unfinished one runs again from its start.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import time

from albert_tf.cli.quiet import quiet_logs, set_cpp_log_level
from albert_tf.demo import stage_records
from albert_tf.demo.summary import print_summary

STAGES = ("table1", "pretraining_data", "pretrain", "finetune")
#: The options each stage's output depends on, and the stages whose outputs it reads.
SETTINGS = {"table1": (), "pretraining_data": ("seed",), "pretrain": ("seed", "pretrain_steps"),
            "finetune": ("seed", "glue_dir", "finetune_steps")}
UPSTREAM = {"table1": (), "pretraining_data": (), "pretrain": ("pretraining_data",),
            "finetune": ("pretraining_data", "pretrain")}
#: Folders (under the work dir) of a stage that resumes what an interrupted run of it left (``pretrain``: the
#: trainer's exact resume); they are removed instead when a stage it reads ran again or its settings changed.
RESUMED_DIRS = {"pretrain": ("pretrain", "pretrain_heldout")}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m albert_tf.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="demo_output", help="where every stage writes (default: demo_output)")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated subset of {','.join(STAGES)}")
    parser.add_argument("--glue_dir", default=None, help="fine-tune on real GLUE data (a folder with MRPC/...)")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--pretrain_steps", type=int, default=0, help="pretraining steps (default: the stage's 600)")
    parser.add_argument("--finetune_steps", type=int, default=0,
                        help="fine-tuning steps (default: the stage's 300)")
    # absl programs answer --helpfull; so does this one (it has no other flags to list)
    parser.add_argument("--helpfull", action="help", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def stage_settings(args: argparse.Namespace, stage: str, stages: list[str]) -> dict:
    """What a stage's record must match to be reused: its options and which of its upstream stages ran."""
    values = {name: getattr(args, name) for name in SETTINGS[stage]}
    if values.get("glue_dir"):
        values["glue_dir"] = os.path.abspath(values["glue_dir"])
    return {**values, "upstream": [s for s in UPSTREAM[stage] if s in stages]}


def main(argv=None) -> int:
    """The demo; a wrong ``--workdir`` or ``--glue_dir`` (or data in it) is one ``error:`` line and exit 2."""
    from albert_tf.cli.app import common_errors, describe
    from albert_tf.cli.flags import expected_errors
    from albert_tf.data.glue import GlueDataError

    try:
        return _main(argv)
    except (*expected_errors(GlueDataError), *common_errors()) as e:  # the types, asked after the failure
        print(f"error: {describe(e)}", file=sys.stderr)
        return 2


def _main(argv=None) -> int:
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
    ran_again: set[str] = set()  # stages that ran in this invocation (not reused from a record)
    begin = time.time()
    for stage in stages:
        try:
            module = importlib.import_module(f"albert_tf.demo.{stage}")
        except ModuleNotFoundError as e:
            if e.name == f"albert_tf.demo.{stage}":
                print(f"\n== stage {stage}: not part of this build yet, skipped")
                continue
            raise
        settings = stage_settings(args, stage, stages)
        upstream_ran = [s for s in UPSTREAM[stage] if s in ran_again]
        earlier = os.path.exists(stage_records.record_path(args.workdir, stage))  # finished, maybe otherwise
        record = None if upstream_ran else stage_records.load(args.workdir, stage, settings)
        if record is not None:
            print(f"\n== stage {stage}: finished by an earlier run ({record.get('finished')}, "
                  f"{record.get('seconds')}s); its recorded output:")
            print(record.get("lines", "").rstrip("\n"))
            results[stage] = record["result"]
        else:
            stage_records.forget(args.workdir, stage)
            if upstream_ran or earlier:  # resume only the same stage stopped half-way on the same inputs
                for name in RESUMED_DIRS.get(stage, ()):
                    if os.path.isdir(os.path.join(args.workdir, name)):
                        shutil.rmtree(os.path.join(args.workdir, name))
            print(f"\n== stage {stage}")
            start = time.time()
            with stage_records.captured_stdout() as lines:
                results[stage] = module.run(args.workdir, args)
            seconds = time.time() - start
            stage_records.save(args.workdir, stage, settings, results[stage], lines.getvalue(), seconds)
            ran_again.add(stage)
            print(f"== stage {stage} done in {seconds:.1f}s")
        if isinstance(results[stage], dict):
            args.__dict__[f"{stage}_result"] = results[stage]
    print_summary(results, time.time() - begin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
