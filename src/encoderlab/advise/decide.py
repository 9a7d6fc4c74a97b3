"""From fitted curves to advice: predictions, P(best), the baseline, the backtest and the verdict (the
crossovers reported beside it are searched in `crossover`, which never changes the verdict).

The advice answers "which schedule is best at the target?" in two ways, side by side:
* **extrapolation**: each schedule's curve read at the target, with the bootstrap's interval, and
  the probability that each schedule is best (the share of bootstrap replicates in which it
  predicts the best value; replicates are paired by index, and where every schedule ran the same
  pretraining seeds, replicate k of each schedule drew the same seeds (`predict.paired_sources`));
* **the single-rung ranking**: the schedules ordered by their mean at the largest rung that all of
  them ran. DataDecide (Magnusson et al. 2025, arXiv:2504.11393) found this baseline ranks about 80%
  of pairs as at a target 50x larger, and that none of eight scaling-law methods beat it there.

**Which of the two is recommended is decided by a backtest**: every curve is refitted without the
largest common rung (and anything beyond it) and predicts it, and the single-rung baseline predicts
it from the next rung down. Extrapolation is recommended only when it ranks most of the held-out
rung's pairs right and at least as many as the baseline (DataDecide's decision accuracy; with two
schedules, their one pair right) *and* predicts the pairwise differences there with a smaller mean
absolute error; otherwise the single-rung ranking is recommended, with the backtest's numbers as the reason. Comparing the differences, not only the
order, is what lets a backtest see a crossover coming: before two curves cross, their gap shrinks
from rung to rung, which extrapolation follows and the single rung does not.

**Insufficient evidence** is said when the recommended method's leader is best in fewer than
`confidence` (default 90%) of the bootstrap replicates: of the extrapolated predictions at the
target, or of the seed means at the largest rung.

**Warnings** go beside the advice: a target further past the ladder than the ladder spans
(`reach.reach_warnings`; one below the ladder is refused, `reach.check_not_below`), a target (N, D) at a size, token count or tokens per parameter a curve's runs do not
reach (`reach.allocation_warnings`), seed noise estimated from fewer than `NOISE_DF` degrees of freedom
(`noise_warnings`), a point fit at the target outside its own bootstrap interval (`outside_interval`: the
replicates' curves fall to one side of it, so the rungs do not pin its form down that far out), and a schedule
whose rung means do not improve with compute beyond its seed noise, or rise over a rung they dominate
(`trend.trend_warnings`), which no fitted curve can follow. Only the last can change the advice: when
the schedule that would be recommended is such a one, the advice is insufficient evidence (a flagged
schedule behind the leader stays behind: its flat fit, floored at its best rung, is the optimistic
reading of a ladder that does not improve).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Literal

import numpy as np

from encoderlab.advise.crossover import Crossover, crossovers
from encoderlab.advise.fit import CHINCHILLA, DELTA, POWER
from encoderlab.advise.ladder import Ladder
from encoderlab.advise.options import check_fit_options
from encoderlab.advise.predict import ScheduleFit, Target, fit_schedules
from encoderlab.advise.reach import (
    PastLadder,
    allocation_warnings,
    check_not_below,
    past_ladder,
    reach_warnings,
)
from encoderlab.advise.trend import not_improving, trend_warnings
from encoderlab.errors import UserError

Method = Literal["extrapolation", "single rung"]


@dataclass(frozen=True)
class Prediction:
    """One schedule at the target and at the largest common rung (metric units)."""

    schedule: str
    curve: str | None
    """The fitted form, or None when too few rungs to fit one."""
    value: float | None
    low: float | None
    high: float | None
    p_best: float | None
    """Share of bootstrap replicates in which this schedule predicts the best value at the target."""
    rung_value: float | None
    """Mean over seeds at the largest common rung."""
    rung_p_best: float | None
    """Share of bootstrap replicates in which this schedule has the best mean at that rung."""


@dataclass(frozen=True)
class Backtest:
    """Extrapolation against the single-rung baseline on the held-out largest common rung."""

    held_out: tuple[float, float]
    baseline_rung: tuple[float, float]
    extrapolation_accuracy: float
    baseline_accuracy: float
    extrapolation_error: float
    """Mean absolute error of the predicted pairwise differences (metric units)."""
    baseline_error: float
    passed: bool


@dataclass(frozen=True)
class Advice:
    """Everything `encoderlab advise` prints and saves."""

    metric: str
    better: str
    target: str
    target_compute: float
    flops_per_6nd: float | None
    """For a target given as (N, D): what its 6ND is scaled by to give `target_compute`, the ladder's measured
    FLOPs per 6ND (each schedule's median over its runs, `ScheduleFit.flops_ratio`; their median; 1 where no run
    logged FLOPs). None for a target given as compute. The printed C says it, which read as 6ND before."""
    past_ladder: PastLadder
    """How far the target lies past the ladder's largest run (`reach.past_ladder`): the recommendation line
    says it, since every number at the target past that run is the curves' form or the rung's ranking carried
    there, not a measurement."""
    path: str
    """Where the curves are drawn and crossovers searched (`Target.path`)."""
    confidence: float
    interval: float
    n_boot: int
    seed: int
    seed_noise: float | None
    """The seed-noise sd given for a parametric bootstrap (None: resampled from the ladder's seeds)."""
    seeds_paired: bool
    """Whether replicates drew pretraining seeds jointly across schedules (all ran the same seeds)."""
    predictions: tuple[Prediction, ...]
    crossovers: tuple[Crossover, ...]
    rung: tuple[float, float] | None
    """The largest rung every schedule ran (N, D)."""
    backtest: Backtest | None
    method: Method
    recommendation: str | None
    """The schedule recommended at the target, or None: insufficient evidence."""
    ranking: tuple[str, ...]
    """The recommended method's ranking, best first."""
    reason: str
    curves: tuple[dict, ...]
    """Figure data: schedule, compute, value, low, high on a compute grid (`CURVE_COLUMNS`)."""
    runs: tuple[dict, ...]
    """Figure data: every run (schedule, N, D, compute, seed, value: `RUN_COLUMNS`)."""
    warnings: tuple[str, ...] = ()
    """What the advice cannot vouch for: a target far past the ladder or below it (`reach_warnings`), seed
    noise from too few runs (`noise_warnings`), a schedule not improving with compute (`trend_warnings`), a
    point fit outside its own interval (`outside_interval`)."""

    def to_dict(self) -> dict:
        return asdict(self)


def _flops_per_6nd(fits: list[ScheduleFit], target: Target) -> float | None:
    """`Advice.flops_per_6nd`: the median of the schedules' ratios, as the target's compute is the median of
    theirs (`ScheduleFit.target_compute`); None for a target given as compute."""
    return None if target.flops is not None else float(np.median([f.flops_ratio for f in fits]))


def scored_pairs(actual: dict[str, float], skip: Collection[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """The pairs (a, b), a < b, that `decision_accuracy` scores: not tied in `actual`, not in `skip`."""
    return [
        (a, b) for a, b in combinations(sorted(actual), 2) if actual[a] != actual[b] and (a, b) not in skip
    ]


def decision_accuracy(
    predicted: dict[str, float], actual: dict[str, float], skip: Collection[tuple[str, str]] = ()
) -> float:
    """DataDecide's decision accuracy: the share of pairs ordered as in `actual` (tied pairs skipped, and the
    pairs (a, b), a < b, in `skip`: `holdout` skips those whose measured order is within seed noise)."""
    pairs = scored_pairs(actual, skip)
    if not pairs:
        return float("nan")
    return float(
        np.mean([np.sign(predicted[a] - predicted[b]) == np.sign(actual[a] - actual[b]) for a, b in pairs])
    )


def common_rungs(ladder: Ladder) -> list[tuple[float, float]]:
    """(N, D) points every schedule ran, smallest 6ND first."""
    shared = set.intersection(*({o.rung for o in ladder.of(s)} for s in ladder.schedules))
    return sorted(shared, key=lambda p: p[0] * p[1])


def _share_best(losses: np.ndarray) -> np.ndarray:
    """(S,) share of columns (replicates) in which each row (schedule) has the lowest loss; a column where
    several tie for it counts 1/k for each (argmin gave it to the first listed: two schedules with the same
    values were one recommended with P(best) 1.0, the other 0)."""
    best = losses == losses.min(0)
    return (best / best.sum(0)).mean(1)


def percent(share: float | None) -> str:
    """A share as a percentage; "n/a" where it is undefined (every pair tied, `decision_accuracy`)."""
    return "n/a" if share is None or np.isnan(share) else f"{share:.0%}"


def _rung_losses(fits: list[ScheduleFit], point: tuple[float, float]) -> np.ndarray:
    """(S, 1 + B) mean loss at a rung: the data, then every replicate."""
    return np.stack([f.rungs.means(f.replicates)[:, f.rung_of(point)] for f in fits])


def backtest(fits: list[ScheduleFit], ladder: Ladder, rungs: list) -> Backtest | None:
    """Score the curves refitted without the largest common rung on that rung, against the next
    rung's ranking; None when a schedule has no backtest fit (or there is no next rung)."""
    if len(rungs) < 2 or any(f.backtest is None for f in fits):
        return None
    held, base = rungs[-1], rungs[-2]
    m = ladder.metric
    names = [f.schedule.name for f in fits]
    actual = dict(zip(names, m.from_loss(_rung_losses(fits, held)[:, 0])))
    extrap = dict(zip(names, (float(m.from_loss(f.at_rung(f.rung_of(held), f.backtest))[0]) for f in fits)))
    single = dict(zip(names, m.from_loss(_rung_losses(fits, base)[:, 0])))

    def error(pred: dict) -> float:
        pairs = combinations(names, 2)
        return float(np.mean([abs((pred[a] - pred[b]) - (actual[a] - actual[b])) for a, b in pairs]))

    acc_e, acc_b = decision_accuracy(extrap, actual), decision_accuracy(single, actual)
    err_e, err_b = error(extrap), error(single)
    # most pairs right, not only no worse than the baseline: 0% against 0% endorsed extrapolating an order
    # the backtest had just seen fail. A majority, not every pair: with many schedules one near-tied pair
    # ranked wrong would otherwise always send the advice back to the single rung.
    ranks = np.isnan(acc_e) or (acc_e > 0.5 and (np.isnan(acc_b) or acc_e >= acc_b))
    ok = ranks and err_e < err_b
    return Backtest(held, base, acc_e, acc_b, err_e, err_b, bool(ok))


INTERVAL = 0.8
"""The default width of the prediction and crossover intervals (`--interval`): the replicates' 10th to 90th
percentiles, as wide as a ladder of 2-3 seeds a rung can calibrate (80% intervals covered the truth in 81% of
the suite's draws, docs/advise.md)."""

NOISE_DF = 3
"""Degrees of freedom of a schedule's pooled seed noise (runs past the first seed of each rung) below which
the advice warns: on the synthetic ladders, 80% intervals covered the truth in 57% of draws at 1 and 67% at
2, against 71-82% from 3 up (docs/advise.md; `scripts/advise_calibration.py`)."""


def noise_warnings(fits: list[ScheduleFit], seed_noise: float | None) -> tuple[str, ...]:
    """A warning naming the schedules whose seed noise rests on fewer than `NOISE_DF` degrees of freedom:
    the bootstrap treats the pooled deviations as the noise's exact size (none with `--seed-noise`)."""
    if seed_noise is not None:
        return ()
    df = {f.schedule.name: f.rungs.seed_noise(f.replicates[0])[1] for f in fits}
    few = [f"{name} ({n})" for name, n in df.items() if n < NOISE_DF]
    if not few:
        return ()
    return (
        f"the seed noise of {', '.join(few)} is estimated from fewer than {NOISE_DF} degrees of freedom (runs "
        "beyond the first seed of each rung): the intervals and P(best) take that estimate as exact, so they are "
        "too narrow; train more seeds, or give --seed-noise SD from a larger ladder",
    )


def _percentiles(losses: np.ndarray, metric, interval: float, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Interval bounds over replicates (`axis`) in metric units (low <= high whatever the direction)."""
    q = np.percentile(metric.from_loss(losses), [50 - interval * 50, 50 + interval * 50], axis=axis)
    return np.minimum(q[0], q[1]), np.maximum(q[0], q[1])


def _why_not_extrapolated(fits: list[ScheduleFit], rungs: list, bt: Backtest | None) -> str:
    unfitted = [f.schedule.name for f in fits if f.fits is None]
    if unfitted:
        return f"{', '.join(unfitted)} ran rungs at fewer than 3 computes, too few to fit a curve"
    if bt is None:
        return (
            "no backtest is possible (it needs two common rungs and enough rungs below the largest to refit "
            "every curve), and extrapolation is only recommended after one"
        )
    return (
        f"the backtest failed: refitted without the rung N={bt.held_out[0]:.3g}, D={bt.held_out[1]:.3g}, the curves "
        f"ranked its pairs {percent(bt.extrapolation_accuracy)} right with pairwise error {bt.extrapolation_error:.3g}, "
        f"the next rung's ranking {percent(bt.baseline_accuracy)} with {bt.baseline_error:.3g} (it passes where the "
        "curves rank most pairs right, at least as many as the next rung, with the smaller error)"
    )


def _verdict(names, values, probs, bt, why_not, confidence, better, flat=()):
    """(method, recommendation, ranking, reason) from the backtest and the bootstrap shares; `flat`: the
    trends of the schedules whose ladders do not improve with compute (`trend.not_improving`)."""
    unchecked = values["single rung"] is None
    method: Method = "extrapolation" if unchecked or (bt is not None and bt.passed) else "single rung"
    probs, values = probs[method], values[method]
    order = np.argsort(values if better == "lower" else -values, kind="stable")
    ranking = tuple(names[i] for i in order)
    # an unchecked extrapolation was recommended as if backtested; docs/advise.md asks a backtest first
    if unchecked:
        reason = (
            "the schedules share no (N, D) rung, so there is neither a single-rung baseline nor a backtest: "
            "this extrapolation is unchecked; insufficient evidence: an extrapolation is recommended only after "
            "a backtest, so run every schedule at the same sizes and token budgets"
        )
        return method, None, ranking, reason
    elif method == "extrapolation":
        reason = (
            f"the backtest passed: refitted without the rung N={bt.held_out[0]:.3g}, D={bt.held_out[1]:.3g}, the "
            f"curves ranked its pairs {percent(bt.extrapolation_accuracy)} right with pairwise error "
            f"{bt.extrapolation_error:.3g}, the next rung's ranking {percent(bt.baseline_accuracy)} with "
            f"{bt.baseline_error:.3g}"
        )
    else:
        reason = f"the single-rung ranking is recommended because {why_not}"
    leader = int(np.argmax(probs))
    if probs[leader] >= confidence and names[leader] == ranking[0]:
        # a flat, worsening or turning ladder read as a falling curve: its lead may not last
        turned = {t.schedule: t for t in flat}
        if names[leader] in turned:
            reason += (
                f"; insufficient evidence: the leader, {names[leader]}, {turned[names[leader]].summary}, so neither "
                "its curve nor its largest rung says where it stands at the target (see the warning)"
            )
            return method, None, ranking, reason
        return method, names[leader], ranking, reason
    where = "at the target" if method == "extrapolation" else "at the largest common rung"
    if probs[leader] >= confidence:  # replicates and point fit disagree: the fit is not to be trusted there
        reason += (
            f"; insufficient evidence: {names[leader]} is best {where} in {probs[leader]:.0%} of bootstrap "
            f"replicates, but the point fit ranks {ranking[0]} first"
        )
        return method, None, ranking, reason
    reason += (
        f"; insufficient evidence: the leader, {names[leader]}, is best {where} in {probs[leader]:.0%} of bootstrap "
        f"replicates, below the {confidence:.0%} asked"
    )
    return method, None, ranking, reason


def advise(
    ladder: Ladder,
    target: Target,
    *,
    n_boot: int = 400,
    seed: int = 0,
    confidence: float = 0.9,
    interval: float = INTERVAL,
    delta: float = DELTA,
    seed_noise: float | None = None,
    paired: bool = True,
) -> Advice:
    """Fit every schedule, bootstrap it, and decide which schedule to recommend at `target`.
    `paired=False` resamples each schedule's seeds on its own (only to measure what pairing changes).
    The options are checked first, in the command's ranges (`options.check_fit_options`)."""
    check_fit_options(n_boot=n_boot, seed=seed, confidence=confidence, interval=interval, delta=delta, seed_noise=seed_noise)  # fmt: skip
    m = ladder.metric
    rungs = common_rungs(ladder)
    hold_out = rungs[-1] if len(rungs) > 1 else None
    fits = fit_schedules(ladder, np.random.default_rng(seed), n_boot, hold_out, delta, seed_noise, paired)
    names = [f.schedule.name for f in fits]
    fitted = all(f.fits is not None for f in fits)
    _check_comparable(rungs, fitted)
    target_c = float(np.median([f.target_compute(target) for f in fits]))
    check_not_below(fits, target_c, target)  # was a warning beside a confident recommendation (P(best) 1.00)
    at_target = np.stack([f.at(target) for f in fits]) if fitted else None
    rung_loss = _rung_losses(fits, rungs[-1]) if rungs else None
    bt = backtest(fits, ladder, rungs) if fitted else None
    why_not = "" if bt is not None and bt.passed else _why_not_extrapolated(fits, rungs, bt)
    probs, values = _by_method(at_target, rung_loss)
    flat = not_improving(fits, seed_noise)
    method, rec, ranking, reason = _verdict(names, _to_metric(values, m), probs, bt, why_not, confidence, m.better, flat)  # fmt: skip
    grid = _compute_grid(fits, target_c)
    on_grid = np.stack([f.at_compute(grid, ratio=target.ratio) for f in fits]) if fitted else None
    return Advice(
        metric=m.name,
        better=m.better,
        target=target.describe(),
        target_compute=target_c,
        flops_per_6nd=_flops_per_6nd(fits, target),
        past_ladder=past_ladder(ladder.observations, target_c, target),
        path=_path(fits, target),
        confidence=confidence,
        interval=interval,
        n_boot=n_boot,
        seed=seed,
        seed_noise=seed_noise,
        seeds_paired=all(f.paired for f in fits),
        predictions=(predictions := _predictions(fits, at_target, rung_loss, probs, m, interval)),
        crossovers=tuple(crossovers(fits, grid, on_grid, target_c, interval, confidence)) if fitted else (),
        rung=rungs[-1] if rungs else None,
        backtest=bt,
        method=method,
        recommendation=rec,
        ranking=ranking,
        reason=reason,
        curves=_curve_rows(names, grid, on_grid, m, interval) if fitted else (),
        runs=tuple(_run_row(o) for o in ladder.observations),
        warnings=_warnings(fits, target, target_c, seed_noise, flat, m.better, bt, predictions, interval),
    )


def _path(fits: list[ScheduleFit], target: Target) -> str:
    """`Target.path` for these fits: a curve in compute alone (the 1-D power law `POWER`) follows its runs, not the
    target's path; a 2-D curve (`CHINCHILLA`) follows the target's; a schedule with no curve (form None) neither."""
    one_d = tuple(f.schedule.name for f in fits if f.form is POWER)
    # the 2-D form told as predict, reach and trend tell it (was "neither None nor POWER", read as a missing power
    # calculation; `POWER` is the curve E + A*C^-a, not a test's power)
    return target.path(one_d, two_d=any(f.form is CHINCHILLA for f in fits))


def _check_comparable(rungs, fitted: bool) -> None:
    """Refuse a ladder with nothing to compare: no rung shared by every schedule and no curve for each."""
    if not rungs and not fitted:
        raise UserError(
            "the schedules share no (N, D) rung and not all of them have rungs at 3 computes to fit a curve: "
            "nothing can be compared; run every schedule at the same sizes and token budgets"
        )


def _warnings(fits, target, target_c, seed_noise, flat, better, bt, predictions, interval) -> tuple[str, ...]:
    """Every warning of the advice (module docstring); `bt`: the backtest, None where none ran."""
    reach = (*reach_warnings(fits, target_c, bt is not None), *allocation_warnings(fits, target))
    noise = (*noise_warnings(fits, seed_noise), *trend_warnings(flat, better))
    return (*reach, *noise, *outside_interval(predictions, interval))


def outside_interval(predictions: tuple[Prediction, ...], interval: float) -> tuple[str, ...]:
    """A warning for each point fit at the target outside its own bootstrap interval. It is printed beside an
    interval that excludes it (92.11 [91.17, 92.02]) without a word, which reads as an error: the numbers are
    right (the percentile interval of the replicates' fits, recomputed by hand), but the replicates' curves,
    refitted to other draws of the seeds, fall on one side of the point fit, whose form the rungs do not pin
    down that far out (a near-flat exponent: tests/advise/test_interval_warning.py's ladder)."""
    return tuple(
        f"the point fit of {p.schedule} at the target ({p.value:.4g}) lies outside its {interval:.0%} interval "
        f"[{p.low:.4g}, {p.high:.4g}]: at least {(1 + interval) / 2:.0%} of the replicates, refitted to other "
        f"draws of its seeds, predict {'less' if p.value > p.high else 'more'}, so its rungs do not pin the curve "
        "down there; read the prediction as uncertain by at least that gap"
        for p in predictions
        if None not in (p.value, p.low, p.high) and not p.low <= p.value <= p.high  # type: ignore[operator]
    )


def _by_method(at_target: np.ndarray | None, rung_loss: np.ndarray | None) -> tuple[dict, dict]:
    """Each method's P(best) per schedule and its values, from (schedules, 1 + replicates) arrays whose
    column 0 is the point estimate; None for a method the ladder does not allow."""
    probs = {
        "extrapolation": _share_best(at_target[:, 1:]) if at_target is not None else None,
        "single rung": _share_best(rung_loss[:, 1:]) if rung_loss is not None else None,
    }
    values = {
        "extrapolation": at_target[:, 0] if at_target is not None else None,
        "single rung": rung_loss[:, 0] if rung_loss is not None else None,
    }
    return probs, values


def _compute_grid(fits: list[ScheduleFit], target_compute: float) -> np.ndarray:
    """Where curves are drawn and crossovers searched: from the smallest rung to 10x past the target."""
    top = max(target_compute, *(f.rungs.compute.max() for f in fits))
    return np.geomspace(min(f.rungs.compute.min() for f in fits), 10 * top, 120)


CURVE_COLUMNS = ("schedule", "compute", "value", "low", "high")
"""The columns of `Advice.curves` (`curves.csv`, written with its header when no schedule has a curve)."""
RUN_COLUMNS = ("schedule", "params", "tokens", "compute", "seed", "value")
"""The columns of `Advice.runs` (`runs.csv`)."""


def _run_row(o) -> dict:
    return dict(
        zip(RUN_COLUMNS, (o.schedule.name, o.params, o.tokens, o.compute, o.seed, o.value), strict=True)
    )


def _to_metric(values: dict, metric) -> dict:
    return {k: None if v is None else metric.from_loss(v) for k, v in values.items()}


def _predictions(fits, at_target, rung_loss, probs, metric, interval) -> tuple[Prediction, ...]:
    out = []
    low, high = (
        _percentiles(at_target[:, 1:], metric, interval, axis=1) if at_target is not None else (None, None)
    )
    for i, f in enumerate(fits):
        out.append(
            Prediction(
                schedule=f.schedule.name,
                curve=f.form.name if f.form is not None else None,
                value=float(metric.from_loss(at_target[i, 0])) if at_target is not None else None,
                low=float(low[i]) if low is not None else None,
                high=float(high[i]) if high is not None else None,
                p_best=float(probs["extrapolation"][i]) if probs["extrapolation"] is not None else None,
                rung_value=float(metric.from_loss(rung_loss[i, 0])) if rung_loss is not None else None,
                rung_p_best=float(probs["single rung"][i]) if probs["single rung"] is not None else None,
            )
        )
    return tuple(out)


def _curve_rows(names, grid, on_grid, metric, interval) -> tuple[dict, ...]:
    low, high = _percentiles(on_grid[:, 1:], metric, interval, axis=1)
    point = metric.from_loss(on_grid[:, 0])
    return tuple(
        dict(
            zip(
                CURVE_COLUMNS,
                (name, float(c), float(point[i, g]), float(low[i, g]), float(high[i, g])),
                strict=True,
            )
        )
        for i, name in enumerate(names)
        for g, c in enumerate(grid)
    )
