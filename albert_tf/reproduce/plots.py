"""The reproduction report's plots (PNG, matplotlib): held-out learning curves and bars of Tables 3, 4 and 5, and
Table 1's parameter counts, from the saved results JSON alone."""

from __future__ import annotations

import os

from albert_tf.reproduce.experiments import LONG_SOP_RUN, MASKING_RUNS, SEED_SUFFIX, TABLE4_RUNS, TABLE5_RUNS

PLOTS = (
    "table1_params.png",
    "table5_curves.png",
    "table5_bars.png",
    "table4_curves.png",
    "table4_bars.png",
    "table3_curves.png",
    "table3_bars.png",
)
CURVE_LABELS = {"masked_lm_accuracy": "held-out MLM accuracy", "masked_lm_loss": "held-out MLM loss",
                "sentence_order_accuracy": "held-out SOP accuracy"}
MASKING_PLOT = "masking_curves.png"  # written where the results have the masking comparison
SHARING_NAMES = {"all": "all-shared", "attention": "shared-attention", "ffn": "shared-FFN", "none": "not-shared"}
TASK_NAMES = {"none": "None", "nsp": "NSP", "sop": "SOP"}


def seed_runs(results: dict, row: str, part: str = "pretraining") -> list[str]:
    """The runs of ``row`` in ``results[part]``, seed 0 first: ``row`` itself and ``row_seed<k>``."""
    found = [name for name in results[part] if name == row or name.startswith(row + SEED_SUFFIX)]
    return sorted(found, key=lambda name: 0 if name == row else int(name[len(row) + len(SEED_SUFFIX):]))


def _mean_and_se(values: list[float]) -> tuple[float, float]:
    """The mean over seeds and its standard error (0 for one seed: nothing to draw)."""
    from albert_tf.reproduce.stats import estimate

    e = estimate(values)
    return e.mean, e.se if e.n > 1 else 0.0


