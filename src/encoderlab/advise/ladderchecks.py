"""Checks of a ladder's values that no single row shows: rungs written apart, scores in two units.

`ladder.Ladder` runs them with its other checks, before anything is fitted. Each refuses what was advised
without a word: the advice it gave was not wrong in its arithmetic but in what it was told, so the line names
two runs that disagree and the fix. The trade-off is a threshold each (`RUNG_RTOL`, `FRACTION_TOP` with
`PERCENT_FLOOR`): loose enough that a ladder as written by hand passes, tight enough that no real ladder
meets it (two budgets 1% apart; a schedule under 1% at every run beside one at 10% or more at every run).
`RUNG_RTOL` and its test (`rungs_apart`) live in `study/rungs.py`, so a ladder study refuses such rungs before
it trains, by the same test.
"""

from __future__ import annotations

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
"""... beside a schedule whose every run scores at least this: 10x above any fraction, so two units, not one
schedule far behind another."""


def check_percent_scores(ladder: Ladder) -> None:
    """Scores in percent (ceiling 100) that are not: a schedule scored as fractions (0.79 for 79%) beside others in
    percent, or every run so. Each was advised: a fraction's distance to 100 is ~99 at every scale, so its curve
    was flat at the bottom of the ranking (a fractions-only ladder's curves were all flat, P(best) from noise).
    Refused by schedule, not by run: a hard task's score (CoLA's MCC) may start near 0 and grow, but a schedule
    at most 1% at every run beside one at 10% or more at every run is two units. A ladder whose every run truly
    scores under 1% is refused too: it tells the schedules apart by nothing but noise. A schedule at 0 at every
    run (a classifier of the majority class: MCC 0) is in no unit, as 0 is 0 in both: it makes no schedule
    beside it a fraction (it was refused as fractions beside percent), nor keeps fractions beside it from being
    refused; a ladder at 0 everywhere is advised, its curves flat, which the advice warns of."""
    metric = ladder.metric
    if metric.better != "higher" or metric.ceiling != 100.0:
        return
    runs = {s: ladder.of(s) for s in ladder.schedules}
    zero = [s for s, rs in runs.items() if all(o.value == 0.0 for o in rs)]
    low = [s for s, rs in runs.items() if s not in zero and all(0.0 <= o.value <= FRACTION_TOP for o in rs)]
    if not low:
        return
    a = max(runs[low[0]], key=lambda o: o.value)
    high = [s for s, rs in runs.items() if all(o.value >= PERCENT_FLOOR for o in rs)]
    if high:
        b = min(runs[high[0]], key=lambda o: o.value)
        raise UserError(
            f"{metric.name} of {a.schedule.name} is at most {FRACTION_TOP:g} at every run ({a.value:g} at "
            f"{a.source or 'a run'}) but of {b.schedule.name} at least {PERCENT_FLOOR:g} ({b.value:g} at "
            f"{b.source or 'a run'}): fractions beside percent; give every score in one unit: percent (ceiling 100), or fractions with --ceiling 1"
        )
    if len(low) + len(zero) == len(runs):
        raise UserError(
            f"every run's {metric.name} is at most {FRACTION_TOP:g} (e.g. {a.value:g} at {a.source or 'a run'}), "
            "as scores given as fractions are, but its ceiling is 100 (percent); give --ceiling 1 for "
            "fractions, or the scores in percent (percent truly under 1 at every run tell the schedules apart by "
            "noise at a ceiling of 100: score a task they do better on)"
        )
