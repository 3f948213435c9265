"""``python -m albert_tf.reproduce``: run the reproduction's experiments and render REPRODUCTION.md.

Tables (the paper's numbers beside ours, each finding checked from the numbers):

* Table 1: parameter counts of the released configurations, measured by building them.
* Table 5: no sentence loss vs NSP vs SOP at one model size and step count: held-out MLM, SOP and NSP accuracy
  (with the majority-class baselines of the held-out records) and a GLUE fine-tuning (SST-2 dev accuracy).
* Table 4: all-shared / shared-attention / shared-FFN / not-shared at E = 128: parameters and held-out MLM.
* Table 3: E = 64 / 128 / 256 for the all-shared model: parameters and held-out MLM.
* Static vs dynamic masks (where the budget has ``masking_steps``): held-out MLM at equal steps on records that
  come round several times.

Every row is run with the budget's number of seeds; tables show mean ± standard error, and each finding is called
by one stated rule (``albert_tf.reproduce.stats``: reproduced beyond 2 standard errors of the difference).

The report goes to ``<workdir>/REPRODUCTION.md`` unless ``--output`` names another file: the checked-in
``REPRODUCTION.md`` is replaced only by ``--output=REPRODUCTION.md``.

Resumable: every finished run leaves a complete ``metrics.json`` in ``<workdir>/runs/<run>/`` and is not repeated
when the command runs again; an unfinished run starts again from scratch. ``--render_only`` reads the saved
results JSON (``<output dir>/reproduction/results.json``, else ``<workdir>/results.json``) and runs nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

from albert_tf import files as _fs

DEFAULT_SHARED = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "..",
                              "shared", "data")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from albert_tf.reproduce.budgets import BUDGETS

    parser = argparse.ArgumentParser(prog="python -m albert_tf.reproduce", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    lines = [f"{name}: {b.estimate}" for name, b in BUDGETS.items()]
    parser.add_argument("--budget", default="small", choices=list(BUDGETS), help="; ".join(lines))
    parser.add_argument("--workdir", default="reproduce_output", help="data, runs and results.json")
    parser.add_argument("--output", default=None, help="the report (plots go to its folder's reproduction/ "
                        "sub-folder); default <workdir>/REPRODUCTION.md. The checked-in report is replaced only when "
                        "named: --output=REPRODUCTION.md")
    parser.add_argument("--shared_data", default=os.environ.get("ALBERT_TF_SHARED_DATA", DEFAULT_SHARED),
                        help="the folder with text/, spm/30k-clean.model and glue/ (default: ../shared/data beside "
                        "the checkout, or $ALBERT_TF_SHARED_DATA)")
    parser.add_argument("--render_only", action="store_true", help="regenerate the report from the saved JSON")
    parser.add_argument("--reuse_results", default="", metavar="JSON",
                        help="an earlier run's results JSON (e.g. reproduction/results.json): its complete runs "
                        "that this budget would repeat unchanged are taken instead of run again (a longer Table 5 "
                        "keeps Tables 3 and 4); the report names them and their date")
    args = parser.parse_args(argv)
    if args.output is None:  # a run writes under its own work dir: never over the shipped report by default
        args.output = os.path.join(args.workdir, "REPRODUCTION.md")
    return args


def machine() -> dict:
    """What ran the experiments, in words, and when."""
    import tensorflow as tf

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    gpus = [d.name for d in tf.config.list_physical_devices("GPU")]
    device = f"{len(gpus)} GPU(s)" if gpus else "CPU only"
    from albert_tf.reproduce.experiments import today

    return {
        "date": today(),
        "description": f"{cpu}, {os.cpu_count()} cores, {device}, TensorFlow {tf.__version__}, Python "
                       f"{platform.python_version()}",
    }


def _public(data: dict) -> dict:
    """``data.json`` without paths of this machine (the results JSON may be checked in)."""
    return {k: v for k, v in data.items() if k not in ("records", "spm_model_file", "glue_dir")}


def _load_results(path: str, source: str = "--reuse_results=") -> dict:
    """A results JSON (``--reuse_results``, or the one ``--render_only`` renders), or a one-line ``SystemExit``
    naming the file (after ``source``) and the fault."""
    try:
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
    except OSError as e:
        raise SystemExit(f"error: {source}{path}: cannot read it ({e.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SystemExit(f"error: {source}{path}: not a results JSON, or one cut short ({e})") from None
    if not isinstance(results, dict) or not isinstance(results.get("pretraining"), dict):
        raise SystemExit(f"error: {source}{path}: expected the results JSON of python -m albert_tf.reproduce "
                         "(an object with a 'pretraining' object)")
    return results


def run(args: argparse.Namespace) -> dict:
    from albert_tf.reproduce.budgets import get_budget
    from albert_tf.reproduce.data import prepare_data
    from albert_tf.reproduce.experiments import run_all

    budget = get_budget(args.budget)
    if not os.path.isdir(os.path.join(args.shared_data, "text")):
        raise SystemExit(f"error: no text/ under --shared_data={args.shared_data}")
    earlier = _load_results(args.reuse_results) if args.reuse_results else None  # a bad file fails before any work
    os.makedirs(args.workdir, exist_ok=True)
    log = lambda line: print(line, file=sys.stderr, flush=True)
    data = prepare_data(budget, args.shared_data, args.workdir, log=log)
    if earlier is not None:
        from albert_tf.reproduce.experiments import reuse_results

        source = f"{os.path.basename(args.reuse_results)} of {earlier.get('machine', {}).get('date', 'an earlier run')}"
        reuse_results(earlier, budget, args.workdir, source, log=log)
    runs = run_all(budget, data, args.workdir, log=log)
    made_now = [m for part in ("pretraining", "finetuning") for m in runs[part].values() if "reused_from" not in m]
    seconds = data.get("seconds", 0) + sum(m.get("seconds", 0) for m in made_now)
    reused = {name: m["reused_from"] for name, m in runs["pretraining"].items() if "reused_from" in m}
    results = {"budget": budget.fields(), "data": _public(data), "machine": machine(),
               "seconds": seconds, "reused": reused, **runs}
    _fs.write_text_atomic(os.path.join(args.workdir, "results.json"), json.dumps(results, indent=1, sort_keys=True))
    return results


def main(argv: list[str] | None = None) -> int:
    """The command; a file or folder it cannot read or write is one ``error:`` line and exit 2."""
    from albert_tf.cli.app import describe

    try:
        return _main(argv)
    except OSError as e:
        print(f"error: {describe(e)}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from albert_tf.reproduce.report import ASSETS_DIR, render

    start = time.time()
    if args.render_only:
        candidates = [os.path.join(os.path.dirname(os.path.abspath(args.output)), ASSETS_DIR, "results.json"),
                      os.path.join(args.workdir, "results.json")]
        found = [p for p in candidates if os.path.exists(p)]
        if not found:
            print(f"error: no saved results ({' or '.join(candidates)}); run without --render_only first",
                  file=sys.stderr)
            return 1
        results = _load_results(found[0], source="")
        try:
            render(results, args.output)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:  # a results file of another shape
            what = f"no {e.args[0]!r}" if isinstance(e, KeyError) else str(e).splitlines()[0]
            print(f"error: {found[0]}: not the results this version renders ({what}); run without --render_only "
                  "to make them again", file=sys.stderr)
            return 2
    else:
        render(run(args), args.output)
    print(f"wrote {args.output} in {time.time() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
