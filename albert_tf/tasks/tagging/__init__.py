"""Token tagging (named entities, WNUT 2017 / CoNLL column files): under construction.

So far: ``scoring`` (entity precision / recall / F1 as ``conlleval`` computes them, and its input layout); the
reader of the column files and the windows of pieces (no word dropped) are ``albert_tf.data.tagging``. The task,
its model, export and command are not written yet, so the package declares no ``TASK`` and is not among
``albert_tf.tasks.registry.BUILT_IN``.
"""
