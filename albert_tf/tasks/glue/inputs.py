"""The GLUE task's own option checks and input files, checked without TensorFlow and without the pretrained model.

``run_classifier`` calls :func:`check_inputs` before it fetches a pretrained preset or imports TensorFlow
(``cli.flags.checked_config``), so a wrong ``--data_dir`` or a bad row answers in a second, not after a download;
:meth:`GlueTask.from_options <albert_tf.tasks.glue.task.GlueTask.from_options>` calls it too, for the Python API.
"""

from __future__ import annotations

from albert_tf.data import glue
from albert_tf.tasks.glue.options import GlueOptions
from albert_tf.training.run_config import RunOptions
from albert_tf.training.task import TaskError


def needed_splits(run: RunOptions) -> list[str]:
    """The GLUE splits the run reads: train for ``do_train``, dev for ``do_eval``, test for ``do_predict``."""
    return [s for s, on in ((glue.TRAIN, run.do_train), (glue.DEV, run.do_eval), (glue.TEST, run.do_predict)) if on]


def check_inputs(options: GlueOptions, run: RunOptions) -> glue.GlueProcessor:
    """Check the options that need no pretrained file and parse every row of every split the run reads.

    Raises TaskError (a flag) or GlueDataError (names the file and line); returns the task's processor.
    """
    for name in ("data_dir", "task_name"):
        if not getattr(options, name) and (name != "data_dir" or needed_splits(run)):
            raise TaskError(f"--{name} is required")
    if not 0.0 <= options.classifier_dropout < 1.0:
        raise TaskError(f"--classifier_dropout={options.classifier_dropout} must be in [0, 1)")
    processor = glue.get_processor(options.task_name)
    for split in needed_splits(run):
        if not processor.get_examples(options.data_dir, split):  # parse + validate every row
            sources = ", ".join(processor.source_paths(options.data_dir, split))
            raise glue.GlueDataError(f"{sources}: the {split} split holds no examples")
    return processor
