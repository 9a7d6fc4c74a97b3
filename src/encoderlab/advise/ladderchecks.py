"""Checks of a ladder's values that no single row shows: rungs written apart, scores or tokens in two units.

`ladder.Ladder` runs them with its other checks, before anything is fitted. Each refuses what was advised
without a word: the advice it gave was not wrong in its arithmetic but in what it was told, so the line names
two runs that disagree and the fix. The trade-off is a threshold each (`RUNG_RTOL`, `FRACTION_TOP` with
`PERCENT_FLOOR`): loose enough that a ladder as written by hand passes, tight enough that no real ladder
meets it (two budgets 1% apart; a schedule under 1% at every run beside one at 10% or more at every run; one
schedule's tokens per parameter 1e3, 1e6 or 1e9 times another's at their nearest, within a factor
`UNIT_SLACK`).
`RUNG_RTOL` and its test (`rungs_apart`) live in `study/rungs.py`, so a ladder study refuses such rungs before
it trains, by the same test.
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING

from encoderlab.errors import UserError
from encoderlab.study.rungs import RUNG_RTOL, rungs_apart

if TYPE_CHECKING:
    from encoderlab.advise.ladder import Ladder, Observation


def check_rungs_apart(obs: tuple[Observation, ...]) -> None:
    """No two rungs within `RUNG_RTOL` in both N and D. A rung is its exact (N, D): seeds pool, and schedules pair,
    only there. A ladder file whose second seeds logged their own token counts (4e8 and 4.0004e8) had no rung of
    two seeds and was told to "train a second seed" it had; one whose schedules logged counts apart shared no rung,
    so nothing could be backtested or recommended, and where some rungs split the seed noise lost their runs."""
    first = {o.rung: o for o in reversed(obs)}
    pair = rungs_apart(first)
    if pair:
        (n, d), (m, e) = pair
        a, b = first[(n, d)], first[(m, e)]
        raise UserError(
            f"{a.source or 'a run'} is at N={n:.6g}, D={d:.6g} and {b.source or 'another run'} at "
            f"N={m:.6g}, D={e:.6g}, within {RUNG_RTOL:.0%} of it: two rungs, so their seeds are not pooled "
            "nor their schedules compared; give the runs of one size and budget the same params and "
            "tokens (the budget, not each run's own count)"
        )


FRACTION_TOP = 1.0
"""A score in percent is read as a fraction where every run of a schedule scores at most this (`check_percent_scores`)."""
PERCENT_FLOOR = 10.0
"""... beside a schedule whose every run not at 0 scores at least this: 10x above any fraction, so two units, not
one schedule far behind another."""


def _small(runs) -> bool:
    return all(0.0 <= o.value <= FRACTION_TOP for o in runs)


def check_percent_scores(ladder: Ladder) -> None:
    """Scores in percent (ceiling 100) that are not: a schedule scored as fractions (0.79 for 79%) beside others in
    percent, or every run so. Each was advised: a fraction's distance to 100 is ~99 at every scale, so its curve
    was flat at the bottom of the ranking (a fractions-only ladder's curves were all flat, P(best) from noise).
    Refused by schedule, not by run: a hard task's score (CoLA's MCC) may start near 0 and grow, but a schedule
    at most 1% at every run beside one at 10% or more at every run is two units.

    A score of 0 is in no unit (0 is 0 in both), so it counts on neither side. A schedule at 0 at some runs (MCC
    0: a classifier of the majority class) and at most 1 at the others is read as percent near chance, what CoLA
    gives a small model (MCC 0, 0, 0.5), not as fractions (0%, 0%, then 50%): it was refused as fractions beside
    percent. The trade-off: fractions with a run at exactly 0 beside percent pass this check. A schedule at 10
    or more wherever it is not 0 is percent (fractions beside one at 0 at its smallest size were advised).

    A ladder whose every score is at most 1 is refused too, unless the scores are said to be percent
    (`Metric.percent`, `--percent`: a hard task at 0.3%, whose ladder has no other way to be advised); a
    ladder at 0 everywhere is advised, its curves flat, which the advice warns of. Said percent, the mixed
    check is not made either: the user's word on the unit is taken, as `--ceiling 1` is for fractions."""
    metric = ladder.metric
    if metric.better != "higher" or metric.ceiling != 100.0 or metric.percent:
        return
    runs = {s: ladder.of(s) for s in ladder.schedules}
    every = [o for rs in runs.values() for o in rs]
    if _small(every):
        if any(o.value != 0.0 for o in every):
            a = max(every, key=lambda o: o.value)
            raise UserError(
                f"every run's {metric.name} is at most {FRACTION_TOP:g} (e.g. {a.value:g} at {a.source or 'a run'}), "
                "as scores given as fractions are, but its ceiling is 100 (percent); give --ceiling 1 for "
                "fractions, or --percent if they truly are percent under 1 (a hard task: its schedules may differ "
                "by little more than their seeds)"
            )
        return
    low = [s for s, rs in runs.items() if _small(rs) and all(o.value != 0.0 for o in rs)]
    nonzero = {s: [o for o in rs if o.value != 0.0] for s, rs in runs.items()}
    high = [s for s, rs in nonzero.items() if rs and all(o.value >= PERCENT_FLOOR for o in rs)]
    if low and high:
        a, b = max(runs[low[0]], key=lambda o: o.value), min(nonzero[high[0]], key=lambda o: o.value)
        at_zero = " where not 0" if len(nonzero[high[0]]) < len(runs[high[0]]) else ""
        raise UserError(
            f"{metric.name} of {a.schedule.name} is at most {FRACTION_TOP:g} at every run ({a.value:g} at "
            f"{a.source or 'a run'}) but of {b.schedule.name} at least {PERCENT_FLOOR:g}{at_zero} ({b.value:g} at "
            f"{b.source or 'a run'}): fractions beside percent; give every score in one unit: percent (ceiling "
            "100), or fractions with --ceiling 1 (or --percent if they truly are percent)"
        )


