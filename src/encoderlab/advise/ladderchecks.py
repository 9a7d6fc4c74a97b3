"""Checks of a ladder's values that no single row shows: rungs written apart, scores or tokens in two units.

`ladder.Ladder` runs them with its other checks, before anything is fitted. Each refuses what was advised
without a word: the advice it gave was not wrong in its arithmetic but in what it was told, so the line names
two runs that disagree and the fix. The trade-off is a threshold each (`RUNG_RTOL`, `FRACTION_TOP` with
`PERCENT_FLOOR`): loose enough that a ladder as written by hand passes, tight enough that no real ladder
meets it (two budgets 1% apart; a schedule under 1% at every run beside one at 10% or more at every run; one
schedule's tokens per parameter 1e3, 1e6 or 1e9 times another's at their nearest or at their medians, or two runs
of one schedule so apart at one size or neighbouring sizes with none between, within a factor `UNIT_SLACK`).
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
"""How far from a unit factor two budgets per parameter may be and still read as two units: a ladder's budgets
span 1-160 tokens per parameter, so schedules 333x apart are none."""


def _per_param(o: Observation) -> float:
    return o.tokens / o.params


def _unit(ratio: float) -> float | None:
    """The unit factor `ratio` (>= 1) is, within `UNIT_SLACK`, if any."""
    return next((f for f in UNIT_FACTORS if f / UNIT_SLACK <= ratio <= f * UNIT_SLACK), None)


def check_token_units(obs: tuple[Observation, ...]) -> None:
    """Tokens in another unit than a count (D in thousands, millions or billions): such runs were advised,
    their tokens per parameter (D/N) 1e3-1e9 times too few, with nothing but the warning that the target is
    far past them. Within each schedule first (`_check_one_schedule`: seeds or sizes logged by another
    script), then each pair of schedules (`_check_two_schedules`), all by D/N, so runs at sizes apart meet
    (a fixed budget per parameter is the same number at every size)."""
    by: dict = {}
    for o in obs:
        by.setdefault(o.schedule, []).append(o)
    for runs in by.values():
        _check_one_schedule(runs)
    schedules = list(by.values())
    for i, mine in enumerate(schedules):
        for theirs in schedules[i + 1 :]:
            _check_two_schedules(mine, theirs)


def _check_two_schedules(mine: list[Observation], theirs: list[Observation]) -> None:
    """Two schedules are two units where their nearest budgets per parameter (over every pair of their runs)
    or their medians are a unit factor apart, within `UNIT_SLACK`. Nearest alone erred toward passing: a
    schedule whose budgets spread wide (a fixed D at sizes 64x apart: 2.5-160 per parameter) came within 125x
    of Chinchilla's 20 in thousands (0.02), no unit factor, and was advised. A unit moves every run of a
    schedule by one factor, so it moves the median by it, however wide the runs spread; the nearest pair is
    kept beside it for schedules of budgets apart (1-4 per parameter in thousands beside a fixed D's 2.5-160:
    medians 1e4 apart, nearest runs 625). The trade-off: medians a unit factor apart are refused unless the
    two schedules share budgets over more than `UNIT_SLACK` (one schedule run mostly below 10 per parameter,
    one mostly above 1000, both at 10-1000, is one unit), so two honest schedules whose budgets are 333x apart
    and do not meet are refused, as they were by the nearest pair."""
    a, b = sorted({_per_param(o) for o in mine}), sorted({_per_param(o) for o in theirs})
    nearest = _nearest_ratio(a, b)
    if _unit(nearest):
        raise UserError(_two_units(*_nearest_pair(mine, theirs, nearest)))
    centres = max(_median(a), _median(b)) / min(_median(a), _median(b))
    shared = min(a[-1], b[-1]) / max(a[0], b[0])
    if _unit(centres) and shared <= UNIT_SLACK:
        pair = _pair_near(mine, theirs, centres)
        raise UserError(_two_units(*pair, medians=centres))


def _median(values: list[float]) -> float:
    """The median of sorted positive values, geometric between the middle two: the centre in log scale."""
    m = len(values) // 2
    return values[m] if len(values) % 2 else math.sqrt(values[m - 1] * values[m])


def _nearest_ratio(a: list[float], b: list[float]) -> float:
    """The smallest ratio (>= 1) of a value of `a` to one of `b`, both sorted: each of `a` beside its
    neighbours in `b` (bisect), so a ladder of many runs is not compared pair by pair."""
    best = math.inf
    for x in a:
        k = bisect.bisect_left(b, x)
        for y in b[max(k - 1, 0) : k + 1]:
            best = min(best, max(x, y) / min(x, y))
    return best


def _ratio(x: Observation, y: Observation) -> float:
    return max(_per_param(x), _per_param(y)) / min(_per_param(x), _per_param(y))


def _sizes_apart(pair: tuple[Observation, Observation]) -> float:
    return abs(math.log(pair[0].params / pair[1].params))


def _nearest_pair(mine, theirs, ratio: float) -> tuple[Observation, Observation]:
    """Two runs nearest per parameter, at one size where such a pair is."""
    near = [(x, y) for x in mine for y in theirs if _ratio(x, y) <= ratio * (1 + 1e-9)]
    return min(near, key=_sizes_apart)


def _pair_near(mine, theirs, ratio: float) -> tuple[Observation, Observation]:
    """Two runs whose ratio per parameter is nearest `ratio` (rounded, so float noise breaks no tie), at one
    size or the nearest sizes among those."""
    pairs = [(x, y) for x in mine for y in theirs]
    return min(pairs, key=lambda p: (round(abs(math.log(_ratio(*p) / ratio)), 6), _sizes_apart(p)))


def _two_units(a: Observation, b: Observation, medians: float | None = None) -> str:
    """The refusal, naming two runs of two schedules: their nearest, or (`medians`: how far apart the
    schedules' medians are) two as far apart as the medians."""
    first, second = _runs_text(a, b)
    apart = "at one size" if a.params == b.params else "in tokens per parameter"
    if medians is not None:
        apart += f", and their schedules {medians:.3g} times apart at their medians"
    elif a.params != b.params:
        apart += ", where their schedules come nearest"
    return (
        f"{first} and {second}: {_ratio(a, b):.3g} times apart {apart}, tokens in two units (thousands, "
        "millions or billions beside a count); give every run's tokens as a count of tokens"
    )


def _runs_text(a: Observation, b: Observation) -> tuple[str, str]:
    """Two runs as the refusals name them: where read, schedule, (N, D), and D/N where their sizes differ."""
    first = f"{a.source or 'a run'} ({a.schedule.name}) is at N={a.params:.6g}, D={a.tokens:.6g}"
    second = f"{b.source or 'another run'} ({b.schedule.name}) at N={b.params:.6g}, D={b.tokens:.6g}"
    if a.params != b.params:
        first += f" ({_per_param(a):.3g} tokens per parameter)"
        second += f" ({_per_param(b):.3g})"
    return first, second


def _check_one_schedule(runs: list[Observation]) -> None:
    """Two units within one schedule (seed 1, or one size, logged by a script that wrote D in thousands): two
    runs at one size, or at neighbouring sizes, a unit factor apart per parameter (within `UNIT_SLACK`) with
    no run of the schedule at those sizes between them. Schedules were compared only with each other, and
    such a schedule was advised, its seeds' noise 1e3 times its spread. Per size, not across the schedule: a
    fixed D's seed in millions (160-2.5 and 1.6e-4-2.5e-6 per parameter across its sizes) is 1.6e4 apart at
    its nearest, no unit factor, but 1e6 at each size. Neighbouring sizes whose own ratio is within
    `UNIT_SLACK` of the factor or beyond are not compared (a fixed D at 1e6 and 1e9 parameters is 1e4 and 10
    per parameter, 1000x apart as its sizes are). The trade-off: a schedule whose budgets at one size step
    333x or more with none between (1 and 1000 per parameter alone) is refused; a ladder's budgets step 2-4x."""
    by_size: dict[float, list[Observation]] = {}
    for o in runs:
        by_size.setdefault(o.params, []).append(o)
    sizes = sorted(by_size)
    for i, n in enumerate(sizes):
        groups = [by_size[n]]
        if i + 1 < len(sizes):
            groups.append(by_size[n] + by_size[sizes[i + 1]])
        for group in groups:
            pair = _unit_gap(group)
            if pair:
                a, b = sorted(pair, key=runs.index)
                first, second = _runs_text(a, b)
                apart = "at one size" if a.params == b.params else "at neighbouring sizes"
                raise UserError(
                    f"{first} and {second}: {_ratio(a, b):.3g} times apart {apart}, with no run of "
                    f"{a.schedule.name} between, tokens in two units (thousands, millions or billions beside a "
                    "count); give every run's tokens as a count of tokens"
                )


def _unit_gap(group: list[Observation]) -> tuple[Observation, Observation] | None:
    """Two runs of `group` next to each other per parameter, a unit factor apart, at one size or at sizes
    nearer than that factor (`UNIT_SLACK` within it)."""
    first: dict[float, Observation] = {}
    for o in group:
        first.setdefault(_per_param(o), o)
    values = sorted(first)
    for x, y in zip(values, values[1:]):
        a, b, f = first[x], first[y], _unit(y / x)
        if f and (a.params == b.params or max(a.params, b.params) / min(a.params, b.params) < f / UNIT_SLACK):
            return a, b
    return None
