"""Scaling table: pretraining-step time per token over sequence length and batch size, and pretraining-data
throughput and peak memory over corpus size.

Train steps (``train`` block of the JSON): the ``benchmarks/pretraining_step.py`` step of ``AlbertPretrainer`` as it
pretrains by default (MLM + SOP, last layer at [CLS] and the masked positions only, AdamW, float32, dropout 0) for
every sequence length in ``--seq_lengths`` and batch size in ``--batch_sizes``, for ALBERT-base v2 dimensions and
the ``albert_tiny`` test config (max_position_embeddings raised to 512), with ceil(0.15 x seq) masked positions per
sequence (20 / 39 / 77 at 128 / 256 / 512, the official 15% masking). Each shape runs in fresh worker processes;
with ``--reference`` (default: base) transformers' ``AlbertForPreTraining`` (torch, same threads) runs the same
shape in its own worker, interleaved step by step, so the row has its reference measured under the same load (at
``--reference_batch_sizes``, default 8, to keep the run short).
Per row: median step time of ``--steps`` steps after a trace step and ``--warmup`` untimed steps, microseconds per
token (step time / (batch x seq)), examples/s and achieved GFLOP/s (the analytic FLOPs of pretraining_step.py).

Data (``data`` block): ``create_pretraining_data`` on the real text of ``../shared/data/text`` (prepared with
``albert_prepare_text``; ``--corpus_documents``: paragraph-sized documents, or one per file) and on that corpus
repeated 4 and 16 times, ``--data_workers`` worker processes, in a fresh subprocess each: instances/s and peak
memory (sum of PSS over the process tree, sampled every 20 ms, as in ``benchmarks/pretraining_data.py``);
``pss_over_1x`` shows whether memory grows with the corpus. It is bounded by the shuffle buffer and the chunks in
flight; with whole books as documents, a chunk's record count depends on the official once-per-document
short-length draw (10% of documents are cut into short instances), so the peak is that of the unluckiest chunk.

``--plot FILE.png`` draws both; ``--markdown FILE.json`` prints the README tables from a saved JSON and runs
nothing. The JSON carries the CPU model and flags and the date (``machine``).

    python benchmarks/scaling.py --plot benchmarks/scaling.png > benchmarks/results/scaling.json   # ~15 min here
    python benchmarks/scaling.py --markdown benchmarks/results/scaling.json
    python benchmarks/scaling.py --smoke                           # the tiny model, 2 shapes, 1x corpus: ~1 min
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
from functools import partial

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import StepWorkers, machine_info, run_main, shared_data_dir, versions  # noqa: E402
from benchmarks.pretraining_data import RUN_OURS, measure  # noqa: E402
from benchmarks.pretraining_step import BASE, albert_tf_step, step_gflop, transformers_step  # noqa: E402

# albert_tiny (albert_tf/configs/albert_tiny.json) with positions up to 512.
TINY = {"vocab": 1000, "embedding": 16, "hidden": 32, "layers": 2, "heads": 4, "intermediate": 64}
MODELS = {"base": {k: BASE[k] for k in TINY}, "tiny": TINY}


def masked_positions(seq: int) -> int:
    """The official 15% masking budget: ceil(0.15 x seq)."""
    return math.ceil(0.15 * seq)


def train_row(model: str, seq: int, batch: int, args: argparse.Namespace) -> dict:
    """One shape: albert-tf (and the reference) in fresh workers, interleaved; per-token figures."""
    d = {**MODELS[model], "batch": batch, "seq": seq, "predictions": masked_positions(seq)}
    builders = {"albert_tf": partial(albert_tf_step, d, True, False)}
    if model in args.reference and batch in args.reference_batch_sizes:
        builders["transformers_torch"] = partial(transformers_step, d, args.torch_threads)
    row = {"model": model, "seq": seq, "batch": batch, "predictions": d["predictions"], "tokens_per_step": seq * batch}
    try:
        with StepWorkers(builders) as workers:
            first = workers.first_steps(args.warmup)
            times = workers.rounds(args.steps)
            row["foreign_cpu_share_per_round"] = workers.foreign
    except RuntimeError as e:  # e.g. killed for memory (exit -9) at the largest shapes: the other rows still count
        row["error"] = str(e).splitlines()[0]
        return row
    for name, ts in times.items():
        med = statistics.median(ts)
        gflop = step_gflop(d, last_layer_rows=1 + d["predictions"] if name == "albert_tf" else None)
        row[name] = {"median_step_s": round(med, 4), "us_per_token": round(med / (seq * batch) * 1e6, 2),
                     "examples_per_s": round(batch / med, 2), "achieved_gflops": round(gflop / med, 1),
                     "first_step_s": round(first[name], 2), "step_times_s": [round(t, 4) for t in ts]}
    if "transformers_torch" in row:
        row["albert_tf_over_transformers"] = round(
            row["transformers_torch"]["median_step_s"] / row["albert_tf"]["median_step_s"], 3)
    return row


def data_rows(args: argparse.Namespace) -> dict:
    """create_pretraining_data on the real corpus x1, x4, x16: throughput and peak PSS."""
    import glob

    from albert_tf.data.documents import prepare_split
    from albert_tf.data.prepare_text import prepare_files

    text_dir = os.path.join(args.shared_data, "text")
    spm = os.path.join(args.shared_data, "spm", "30k-clean.model")
    files = sorted(glob.glob(os.path.join(text_dir, "*", "*.txt")))
    if not files or not os.path.isfile(spm):
        return {"skipped": f"no text/ or spm/30k-clean.model under {args.shared_data}"}
    config = {"max_seq_length": 128, "dupe_factor": 1, "shuffle_buffer_size": args.shuffle_buffer_size,
              "short_seq_scope": args.short_seq_scope}
    out: dict = {"setup": {**config, "num_workers": args.data_workers, "text_files": len(files),
                           "corpus_documents": args.corpus_documents}, "rows": []}
    with tempfile.TemporaryDirectory(prefix="albert_scaling_") as tmp:
        corpus = os.path.join(tmp, "corpus_1x.txt")
        encodings = ("utf-8", "iso-8859-1")
        if args.corpus_documents == "files":  # one document per file: whole books
            prep = prepare_files(files, corpus, encodings=encodings)
        else:  # documents of paragraph size, as albert_prepare_text --document_unit=paragraphs and the reproduction
            prep = prepare_split(files, corpus, document_unit="paragraphs", document_sentences=20,
                                 encodings=encodings)
        with open(corpus, encoding="utf-8") as f:
            text = f.read()
        out["setup"]["corpus_1x_bytes"] = os.path.getsize(corpus)
        out["setup"]["corpus_1x_documents"] = prep["documents"]
        for times in args.corpus_multiples:
            path = corpus if times == 1 else os.path.join(tmp, f"corpus_{times}x.txt")
            if times != 1:
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join([text] * times))
            r = measure(RUN_OURS, {"input": path, "output": os.path.join(tmp, f"out_{times}x"), "spm": spm,
                                     "config": config, "workers": args.data_workers})
            for name in os.listdir(tmp):  # the records of this size: not needed, and 16x is large
                if name.startswith(f"out_{times}x"):
                    os.remove(os.path.join(tmp, name))
            if times != 1:
                os.remove(path)
            out["rows"].append({"corpus_multiple": times, "corpus_mb": round(os.path.getsize(corpus) * times / 1e6, 1),
                                **r})
    base = out["rows"][0]
    for row in out["rows"]:
        row["pss_over_1x"] = round(row["peak_pss_mb"] / base["peak_pss_mb"], 3)
        row["throughput_over_1x"] = round(row["instances_per_s"] / base["instances_per_s"], 3)
    return out


def plot(report: dict, path: str) -> None:
    """Left: microseconds per token against batch size, one line per (model, seq); right: data throughput and
    peak memory against corpus size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    for model in sorted({r["model"] for r in report["train"]}):
        for seq in sorted({r["seq"] for r in report["train"] if r["model"] == model and "error" not in r}):
            rows = sorted((r for r in report["train"] if r["model"] == model and r["seq"] == seq and "error" not in r),
                          key=lambda r: r["batch"])
            ax.plot([r["batch"] for r in rows], [r["albert_tf"]["us_per_token"] for r in rows], marker="o",
                    label=f"albert-tf {model}, seq {seq}")
            if all("transformers_torch" in r for r in rows):
                ax.plot([r["batch"] for r in rows], [r["transformers_torch"]["us_per_token"] for r in rows],
                        marker="x", linestyle="--", label=f"transformers {model}, seq {seq}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch size")
    ax.set_ylabel("train step: microseconds per token")
    ax.set_title("Pretraining step (MLM + SOP, AdamW, float32)")
    ax.legend(fontsize=7)
    ax = axes[1]
    data = report.get("data", {})
    if data.get("rows"):
        xs = [r["corpus_mb"] for r in data["rows"]]
        ax.plot(xs, [r["instances_per_s"] for r in data["rows"]], marker="o", label="instances/s")
        ax.set_xscale("log")
        ax.set_xlabel("corpus size (MB of text)")
        ax.set_ylabel("instances/s")
        twin = ax.twinx()
        twin.plot(xs, [r["peak_pss_mb"] for r in data["rows"]], marker="s", color="tab:red", label="peak PSS MB")
        twin.set_ylabel("peak memory (PSS, MB)")
        twin.set_ylim(bottom=0)
        ax.set_ylim(bottom=0)
        ax.set_title(f"create_pretraining_data, {data['setup']['num_workers']} workers")
        lines = ax.get_legend_handles_labels(), twin.get_legend_handles_labels()
        ax.legend(lines[0][0] + lines[1][0], lines[0][1] + lines[1][1], fontsize=8, loc="lower left")
    m = report["machine"]
    fig.suptitle(f"{m['cpu_model']}, {m['usable_cpus']} CPUs, {m['date_utc']} UTC", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(report: dict) -> str:
    """The README tables of a saved report."""
    lines = ["| model | seq | batch | albert-tf ms/step | µs/token | GFLOP/s | transformers µs/token | ratio |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report["train"]:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['seq']} | {r['batch']} | not measured: {r['error']} | | | | |")
            continue
        a, t = r["albert_tf"], r.get("transformers_torch")
        lines.append(f"| {r['model']} | {r['seq']} | {r['batch']} | {a['median_step_s'] * 1e3:.0f} | "
                     f"{a['us_per_token']:.1f} | {a['achieved_gflops']:.0f} | "
                     f"{t['us_per_token']:.1f} | {r['albert_tf_over_transformers']:.2f} |" if t else
                     f"| {r['model']} | {r['seq']} | {r['batch']} | {a['median_step_s'] * 1e3:.1f} | "
                     f"{a['us_per_token']:.2f} | {a['achieved_gflops']:.1f} | - | - |")
    data = report.get("data", {})
    if data.get("rows"):
        lines += ["", "| corpus | MB | instances | instances/s | peak PSS MB | PSS / 1x |", "|---|---|---|---|---|---|"]
        for r in data["rows"]:
            lines.append(f"| {r['corpus_multiple']}x | {r['corpus_mb']} | {r['instances']:,} | "
                         f"{r['instances_per_s']:,.0f} | {r['peak_pss_mb']:.0f} | {r['pss_over_1x']:.2f} |")
    return "\n".join(lines)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="base,tiny", help="comma list of: base, tiny")
    parser.add_argument("--seq_lengths", type=_ints, default=[128, 256, 512])
    parser.add_argument("--batch_sizes", type=_ints, default=[8, 16, 32])
    parser.add_argument("--steps", type=int, default=3, help="timed steps per shape (median reported)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps after the first (trace) step")
    parser.add_argument("--reference", default="base",
                        help="models whose rows also run transformers AlbertForPreTraining ('' for none)")
    parser.add_argument("--reference_batch_sizes", type=_ints, default=[8],
                        help="batch sizes at which the reference runs (it is ~2.4x slower than albert-tf here)")
    parser.add_argument("--torch_threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--corpus_multiples", type=_ints, default=[1, 4, 16])
    parser.add_argument("--data_workers", type=int, default=2)
    parser.add_argument("--shuffle_buffer_size", type=int, default=10_000)
    parser.add_argument("--corpus_documents", choices=("paragraphs", "files"), default="paragraphs",
                        help="documents of the data corpus: paragraph-sized (~20 sentences, as real corpora and the "
                        "reproduction) or one per file (whole books: the official once-per-document short-length "
                        "draw then makes the record count of a chunk, and so peak memory, a lottery)")
    parser.add_argument("--short_seq_scope", choices=("document", "instance"), default="document",
                        help="create_pretraining_data --short_seq_scope (document: the official)")
    parser.add_argument("--shared_data", default=str(shared_data_dir()))
    parser.add_argument("--skip_train", action="store_true")
    parser.add_argument("--skip_data", action="store_true")
    parser.add_argument("--plot", default="", help="write the figure to this PNG")
    parser.add_argument("--markdown", default="", help="print the tables of this saved JSON and exit")
    parser.add_argument("--smoke", action="store_true", help="tiny model, seq 32/64, batch 2, 1x corpus")
    args = parser.parse_args()
    if args.markdown:
        with open(args.markdown, encoding="utf-8") as f:
            print(markdown(json.load(f)))
        return
    if args.smoke:
        args.models, args.seq_lengths, args.batch_sizes = "tiny", [32, 64], [2]
        args.steps, args.warmup, args.corpus_multiples = 2, 0, [1]
    args.reference = {m for m in args.reference.split(",") if m}

    report: dict = {"benchmark": "scaling", "dtype": "float32", "optimizer": "AdamW (pretraining_step.py)",
                    "steps": args.steps, "warmup": args.warmup, "torch_threads": args.torch_threads,
                    "machine": machine_info(), "versions": versions(), "train": []}
    if not args.skip_train:
        for model in args.models.split(","):
            if model not in MODELS:
                parser.error(f"--models: unknown model {model!r} (choose from {', '.join(MODELS)})")
            for seq in args.seq_lengths:
                for batch in args.batch_sizes:
                    report["train"].append(train_row(model, seq, batch, args))
                    row = report["train"][-1]
                    done = row["error"] if "error" in row else f"{row['albert_tf']['us_per_token']} us/token"
                    print(f"{model} seq {seq} batch {batch}: {done}", file=sys.stderr)
    if not args.skip_data:
        report["data"] = data_rows(args)
    if args.plot:
        plot(report, args.plot)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    run_main(main)
