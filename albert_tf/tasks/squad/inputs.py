"""The SQuAD task's own option checks and its JSON files, checked without TensorFlow and without the pretrained
model.

``run_squad`` calls :func:`check_inputs` before it fetches a pretrained preset or imports TensorFlow
(``cli.flags.checked_config``), so a missing ``--train_file`` or a malformed question answers in a second, not
after a download; :meth:`SquadTask.from_options <albert_tf.tasks.squad.task.SquadTask.from_options>` keeps what
it read.
"""

from __future__ import annotations

import dataclasses

from albert_tf.data import squad as squad_data
from albert_tf.tasks.base import input_buckets
from albert_tf.tasks.squad.options import SquadOptions
from albert_tf.training.run_config import RunOptions
from albert_tf.training.task import PREDICT, TaskError


@dataclasses.dataclass
class SquadInputs:
    """What :func:`check_inputs` read: the training questions and the prediction file (as JSON and as questions)."""

    train_examples: list[squad_data.SquadExample] = dataclasses.field(default_factory=list)
    predict_dataset: list[dict] = dataclasses.field(default_factory=list)
    predict_examples: list[squad_data.SquadExample] = dataclasses.field(default_factory=list)


def check_options(options: SquadOptions, run: RunOptions) -> None:
    """The SQuAD flags that read no file: which files the modes need, the window and n-best settings (one line)."""
    if run.do_train and not options.train_file:
        raise TaskError("--do_train needs --train_file (SQuAD JSON)")
    if (run.do_eval or run.do_predict) and not options.predict_file:
        raise TaskError("--do_eval/--do_predict need --predict_file (SQuAD JSON)")
    squad_data.check_window_settings(options.max_seq_length, options.doc_stride, options.max_query_length)
    for name in ("doc_stride", "n_best_size", "max_answer_length", "start_n_top", "end_n_top"):
        if getattr(options, name) < 1:
            raise TaskError(f"--{name} must be >= 1, got {getattr(options, name)}")
    if not 0.0 <= options.dropout_prob < 1.0:
        raise TaskError(f"--dropout_prob={options.dropout_prob} must be in [0, 1)")
    if options.start_n_top > options.max_seq_length or options.end_n_top > options.max_seq_length:
        raise TaskError("--start_n_top and --end_n_top must be <= --max_seq_length")
    if options.nbest_over_padding:
        if options.version_2_with_negative:
            raise TaskError("--nbest_over_padding is a v1 option: the v2 beam masks padding (p_mask), as the "
                            "official v2 does")
        if input_buckets(options, PREDICT) not in (None, (options.max_seq_length,)):
            raise TaskError(f"--nbest_over_padding needs every batch padded to --max_seq_length, as the official: "
                            f"add --bucket_lengths=none (now {options.bucket_lengths!r})")


def check_inputs(options: SquadOptions, run: RunOptions) -> SquadInputs:
    """:func:`check_options`, then read every question of the files the run reads (SquadDataError names the file
    and the question); returns what was read."""
    check_options(options, run)
    v2 = options.version_2_with_negative
    inputs = SquadInputs()
    if run.do_train:
        inputs.train_examples = squad_data.read_squad_examples(options.train_file, True, v2)
        if not inputs.train_examples:
            raise TaskError(f"--train_file {options.train_file} holds no question")
    if run.do_eval or run.do_predict:
        inputs.predict_dataset = squad_data.read_squad_json(options.predict_file)
        inputs.predict_examples = squad_data.read_squad_examples(options.predict_file, False, v2,
                                                                 dataset=inputs.predict_dataset)
        if not inputs.predict_examples:
            raise TaskError(f"--predict_file {options.predict_file} holds no question")
        if run.do_eval and not any(e.answers or e.is_impossible for e in inputs.predict_examples):
            raise TaskError(f"--do_eval: --predict_file {options.predict_file} has no gold answers to score")
    return inputs
