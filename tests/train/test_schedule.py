"""Each schedule against its closed form, written out independently of the implementation."""

from __future__ import annotations

import math

import pytest

from encoderlab.errors import UserError
from encoderlab.train.schedule import Schedule

T = 50


def _curve(sched: Schedule, total: int = T) -> list[float]:
    return [sched.factor(s, total) for s in range(total)]


def test_warmup_then_constant():
    got = _curve(Schedule(kind="constant", warmup=10))
    assert got[:10] == pytest.approx([(i + 1) / 10 for i in range(10)])
    assert got[10:] == [1.0] * 40


def test_linear_to_floor():
    got = _curve(Schedule(kind="linear", warmup=0, end_fraction=0.1))
    assert got == pytest.approx([0.1 + 0.9 * (1 - t / T) for t in range(T)])


def test_cosine_after_warmup():
    got = _curve(Schedule(kind="cosine", warmup=5))
    want = [(i + 1) / 5 for i in range(5)] + [0.5 * (1 + math.cos(math.pi * t / 45)) for t in range(45)]
    assert got == pytest.approx(want)


def test_one_minus_sqrt_matches_paper2_closed_form():
    # lr(t) = end + (peak - end)(1 - sqrt(t/T)), peak 2e-4, end 2e-5 (paper 2's decay)
    peak, end = 2e-4, 2e-5
    got = [peak * f for f in _curve(Schedule(kind="1-sqrt", end_fraction=0.1))]
    assert got == pytest.approx([end + (peak - end) * (1 - math.sqrt(t / T)) for t in range(T)])
    assert got[0] == pytest.approx(peak)


def test_wsd_warmup_stable_linear_decay():
    got = _curve(Schedule(kind="wsd", warmup=5, decay=10))
    want = [(i + 1) / 5 for i in range(5)] + [1.0] * 35 + [1 - j / 10 for j in range(10)]
    assert got == pytest.approx(want)


def test_wsd_with_1_sqrt_decay_and_floor():
    got = _curve(Schedule(kind="wsd", decay=20, decay_shape="1-sqrt", end_fraction=0.25))
    want = [1.0] * 30 + [0.25 + 0.75 * (1 - math.sqrt(j / 20)) for j in range(20)]
    assert got == pytest.approx(want)


def test_bad_schedules_are_user_errors():
    with pytest.raises(UserError, match="warmup"):
        Schedule(warmup=-1)
    with pytest.raises(UserError, match="only applies to kind wsd"):
        Schedule(kind="linear", decay=3)
    with pytest.raises(UserError, match="exceed the phase"):
        Schedule(kind="wsd", warmup=30, decay=30).check(50, "phase clm")
