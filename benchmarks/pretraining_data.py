"""Benchmark of create_pretraining_data: throughput and peak memory, with the official design side by side.

Prints one JSON object. Measured in fresh subprocesses (peak memory = the largest sum of PSS over the process tree,
sampled every 20 ms):

* ``official``: the official single-process, fully in-memory algorithm (re-stated in
  ``tests/test_pretraining_data_official.py``; per-line tokenization, per-piece start-piece tests,
  ``tf.train.Example`` protos) on the first ``--official_mb`` MB of the corpus, and on twice that to show its
  memory growing with the corpus;
* ``ours_subset``: this project with ``--num_workers 1`` on the same subset and flags (the per-worker ratio);
* ``ours``: the real corpus (../shared/data/text via data/prepare_text) and the corpus repeated 4 times
  (concatenated in a temp dir), ``--num_workers`` 1 and 2;
* ``beam_direct``: the same 1x corpus and flags through the Apache Beam executor on the DirectRunner, in memory
  (one worker) and multi-process (``--direct_num_workers`` 2), with ``beam_over_ours_*`` ratios (needs
  ``pip install 'albert-tf[beam]'``; skipped with a note otherwise, or with ``--skip_beam``). On one machine it is
  expected to be slower than the local pipeline (Beam's own per-element overhead, a shuffle through the runner and
  a keyed sort per shard): the figure is for honesty, not a target. Its records are the local run's (multiset).

``seconds`` exclude interpreter start-up and imports (the official imports TensorFlow before its clock starts; ours
does not import TensorFlow at all on local paths: its records are framed with google-crc32c); ``process_seconds``
is the whole subprocess, start-up included, and ``speedup_process_*`` compares those, so the speed-up is also shown
with every start-up cost counted, at ``--dupe_factor`` 1, 10 and 40.

The shuffle buffer is set below the 1x corpus' instance count (``--shuffle_buffer_size``), so that the 1x run
already reaches the steady state whose memory must not grow with the corpus.

    python benchmarks/pretraining_data.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import machine_info  # noqa: E402

RUN_OURS = """
import json, sys, time
from albert_tf.data.pretraining import PretrainingDataConfig, TokenizerSpec, create_pretraining_data
a = json.loads(sys.argv[1])
t = time.perf_counter()
s = create_pretraining_data([a["input"]], a["output"] + "@2", TokenizerSpec(spm_model_file=a["spm"]),
                            PretrainingDataConfig(**a["config"]), num_workers=a["workers"], log=None)
assert "tensorflow" not in sys.modules, "a local run must not import TensorFlow"
print("RESULT " + json.dumps({"instances": s["counts"]["instances"], "seconds": time.perf_counter() - t}))
"""

_RUN_BEAM = """
import json, sys, time
from albert_tf.data.pretraining import PretrainingDataConfig, TokenizerSpec
from albert_tf.data.pretraining.beam import create_pretraining_data_beam
a = json.loads(sys.argv[1])
import tensorflow  # imported before the clock starts, as for the other runs
t = time.perf_counter()
s = create_pretraining_data_beam([a["input"]], a["output"] + "@2", TokenizerSpec(spm_model_file=a["spm"]),
                                 PretrainingDataConfig(**a["config"]), options=a["options"], log=None)
print("RESULT " + json.dumps({"instances": s["counts"]["instances"], "seconds": time.perf_counter() - t}))
"""

_RUN_OFFICIAL = """
import json, sys, time
sys.path.insert(0, sys.argv[2])
from test_pretraining_data_official import OfficialFlags, OfficialReference
from albert_tf.data.pretraining import TokenizerSpec
a = json.loads(sys.argv[1])
tok = TokenizerSpec(spm_model_file=a["spm"]).build()
import tensorflow  # imported up front, as the official script does
t = time.perf_counter()
flags = OfficialFlags(spm_model_file=a["spm"], **a["config"])
n = OfficialReference(flags, tok).run([a["input"]], [a["output"] + "-0", a["output"] + "-1"], ngram_seed=0)
print("RESULT " + json.dumps({"instances": n, "seconds": time.perf_counter() - t}))
"""


#: the official-vs-ours comparisons of ``_speedup_columns`` (``--speedup_settings``)
SPEEDUP_SETTINGS = ("dupe1", "dupe10", "dupe40")


def _tree_rss_kb(pid: int) -> int:
    """Sum of PSS (proportional set size; VmRSS where smaps_rollup is missing) over ``pid`` and its descendants.

    PSS rather than RSS: a worker being spawned is briefly a fork of the main process, and RSS would count the
    pages they share twice."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except (OSError, IndexError):
            continue
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        for path, key in ((f"/proc/{p}/smaps_rollup", "Pss:"), (f"/proc/{p}/status", "VmRSS:")):
            try:
                with open(path) as f:
                    value = next((int(line.split()[1]) for line in f if line.startswith(key)), None)
            except OSError:
                value = None
            if value is not None:
                total += value
                break
        stack.extend(children.get(p, []))
    return total