def write_plots(results: dict, out_dir: str) -> None:
    """Every plot of :data:`PLOTS` into ``out_dir``, from the results JSON (matplotlib, Agg backend). A row with
    several seeds is drawn as their mean, with the standard error as a band (curves) or an error bar (bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pre = results["pretraining"]
    base = results["data"]["baselines"]

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, name), dpi=90, metadata={"Software": None})
        plt.close(fig)

    def curves(names: dict, title: str, name: str, with_sop: bool, dashed: tuple[str, ...] = (),
               keys: tuple[str, ...] = ()) -> None:
        keys = keys or ("masked_lm_accuracy",) + (("sentence_order_accuracy",) if with_sop else ())
        fig, axes = plt.subplots(1, len(keys), figsize=(10 if len(keys) > 1 else 5.5, 3.6), squeeze=False)
        for label, run in names.items():
            seeds = [pre[r]["curve"] for r in seed_runs(results, run)]
            steps = [p["step"] for p in seeds[0]]
            shown = f"{label} ({len(seeds)} seeds)" if len(seeds) > 1 else label
            style = {"marker": "o", "ms": 3, "label": shown, "ls": "--" if run in dashed else "-"}
            for ax, key in zip(axes[0], keys):
                points = [_mean_and_se([c[i][key] for c in seeds]) for i in range(len(steps))]
                line = ax.plot(steps, [m for m, _ in points], **style)[0]
                if len(seeds) > 1:
                    ax.fill_between(steps, [m - se for m, se in points], [m + se for m, se in points],
                                    color=line.get_color(), alpha=0.2)
        for ax, key in zip(axes[0], keys):
            ax.set(xlabel="step", ylabel=CURVE_LABELS[key])
        axes[0][0].set(title=title)
        if with_sop:
            axes[0][1].axhline(base["heldout_sop"]["majority_accuracy"], ls="--", c="gray", label="majority class")
            axes[0][1].set(title="sentence order (held-out)")
            axes[0][1].legend(fontsize=8)
        axes[0][0].legend(fontsize=8)
        save(fig, name)

    # Table 1: parameters, ALBERT vs its unshared BERT-style equivalent.
    rows = results["table1"]["rows"]
    sizes = [s for s in ("base", "large", "xlarge", "xxlarge") if f"albert_{s}" in rows]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    x = range(len(sizes))
    ax.bar([i - 0.2 for i in x], [rows[f"albert_{s}"]["params"] / 1e6 for s in sizes], 0.4, label="ALBERT")
    ax.bar([i + 0.2 for i in x], [rows[f"albert_{s}"]["unshared_equivalent_params"] / 1e6 for s in sizes], 0.4,
           label="unshared, E = H (BERT-style)")
    ax.set_yscale("log")
    ax.set_xticks(list(x), sizes)
    ax.set(ylabel="parameters (M, log scale)", title="Table 1, measured")
    ax.legend(fontsize=8)
    save(fig, "table1_params.png")

    table5 = {TASK_NAMES[k]: v for k, v in TABLE5_RUNS.items()}
    if LONG_SOP_RUN in pre:
        table5[f"SOP, {pre[LONG_SOP_RUN]['steps']} steps"] = LONG_SOP_RUN
    curves(table5, "Table 5 runs: masked LM", "table5_curves.png", True, dashed=(LONG_SOP_RUN,))
    fig, ax = plt.subplots(figsize=(7, 3.6))
    metrics = [("MLM", "heldout_mlm_accuracy"), ("NSP", "heldout_nsp_accuracy"), ("SOP", "heldout_sop_accuracy")]
    ft = results["finetuning"]
    for j, (task, run) in enumerate(TABLE5_RUNS.items()):
        values = [pre[run].get(key) or 0 for _, key in metrics] + [ft.get(run, {}).get("dev_accuracy") or 0]
        ax.bar([i + (j - 1) * 0.27 for i in range(4)], values, 0.27, label=f"trained with {TASK_NAMES[task]}")
    ax.hlines([base["heldout_nsp"]["majority_accuracy"]], 0.6, 1.4, colors="gray", linestyles="--")
    ax.hlines([base["heldout_sop"]["majority_accuracy"]], 1.6, 2.4, colors="gray", linestyles="--",
              label="majority class")
    if results["data"].get("glue_dev_majority") is not None:
        ax.hlines([results["data"]["glue_dev_majority"]], 2.6, 3.4, colors="gray", linestyles="--")
    ax.set_xticks(range(4), ["held-out MLM", "held-out NSP", "held-out SOP", results["budget"]["glue_task"] + " dev"])
    ax.set(ylabel="accuracy", ylim=(0, 1), title="Table 5, measured")
    ax.legend(fontsize=7, ncol=2)
    save(fig, "table5_bars.png")

    def bars(labels: list[str], runs: list[str], title: str, name: str) -> None:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
        axes[0].bar(labels, [pre[r]["encoder_params"] / 1e6 for r in runs], color="tab:blue")
        axes[0].set(ylabel="encoder parameters (M)", title=title + ": parameters")
        accs = [_mean_and_se([pre[s]["heldout_mlm_accuracy"] for s in seed_runs(results, r)]) for r in runs]
        axes[1].bar(labels, [m for m, _ in accs], yerr=[se for _, se in accs], capsize=4, color="tab:orange")
        low = min(m - se for m, se in accs)
        axes[1].set_ylim(max(0.0, low - 0.02), max(m + se for m, se in accs) + 0.01)
        axes[1].set(ylabel="held-out MLM accuracy", title=title + ": MLM at equal steps (mean ± SE)")
        save(fig, name)

    t4 = {SHARING_NAMES[k]: v for k, v in TABLE4_RUNS.items()}
    curves(t4, "Table 4 runs (E 128): masked LM", "table4_curves.png", False)
    bars(list(t4), list(t4.values()), "Table 4", "table4_bars.png")
    t3 = {f"E={e}": r for e, r in table3_runs(results).items()}
    curves(t3, "Table 3 runs (all-shared): masked LM", "table3_curves.png", False)
    bars(list(t3), list(t3.values()), "Table 3", "table3_bars.png")
    if all(r in pre for r in MASKING_RUNS.values()):
        curves({f"{k} masks": r for k, r in MASKING_RUNS.items()}, "static vs dynamic masks", MASKING_PLOT, False,
               keys=("masked_lm_accuracy", "masked_lm_loss"))


def table3_runs(results: dict) -> dict[int, str]:
    b = results["budget"]
    return {e: "all" if e == b["embedding_size"] else f"e{e}" for e in b["embedding_sizes"]}


