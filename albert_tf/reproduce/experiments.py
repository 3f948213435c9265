"""The runs of the reproduction, each resumable: a run whose ``metrics.json`` says complete is not repeated.

Pretraining runs (one model size per budget; what varies is named by the run):

* Table 5, ``budget.table5_steps`` each: ``sop`` (all-shared, E 128, the paper's SOP records), ``nsp`` (NSP
  records) and ``none`` (one-segment records, ``sentence_loss_weight=0``).
* Tables 3 and 4, ``budget.ablation_steps`` each, SOP records: ``all`` (all-shared, E 128: Table 4's all-shared
  row and Table 3's E = 128 row), ``share_attention``, ``share_ffn``, ``share_none`` (Table 4, ``--sharing``) and
  ``e64``, ``e256`` (Table 3, E of the all-shared model).

Each is an in-process ``run_pretraining`` (:func:`albert_tf.tasks.pretraining.curve.pretrain_with_curve`) whose
held-out curve is measured on the held-out SOP records (MLM and SOP accuracy on every record, at step 0 and every
``steps / evals_per_run`` steps). Table 5's models are also scored on the held-out NSP records
(``run_pretraining --do_eval --eval_input_file=heldout_nsp --init_checkpoint=<run>``) and fine-tuned on the
budget's GLUE task (``run_classifier --init_checkpoint=<run>``; dev accuracy after the last step). A run that
stopped half-way (no complete ``metrics.json``), or whose budget has changed since (any field), is started again
from scratch, so every result comes from one uninterrupted schedule of the current budget.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import shutil
import time
from collections.abc import Callable
from typing import Any

from albert_tf import files as _fs
from albert_tf.reproduce.budgets import Budget, same_fields

__all__ = ["LONG_SOP_RUN", "MASKING_RUNS", "PretrainRun", "SEED_SUFFIX", "TABLE3_RUNS", "TABLE4_RUNS", "TABLE5_RUNS",
           "pretraining_runs", "reuse_results", "run_all", "seeded_name", "today"]

VOCAB_SIZE = 30000  # the official 30k-clean SentencePiece model


@dataclasses.dataclass(frozen=True)
class PretrainRun:
    """One pretraining run: its comparison (step count), records, sharing mode, E (None: the budget's) and
    sentence-loss weight."""

    name: str
    comparison: str  # "table5" | "ablation" (Tables 3 and 4) | "long": which step count of the budget
    records: str  # "sop" | "nsp" | "none": which training records (see data.TRAIN_POLICIES)
    sharing: str = "all"
    embedding_size: int | None = None
    sentence_loss_weight: float = 1.0
    seed_index: int = 0  # trains with budget.seed + seed_index; the name carries it (see seeded_name)
    masking: str | None = None  # "static" | "dynamic"; None: the budget's

    def masks(self, budget: Budget) -> str:
        return self.masking or budget.masking

    @property
    def row(self) -> str:
        """The table row this run fills (its name without the seed suffix)."""
        return self.name.split(SEED_SUFFIX)[0]

    def seed(self, budget: Budget) -> int:
        return budget.seed + self.seed_index


SEED_SUFFIX = "_seed"


def seeded_name(row: str, seed_index: int) -> str:
    """A run's name: the row's for seed 0 (the runs made before seeds existed keep their names), else
    ``<row>_seed<k>``."""
    return row if seed_index == 0 else f"{row}{SEED_SUFFIX}{seed_index}"


# Which run fills which row of each table (seed 0; see seeded_name for the others).
TABLE5_RUNS = {"none": "none", "nsp": "nsp", "sop": "sop"}
LONG_SOP_RUN = "sop_long"  # Table 5's SOP run with budget.long_sop_steps: more steps, nothing else changed
TABLE4_RUNS = {"all": "all", "attention": "share_attention", "ffn": "share_ffn", "none": "share_none"}
MASKING_RUNS = {"static": "mask_static", "dynamic": "mask_dynamic"}


def TABLE3_RUNS(budget: Budget) -> dict[int, str]:  # noqa: N802 (a table, like its neighbours)
    """E -> run name of Table 3 (the budget's own E is the ``all`` run of Table 4)."""
    return {e: "all" if e == budget.embedding_size else f"e{e}" for e in budget.embedding_sizes}


def pretraining_runs(budget: Budget) -> list[PretrainRun]:
    """Every distinct pretraining run of ``budget``: seed 0 of every row first (Table 5's, then Tables 3 and 4's,
    then the long SOP run), then the further seeds, so that an interrupted command has a whole table early."""
    table5 = [
        PretrainRun("sop", "table5", "sop"),
        PretrainRun("nsp", "table5", "nsp"),
        PretrainRun("none", "table5", "none", sentence_loss_weight=0.0),
    ]
    ablation = [
        PretrainRun("all", "ablation", "sop"),
        PretrainRun("share_attention", "ablation", "sop", sharing="attention"),
        PretrainRun("share_ffn", "ablation", "sop", sharing="ffn"),
        PretrainRun("share_none", "ablation", "sop", sharing="none"),
    ]
    others = [e for e in budget.embedding_sizes if e != budget.embedding_size]
    ablation += [PretrainRun(f"e{e}", "ablation", "sop", embedding_size=e) for e in others]
    masking = [PretrainRun(name, "masking", "sop", masking=kind) for kind, name in MASKING_RUNS.items()
               if budget.masking_steps]
    runs = table5 + ablation
    if budget.long_sop_steps:
        runs.append(PretrainRun(LONG_SOP_RUN, "long", "sop"))
    runs += masking
    seeded = ([(r, budget.table5_seeds) for r in table5] + [(r, budget.ablation_seeds) for r in ablation]
              + [(r, budget.masking_seeds) for r in masking])
    for k in range(1, max(n for _, n in seeded)):
        runs += [dataclasses.replace(run, name=seeded_name(run.name, k), seed_index=k) for run, n in seeded if k < n]
    return runs


def _read_complete(path: str, budget: Budget | None, part: str = "table5") -> dict | None:
    """The saved metrics when they are complete and were made under this budget's fields of ``part`` (see
    ``budgets.PART_FIELDS``: a Table 5 run does not depend on the ablation step count, and so on), else None."""
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        metrics = json.load(f)
    if not metrics.get("complete"):
        return None
    if budget is not None and not same_fields(metrics.get("budget_fields"), budget, part):
        return None
    return metrics


def _write(path: str, metrics: dict) -> None:
    _fs.write_text_atomic(path, json.dumps(metrics, indent=1))


def today() -> str:
    """The UTC date a run is recorded under (runs and the report's machine line)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")


def _fresh(directory: str) -> None:
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    os.makedirs(directory)


def model_config(budget: Budget, embedding_size: int | None = None):
    """The budget's AlbertConfig (vocab 30000, dropout 0), E overridden where given."""
    from albert_tf.tasks.pretraining.curve import small_albert_config

    return small_albert_config(
        VOCAB_SIZE,
        embedding_size=embedding_size or budget.embedding_size,
        hidden_size=budget.hidden_size,
        layers=budget.num_layers,
        heads=budget.num_heads,
    )


def parameter_counts(config, sharing: str) -> dict[str, int]:
    """Encoder parameters measured from the built model, and the hand formula beside them."""
    from albert_tf.modeling import AlbertEncoder
    from albert_tf.modeling.counting import encoder_parameter_formula

    return {
        "encoder_params": int(AlbertEncoder(config, sharing=sharing).count_params()),
        "formula_params": int(encoder_parameter_formula(config, sharing)),
    }


def evaluate_on(run_dir: str, model_dir: str, records: str, name: str, budget: Budget, sharing: str,
                seed: int) -> dict:
    """``run_pretraining --do_eval`` of the run's last checkpoint on other held-out records."""
    from albert_tf.tasks import pretraining
    from albert_tf.tasks.pretraining.task import run

    out = os.path.join(run_dir, f"eval_{name}")
    _fresh(out)
    cfg = pretraining.make_config(
        albert_config_file=os.path.join(model_dir, "albert_config.json"),
        eval_input_file=records,
        init_checkpoint=model_dir,
        output_dir=out,
        do_train=False,
        do_eval=True,
        max_seq_length=budget.max_seq_length,
        max_predictions_per_seq=budget.max_predictions_per_seq,
        eval_batch_size=budget.eval_batch_size,
        max_eval_steps=0,
        sharing=sharing,
        seed=seed,
    )
    summary = run(cfg)
    last = summary["eval"][-1]
    return {k: float(last[k]) for k in ("masked_lm_accuracy", "sentence_order_accuracy", "sentence_order_loss")}


def run_pretraining(run: PretrainRun, budget: Budget, data: dict, workdir: str, log: Callable[[str], None]) -> dict:
    """Pretrain (or reuse) ``run``; returns its metrics."""
    from albert_tf.tasks.pretraining.curve import pretrain_with_curve

    run_dir = os.path.join(workdir, "runs", run.name)
    path = os.path.join(run_dir, "metrics.json")
    done = _read_complete(path, budget, run.comparison)
    if done is not None:
        log(f"{run.name}: complete, skipped")
        return done
    _fresh(run_dir)
    steps = budget.steps(run.comparison)
    eval_every = max(1, steps // budget.evals_per_run)
    log(f"{run.name}: pretraining {steps} steps (records {run.records}, sharing {run.sharing}, "
        f"E {run.embedding_size or budget.embedding_size}, sentence loss weight {run.sentence_loss_weight}, "
        f"{run.masks(budget)} masks)")
    config = model_config(budget, run.embedding_size)
    model_dir = os.path.join(run_dir, "model")
    start = time.time()
    subset = None
    if run.comparison == "masking":
        from albert_tf.reproduce.data import masking_records

        subset = masking_records(budget, data, workdir, log)
    train = subset["path"] if subset else data["records"][f"train_{run.records}"]
    result = pretrain_with_curve(
        config,
        train,
        data["records"]["heldout_sop"],
        model_dir,
        num_train_steps=steps,
        train_batch_size=budget.train_batch_size,
        learning_rate=budget.learning_rate,
        num_warmup_steps=max(1, steps // 10),
        eval_every=eval_every,
        eval_batch_size=budget.eval_batch_size,
        max_eval_steps=0,
        steps_per_loop=min(100, eval_every),
        seed=run.seed(budget),
        sharing=run.sharing,
        sentence_loss_weight=run.sentence_loss_weight,
        masked_lm_budget=budget.max_predictions_per_seq if run.masks(budget) == "dynamic" else 0,
        log=lambda line: log(f"{run.name}:{line}"),
        progress_log=None,
    )
    final = result["curve"][-1]
    metrics: dict[str, Any] = {
        "run": dataclasses.asdict(run),
        "budget": budget.name,
        "embedding_size": config.embedding_size,
        "steps": result["steps_done"],
        "train_seconds": result["seconds"],
        "pretrainer_params": result["params"],
        **parameter_counts(config, run.sharing),
        "curve": result["curve"],
        "heldout_mlm_accuracy": final["masked_lm_accuracy"],
        "heldout_mlm_loss": final["masked_lm_loss"],
        "heldout_sop_accuracy": final["sentence_order_accuracy"],
        "masking": run.masks(budget),
    }
    if subset:
        metrics["train_records"] = subset["records"]
    if run.row in TABLE5_RUNS.values():
        nsp = evaluate_on(run_dir, model_dir, data["records"]["heldout_nsp"], "nsp", budget, run.sharing,
                          run.seed(budget))
        metrics["heldout_nsp_accuracy"] = nsp["sentence_order_accuracy"]
    metrics["seconds"] = round(time.time() - start, 1)
    metrics["date"] = today()
    metrics["budget_fields"] = budget.fields()
    metrics["complete"] = True
    _write(path, metrics)
    return metrics


def run_finetuning(run_name: str, budget: Budget, data: dict, workdir: str, sharing: str,
                   log: Callable[[str], None], seed: int) -> dict:
    """Fine-tune (or reuse) the pretrained ``run_name`` on the budget's GLUE task; dev accuracy at the end."""
    from albert_tf.tasks import glue
    from albert_tf.tasks.glue.task import run as run_glue

    run_dir = os.path.join(workdir, "runs", run_name, budget.glue_task.lower())
    path = os.path.join(run_dir, "metrics.json")
    done = _read_complete(path, budget, "finetuning")
    if done is not None:
        log(f"{run_name}/{budget.glue_task}: complete, skipped")
        return done
    _fresh(run_dir)
    model_dir = os.path.join(workdir, "runs", run_name, "model")
    log(f"{run_name}/{budget.glue_task}: fine-tuning {budget.finetune_steps} steps")
    start = time.time()
    steps = budget.finetune_steps
    cfg = glue.make_config(
        data_dir=data["glue_dir"],
        task_name=budget.glue_task,
        output_dir=os.path.join(run_dir, "out"),
        albert_config_file=os.path.join(model_dir, "albert_config.json"),
        spm_model_file=data["spm_model_file"],
        init_checkpoint=model_dir,
        max_seq_length=budget.finetune_seq_length,
        sharing=sharing,
        do_train=True,
        do_eval=True,
        train_batch_size=budget.finetune_batch_size,
        eval_batch_size=64,
        learning_rate=budget.finetune_learning_rate,
        train_step=steps,
        warmup_step=max(1, steps // 10),
        save_checkpoints_steps=steps,
        steps_per_loop=min(100, steps),
        keep_checkpoint_max=1,
        seed=seed,
    )
    summary = run_glue(cfg)
    key = summary["key_metric"]
    last = summary["eval"][-1]
    metrics = {
        "run": run_name,
        "task": budget.glue_task,
        "metric": key,
        "dev_accuracy": float(last[key]),
        "steps": int(last["global_step"]),
        "seconds": round(time.time() - start, 1),
        "date": today(),
        "budget_fields": budget.fields(),
        "complete": True,
    }
    _write(path, metrics)
    return metrics


def run_table1(workdir: str, log: Callable[[str], None]) -> dict:
    """The paper's Table 1 measured from the code (:mod:`albert_tf.demo.table1`), once per workdir."""
    from albert_tf.demo import table1

    run_dir = os.path.join(workdir, "runs", "table1")
    path = os.path.join(run_dir, "metrics.json")
    done = _read_complete(path, None)  # the same for every budget
    if done is not None:
        log("table1: complete, skipped")
        return done
    _fresh(run_dir)
    rows = table1.run(None)
    metrics = {"rows": rows, "paper_albert": table1.PAPER_ALBERT, "paper_bert": table1.PAPER_BERT, "complete": True}
    _write(path, metrics)
    return metrics


def reuse_results(results: dict, budget: Budget, workdir: str, source: str,
                  log: Callable[[str], None] = print) -> list[str]:
    """Put the complete runs of an earlier results JSON into ``workdir`` where this budget would repeat them
    unchanged (same fields of their part: ``budgets.PART_FIELDS``) and the workdir has none: so a longer Table 5
    need not repeat Tables 3 and 4 on a fresh machine. Each reused metrics file says where it came from
    (``reused_from``); the report names the runs that were reused and their date.

    A Table 5 run is reused only with its fine-tuning (fine-tuning needs the pretrained model, which a results
    JSON does not hold). Returns the names of the reused runs.
    """
    runs = {r.name: r for r in pretraining_runs(budget)}
    pre, ft = results.get("pretraining", {}), results.get("finetuning", {})
    reused = []
    for name, metrics in pre.items():
        run = runs.get(name)
        if run is None or not metrics.get("complete"):
            continue
        if not same_fields(metrics.get("budget_fields"), budget, run.comparison):
            continue
        path = os.path.join(workdir, "runs", name, "metrics.json")
        if _read_complete(path, budget, run.comparison) is not None:
            continue
        todo = [(path, metrics)]
        if run.row in TABLE5_RUNS.values():
            tuned = ft.get(name, {})
            if not (tuned.get("complete") and tuned.get("task") == budget.glue_task
                    and same_fields(tuned.get("budget_fields"), budget, "finetuning")):
                continue
            todo.append((os.path.join(workdir, "runs", name, budget.glue_task.lower(), "metrics.json"), tuned))
        for target, saved in todo:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            _write(target, {**saved, "reused_from": saved.get("reused_from", source)})
        reused.append(name)
        log(f"{name}: reused from {source}")
    return reused


def run_all(budget: Budget, data: dict, workdir: str, log: Callable[[str], None] = print) -> dict:
    """Every run of ``budget`` (reusing the complete ones); returns ``{"table1", "pretraining", "finetuning"}``."""
    results: dict[str, Any] = {"table1": run_table1(workdir, log), "pretraining": {}, "finetuning": {}}
    for run in pretraining_runs(budget):
        results["pretraining"][run.name] = run_pretraining(run, budget, data, workdir, log)
        if run.row in TABLE5_RUNS.values():
            results["finetuning"][run.name] = run_finetuning(run.name, budget, data, workdir, run.sharing, log,
                                                             seed=run.seed(budget))
    return results
