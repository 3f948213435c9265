"""Task metrics, one module per benchmark.

* ``glue_metrics``: accuracy, MCC, F1, Pearson, Spearman.
* ``squad_metrics``: the official SQuAD v1.1 and v2.0 scoring (EM/F1, HasAns/NoAns, best thresholds) and ALBERT's
  two-pass v2 evaluation.
* ``race_metrics``: RACE accuracy overall and per level (middle, high).
* ``squad_predictions``: the official SQuAD post-processing (windows' outputs -> answers, n-best, null scores).

Each metric is a plain Python/numpy function over the whole evaluation set, so the runners compute
them once from gathered predictions instead of streaming approximations.
"""
