"""Whether the target lies where a schedule's runs can speak for it: its compute, and for a target given as
(N, D) its size, tokens and tokens per parameter.

Past the ladder, whichever method is recommended, the numbers at the target come from the curves' form,
which the intervals do not resample and the backtest checks only one rung inside the ladder. Compute alone
(`reach_warnings`) misses a target given as (N, D) at an allocation no run tried: a 2-D curve read at a
size 100x below the ladder's smallest, at a compute inside it, extrapolates its size term as far (refused, as a
compute below the ladder is: `check_not_below`), and a 1-D curve, in compute alone, reads any allocation as the
one its runs were trained at (`allocation_warnings`).

How far past the ladder the target lies is also measured on its own (`past_ladder`), whatever the warnings
say: the recommendation line names it, so a target 53,333x the largest run's compute is not read as firmly as
one 2.5x past it (the warnings start only where the target is further past the ladder than the ladder spans,
and until 2026-12-06 nothing else said the distance).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from encoderlab.advise.fit import CHINCHILLA
from encoderlab.advise.ladder import Observation
from encoderlab.advise.predict import ScheduleFit, Target
from encoderlab.errors import UserError


def times(ratio: float) -> str:
    """A ratio as a factor: "53,333x", "6.2x", "0.5x"; "5.3e+21x" from ten million up, where every digit of an
    integer was printed ("5,333,333,333,333,332,983,808x": float noise shown as precision). A ratio near 1 but
    not 1 takes the digits that tell it from 1 ("1.04x"): a target 4% past the largest run read "at 1x the
    ladder's largest compute; no run measured there", a sentence that denies itself."""
    if 10 <= ratio < 1e7:
        return f"{ratio:,.0f}x"
    digits, text = 2, f"{ratio:.2g}"
    while float(text) == 1 and abs(ratio - 1) > 1e-9 and digits < 9:  # 1e-9: `PastLadder.beyond`'s tolerance
        digits += 1
        text = f"{ratio:.{digits}g}"
    return f"{text}x"


@dataclass(frozen=True)
class PastLadder:
    """The target over the ladder's largest run, per axis (1 or less: within the ladder on that axis)."""

    compute: float
    """The target's compute over the largest compute any run of the ladder was trained at."""
    params: float | None
    """For a target given as (N, D): its N over the largest N of any run (None for a compute target)."""
    tokens: float | None
    """For a target given as (N, D): its D over the largest D of any run (None for a compute target)."""

    @property
    def beyond(self) -> bool:
        """Whether the target lies past every run on any axis: no run was measured there."""
        return any(r is not None and r > 1 + 1e-9 for r in (self.compute, self.params, self.tokens))


def _ladder_compute(fits: list[ScheduleFit]) -> tuple[float, float]:
    """The smallest and largest compute of the ladder: every schedule's runs together."""
    return min(float(f.rungs.compute.min()) for f in fits), max(float(f.rungs.compute.max()) for f in fits)


def past_ladder(runs: Sequence[Observation], target_compute: float, target: Target) -> PastLadder:
    """How far the target lies past the ladder's largest run in compute, and in N and D for a target given as
    (N, D) (`Target.ratio`); the ladder is every schedule's runs together, as in `reach_warnings`. Each run at
    its own compute: a rung's seed mean (`Rungs.compute`, which the warnings measure rungs by) is below its
    largest run's where seeds logged other FLOPs, and the line said 31,476x of a target 31,474x the largest
    run's compute, which is what it names."""
    top = max(o.compute for o in runs)
    if target.ratio is None:
        return PastLadder(target_compute / top, None, None)
    return PastLadder(
        target_compute / top,
        target.params / max(o.params for o in runs),
        target.tokens / max(o.tokens for o in runs),
    )


