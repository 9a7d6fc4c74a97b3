"""Where two schedules' curves cross between the ladder's smallest rung and past the target, and whether
the bootstrap's replicates back the point fit's answer.

Design: the curves are already evaluated on a compute grid (`decide._compute_grid`, along `Advice.path`),
point fit first, then every replicate; a crossing is a sign change of two schedules' difference on that
grid, placed by linear interpolation in log compute. Where curves cross twice (different floors), the
crossing nearest the target is reported: it is the one that decides who leads there. The replicates'
crossings give the interval and the share that cross at all.

Each curve pair, point fit and replicate alike, reads one of three ways: the curves cross in range, they
are apart all the way (no crossing), or they are one curve (`identical`: equal to rounding across the grid,
as equal scores at every rung give; reported apart from `no crossover`, which reads as two curves apart all
the way). The verdict is the point fit's reading where at least `confidence` of the replicates read the same,
else `insufficient evidence`, for `identical` as for the other two (until 2026-12-06 `identical` was read off
the point fit alone). Why that is right for `identical`: two schedules whose point fits coincide have an
estimated difference of zero, and the replicates say whether the ladder pins it there. Where every
schedule ran the same seeds and scored the same at each run, a replicate draws the same seeds for both and
their curves coincide again in every replicate: nothing in the ladder tells them apart, and `identical` is
decided. Where their seeds are drawn apart (different seed labels, or `paired=False`), each replicate gives
them different noise, and their curves part and cross as chance has it: the equal scores are one draw of
seed noise, the ladder cannot say which leads or whether they cross, and that is `insufficient evidence`,
as P(best) near 0.5 says of the recommendation. Likewise a point fit apart (or crossing) whose replicates
are mostly one curve is not decided: a replicate that coincides backs no crossing and no order.

Trade-offs: a grid of fixed size (120 points, log-spaced) places a crossing to within one grid step and
can miss two crossings closer than a step; solving each pair's curves for their root would be exact, but
the forms differ between schedules (1-D in compute, 2-D in N and D along a path) and the grid is already
needed for the figure. Kept apart from `decide` (which only calls `crossovers`) because a crossover is
reported beside the advice but never changes the recommendation.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np


@dataclass(frozen=True)
class Crossover:
    """Where two schedules' curves cross (along `Advice.path`)."""

    a: str
    b: str
    compute: float | None
    """Crossing nearest the target in the searched range (point fit), or None."""
    low: float | None
    high: float | None
    share: float
    """Share of bootstrap replicates whose curves cross in the searched range."""
    same: float
    """Share of bootstrap replicates whose two curves are one curve across the searched range (`SAME_RTOL`)."""
    first: str
    """The schedule that is better just below `compute` (the other is better just above it); without a
    crossing, the one better at the low end of the range."""
    point: str
    """The point fit's own reading: `cross`, `no crossover` or `identical` (its two curves are equal across the
    searched range, as equal scores at every rung give)."""
    verdict: str
    """`point` where at least `Advice.confidence` of the replicates read the same, else `insufficient evidence`."""


def _crossings(delta: np.ndarray, logc: np.ndarray, log_target: float) -> np.ndarray:
    """(M,) log compute of the sign change of each row nearest the target (NaN: none)."""
    s = np.sign(delta)
    change = s[:, :-1] * s[:, 1:] < 0
    frac = delta[:, :-1] / np.where(change, delta[:, :-1] - delta[:, 1:], 1.0)
    at = logc[:-1] + frac * np.diff(logc)
    at = np.where(change, at, np.nan)
    dist = np.where(change, np.abs(at - log_target), np.inf)
    pick = dist.argmin(1)
    return np.where(change.any(1), at[np.arange(len(at)), pick], np.nan)


SAME_RTOL = 1e-9
"""Two curves are one where they differ by at most this share of their value at every grid point: fits of
the same numbers agree to their last bits, and seed noise is 1e-3 of a loss or more, so nothing measured
falls between."""


def _readings(delta: np.ndarray, scale: np.ndarray, crosses: np.ndarray) -> np.ndarray:
    """(M,) each row's reading: `identical` (within `SAME_RTOL` everywhere), else `cross` or `no crossover`."""
    same = (np.abs(delta) <= SAME_RTOL * np.abs(scale)).all(1)
    return np.where(same, "identical", np.where(crosses, "cross", "no crossover"))


def crossovers(fits, grid, loss_on_grid, target_compute, interval, confidence) -> list[Crossover]:
    """Pairwise crossings of the curves on the compute grid, with the replicates' spread; a pair is decided
    (`cross`, `no crossover` or `identical`) where at least `confidence` of the replicates read as the point fit."""
    out, q = [], (50 - interval * 50, 50 + interval * 50)
    logc = np.log(grid)
    for i, j in combinations(range(len(fits)), 2):
        delta = loss_on_grid[i] - loss_on_grid[j]
        at = _crossings(delta, logc, np.log(target_compute))
        reading = _readings(delta, loss_on_grid[i], np.isfinite(at))
        # an identical replicate's rounding can change sign: it crosses nowhere
        boot = at[1:][reading[1:] == "cross"]
        share = len(boot) / (len(at) - 1)
        low, high = (float(np.exp(v)) for v in np.percentile(boot, q)) if len(boot) else (None, None)
        point = str(reading[0])
        crosses = point == "cross"
        # who leads just below the reported crossing: with two crossings (curves of different floors) the
        # low end's leader leads again above the second one
        k = int(np.searchsorted(logc, at[0])) - 1 if crosses else 0
        first = fits[i] if loss_on_grid[i, 0, k] < loss_on_grid[j, 0, k] else fits[j]
        # the share of replicates that read as the point fit does; was fixed at 90% whatever --confidence said,
        # and `identical` was read off the point fit alone
        agree = float(np.mean(reading[1:] == point))
        out.append(
            Crossover(
                a=fits[i].schedule.name,
                b=fits[j].schedule.name,
                compute=float(np.exp(at[0])) if crosses else None,
                low=low,
                high=high,
                share=float(share),
                same=float(np.mean(reading[1:] == "identical")),
                first=first.schedule.name,
                point=point,
                verdict=point if agree >= confidence else "insufficient evidence",
            )
        )
    return out
