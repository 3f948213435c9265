"""Progress lines for long steps: a count (of a total), its rate and the time left, at most every few seconds.

One helper for every command whose step can run longer than a few seconds (reading a corpus, converting features,
an evaluation pass, a library call that says nothing while it works), so that a user never watches a silent
terminal for minutes and each line reads the same way::

    preparing text: 12 of 300 files (4.0%), 2.3 files/s, about 2 min left
    training the vocabulary: 40 s

Floor 0: no albert-tf import, no TensorFlow.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

#: The most seconds between two progress lines.
EVERY_S = 10.0


def duration(seconds: float) -> str:
    """``45 s``, ``3 min``, ``1 h 20 min``."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if minutes < 90:
        return f"{minutes:.0f} min"
    return f"{int(minutes // 60)} h {int(minutes % 60)} min"


class Progress:
    """Counts work done and prints a line when ``every_s`` seconds have passed since the last one.

    ``what`` names the step, ``unit`` the things counted, ``total`` (if known) how many there are: then the line
    has the share done and the time left at the rate so far. :meth:`tick` with no count prints the time elapsed
    only (a call that reports nothing while it runs). ``clock`` is injectable for tests.
    """

    def __init__(self, what: str, total: float | None = None, unit: str = "", every_s: float = EVERY_S,
                 log: Callable[[str], None] | None = print, clock: Callable[[], float] = time.monotonic) -> None:
        self.what, self.total, self.unit, self.every_s = what, total, unit, every_s
        self.log, self.clock = log, clock
        self.count = 0.0
        self.start = self.last = clock()
        self.lines = 0

    def update(self, n: float = 1) -> None:
        """``n`` more done; a line if it is time for one."""
        self.count += n
        self.tick()

    def tick(self) -> None:
        """A line if ``every_s`` seconds have passed since the last (or the start)."""
        now = self.clock()
        if now - self.last >= self.every_s:
            self.last = now
            self.lines += 1
            if self.log is not None:
                self.log(self.line(now))

    def line(self, now: float | None = None) -> str:
        now = self.clock() if now is None else now
        elapsed = now - self.start
        if not self.count and self.total is None:
            return f"{self.what}: {duration(elapsed)}"
        unit = f" {self.unit}" if self.unit else ""
        done = f"{self.count:,.0f}"
        if self.total:
            done += f" of {self.total:,.0f}{unit} ({100 * self.count / self.total:.1f}%)"
        else:
            done += unit
        rate = self.count / elapsed if elapsed > 0 else 0.0
        text = f"{self.what}: {done}, {rate:,.1f}{unit}/s"
        if self.total and rate > 0:
            text += f", about {duration((self.total - self.count) / rate)} left"
        return text

    @contextlib.contextmanager
    def ticking(self, interval_s: float = 1.0) -> Iterator[Progress]:
        """:meth:`tick` from a background thread while the block runs: a line at least every ``every_s`` seconds
        even while the block waits on one long piece of work (a worker's chunk, a library call)."""
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(interval_s):
                self.tick()

        thread = threading.Thread(target=run, name=f"progress: {self.what}", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()
