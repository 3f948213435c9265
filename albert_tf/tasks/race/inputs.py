"""The RACE task's own option checks and its data files, checked without TensorFlow and without the pretrained
model.

``run_race`` calls :func:`check_inputs` before it fetches a pretrained preset or imports TensorFlow
(``cli.flags.checked_config``), so a wrong ``--data_dir`` or a malformed question file answers in a second, not
after a download; :meth:`RaceTask.from_options <albert_tf.tasks.race.task.RaceTask.from_options>` calls it too.
"""

from __future__ import annotations

from albert_tf.data import race as race_data
from albert_tf.tasks.base import needed_splits
from albert_tf.tasks.race.options import RaceOptions
from albert_tf.training.run_config import RunOptions
from albert_tf.training.task import EVAL, PREDICT, TRAIN, TaskError

# The RACE folder of each split the runner reads.
SPLITS = {TRAIN: "train", EVAL: "dev", PREDICT: "test"}


def check_inputs(options: RaceOptions, run: RunOptions) -> None:
    """Check the options that need no pretrained file and read every question of every split the run reads
    (RaceDataError names the file; a question without an answer is refused where the run needs answers)."""
    if options.task_name.lower() != "race":
        raise TaskError(f"--task_name={options.task_name}: run_race knows only 'race'")
    if not options.data_dir and needed_splits(run):
        raise TaskError("--data_dir is required")
    if options.middle_only and options.high_only:
        raise TaskError("give at most one of --middle_only and --high_only")
    if options.max_qa_length < 1 or options.max_seq_length <= options.max_qa_length + 3:
        raise TaskError(
            f"--max_seq_length={options.max_seq_length} must be > --max_qa_length + 3 "
            f"({options.max_qa_length + 3}) and --max_qa_length >= 1: [CLS] article [SEP] qa [SEP]"
        )
    if not 0.0 <= options.dropout_prob < 1.0:
        raise TaskError(f"--dropout_prob={options.dropout_prob} must be in [0, 1)")
    for split in needed_splits(run):
        examples = race_data.read_race_examples(options.data_dir, SPLITS[split], options.middle_only,
                                                options.high_only)
        unlabelled = [e.example_id for e in examples if e.label is None]
        if unlabelled and split != PREDICT:
            raise TaskError(f"--data_dir {options.data_dir}: {SPLITS[split]} question {unlabelled[0]} has no "
                            f"answer ({len(unlabelled)} without one); training and --do_eval need answers")