def check_not_below(fits: list[ScheduleFit], target_compute: float, target: Target | None = None) -> None:
    """Refuse a target below the ladder's smallest rung, and a target given as (N, D) whose size or tokens lie
    below the smallest any of the ladder's runs was trained at. Above the ladder the curves extrapolate towards
    where they flatten, and a warning says how far (`reach_warnings`); below it they rise steeply towards
    what no run measured (a synthetic ladder read 9.6 and 26 nats at 1/1000 of its smallest rung), yet the bootstrap, which
    resamples seed noise only, gave that P(best) 1.00. A size or token count below every run is the same
    extrapolation of one term of a 2-D curve, at a compute the ladder may reach, and was only warned about
    (`allocation_warnings` still warns where one schedule's runs start above a target the ladder reaches). A
    cheaper target needs no advice from curves: train it, or add rungs that reach it."""
    lo, hi = _ladder_compute(fits)
    if _reach(target_compute, lo, hi) == "below":
        raise UserError(
            f"the target's compute (C = {target_compute:.3g}) is below the ladder's smallest rung (C = {lo:.3g}), "
            "where no run speaks for the curves; give a target at or above it, or add smaller rungs"
        )
    if target is None or target.ratio is None:
        return
    points = np.concatenate([f.rungs.points for f in fits])
    for axis, what, value in ((0, "size N", target.params), (1, "tokens D", target.tokens)):
        smallest = float(points[:, axis].min())
        if _reach(value, smallest, float(points[:, axis].max())) == "below":
            raise UserError(
                f"the target's {what} ({value:.3g}) is below the smallest the ladder's runs were trained at "
                f"({smallest:.3g}), where no run speaks for the curves; give a target at or above it, or add "
                "smaller runs"
            )


def reach_warnings(
    fits: list[ScheduleFit], target_compute: float, backtested: bool = True
) -> tuple[str, ...]:
    """A warning when the target lies below the ladder's smallest rung, or further past its largest
    than the ladder spans (in log compute): there, whichever method is recommended, the numbers at the
    target come from the curves' form, which the intervals do not resample and the backtest checks only
    one rung inside the ladder. Where the whole ladder reaches the target but a schedule's own rungs do
    not (they span less of it), one warning per such schedule with a curve: its prediction is read from
    its own rungs alone, however far the others reach. `backtested`: whether a backtest ran (a ladder of 3
    rungs fits curves but allows none, and the warning said the backtest checked one rung).

    Rungs are measured at their seeds' mean compute (`Rungs.compute`) on purpose: that is the compute each run is
    fitted at (`ScheduleFit.inputs`), so the span is the curve's own, and a rung's seeds differ in compute only by
    a few percent of logged FLOPs. The spread of a rung's values across seeds is no question of reach: it is
    the bootstrap's to resample and `decide.noise_warnings`' to flag (checked 2026-12-07)."""
    lo, hi = _ladder_compute(fits)
    curves = all(f.fits is not None for f in fits)
    whole = _beyond(target_compute, lo, hi, "the ladder's", "the ladder spans", curves, backtested)
    if whole is not None:
        return (whole,)
    out = []
    for f in (f for f in fits if f.fits is not None):
        name, own = f.schedule.name, f.rungs.compute
        span = f"{name}'s rungs span"
        why = _beyond(
            target_compute, float(own.min()), float(own.max()), f"{name}'s", span, backtested=backtested
        )
        out += [why] if why is not None else []
    return tuple(out)


def _reach(value: float, lo: float, hi: float) -> str | None:
    """Where `value` lies against runs spanning `lo` to `hi`: "below" the smallest, "beyond" the largest by
    more than they span (a ratio), or None (within reach); one rule for compute, size and tokens."""
    if value < lo * (1 - 1e-9):
        return "below"
    return None if value / hi <= hi / lo * (1 + 1e-9) else "beyond"


_NO_CURVES = (
    "the advice reads no curve (a schedule has rungs at fewer than 3 computes), so it is the largest common rung's ranking, "
    "which says nothing of where the schedules stand that far from it; read it as a guess, or add rungs"
)
"""The reason of `_beyond`'s warning where no curve is read: it spoke of the curves' form, their intervals and
the backtest, none of which such advice has."""