def measure(code: str, args: dict, extra: list[str] | None = None) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, json.dumps(args), *(extra or [])], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss_kb(proc.pid))
        time.sleep(0.02)
    out, err = proc.communicate()
    process_seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark run failed:\n{err[-3000:]}")
    result = json.loads([line for line in out.splitlines() if line.startswith("RESULT ")][-1][7:])
    result["process_seconds"] = round(process_seconds, 3)
    result["peak_pss_mb"] = round(peak / 1024, 1)
    result["instances_per_s"] = round(result["instances"] / result["seconds"], 1)
    return result


def _median(runs: list[dict]) -> dict:
    out = {k: statistics.median(r[k] for r in runs)
           for k in ("seconds", "process_seconds", "instances_per_s", "peak_pss_mb")}
    out["instances"] = runs[0]["instances"]
    out["runs"] = len(runs)
    return out


def _head_documents(src: str, dst: str, max_bytes: int, at_blank_line: bool = True) -> None:
    """The first lines of ``src`` up to about ``max_bytes``, cut at a blank line (or at any line)."""
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as g:
        size = 0
        for line in f:
            g.write(line)
            size += len(line.encode())
            if size >= max_bytes and (not at_blank_line or not line.strip()):
                break


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--text_dir", default=os.path.join(ROOT, "..", "shared", "data", "text"))
    p.add_argument("--spm_model_file", default=os.path.join(ROOT, "..", "shared", "data", "spm", "30k-clean.model"))
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--dupe_factor", type=int, default=1)
    p.add_argument("--shuffle_buffer_size", type=int, default=10_000)
    p.add_argument("--official_mb", type=float, default=1.5)
    p.add_argument("--repeats", type=int, default=3, help="runs per setting on the subset (median reported)")
    p.add_argument("--full_repeats", type=int, default=1, help="runs per setting on the 1x corpus")
    p.add_argument("--skip_4x", action="store_true")
    p.add_argument("--speedup_settings", default=",".join(SPEEDUP_SETTINGS),
                   help="comma list of the official-vs-ours comparisons to run: dupe1 (the --official_mb subset at "
                        "--dupe_factor), dupe10 (a quarter of it at 10), dupe40 (a sixteenth at 40); default all")
    p.add_argument("--only_speedup", action="store_true", help="only the official-vs-ours comparison")
    p.add_argument("--skip_beam", action="store_true", help="no Apache Beam DirectRunner column")
    p.add_argument("--only_beam", action="store_true",
                   help="only the 1x corpus: ours (1 and 2 workers) and the Beam DirectRunner column")
    a = p.parse_args()
    a.speedup_settings = [x.strip() for x in a.speedup_settings.split(",") if x.strip()]
    unknown = sorted(set(a.speedup_settings) - set(SPEEDUP_SETTINGS))
    if unknown or not a.speedup_settings:
        p.error(f"--speedup_settings: unknown {', '.join(unknown) or '(none given)'}; choose from "
                f"{', '.join(SPEEDUP_SETTINGS)}")

    import glob

    from albert_tf.data.prepare_text import prepare_files

    tmp = tempfile.mkdtemp(prefix="albert_pd_bench_")
    corpus = os.path.join(tmp, "corpus_1x.txt")
    files = sorted(glob.glob(os.path.join(a.text_dir, "*", "*.txt")))
    prep = prepare_files(files, corpus, encodings=("utf-8", "iso-8859-1"))
    corpus4 = os.path.join(tmp, "corpus_4x.txt")
    with open(corpus, encoding="utf-8") as f:
        text = f.read()
    with open(corpus4, "w", encoding="utf-8") as f:
        f.write("\n".join([text] * 4))
    subset = os.path.join(tmp, "subset.txt")
    subset2 = os.path.join(tmp, "subset2.txt")
    _head_documents(corpus, subset, int(a.official_mb * 1e6))
    _head_documents(corpus, subset2, int(2 * a.official_mb * 1e6))

    cfg = {"max_seq_length": a.max_seq_length, "dupe_factor": a.dupe_factor}
    ours_cfg = {**cfg, "shuffle_buffer_size": a.shuffle_buffer_size}
    out = os.path.join(tmp, "out")
    report: dict = {
        "setup": {"max_seq_length": a.max_seq_length, "dupe_factor": a.dupe_factor,
                  "shuffle_buffer_size": a.shuffle_buffer_size, "chunk_size_mb": 1.0, "repeats": a.repeats,
                  "full_repeats": a.full_repeats,
                  "corpus_1x_bytes": os.path.getsize(corpus), "corpus_documents": prep["documents"],
                  "subset_bytes": os.path.getsize(subset), "machine": machine_info(),
                  "subset_small_bytes_dupe10": None,
                  "note": "shared 2-core machine: absolute numbers vary with load; ratios are from the same run"},
    }
    if not a.only_beam:
        _speedup_columns(report, a, cfg, corpus, subset, out, tmp)
    if a.only_speedup:
        print(json.dumps(report, indent=2))
        return
    if not a.only_beam:
        report["official_subset_x2_dupe1"] = measure(_RUN_OFFICIAL, {"input": subset2, "output": out,
                                                                "spm": a.spm_model_file, "config": cfg},
                                                      [os.path.join(ROOT, "tests")])
    for workers in (1, 2):
        r1 = _median([measure(RUN_OURS, {"input": corpus, "output": out, "spm": a.spm_model_file,
                                           "config": ours_cfg, "workers": workers}) for _ in range(a.full_repeats)])
        report[f"ours_1x_w{workers}"] = r1
        if not a.skip_4x and not a.only_beam:
            r4 = measure(RUN_OURS, {"input": corpus4, "output": out, "spm": a.spm_model_file, "config": ours_cfg,
                                      "workers": workers})
            report[f"ours_4x_w{workers}"] = r4
            report[f"pss_4x_over_1x_w{workers}"] = round(r4["peak_pss_mb"] / r1["peak_pss_mb"], 3)
    report["per_worker_instances_per_s_w2"] = round(report["ours_1x_w2"]["instances_per_s"] / 2, 1)
    if not a.skip_beam:
        _beam_columns(report, a, corpus, out, ours_cfg)
    print(json.dumps(report, indent=2))


