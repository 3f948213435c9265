"""The budgets of the reproduction: data, model size, steps; one model size and step count per comparison.

Every pretraining run of one budget has the same model size (bar the varied factor: E in Table 3, the sharing
mode in Table 4, the sentence task in Table 5), batch, sequence length and learning rate. Table 5's three runs
share one step count (``table5_steps``) and the six runs of Tables 3 and 4 another (``ablation_steps``), so each
table compares runs at equal steps. Table 5 gets the longer schedule: SOP on real text is the finding that needs
the most training to appear (a calibration run of the small model reached held-out SOP +8 points over the
majority class after 600 steps, not yet the +10 the comparison asks for).

Time estimates are for the whole command (data, 9 pretraining runs, their evaluations, 3 fine-tunings, Table 1).
``small`` was sized from measured speed on a 2-core AMD EPYC VM (TensorFlow 2.21, CPU): the small model (E 128,
H 256, 4 layers, seq 128, batch 32) trained at 0.4 s per step with its held-out evaluations on a quiet machine and
0.6-1.2 s with other jobs beside it. 3 x 1800 + 6 x 500 = 8400 steps: ~56 min at 0.4 s, ~84 min at 0.6 s; held-out
evaluations ~7-10 min, fine-tuning ~4-6 min, data and Table 1 ~2 min: about 1 h 10 min on a quiet machine and
1 h 45 min at 0.6 s per step. Run it on a machine nobody else is loading.
"""

from __future__ import annotations

import dataclasses
import json

__all__ = ["BUDGETS", "Budget", "get_budget"]


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

    def fields(self) -> dict:
        """Every field, as the results JSON holds it (lists for tuples): a saved run is reused only under equal
        fields."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def steps(self, comparison: str) -> int:
        """The step count of ``comparison`` ("table5" or "ablation")."""
        return self.table5_steps if comparison == "table5" else self.ablation_steps


ALL_TEXT = ("gutenberg_hobil", "nltk_state_union", "nltk_inaugural", "nltk_genesis", "tinyshakespeare")

BUDGETS = {
    "tiny": Budget(
        name="tiny",
        estimate="3-5 min on a 2-core CPU (the test's budget: it checks the machinery, not the findings)",
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
        train_batch_size=16,
        learning_rate=2e-3,
        evals_per_run=2,
        glue_train_examples=256,
        glue_dev_examples=128,
        finetune_steps=16,
        finetune_batch_size=16,
        finetune_seq_length=32,
    ),
    "small": Budget(
        name="small",
        estimate="1 h 10 min - 1 h 45 min on a 2-core CPU (AMD EPYC VM, TensorFlow 2.21; 0.4-0.6 s per step)",
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
        train_batch_size=32,
        learning_rate=4e-3,
        glue_train_examples=8000,
        glue_dev_examples=0,
        finetune_steps=300,
        finetune_batch_size=32,
        finetune_seq_length=64,
    ),
    "medium": Budget(
        name="medium",
        estimate=(
            "not measured: about 50x the small budget's compute (2x wider, 6 layers, 10000 / 4000 steps at batch "
            "64); hours on one GPU, not meant for a 2-core CPU"
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


def get_budget(name: str) -> Budget:
    """The budget called ``name`` (a clear error for an unknown one)."""
    if name not in BUDGETS:
        raise ValueError(f"unknown budget {name!r}: choose one of {', '.join(BUDGETS)}")
    return BUDGETS[name]
