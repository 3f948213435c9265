"""Task metrics, one module per benchmark: ``glue_metrics`` (accuracy, MCC, F1, Pearson, Spearman).

Each metric is a plain numpy function over the whole evaluation set, so the runners compute
them once from gathered predictions instead of streaming approximations.
"""