def _speedup_columns(report: dict, a: argparse.Namespace, cfg: dict, corpus: str, subset: str, out: str,
                     tmp: str) -> None:
    """Per-worker speed-up, official vs ours on the same text and flags (``*_subset_dupe{1,10}`` keys)."""
    tests_dir = os.path.join(ROOT, "tests")
    # Per-worker speed-up, official vs ours on the same text and flags, runs interleaved so that load on the
    # shared machine hits both sides alike: dupe_factor 1 (tokenization weighs most) and 10 (per-instance work).
    small = os.path.join(tmp, "subset_small.txt")
    _head_documents(corpus, small, int(a.official_mb * 1e6 / 4), at_blank_line=False)
    tiny = os.path.join(tmp, "subset_tiny.txt")
    _head_documents(corpus, tiny, int(a.official_mb * 1e6 / 16), at_blank_line=False)
    report["setup"]["subset_tiny_bytes_dupe40"] = os.path.getsize(tiny)
    for name, text_file, dupe in (("dupe1", subset, a.dupe_factor), ("dupe10", small, 10), ("dupe40", tiny, 40)):
        if name not in a.speedup_settings:
            continue
        c = {**cfg, "dupe_factor": dupe}
        off, ours_sub = [], []
        for _ in range(a.repeats):
            off.append(measure(_RUN_OFFICIAL, {"input": text_file, "output": out, "spm": a.spm_model_file,
                                                "config": c}, [tests_dir]))
            ours_sub.append(measure(RUN_OURS, {"input": text_file, "output": out, "spm": a.spm_model_file,
                                                 "config": {**c, "shuffle_buffer_size": a.shuffle_buffer_size},
                                                 "workers": 1}))
        if name == "dupe10":
            report["setup"]["subset_small_bytes_dupe10"] = os.path.getsize(small)
        report[f"official_subset_{name}"] = _median(off)
        report[f"ours_subset_{name}_w1"] = _median(ours_sub)
        report[f"speedup_per_worker_vs_official_{name}"] = round(
            report[f"ours_subset_{name}_w1"]["instances_per_s"] / report[f"official_subset_{name}"]["instances_per_s"],
            2)
        report[f"speedup_process_vs_official_{name}"] = round(
            report[f"official_subset_{name}"]["process_seconds"] / report[f"ours_subset_{name}_w1"]["process_seconds"],
            2)


def _beam_columns(report: dict, a: argparse.Namespace, corpus: str, out: str, ours_cfg: dict) -> None:
    """``beam_direct_1x_*``: the 1x corpus through the Beam executor on the DirectRunner, and its ratio to ours."""
    try:
        import apache_beam
    except ImportError:
        report["beam_direct"] = "not run: apache-beam is not installed (pip install 'albert-tf[beam]')"
        return
    report["setup"]["apache_beam"] = apache_beam.__version__
    modes = (("in_memory_w1", ["--direct_running_mode=in_memory", "--direct_num_workers=1"], 1),
             ("multi_processing_w2", ["--direct_running_mode=multi_processing", "--direct_num_workers=2"], 2))
    for name, options, workers in modes:
        r = _median([measure(_RUN_BEAM, {"input": corpus, "output": out + "_beam", "spm": a.spm_model_file,
                                          "config": ours_cfg, "options": options})
                     for _ in range(a.full_repeats)])
        report[f"beam_direct_1x_{name}"] = r
        ours = report.get(f"ours_1x_w{workers}")
        if ours:
            report[f"beam_over_ours_1x_w{workers}"] = round(r["instances_per_s"] / ours["instances_per_s"], 3)


if __name__ == "__main__":
    main()
