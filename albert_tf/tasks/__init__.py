"""The jobs on the shared runner skeleton (``albert_tf.training.experiment``), one package per task.

Each package owns everything specific to its task. Its ``__init__`` is plain Python: the task's heads' checkpoint
names (:class:`~albert_tf.checkpoints.heads.TaskHead`) and the :class:`~albert_tf.tasks.registry.TaskExport` that
``export_savedmodel`` and the conversions read. Beside it: ``options.py`` (the options dataclass and
``make_config``) and ``inputs.py`` (``check_inputs`` of its input files), also plain Python; ``task.py`` (a
:class:`~albert_tf.tasks.base.FineTuningTask` and ``run``), ``model.py`` (its Keras model, listing its heads as
``task_heads``), ``export.py`` (its serving signatures), its scoring and diagnostics, which import TensorFlow and
are imported when a run or an export starts. So a runner builds and checks its config and reads its input files
before a pretrained preset's download and TensorFlow's start-up, and ``export_savedmodel --help`` lists every task's
flags without TensorFlow. Shared readers, layers and metrics stay on their floors (``data``, ``modeling``,
``evaluation``).

* ``base``: what the fine-tuning tasks share (options, tokenizer and config checks, input buckets, run record).
* ``registry``: the tasks, found one way (``BUILT_IN`` here and the ``albert_tf.tasks`` entry points).
* ``pretraining``: MLM + SOP pretraining (``run_pretraining``), and the small curve run of the demo.
* ``glue``: GLUE classification / regression (``run_classifier``, ``export_savedmodel --task=classifier``).
* ``squad``: SQuAD 1.1 / 2.0 (``run_squad``), and the span-upper-bound diagnostic
  (``python -m albert_tf.tasks.squad span_upper_bound``).
* ``race``: RACE multiple choice (``run_race``), accuracy overall and per level in one run.
* ``tagging``: token tagging, named entities (``run_tagging``, ``export_savedmodel --task=tagging``), scored as
  ``conlleval`` scores.
"""
