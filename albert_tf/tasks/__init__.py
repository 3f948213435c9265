"""One module per job on the shared runner skeleton (``albert_tf.training.experiment``).

* ``base``: the ``Task`` hooks every job implements.
* ``pretraining``: MLM + SOP pretraining (``run_pretraining``), and the small curve run of the demo.
* ``glue``: GLUE classification / regression (``run_classifier``, ``export_savedmodel``).
* ``squad``: SQuAD 1.1 / 2.0 (``run_squad``), and the span-upper-bound diagnostic
  (``python -m albert_tf.tasks.squad span_upper_bound``).
* ``race``: RACE multiple choice (``run_race``), accuracy overall and per level in one run.
"""
