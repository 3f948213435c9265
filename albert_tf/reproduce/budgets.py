"""The budgets of the reproduction: data, model size, steps; one model size and step count per comparison.

Every pretraining run of one budget has the same model size (bar the varied factor: E in Table 3, the sharing
mode in Table 4, the sentence task in Table 5), batch, sequence length and learning rate. Table 5's three runs
share one step count (``table5_steps``) and the six runs of Tables 3 and 4 another (``ablation_steps``), so each
table compares runs at equal steps. Table 5 gets the longer schedule: SOP on real text is the finding that needs
the most training to appear. ``long_sop_steps`` adds one longer SOP run beside Table 5 to show its curve.

Each budget's ``estimate`` is the expected wall time of the whole command (data, pretraining runs, their
evaluations, fine-tunings, Table 1) and names the machine it was estimated on. How the step counts and the learning
rate were chosen, with the measured runs behind them, is in ``docs/reproduction-budgets.md``. After a change to one
part's settings, ``--reuse_results=reproduction/results.json`` takes the runs whose settings did not change from the
checked-in results, so only the changed part runs again.
"""

from __future__ import annotations

import dataclasses
import json

__all__ = ["BUDGETS", "MASKINGS", "PART_FIELDS", "Budget", "get_budget", "same_fields"]


@dataclasses.dataclass(frozen=True)
class Budget:
    """Everything a budget fixes (the experiments read nothing else)."""

    name: str
    estimate: str  # the expected wall time and the machine it was estimated for
    # --- text: ../shared/data/text sub-folders, in this order, whole files until text_mb is reached
    text_sources: tuple[str, ...]
    text_mb: float
    document_sentences: int  # a document closes at the first paragraph end after this many sentences
    heldout_fraction: float  # share of documents held out (hash of file name and document index)
    dupe_factor: int
    # --- records and model
    max_seq_length: int
    max_predictions_per_seq: int
    hidden_size: int
    num_layers: int
    num_heads: int
    embedding_size: int  # E of Tables 4 and 5 (the paper's 128)
    embedding_sizes: tuple[int, ...]  # Table 3
    # --- pretraining
    table5_steps: int  # the three Table 5 runs
    ablation_steps: int  # the six runs of Tables 3 and 4
    train_batch_size: int
    learning_rate: float  # LAMB; warm-up over the first 10% of each run, then linear decay to 0
    evals_per_run: int = 6  # held-out evaluations after step 0, evenly spaced
    # seeds per comparison: seed k trains with seed + k (initialisation, record order, dropout, fine-tuning), on
    # the same records; seed 0 is the run of the same name without a suffix (so earlier results stay seed 0)
    table5_seeds: int = 1
    ablation_seeds: int = 1
    # the masks every pretraining run trains with: "static" (the records' own, as the official run_pretraining)
    # or "dynamic" (drawn again at every read: run_pretraining --masked_lm_budget, RoBERTa's dynamic masking)
    masking: str = "static"
    # the static-vs-dynamic comparison (0 steps: none): the ablation model trained masking_steps steps on the
    # records of the first masking_text_mb MB of the training documents (0: all of them), so that the records come
    # round several times within the run, with each kind of mask, masking_seeds seeds each
    masking_steps: int = 0
    masking_text_mb: float = 0.0
    masking_seeds: int = 1
    # one more SOP run with its schedule stretched to this many steps (0: none): does Table 5's SOP model get
    # further with more steps? Reported beside Table 5, not in it (the table compares runs at equal steps)
    long_sop_steps: int = 0
    eval_batch_size: int = 64
    # --- fine-tuning (Table 5's downstream column)
    glue_task: str = "SST-2"
    glue_train_examples: int = 0  # 0: the whole train split
    glue_dev_examples: int = 0  # 0: the whole dev split
    finetune_steps: int = 300
    finetune_batch_size: int = 32
    finetune_seq_length: int = 64
    finetune_learning_rate: float = 2e-4
    seed: int = 12345

    @property
    def intermediate_size(self) -> int:
        return 4 * self.hidden_size

    def fields(self, part: str | None = None) -> dict:
        """The fields as the results JSON holds them (lists for tuples): every field, or only those that ``part``
        depends on (see :data:`PART_FIELDS`). A saved result is reused only where its part's fields are equal."""
        every = json.loads(json.dumps(dataclasses.asdict(self)))
        if part is None:
            return every
        if part not in PART_FIELDS:
            raise ValueError(f"unknown part {part!r}: choose one of {', '.join(PART_FIELDS)}")
        return {k: every[k] for k in PART_FIELDS[part]}

    def steps(self, comparison: str) -> int:
        """The step count of ``comparison`` ("table5", "ablation", "long" or "masking")."""
        return {"table5": self.table5_steps, "ablation": self.ablation_steps, "long": self.long_sop_steps,
                "masking": self.masking_steps}[comparison]

    def __post_init__(self) -> None:
        if self.masking not in MASKINGS:
            raise ValueError(f"masking={self.masking!r}: choose one of {', '.join(MASKINGS)}")


# What each kind of result depends on, so that changing one comparison's schedule does not repeat the others:
# a longer Table 5 keeps the runs of Tables 3 and 4, a new fine-tuning recipe keeps every pretraining run. The
# budget's name and estimate are documentation; embedding_sizes says which Table 3 runs exist, not how one runs.
_DATA = ("text_sources", "text_mb", "document_sentences", "heldout_fraction", "dupe_factor", "max_seq_length",
         "max_predictions_per_seq", "seed", "glue_task", "glue_train_examples", "glue_dev_examples")
