"""The pretraining task's own option checks and its record files, found without TensorFlow and without the
pretrained model.

``run_pretraining`` calls :func:`check_inputs` before it fetches a pretrained preset or imports TensorFlow
(``cli.flags.checked_config``), so a glob that matches nothing, or a record of another length or no record at all,
answers in a second, not after a download. The records are checked again in :meth:`PretrainingTask.from_options
<albert_tf.tasks.pretraining.task.PretrainingTask.from_options>`, against the model config's vocabulary, and
every file whole.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from albert_tf.data.pretraining.record_files import expand_globs
from albert_tf.data.pretraining.validation import validate_pretraining_files
from albert_tf.tasks.pretraining.options import PretrainingOptions
from albert_tf.training.task import TaskError


def check_inputs(
    options: PretrainingOptions, run: Any, log: Callable[[str], None] | None = None, records: bool = True
) -> tuple[list[str] | None, list[str] | None]:
    """Check the options that read no file, expand the record globs the run reads and, with ``records``, check the
    first records of every file against the flags (``validation.validate_pretraining_files`` without the
    vocabulary); one line each. Returns ``(training files, evaluation files)``, None for a mode the run does not
    do."""
    for name in ("max_seq_length", "max_predictions_per_seq", "shuffle_buffer_size"):
        if getattr(options, name) < 1:
            raise TaskError(f"--{name} must be >= 1, got {getattr(options, name)}")
    if options.max_predictions_per_seq > options.max_seq_length:
        raise TaskError("--max_predictions_per_seq cannot exceed --max_seq_length")
    if options.masked_lm_budget < 0:
        raise TaskError(
            f"--masked_lm_budget={options.masked_lm_budget} is out of range: it must be >= 0 "
            "(0 = the records' masks, N > 0 = online masking of at most N tokens per sequence)"
        )
    prob = options.masked_lm_prob
    if prob is not None and not (math.isfinite(prob) and 0 < prob <= 1):
        raise TaskError(f"--masked_lm_prob={prob} is out of range: it must be in (0, 1]")
    if prob is not None and options.masked_lm_budget == 0:
        raise TaskError("--masked_lm_prob is read only with --masked_lm_budget > 0 (else the records' masks count)")
    train_files = eval_files = None
    if run.do_train:
        if not options.input_file:
            raise TaskError("--input_file is required with --do_train")
        train_files = expand_globs(options.input_file, "--input_file", log=log)
    if run.do_eval:
        flag = "--eval_input_file" if options.eval_input_file else "--input_file"
        if not (options.eval_input_file or options.input_file):
            raise TaskError("--do_eval needs --eval_input_file (or --input_file)")
        eval_files = expand_globs(options.eval_input_file or options.input_file, flag, log=log)
    if records:
        for files in (train_files, eval_files):
            if files:
                validate_pretraining_files(files, options.max_seq_length, options.max_predictions_per_seq,
                                           token_boundary=options.masked_lm_budget > 0, complete=False)
    return train_files, eval_files
