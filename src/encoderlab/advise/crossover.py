"""Where two schedules' curves cross between the ladder's smallest rung and past the target, and whether
the bootstrap's replicates back the point fit's answer.

Design: the curves are already evaluated on a compute grid (`decide._compute_grid`, along `Advice.path`),
point fit first, then every replicate; a crossing is a sign change of two schedules' difference on that
grid, placed by linear interpolation in log compute. Where curves cross twice (different floors), the
crossing nearest the target is reported: it is the one that decides who leads there. The replicates'
crossings give the interval and the share that cross at all; a pair is decided (`cross` or
`no crossover`) only where at least `confidence` of them agree with the point fit, else it is
`insufficient evidence`. Two schedules with equal scores at every rung get one curve twice: their
difference is zero on the whole grid, no sign change, and that is `identical`, not `no crossover` (which
reads as two curves apart all the way). Identity is read off the point fit's curves, not the runs, so the
verdict needs no more than the grid every other verdict reads.

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
    first: str
    """The schedule that is better just below `compute` (the other is better just above it); without a
    crossing, the one better at the low end of the range."""
    verdict: str
    """`cross`, `no crossover`, `identical` (the point fit's two curves are equal across the searched range,
    as equal scores at every rung give) or `insufficient evidence` (fewer than `Advice.confidence` of the replicates
    agree with the point fit)."""


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


def _verdict(crosses: bool, decided: bool, identical: bool) -> str:
    if identical:  # no sign change on the grid because there is no difference at all
        return "identical"
    return ("cross" if crosses else "no crossover") if decided else "insufficient evidence"


def crossovers(fits, grid, loss_on_grid, target_compute, interval, confidence) -> list[Crossover]:
    """Pairwise crossings of the curves on the compute grid, with the replicates' spread; a pair is decided
    (`cross` or `no crossover`) where at least `confidence` of the replicates agree with the point fit."""
    out, q = [], (50 - interval * 50, 50 + interval * 50)
    logc = np.log(grid)
    for i, j in combinations(range(len(fits)), 2):
        at = _crossings(loss_on_grid[i] - loss_on_grid[j], logc, np.log(target_compute))
        boot = at[1:][np.isfinite(at[1:])]
        share = len(boot) / (len(at) - 1)
        low, high = (float(np.exp(v)) for v in np.percentile(boot, q)) if len(boot) else (None, None)
        crosses = bool(np.isfinite(at[0]))
        # who leads just below the reported crossing: with two crossings (curves of different floors) the
        # low end's leader leads again above the second one
        k = int(np.searchsorted(logc, at[0])) - 1 if crosses else 0
        first = fits[i] if loss_on_grid[i, 0, k] < loss_on_grid[j, 0, k] else fits[j]
        # the share of replicates that agree with the point fit; was fixed at 90%, whatever --confidence said
        decided = (share if crosses else 1.0 - share) >= confidence
        out.append(
            Crossover(
                a=fits[i].schedule.name,
                b=fits[j].schedule.name,
                compute=float(np.exp(at[0])) if crosses else None,
                low=low,
                high=high,
                share=float(share),
                first=first.schedule.name,
                verdict=_verdict(crosses, decided, np.array_equal(loss_on_grid[i, 0], loss_on_grid[j, 0])),
            )
        )
    return out
