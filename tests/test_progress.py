"""The one progress helper of long steps (``albert_tf.progress``): a line at least every 10 s while work is
reported, never more often, saying how much is done, how fast and how long is left; and the commands' long loops
report through it."""

from __future__ import annotations

import inspect

from albert_tf.progress import EVERY_S, Progress, duration


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_line_every_ten_seconds_of_work_and_never_more_often():
    clock, lines = Clock(), []
    progress = Progress("caching train", total=1000, unit="records", log=lines.append, clock=clock)
    times = []
    for _ in range(1000):  # one record every 0.3 s: 300 s in all
        clock.now += 0.3
        before = len(lines)
        progress.update()
        if len(lines) > before:
            times.append(clock.now)
    gaps = [b - a for a, b in zip([100.0, *times], times)]
    assert EVERY_S == 10.0 and all(10.0 <= g < 10.3 + 1e-9 for g in gaps), gaps
    assert len(lines) == 29
    assert lines[0] == "caching train: 34 of 1,000 records (3.4%), 3.3 records/s, about 5 min left"


def test_without_a_total_the_line_has_the_count_and_rate_and_a_tick_the_time():
    clock, lines = Clock(), []
    progress = Progress("create_pretraining_data", unit="lines", log=lines.append, clock=clock)
    clock.now += 12
    progress.update(600)
    assert lines == ["create_pretraining_data: 600 lines, 50.0 lines/s"]
    silent = Progress("training the vocabulary", log=lines.append, clock=clock)
    for _ in range(160):  # a library call polled every 0.25 s for 40 s
        clock.now += 0.25
        silent.tick()
    assert lines[1:] == ["training the vocabulary: 10 s", "training the vocabulary: 20 s",
                         "training the vocabulary: 30 s", "training the vocabulary: 40 s"]


def test_durations_read_as_a_person_says_them():
    assert [duration(s) for s in (4, 89, 90, 3000, 5400, 7260)] == ["4 s", "89 s", "2 min", "50 min", "1 h 30 min",
                                                                     "2 h 1 min"]


def test_the_long_loops_of_the_commands_report_through_it():
    """Each step a newcomer watched in silence for minutes (issue: a newcomer's first hour)."""
    from albert_tf.data import cache, documents, prepare_text
    from albert_tf.data.pretraining import pipeline
    from albert_tf.demo import table1
    from albert_tf.tokenization import train_vocab
    from albert_tf.training import trainer

    for where, function in ((cache, "write_records"), (documents, "prepare_split"),
                            (prepare_text, "prepare_files"), (prepare_text, "check_decodable"),
                            (pipeline, "create_pretraining_data"), (train_vocab, "train_vocab"),
                            (trainer.Trainer, "collect_outputs"), (table1, "run")):
        source = inspect.getsource(getattr(where, function))
        assert "Progress(" in source and (".update(" in source or ".tick" in source), function


def test_ticking_prints_while_one_long_piece_of_work_runs():
    """The block waits (no update() meanwhile) until the ticking thread has printed three lines; each came at least
    ``every_s`` after the one before on the progress's own clock, however slowly the machine ran the thread."""
    import threading

    lines, stamps, third = [], [], threading.Event()

    def log(line: str) -> None:
        lines.append(line)
        stamps.append(progress.last)  # the clock's reading for this line
        if len(lines) >= 3:
            third.set()

    progress = Progress("create_pretraining_data", unit="lines", every_s=0.2, log=log)
    with progress.ticking(interval_s=0.05):
        assert third.wait(timeout=300), lines  # one chunk that takes long: only a hang reaches the timeout
    assert all(line.startswith("create_pretraining_data: ") for line in lines[:3])
    gaps = [b - a for a, b in zip([progress.start, *stamps], stamps)]
    assert all(gap >= 0.2 for gap in gaps), gaps
