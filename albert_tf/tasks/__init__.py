"""The jobs on the shared runner skeleton (``albert_tf.training.experiment``), one package per task.

Each package owns everything specific to its task: its options (``options.py``: the dataclass and ``make_config``),
the job (``task.py``: a :class:`~albert_tf.training.task.Task` with ``run``), its model and the head's checkpoint
names (``model.py``, declared to :mod:`albert_tf.checkpoints.heads`), its serving signatures (``export.py``), its
scoring and diagnostics, and the :class:`~albert_tf.tasks.registry.TaskExport` that tells ``export_savedmodel`` how
to export it. Shared readers, layers and metrics stay on their floors (``data``, ``modeling``, ``evaluation``).

* ``base``: what the fine-tuning tasks share (options, tokenizer and config checks, input buckets, run record).
* ``registry``: the declared tasks (``load_tasks`` imports every package here and the ``albert_tf.tasks`` entry
  points).
* ``pretraining``: MLM + SOP pretraining (``run_pretraining``), and the small curve run of the demo.
* ``glue``: GLUE classification / regression (``run_classifier``, ``export_savedmodel --task=classifier``).
* ``squad``: SQuAD 1.1 / 2.0 (``run_squad``), and the span-upper-bound diagnostic
  (``python -m albert_tf.tasks.squad span_upper_bound``).
* ``race``: RACE multiple choice (``run_race``), accuracy overall and per level in one run.

A package's ``options`` module holds its options dataclass and ``make_config``, and its ``inputs`` module the
``check_inputs`` of its input files, plain Python; its task and model, which import TensorFlow, are imported on
first use (PEP 562, :mod:`albert_tf.lazy`). So a runner builds and checks its config and reads its input files
before a pretrained preset's download and TensorFlow's start-up, and ``export_savedmodel --help`` lists every
task's flags without TensorFlow. The model
module registers the head's checkpoint names; the package names it to
:func:`~albert_tf.checkpoints.heads.declare_head_module`, which imports it on the first head lookup.
"""
