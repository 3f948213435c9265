"""The warmup + polynomial-decay schedule against the spec 3.4 formulas written out here."""

from __future__ import annotations

import pytest

from albert_tf.training.schedules import WarmupPolynomialDecay


def official_lr(step, init_lr, n, warmup, power=1.0, start=0):
    decayed = init_lr * (1 - min(step, n) / n) ** power
    s = step - start
    if warmup and s < warmup:
        return init_lr * s / warmup
    return decayed


@pytest.mark.parametrize(
    "step,expected",
    [
        (0, 0.0),  # warmup start
        (50, 0.00176 * 50 / 100),  # mid-warmup
        (99, 0.00176 * 99 / 100),  # last warmup step
        (100, 0.00176 * (1 - 100 / 1000)),  # warmup end: decay measured from step 0, not from warmup end
        (550, 0.00176 * 0.45),  # mid-decay
        (1000, 0.0),  # end
        (1500, 0.0),  # past the end: stays 0 (cycle=False)
    ],
)
def test_official_schedule_points(step, expected):
    sched = WarmupPolynomialDecay(0.00176, num_train_steps=1000, num_warmup_steps=100)
    assert float(sched(step)) == pytest.approx(expected, abs=1e-9)
    assert expected == pytest.approx(official_lr(step, 0.00176, 1000, 100), abs=1e-12)


def test_poly_power_and_no_warmup():
    sched = WarmupPolynomialDecay(1.0, num_train_steps=100, num_warmup_steps=0, poly_power=2.0)
    for step in (0, 10, 50, 99, 100):
        assert float(sched(step)) == pytest.approx((1 - step / 100) ** 2, abs=1e-6)


def test_start_warmup_step_including_negative_quirk():
    sched = WarmupPolynomialDecay(1.0, num_train_steps=1000, num_warmup_steps=100, start_warmup_step=200)
    for step in (0, 150, 200, 250, 299, 300, 600):
        assert float(sched(step)) == pytest.approx(official_lr(step, 1.0, 1000, 100, start=200), abs=1e-6)
    assert float(sched(100)) < 0  # official quirk: negative lr before start_warmup_step
    assert float(sched(300)) == pytest.approx(0.7, abs=1e-6)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="num_train_steps"):
        WarmupPolynomialDecay(1.0, num_train_steps=0)
