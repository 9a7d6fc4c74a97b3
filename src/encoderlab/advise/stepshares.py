"""Schedules read off runs' whole steps: which runs are one schedule, and the share it is keyed and named by.

A run of a study folder whose share no record explains (no `study.json`, or phases changed since: `studyread`)
has only its phases' whole steps. A recipe switches at its share rounded to a whole step (`pfs_clm_mlm`'s
`round(steps * clm_fraction)`), so CLM 12.5% is 125 of 1000 steps but 42 of 333 (12.61%): one share at two
lengths is two ratios of steps. Rounded to the hundredth, as they were keyed until 2026-12-07, those two were
12% and 13%, two trend lines of one schedule, while 120 and 125 of 1000 steps (12% and 12.5%, two recipes) were
one, `CLM ~12%`.

The rule: a switch at step b of T is the rounding of any share within half a step of it, [(b - 0.5)/T,
(b + 0.5)/T) (half-open, so the intervals of one length's steps tile the run without meeting), and runs are one
schedule where one share explains every run's switches (their intervals overlap). Runs are taken longest first
(the narrowest intervals), each joining the schedule whose common interval it overlaps (the one whose longest
run is nearest, where several do), else starting one; so two runs of one length that switch at other steps are
never one schedule. A schedule of several switches (three stages or more) is so at each switch. Its share is
the one with the fewest decimals in the common interval (nearest its longest run's among those): CLM 125 of 1000
and 42 of 333 steps are `~12.5%`, 10 of 33 and 30 of 100 `~30%`. Schedules' common intervals are disjoint at
some switch, so no two are keyed or named alike.

Trade-offs: half a step is the recipe's rounding; a phase given in tokens is rounded up to whole steps
(`Phase.n_steps`), up to a whole step off, and such runs of one share at other lengths may stay apart. A short
run's interval is wide (16 of 31 steps: 50% to 53.2%), so alone it is named by the simplest share it allows
(`~50%`), and beside runs of 50% and 52% it joins the nearer; the `~` says the share is read, not given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from encoderlab.advise.ladder import Schedule, Stage, exact_share

MAX_DECIMALS = 12
"""The most decimals a share read off steps is named with (`exact_share`'s precision)."""


@dataclass(frozen=True)
class StepSplit:
    """A run's stages as whole steps: (objective, mask ratio) and steps of each, consecutive equal ones merged."""

    kinds: tuple[tuple[str, float | None], ...]
    steps: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.steps)

    def switches(self) -> list[Fraction]:
        """The steps at which a stage ends, as shares of the run (the last stage's end, 1, left out)."""
        ends = [sum(self.steps[: i + 1]) for i in range(len(self.steps) - 1)]
        return [Fraction(b, self.total) for b in ends]


@dataclass
class _Group:
    """Runs read as one schedule: the shares every run's switches allow ([`lo`, `hi`) each), its longest run."""

    first: StepSplit
    lo: list[Fraction]
    hi: list[Fraction]

    def meets(self, split: StepSplit) -> bool:
        if split.kinds != self.first.kinds:
            return False
        return all(max(a, b) < min(c, d) for a, b, c, d in zip(self.lo, _lows(split), self.hi, _highs(split)))

    def join(self, split: StepSplit) -> None:
        self.lo = [max(a, b) for a, b in zip(self.lo, _lows(split))]
        self.hi = [min(a, b) for a, b in zip(self.hi, _highs(split))]

    def schedule(self) -> Schedule:
        """The group's schedule: at each switch the share of fewest decimals it allows. Each switch's interval
        lies in its longest run's, and those are disjoint and in order, so the shares rise: no stage is empty."""
        exact = self.first.switches()
        chosen = [_fewest_decimals(lo, hi, near) for lo, hi, near in zip(self.lo, self.hi, exact)]
        if (
            None in chosen
        ):  # an interval narrower than MAX_DECIMALS allows: its longest run's (not met in practice)
            chosen = exact
        bounds = [Fraction(0), *chosen, Fraction(1)]
        return Schedule(
            tuple(
                Stage(tag, exact_share(float(b - a)), ratio, approx=True)  # type: ignore[arg-type,operator]
                for (tag, ratio), a, b in zip(self.first.kinds, bounds, bounds[1:])
            )
        )


def _lows(split: StepSplit) -> list[Fraction]:
    return [s - Fraction(1, 2 * split.total) for s in split.switches()]


def _highs(split: StepSplit) -> list[Fraction]:
    return [s + Fraction(1, 2 * split.total) for s in split.switches()]


def _distance(group: _Group, split: StepSplit) -> Fraction:
    return sum((abs(a - b) for a, b in zip(group.first.switches(), split.switches())), Fraction(0))


def _fewest_decimals(lo: Fraction, hi: Fraction, near: Fraction) -> Fraction | None:
    """The share in [lo, hi) of fewest decimals, the nearest to `near` of those; None past `MAX_DECIMALS`."""
    for places in range(MAX_DECIMALS + 1):
        scale = 10**places
        first, last = math.ceil(lo * scale), math.ceil(hi * scale) - 1
        if first <= last:
            return Fraction(min(max(round(near * scale), first), last), scale)
    return None


def settle(reads: list[Schedule | StepSplit]) -> list[Schedule]:
    """Each run's schedule: a `Schedule` as read, and runs read off their steps grouped by the module's rule."""
    splits = sorted(
        (i for i, r in enumerate(reads) if isinstance(r, StepSplit)),
        key=lambda i: -reads[i].total,  # type: ignore[union-attr]
    )
    groups: list[_Group] = []
    of: dict[int, _Group] = {}
    for i in splits:
        split = reads[i]
        assert isinstance(split, StepSplit)
        meeting = [g for g in groups if g.meets(split)]
        if meeting:
            group = min(meeting, key=lambda g: _distance(g, split))
        else:
            group = _Group(split, _lows(split), _highs(split))
            groups.append(group)
        group.join(split)
        of[i] = group
    named = {id(g): g.schedule() for g in groups}
    return [named[id(of[i])] if i in of else r for i, r in enumerate(reads)]  # type: ignore[misc]