UNIT_FACTORS = (1e3, 1e6, 1e9)
"""Thousands, millions, billions: the units tokens are written in besides a count (`check_token_units`)."""
UNIT_SLACK = 3.0
"""How far from a unit factor two schedules' nearest budgets may be and still read as two units: a ladder's
budgets span 10-40 tokens per parameter, so nearest budgets 333x apart are none."""


def _per_param(o: Observation) -> float:
    return o.tokens / o.params


def check_token_units(obs: tuple[Observation, ...]) -> None:
    """Tokens of one schedule in another unit than the others' (D in billions beside counts): its runs were
    advised, their tokens per parameter 1e9 times too few, with nothing but the warning that the target is far
    past them. Two schedules are compared by their nearest budgets in tokens per parameter (D/N), over every
    pair of their runs, at any sizes: apart by a unit factor (1e3, 1e6, 1e9, within `UNIT_SLACK`), they are two
    units, never two budgets of one ladder. At one size N that is their nearest token counts there, the check's
    reach until 2026-12-07: schedules that ran no size in common (one at 1e6, 4e6 and 1.6e7 parameters, the
    other at 2e6, 8e6 and 3.2e7) were never compared. Per parameter, a ladder's budgets meet across sizes as at
    one (a fixed budget per parameter is the same number at every size), and the nearest pair of all is taken,
    so more pairs can only bring two schedules nearer: a ladder that passed at each size it shared passes still.
    The trade-offs: it errs toward passing, so a schedule whose budgets per parameter spread wide (a fixed D
    at sizes 64x apart: 2.5-160 per parameter) may meet a mis-scaled one nearer than a unit factor and pass;
    tokens in two units within one schedule (a ladder file in counts beside one in billions, for the same
    schedules) are not compared, as before."""
    by: dict = {}
    for o in obs:
        by.setdefault(o.schedule, []).append(o)
    runs = list(by.values())
    for i, mine in enumerate(runs):
        for theirs in runs[i + 1 :]:
            ratio = _nearest_ratio(
                sorted({_per_param(o) for o in mine}), sorted({_per_param(o) for o in theirs})
            )
            if any(f / UNIT_SLACK <= ratio <= f * UNIT_SLACK for f in UNIT_FACTORS):
                raise UserError(_two_units(mine, theirs, ratio))


def _nearest_ratio(a: list[float], b: list[float]) -> float:
    """The smallest ratio (>= 1) of a value of `a` to one of `b`, both sorted: each of `a` beside its
    neighbours in `b` (bisect), so a ladder of many runs is not compared pair by pair."""
    best = math.inf
    for x in a:
        k = bisect.bisect_left(b, x)
        for y in b[max(k - 1, 0) : k + 1]:
            best = min(best, max(x, y) / min(x, y))
    return best


def _two_units(mine: list[Observation], theirs: list[Observation], ratio: float) -> str:
    """The refusal, naming two runs nearest per parameter (at one size where such a pair is)."""
    near = [
        (x, y)
        for x in mine
        for y in theirs
        if max(_per_param(x), _per_param(y)) / min(_per_param(x), _per_param(y)) <= ratio * (1 + 1e-9)
    ]
    a, b = min(near, key=lambda p: abs(math.log(p[0].params / p[1].params)))
    first = f"{a.source or 'a run'} ({a.schedule.name}) is at N={a.params:.6g}, D={a.tokens:.6g}"
    second = f"{b.source or 'another run'} ({b.schedule.name}) at N={b.params:.6g}, D={b.tokens:.6g}"
    if a.params == b.params:
        apart = "at one size"
    else:
        first += f" ({_per_param(a):.3g} tokens per parameter)"
        second += f" ({_per_param(b):.3g})"
        apart = "in tokens per parameter, where their schedules come nearest"
    return (
        f"{first} and {second}: {ratio:.3g} times apart {apart}, tokens in two units (thousands, millions or "
        "billions beside a count); give every run's tokens as a count of tokens"
    )