_MODEL = (*_DATA, "hidden_size", "num_layers", "num_heads", "embedding_size", "train_batch_size", "learning_rate",
          "evals_per_run", "eval_batch_size")
_PRETRAINING = (*_MODEL, "masking")
PART_FIELDS: dict[str, tuple[str, ...]] = {
    "data": _DATA,
    "table5": (*_PRETRAINING, "table5_steps"),
    "ablation": (*_PRETRAINING, "ablation_steps"),
    "long": (*_PRETRAINING, "long_sop_steps"),
    "masking": (*_MODEL, "masking_steps", "masking_text_mb"),  # each of its runs names its own masks
    "finetuning": (*_PRETRAINING, "table5_steps", "finetune_steps", "finetune_batch_size", "finetune_seq_length",
                   "finetune_learning_rate"),
}

MASKINGS = ("static", "dynamic")

ALL_TEXT = ("gutenberg_hobil", "nltk_state_union", "nltk_inaugural", "nltk_genesis", "tinyshakespeare")

BUDGETS = {
    "tiny": Budget(
        name="tiny",
        estimate="5-10 min on a 2-core CPU (the test's budget: it checks the machinery, not the findings)",
        text_sources=("nltk_inaugural",),
        text_mb=0.3,
        document_sentences=12,
        heldout_fraction=0.1,
        dupe_factor=1,
        max_seq_length=64,
        max_predictions_per_seq=10,
        hidden_size=64,
        num_layers=2,
        num_heads=2,
        embedding_size=128,
        embedding_sizes=(64, 128, 256),
        table5_steps=20,
        ablation_steps=10,
        long_sop_steps=30,
        train_batch_size=16,
        learning_rate=2e-3,
        evals_per_run=2,
        ablation_seeds=2,
        masking_steps=20,
        masking_text_mb=0.1,
        glue_train_examples=256,
        glue_dev_examples=128,
        finetune_steps=16,
        finetune_batch_size=16,
        finetune_seq_length=32,
    ),
    "small": Budget(
        name="small",
        estimate=(
            "about 5 h on a quiet 2-core CPU, up to twice that on slower VMs (measured on one: Table 5 49 min, "
            "each of the 18 runs of Tables 3 and 4 7-8.5 min, the 3000-step SOP run 39 min, each of the 6 masking "
            "runs ~7 min; docs/reproduction-budgets.md)"
        ),
        text_sources=ALL_TEXT,
        text_mb=20.0,
        document_sentences=20,
        heldout_fraction=0.05,
        dupe_factor=2,  # ~58k training records: each Table 5 run reads every record about once
        max_seq_length=128,
        max_predictions_per_seq=20,
        hidden_size=256,
        num_layers=4,
        num_heads=4,
        embedding_size=128,
        embedding_sizes=(64, 128, 256),
        table5_steps=1800,
        ablation_steps=500,
        long_sop_steps=3000,
        train_batch_size=32,
        learning_rate=4e-3,
        ablation_seeds=3,
        masking_steps=600,
        masking_text_mb=0.5,
        masking_seeds=3,
        glue_train_examples=8000,
        glue_dev_examples=0,
        finetune_steps=300,
        finetune_batch_size=32,
        finetune_seq_length=64,
    ),
    "medium": Budget(
        name="medium",
        estimate=(
            "not measured with TensorFlow: about 50x the small budget's compute (2x wider, 6 layers, 10000 / 4000 "
            "steps at batch 64); hours on one GPU, not meant for a 2-core CPU (transformers' restatement of its SOP "
            "run: 29 ms per step on an H200)"
        ),
        text_sources=ALL_TEXT,
        text_mb=20.0,
        document_sentences=20,
        heldout_fraction=0.05,
        dupe_factor=4,
        max_seq_length=128,
        max_predictions_per_seq=20,
        hidden_size=512,
        num_layers=6,
        num_heads=8,
        embedding_size=128,
        embedding_sizes=(64, 128, 256),
        table5_steps=10000,
        ablation_steps=4000,
        # its Table 5 runs read each record ~5 times, where redrawn masks keep records from being memorised (the
        # small budget's masking comparison, REPRODUCTION.md; benchmarks/README.md: dupe-2 records overfit on a GPU)
        masking="dynamic",
        train_batch_size=64,
        learning_rate=3e-3,
        evals_per_run=10,
        glue_train_examples=0,
        glue_dev_examples=0,
        finetune_steps=2000,
        finetune_batch_size=32,
        finetune_seq_length=64,
        finetune_learning_rate=5e-5,
    ),
}


def same_fields(stored: dict | None, budget: Budget, part: str) -> bool:
    """Whether a saved result's ``budget_fields`` (all of them, as written) agree with ``budget`` on ``part``'s.

    A field added to :class:`Budget` after a result was saved is missing from it; it agrees when the budget has
    the field's default (the value every earlier run had implicitly)."""
    if not isinstance(stored, dict):
        return False
    defaults = {f.name: f.default for f in dataclasses.fields(Budget) if f.default is not dataclasses.MISSING}
    return all(stored.get(k, defaults.get(k, _ABSENT)) == v for k, v in budget.fields(part).items())


_ABSENT = object()


def get_budget(name: str) -> Budget:
    """The budget called ``name`` (a clear error for an unknown one)."""
    if name not in BUDGETS:
        raise ValueError(f"unknown budget {name!r}: choose one of {', '.join(BUDGETS)}")
    return BUDGETS[name]
