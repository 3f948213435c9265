"""The paper's numbers that the reproduction puts beside its own (Lan et al., arXiv 1909.11942v6).

Table 1's figures live in :mod:`albert_tf.demo.table1` (one place); the Table 1 run stores them in the results
JSON, so rendering needs no TensorFlow import. ``../shared/reference/official-albert-spec.md`` has no
Table 3, 4 or 5 values; the ones below were written from the paper (v6, ICLR 2020 camera-ready) from memory and
checked for internal consistency: every parameter count agrees with the hand formula of
:mod:`albert_tf.modeling.counting` for ALBERT-base (V 30000, H 768, 12 layers) at the given E and sharing mode
(e.g. all-shared E 128: 11.7M, shown as 12M). The downstream columns could not be checked against a copy of the
paper here; a reader who finds a wrong digit should trust the paper.

Percentages as printed in the paper; ``avg`` is the paper's average over SQuAD1.1, SQuAD2.0, MNLI, SST-2 and RACE.
"""

from __future__ import annotations

__all__ = ["TABLE3", "TABLE4", "TABLE5"]

# Table 3: ALBERT-base with embedding size E, all-shared and not-shared.
TABLE3 = {
    "all": {
        64: {"params": "10M", "sst2": 89.4, "avg": 79.0},
        128: {"params": "12M", "sst2": 90.3, "avg": 80.1},
        256: {"params": "16M", "sst2": 90.3, "avg": 79.6},
        768: {"params": "31M", "sst2": 90.6, "avg": 79.8},
    },
    "none": {
        64: {"params": "87M", "sst2": 91.5, "avg": 81.3},
        128: {"params": "89M", "sst2": 91.5, "avg": 81.7},
        256: {"params": "93M", "sst2": 91.9, "avg": 81.8},
        768: {"params": "108M", "sst2": 92.8, "avg": 82.3},
    },
}

# Table 4: cross-layer sharing of ALBERT-base at E = 128 (the rows this reproduction runs) and E = 768.
TABLE4 = {
    128: {
        "all": {"params": "12M", "sst2": 90.3, "avg": 80.1},
        "attention": {"params": "64M", "sst2": 91.9, "avg": 81.7},
        "ffn": {"params": "38M", "sst2": 91.7, "avg": 80.2},
        "none": {"params": "89M", "sst2": 91.5, "avg": 81.6},
    },
    768: {
        "all": {"params": "31M", "sst2": 90.6, "avg": 79.8},
        "attention": {"params": "83M", "sst2": 91.4, "avg": 81.6},
        "ffn": {"params": "57M", "sst2": 90.8, "avg": 79.5},
        "none": {"params": "108M", "sst2": 92.8, "avg": 82.3},
    },
}

# Table 5: the sentence-level loss of ALBERT-base; intrinsic accuracies (MLM, NSP, SOP) and SST-2 dev.
TABLE5 = {
    "none": {"mlm": 54.9, "nsp": 52.4, "sop": 53.3, "sst2": 89.9, "avg": 79.0},
    "nsp": {"mlm": 54.5, "nsp": 90.5, "sop": 52.0, "sst2": 91.1, "avg": 79.2},
    "sop": {"mlm": 54.0, "nsp": 78.9, "sop": 86.5, "sst2": 90.3, "avg": 80.1},
}
