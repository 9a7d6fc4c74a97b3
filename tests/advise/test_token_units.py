"""Tokens in two units (`ladderchecks.check_token_units`): between schedules whose budgets per parameter
spread wide, and within one schedule. In-process, on `Observation`s alone: the check runs before anything is
fitted, so no ladder is advised here."""

from __future__ import annotations

import dataclasses

import pytest

from encoderlab.advise.ladder import Observation, Schedule
from encoderlab.advise.ladderchecks import check_token_units
from encoderlab.errors import UserError

MLM, CLM, SPLIT = Schedule.biphasic(0.0, 0.4), Schedule.biphasic(1.0, None), Schedule.biphasic(0.5, 0.4)


def _runs(schedule, points, name="r", seeds=(0,)):
    """One run per (N, D) and seed, each named `name` and its index (its source, as a file's line)."""
    grid = [(n, d, s) for n, d in points for s in seeds]
    return [
        Observation(schedule=schedule, params=n, tokens=d, seed=s, value=1.0, source=f"{name}{i}")
        for i, (n, d, s) in enumerate(grid)
    ]


FIXED = [(n, 1.6e8) for n in (1e6, 4e6, 1.6e7, 6.4e7)]  # one D at every size: 160, 40, 10, 2.5 per parameter
SWEEP = [(n, b * n) for n in (1e6, 4e6) for b in (1, 10, 100, 1000)]  # 1-1000 tokens per parameter


@pytest.mark.parametrize(
    ("wide", "unit", "said"),
    [
        (FIXED, 1e3, "f1 (MLM-40) is at N=4e+06, D=1.6e+08 (40 tokens per parameter) and c0 (CLM) at "
         "N=2e+06, D=40000 (0.02): 2e+03 times apart in tokens per parameter, and their schedules 1e+03 times"),
        (SWEEP, 1e6, "f1 (MLM-40) is at N=1e+06, D=1e+07 (10 tokens per parameter) and c0 (CLM) at N=2e+06, "
         "D=40 (2e-05): 5e+05 times apart in tokens per parameter, and their schedules 1.58e+06 times"),
    ],
    ids=["fixed-tokens-beside-thousands", "budgets-1-to-1000-beside-millions"],
)  # fmt: skip
def test_a_schedule_in_another_unit_beside_one_whose_budgets_spread_wide_is_refused(wide, unit, said):
    """Chinchilla's 20 tokens per parameter written in thousands (0.02) beside a fixed D (2.5-160 per
    parameter), or in millions beside budgets of 1-1000 per parameter: their nearest runs were 125 and 5e4
    times apart, no unit factor within 3, and the ladder was advised. Every run of a schedule in another unit
    is moved by one factor, so its median is: medians a unit factor apart are two units however wide the
    budgets spread."""
    chinchilla = _runs(CLM, [(n, 20 * n / unit) for n in (2e6, 8e6, 3.2e7)], "c")
    with pytest.raises(UserError) as exc:
        check_token_units((*_runs(MLM, wide, "f"), *chinchilla))
    assert str(exc.value).startswith(said), exc.value
    assert str(exc.value).endswith(
        " apart at their medians, tokens in two units (thousands, millions or billions beside a count); "
        "give every run's tokens as a count of tokens"
    ), exc.value


def test_schedules_of_budgets_apart_are_still_compared_at_their_nearest_runs():
    """Small budgets (1-4 per parameter) in thousands beside a fixed D (2.5-160): medians 1e4 apart, no unit
    factor within 3, but nearest runs 625 apart, refused as before the medians were compared."""
    small = _runs(SPLIT, [(n, b * n / 1e3) for n in (3e6, 1.2e7) for b in (1, 2, 4)], "s")
    with pytest.raises(
        UserError, match=r": 625 times apart in tokens per parameter, where their schedules come"
    ):
        check_token_units((*_runs(MLM, FIXED, "f"), *small))