def _beyond(
    target_compute: float,
    lo: float,
    hi: float,
    whose: str,
    spans: str,
    curves: bool = True,
    backtested: bool = True,
) -> str | None:
    """The warning for a target below rungs spanning `lo` to `hi` in compute, or further past them than they
    span (`whose`: "the ladder's" or "CLM's"; `spans`: "the ladder spans" or "CLM's rungs span"); None when
    the target is within reach. `curves`: whether the advice reads curves at the target (`_NO_CURVES`);
    `backtested`: whether a backtest checked them on a rung inside the ladder."""
    where = _reach(target_compute, lo, hi)
    if where == "below":
        why = "the curves are read where no run was trained; give a target inside or above the ladder"
        return (
            f"the target's compute (C = {target_compute:.3g}) is below {whose} smallest rung "
            f"(C = {lo:.3g}): {why if curves else _NO_CURVES}"
        )
    if where is None:
        return None
    why = (
        "every number at the target rests on the curves' form, which the intervals do not include and "
        + ("the backtest checked only one rung inside the ladder" if backtested else "no backtest checked")
        + "; read the advice as a guess, or add larger rungs"
    )
    return (
        f"the target is {times(target_compute / hi)} the compute of {whose} largest rung, further past it "
        f"than {spans} ({times(hi / lo)} from its smallest rung to its largest): {why if curves else _NO_CURVES}"
    )


def allocation_warnings(fits: list[ScheduleFit], target: Target) -> tuple[str, ...]:
    """For a target given as (N, D), a warning for each way a schedule's curve is read at an allocation its
    runs do not reach (schedules alike in it named together): with the 2-D curve, N or D below the schedule's
    smallest or further past its largest than its runs span (as compute, `reach_warnings`); with the 1-D curve
    in compute, tokens per parameter outside those its runs were trained at, which the curve does not model.
    None for a compute target (its allocation is the curve's own optimum: docs/advise.md, "What it cannot
    say")."""
    if target.ratio is None:
        return ()
    whose: dict[str, list[str]] = {}
    for f in (f for f in fits if f.fits is not None):
        for template in _allocation(f, target):
            whose.setdefault(template, []).append(f"{f.schedule.name}'s")
    return tuple(template.format(whose=" and ".join(names)) for template, names in whose.items())


def _allocation(f: ScheduleFit, target: Target) -> list[str]:
    """`allocation_warnings` of one schedule, `{whose}` standing for its name."""
    points = f.rungs.points
    if f.form is CHINCHILLA:
        out = []
        for axis, what, value in ((0, "size N", target.params), (1, "tokens D", target.tokens)):
            lo, hi = float(points[:, axis].min()), float(points[:, axis].max())
            out += [why] if (why := _axis_beyond(value, lo, hi, what)) is not None else []
        return out
    ratios = points[:, 1] / points[:, 0]
    lo, hi = float(ratios.min()), float(ratios.max())
    if lo * (1 - 1e-9) <= target.ratio <= hi * (1 + 1e-9):
        return []
    runs = f"{lo:.3g}" if hi <= lo * (1 + 1e-9) else f"{lo:.3g} to {hi:.3g}"
    return [
        f"the target's {target.ratio:.3g} tokens per parameter lie outside those {{whose}} runs were trained at "
        f"({runs}): a curve in compute alone reads the target as if it were trained at theirs; give a target at "
        "their tokens per parameter, or run the schedule at more budgets"
    ]


def _axis_beyond(value: float, lo: float, hi: float, what: str) -> str | None:
    """The warning (`{whose}` for the schedules' names) for a target's size or tokens (`what`) below runs
    spanning `lo` to `hi`, or further past them than they span; None when within reach."""
    where = _reach(value, lo, hi)
    if where == "below":
        return (
            f"the target's {what} ({value:.3g}) is below the smallest that {{whose}} runs were trained at ({lo:.3g}): "
            "the curve is read where no run was trained; give a target inside or above their runs"
        )
    if where is None:
        return None
    return (
        f"the target's {what} ({value:.3g}) is {times(value / hi)} the largest that {{whose}} runs were trained at, "
        f"further past it than they span ({times(hi / lo)}): the prediction rests on the curve's form; read it "
        "as a guess, or add runs nearer the target"
    )
