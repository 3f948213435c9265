"""The report's statistics: a mean over seeds with its standard error, and the one rule that turns a measured
difference into a verdict.

Every finding of the report is a claim of the paper that one quantity exceeds another (by a margin, for "clearly
above the majority class"); :func:`verdict` reads our difference against its standard error:

* **reproduced**: the paper's direction holds and the difference exceeds 2 standard errors of the difference;
* **same direction, not resolved at this scale**: the direction holds, within 2 standard errors;
* **opposite direction, not resolved at this scale**: the direction does not hold, within 2 standard errors;
* **opposite**: the reverse holds beyond 2 standard errors.

Standard errors: of a mean over ``n >= 2`` seeds, the sample standard deviation over ``sqrt(n)``; of a single
run's accuracy, the binomial ``sqrt(p (1 - p) / N)`` of its ``N`` evaluated examples (it counts the finite test set
only, not what another seed would change, so it is a lower bound and the report says so); of a count measured by
building a model, 0. The standard error of a difference of independent estimates is the root of the sum of squares.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

__all__ = ["RULE", "SIGMAS", "VERDICTS", "Estimate", "binomial_se", "combine", "difference", "estimate", "verdict"]

SIGMAS = 2.0

REPRODUCED = "reproduced"
SAME_DIRECTION = "same direction, not resolved at this scale"
OPPOSITE_DIRECTION = "opposite direction, not resolved at this scale"
OPPOSITE = "opposite"
#: the verdicts from best to worst (a finding made of several comparisons takes its worst: :func:`combine`)
VERDICTS = (REPRODUCED, SAME_DIRECTION, OPPOSITE_DIRECTION, OPPOSITE)

RULE = (
    "**How a finding is called.** Each finding is a claim of the paper that one quantity exceeds another (by a "
    "stated margin where it says so). It is **reproduced** where the paper's direction holds here and the "
    f"difference exceeds {SIGMAS:g} standard errors of the difference; **{SAME_DIRECTION}** where the direction "
    f"holds within {SIGMAS:g} standard errors; **{OPPOSITE_DIRECTION}** where it does not hold, within "
    f"{SIGMAS:g} standard errors; **{OPPOSITE}** where the reverse holds beyond {SIGMAS:g} standard errors. "
    "A finding made of several comparisons takes the worst of their verdicts. Standard errors: of a mean over "
    "seeds, the standard deviation over the seeds divided by the square root of their number; of a single run's "
    "accuracy, the binomial standard error of its evaluation set (the test set's noise only: a lower bound, since "
    "another seed moves it too); of a parameter count, 0; of one run of any other quantity, unknown, which resolves "
    "nothing. `albert_tf.reproduce.stats` applies the rule; a test "
    "recomputes every verdict of this page from `reproduction/results.json`."
)


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A measured quantity: ``mean`` over ``n`` values, with standard error ``se`` (see the module docstring)."""

    mean: float
    se: float
    n: int

    def text(self, scale: float = 100.0, digits: int = 1) -> str:
        """``mean ± se`` scaled (accuracies in points by default), one more digit where the standard error would
        round to 0; a single run shows its mean only."""
        if self.n < 2:
            return f"{scale * self.mean:.{digits}f}"
        if round(scale * self.se, digits) == 0:
            digits += 1
        return f"{scale * self.mean:.{digits}f} ± {scale * self.se:.{digits}f}"


def estimate(values: Sequence[float], examples: int | None = None) -> Estimate:
    """The mean of ``values`` (one per seed) and its standard error: over seeds for two or more, else the binomial
    standard error of an accuracy measured on ``examples``, else NaN (one run of a noisy quantity whose noise is
    unknown: :func:`verdict` then never calls it reproduced)."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("an estimate needs at least one value")
    n = len(values)
    mean = sum(values) / n
    if n >= 2:
        var = sum((v - mean) ** 2 for v in values) / (n - 1)
        return Estimate(mean, math.sqrt(var / n), n)
    if examples:
        return Estimate(mean, binomial_se(mean, examples), 1)
    return Estimate(mean, math.nan, 1)


def binomial_se(p: float, examples: int) -> float:
    """The standard error of an accuracy ``p`` measured on ``examples`` examples (the test set's noise only)."""
    return math.sqrt(max(p * (1 - p), 0.0) / max(examples, 1))


def difference(a: Estimate, b: Estimate | float, margin: float = 0.0) -> tuple[float, float]:
    """``a - b - margin`` and its standard error (``b`` a number: a fixed threshold without error)."""
    if isinstance(b, Estimate):
        return a.mean - b.mean - margin, math.hypot(a.se, b.se)
    return a.mean - float(b) - margin, a.se


def verdict(diff: float, se: float) -> str:
    """The rule of the module docstring for a difference ``diff`` whose claimed direction is ``> 0`` (an unknown,
    NaN, standard error resolves nothing: the direction only)."""
    if math.isnan(se):
        return SAME_DIRECTION if diff > 0 else OPPOSITE_DIRECTION
    if diff > SIGMAS * se:
        return REPRODUCED
    if diff < -SIGMAS * se:
        return OPPOSITE
    return SAME_DIRECTION if diff > 0 else OPPOSITE_DIRECTION


def combine(verdicts: Sequence[str]) -> str:
    """The worst of several verdicts (a finding that needs each of its comparisons to hold)."""
    return max(verdicts, key=VERDICTS.index)