def test_honest_ladders_whose_budgets_spread_wide_pass():
    """As written by hand: a fixed D (2.5-160 per parameter), Chinchilla (20) and small budgets (1-4); budgets
    of 1-1000 per parameter beside Chinchilla; and two schedules sharing budgets of 10-1000 per parameter, one
    run mostly below them and one mostly above, whose medians are 500 times apart but whose runs meet."""
    chinchilla = _runs(CLM, [(n, 20 * n) for n in (2e6, 8e6, 3.2e7)], "c")
    small = _runs(SPLIT, [(n, b * n) for n in (3e6, 1.2e7) for b in (1, 2, 4)], "s")
    check_token_units((*_runs(MLM, FIXED, "f"), *chinchilla, *small))
    check_token_units((*_runs(MLM, SWEEP, "w"), *chinchilla))
    low = _runs(MLM, [(1e6, b * 1e6) for b in (1, 1.5, 2, 3, 10, 1000)], "l")
    high = _runs(CLM, [(1e6, b * 1e6) for b in (10, 1000, 1500, 2000, 3000)], "h")
    check_token_units((*low, *high))


@pytest.mark.parametrize(
    ("points", "seeds", "unit", "said"),
    [
        ([(n, 20 * n) for n in (1e6, 2e6, 4e6)], (0, 1), 1e3, "r0 (CLM) is at N=1e+06, D=2e+07 and r1 (CLM) "
         "at N=1e+06, D=20000: 1e+03 times apart at one size"),
        (FIXED, (0, 1), 1e6, "r0 (CLM) is at N=1e+06, D=1.6e+08 and r1 (CLM) at N=1e+06, D=160: 1e+06 times "
         "apart at one size"),
    ],
    ids=["chinchilla-seed-in-thousands", "fixed-tokens-seed-in-millions"],
)  # fmt: skip
def test_a_seed_whose_tokens_are_in_another_unit_than_the_schedules_other_seed_is_refused(
    points, seeds, unit, said
):
    """Seed 1 logged by another script, its D in thousands or millions: the schedule's runs at one size 1e3 or
    1e6 times apart with none between. Schedules were compared with each other only, and this one was
    advised. A fixed D's budgets per parameter span 64x across sizes (2.5-160, and 2.5e-6-1.6e-4 in millions),
    so across the schedule its two units' nearest runs are 1.6e4 apart, no unit factor; at one size, 1e6."""
    runs = _runs(CLM, points, seeds=seeds)
    runs = [o if o.seed == 0 else _scaled(o, unit) for o in runs]
    with pytest.raises(UserError) as exc:
        check_token_units((*runs, *_runs(MLM, points, "m")))
    assert str(exc.value) == (
        f"{said}, with no run of CLM between, tokens in two units (thousands, millions or billions beside a "
        "count); give every run's tokens as a count of tokens"
    )


def _scaled(o: Observation, unit: float) -> Observation:
    return dataclasses.replace(o, tokens=o.tokens / unit)


def test_a_size_whose_tokens_are_in_another_unit_is_refused():
    """The runs of one size, 4e6, logged in thousands by the script that ran it: 20 and 0.02 tokens per
    parameter at neighbouring sizes, none between."""
    runs = _runs(CLM, [(n, 20 * n / (1e3 if n == 4e6 else 1)) for n in (1e6, 2e6, 4e6)])
    with pytest.raises(UserError, match=r"^r1 \(CLM\) is at N=2e\+06, D=4e\+07 \(20 tokens per parameter\) and "
                       r"r2 \(CLM\) at N=4e\+06, D=80000 \(0\.02\): 1e\+03 times apart at neighbouring sizes, "
                       r"with no run of CLM between"):  # fmt: skip
        check_token_units(tuple(runs))


def test_budgets_of_one_schedule_far_apart_for_their_sizes_pass():
    """A fixed D of 1e10 at 1e6 and 1e9 parameters, 1e4 and 10 per parameter with none between: 1000x apart
    as their sizes are, not as a unit; a sweep of budgets 2x apart from 1 to 1024 per parameter at one size."""
    check_token_units(tuple(_runs(CLM, [(1e6, 1e10), (1e9, 1e10)])))
    check_token_units(tuple(_runs(CLM, [(1e6, 2**k * 1e6) for k in range(11)])))
