"""A small-scale reproduction of the paper's findings, measured from this code, by one command.

    python -m albert_tf.reproduce --budget=small      # 1 h 35 min - 2 h 15 min, 2-core CPU; REPRODUCTION.md + plots
    python -m albert_tf.reproduce --render_only       # the report again from the saved JSON, in seconds

Modules: :mod:`budgets` (data, model size, steps of each budget), :mod:`data` (paragraph-size documents, the
held-out split, records per sentence task, the GLUE subset), :mod:`experiments` (the resumable runs),
:mod:`paper` (the paper's numbers), :mod:`report` (REPRODUCTION.md and its plots from the results JSON).
"""
