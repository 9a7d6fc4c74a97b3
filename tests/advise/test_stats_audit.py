"""The advisor's statistics against direct computations, on the ladders its own tests rarely draw.

* The batched fit against scipy's `least_squares` on the same loss (`test_fit.scipy_loss`, from a grid of
  starts) on flat and non-monotone ladders: there the optimum sits on the bounds (E at the smallest value,
  the exponent at its lowest), where the fit's projected steps used to stall at up to 2.7x scipy's objective.
* The 2-D fit on flat ladders against scipy from a grid of starts: not to scipy's objective but within 5% of
  it, and to the same predictions within one run's seed sd (the tolerance is legitimate, and why is said at
  its test).
* The held-out within-noise bound (`holdout.within_noise`) against a pooled two-sample t computed here from
  the runs: sd pooled over both schedules' rungs, df = runs minus rungs, two-sided 95% (docs/advise.md).
* The trend check's slope and standard error against a weighted regression written here.
* The crossovers: each replicate's sign changes on the compute grid found here, their interval, share and verdict
  (crossing, insufficient evidence, none), against `advise`'s.
* The bootstrap: seeded (one seed, one set of replicates), and each replicate's rung means move only by
  redrawn pretraining-seed deviations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from tests.advise.advise_fixtures import (
    GRID,
    LEVEL,
    NOISE,
    ladder_2d,
    scipy_2d_problem,
    scipy_best,
    scipy_fit,
)

from encoderlab.advise.fit import CHINCHILLA, DELTA, EXP_RANGE, POWER, fit_curves
from encoderlab.advise.holdout import within_noise
from encoderlab.advise.ladder import KNOWN_METRICS, Ladder, Observation
from encoderlab.advise.predict import fit_schedules
from encoderlab.advise.synthetic import CLM_LIKE, MLM_LIKE
from encoderlab.advise.trend import trend

LOSS = KNOWN_METRICS["val/mlm15"]
SIZES = (8e6, 2e7, 5e7, 1.25e8)


def _shapes(rng: np.random.Generator, kind: str, x: np.ndarray) -> np.ndarray:
    # non-monotone: down, up, down again in log compute
    y = np.full_like(x, 3.0) if kind == "flat" else 3.0 + 0.2 * np.sin(np.log(x))
    return y * np.exp(rng.normal(0.0, 0.003, len(y)))


@pytest.mark.parametrize("kind", ["flat", "non-monotone"])
@pytest.mark.parametrize("draw", range(6))
def test_the_fit_reaches_scipys_objective_where_the_optimum_is_on_a_bound(kind, draw):
    rng = np.random.default_rng(draw)
    compute = np.repeat(np.geomspace(1e15, 1e15 * 4.0 ** (3 + draw % 3), 3 + draw % 3), 2)
    x = compute / compute.max()
    y = _shapes(rng, kind, x)
    fit = fit_curves(POWER, compute[:, None], y[None], scale=np.array([compute.max()]))
    lx, ly = np.log(x)[:, None], np.log(y)
    starts = [
        [np.log(e * y.min()), np.log(y.mean() * (1 - e)), a]
        for e in (0.3, 0.6, 0.9, 0.99)
        for a in (0.05, 0.2, 0.5, 1.0)
    ]
    best = scipy_best(lx, ly, starts, [-60, -60, EXP_RANGE[0]], [ly.min(), 60, EXP_RANGE[1]], DELTA)
    assert fit.objective[0] <= best * (1 + 1e-3)


@pytest.mark.parametrize("draw", [100, 109, 118])
def test_the_2d_fit_on_a_flat_ladder_predicts_as_scipys_best_fit(draw):
    """A tolerance, not a defect: on a flat 2-D ladder (3 sizes x 3 budgets, 2 seeds, noise 0.3%) the batched
    fit ended up to a few percent above the objective scipy reaches from a grid of starts (30 draws,
    generator seeds 100-129: 4 above 0.1%, at most 4.0%, draw 109, with `fit.STARTS` = 3; 7 with the one start
    before it); since its starts are the local minima of a grid spanning `fit.EXP_RANGE`, none of the 30 is above
    0.1% (measured; the 5% bound here is kept for such minima on other draws).
    Not the stopping rule or the bounds: a flat ladder does not identify E + A/N^a + B/D^b, and the objective
    has several near-equal minima, each term killed (its coefficient at its bound, where its gradient vanishes)
    or kept small with its exponent at a bound to fit the noise at the smallest sizes or budgets. The fit refines
    the best `fit.STARTS` (3) points of its exponent grid (a stated departure from OLMo-core, which refines all
    4^5; `fit`'s docstring), so it stays in those starts' minima; 1000 more iterations move none of the worst (one draw in
    30 was still descending a curved valley, and ends within 5e-5 with them). What the advice reads, the curve
    past the ladder, agrees: at 2.5x and 10x the largest size and budget the two fits differed by at most 0.36
    and 0.68 of one run's seed sd over the 30 draws with one start, and by 0.00 now
    (`scripts/advise_extrapolation_audit.py`, 2026-12-06); and a flat schedule is flagged by the trend check
    (docs/advise.md), so it is never recommended on its curve."""
    y = ladder_2d("flat", draw)
    fit = fit_curves(CHINCHILLA, GRID, y[None], scale=np.array([1.0, 1.0]))
    best, params = scipy_fit(*scipy_2d_problem(y), DELTA)
    assert fit.objective[0] <= best * 1.05
    far = np.log(np.array([[2.5, 2.5], [10.0, 10.0]]))[None]
    ours, theirs = (np.exp(CHINCHILLA.log_predict(p, far))[0] for p in (fit.params, params[None]))
    assert np.abs(ours - theirs).max() <= LEVEL * NOISE  # one run's seed sd


def _ladder(values: dict) -> Ladder:
    """values: schedule -> per rung a tuple of seed values."""
    return Ladder(
        LOSS,
        tuple(
            Observation(schedule=s, params=n, tokens=20.0 * n, seed=k, value=v)
            for s, rungs in values.items()
            for n, seeds in zip(SIZES, rungs)
            for k, v in enumerate(seeds)
        ),
    )


def _rung(draw, centre: float) -> tuple[float, ...]:
    n = draw(st.integers(1, 3))
    return tuple(centre + draw(st.floats(-0.05, 0.05)) for _ in range(n))


@st.composite
def ladders(draw) -> dict:
    """Two schedules at 4 rungs of 1-3 seeds each, the held-out (largest) rung of 2-3."""
    out = {}
    for s in (MLM_LIKE, CLM_LIKE):
        rungs = [_rung(draw, 3.0 - 0.2 * i) for i in range(3)]
        top = tuple(2.4 + draw(st.floats(-0.05, 0.05)) for _ in range(draw(st.integers(2, 3))))
        out[s] = [*rungs, top]
    return out


@settings(max_examples=60, deadline=None)
@given(ladders(), st.sampled_from([None, 0.02]))
def test_within_noise_is_a_pooled_two_sided_t_bound(values, seed_noise):
    ladder = _ladder(values)
    point = (SIZES[-1], 20.0 * SIZES[-1])
    names = sorted(s.name for s in values)
    got = within_noise(ladder, point, names, seed_noise)
    # direct: every rung's squared deviations from its mean, pooled over both schedules; df = runs - rungs
    ss = sum(((np.array(r) - np.mean(r)) ** 2).sum() for rungs in values.values() for r in rungs)
    df = sum(len(r) - 1 for rungs in values.values() for r in rungs)
    top = {s.name: rungs[-1] for s, rungs in values.items()}
    a, b = names
    gap = abs(np.mean(top[a]) - np.mean(top[b]))
    se = math.sqrt(1 / len(top[a]) + 1 / len(top[b]))
    if seed_noise is None and ss == 0:  # no noise at all: only an exact tie is within it
        assert got == (((a, b),) if gap == 0 else ())
        return
    if seed_noise is None:
        t = gap / (math.sqrt(ss / df) * se)  # a pooled two-sample t, two-sided p from Student's t on df
        p = 2 * stats.t.sf(t, df)
    else:
        p = 2 * stats.norm.sf(gap / (seed_noise * se))
    if abs(p - 0.05) > 1e-9:  # not at the bound itself, where rounding decides
        assert got == (((a, b),) if p > 0.05 else ())


def test_the_trend_is_a_seed_weighted_regression_with_the_pooled_noise():
    values = {MLM_LIKE: [(3.0, 3.02), (2.9,), (2.7, 2.75, 2.71), (2.6, 2.58)], CLM_LIKE: [(3.1, 3.12)] * 4}
    ladder = _ladder(values)
    (fit, _) = fit_schedules(ladder, np.random.default_rng(0), 0)
    got = trend(fit, None)
    x = np.log10(np.concatenate([[6 * n * 20 * n] * len(r) for n, r in zip(SIZES, values[MLM_LIKE])]))
    y = np.concatenate(values[MLM_LIKE])
    means = np.concatenate([[np.mean(r)] * len(r) for r in values[MLM_LIKE]])
    slope = np.polyfit(x, means, 1)[0]  # each run weighs one: a rung by its seeds
    df = len(y) - len(values[MLM_LIKE])
    sd = math.sqrt(((y - means) ** 2).sum() / df)
    assert got.slope == pytest.approx(slope, rel=1e-9) and got.df == df
    assert got.se == pytest.approx(sd / math.sqrt(((x - x.mean()) ** 2).sum()), rel=1e-9)
    assert got.critical == pytest.approx(stats.t.ppf(0.95, df))


def test_the_bootstrap_is_seeded_and_redraws_pretraining_seed_deviations_only():
    values = {MLM_LIKE: [(3.0, 3.02), (2.9,), (2.7, 2.75, 2.71), (2.6, 2.58)], CLM_LIKE: [(3.1, 3.12)] * 4}
    ladder = _ladder(values)

    def fits(seed):
        # 20 replicates: 200 redrawn values of the first schedule from a pool of 7 (each draw is checked), and two
        # seeds' 20 x 20 values never all equal; each fit_schedules call is a batch of curve fits, so the draws
        # are kept few and the seed-4 fits checked for both properties (200 replicates at seed 0 were)
        return fit_schedules(ladder, np.random.default_rng(seed), 20)

    first = fits(4)
    replicates = [np.vstack([f.replicates for f in got]) for got in (first, fits(4), fits(5))]
    assert np.array_equal(replicates[0], replicates[1]) and not np.array_equal(replicates[0], replicates[2])
    (fit, _) = first
    data = fit.replicates[0]
    centre = fit.rungs.means(data[None])[0][fit.rungs.index]
    n = np.bincount(fit.rungs.index)[fit.rungs.index]
    pool = ((data - centre) * np.sqrt(n / np.maximum(n - 1, 1)))[n > 1]  # modified residuals, pooled
    drawn = fit.replicates[1:] - centre
    assert np.isin(drawn.round(12), pool.round(12)).all()


@pytest.mark.parametrize("crossover", [0.3, 3.0, 30.0, 100.0, 300.0])  # cross, insufficient, none
def test_the_crossover_interval_share_and_verdict_match_the_replicates_curves(crossover):
    """Each replicate's curves on the compute grid, their sign changes found here (the one nearest the target),
    the 10th-90th percentiles of the crossing replicates' log compute, the share that cross, and the verdict:
    decided where at least `confidence` of the replicates agree with the point fit (docs/advise.md, 3)."""
    from encoderlab.advise.decide import advise, common_rungs
    from encoderlab.advise.predict import Target
    from encoderlab.advise.synthetic import synthetic_ladder

    syn = synthetic_ladder(np.random.default_rng(3), crossover=crossover, seeds=(3, 3))
    target = Target(flops=syn.target_flops)
    advice = advise(syn.ladder, target, n_boot=40, seed=0)
    fits = fit_schedules(syn.ladder, np.random.default_rng(0), 40, common_rungs(syn.ladder)[-1])
    computes = np.concatenate([f.rungs.compute for f in fits])
    grid = np.geomspace(computes.min(), 10 * max(syn.target_flops, computes.max()), 120)
    a, b = (f.at_compute(grid) for f in fits)  # (1 + B, 120) each
    logc, log_t = np.log(grid), np.log(syn.target_flops)
    at = []
    for row in a - b:
        cross = [
            logc[k] + row[k] / (row[k] - row[k + 1]) * (logc[k + 1] - logc[k])
            for k in range(len(row) - 1)
            if row[k] * row[k + 1] < 0
        ]
        at.append(min(cross, key=lambda c: abs(c - log_t)) if cross else None)
    boot = [c for c in at[1:] if c is not None]
    (got,) = advice.crossovers
    assert got.share == pytest.approx(len(boot) / 40, abs=1e-12)
    if boot:
        low, high = np.exp(np.percentile(boot, [10, 90]))
        assert (got.low, got.high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    # the reference reads two ways (cross, apart): these curves are never one curve, which it would count as apart
    assert got.same == 0.0 and got.point != "identical"
    agree = got.share if at[0] is not None else 1 - got.share
    decided = ("cross" if at[0] is not None else "no crossover") if agree >= 0.9 else "insufficient evidence"
    assert got.verdict == decided
    assert (got.compute is None) == (at[0] is None)


@pytest.mark.parametrize("draw", [4, 12, 14, 22, 36, 51, 63])
def test_the_2d_fit_on_a_ladder_that_falls_and_rises_reaches_scipys_best_of_a_grid(draw):
    """A ladder that falls and rises again in compute (3 sizes x 3 budgets, 2 seeds, noise 0.3%), a shape the
    form cannot follow: near-equal minima, whose best holds one exponent at its upper bound (a small steep term)
    and the other near 0 (a term that carries the level, with E at its bound, the smallest value). The one refined
    grid start (before `fit.STARTS`) ended 2.3% above scipy's best of a grid of starts at draw 4; the best three
    grid points, mostly neighbours in one basin, ended above it by more than 0.1% in 6 of 30 draws (generator
    seeds 0-29; 12, 14 and 22 here, up to 3.2%), since the grid stopped at 1.5 and its starts were ranked with E
    above its bound. The grid now spans `EXP_RANGE`, E is profiled at its bound, and the starts are the grid's
    local minima: none of those 30 draws, nor 30 flat ones, ends above 0.1% (docs/advise.md). On 90 draws 3 still
    did (36, 51 and 63 here, up to 0.36%): the grid's coefficients, solved by least squares, ranked its points by a
    loss the fit does not minimise, and the local minima it put first refined into a basin with a term killed or the
    steep and flat terms swapped. Reweighted as the objective weighs each run (`fit.PROFILE_IRLS`), none of the 90
    is above 0.1%."""
    x = GRID[:, 0] * GRID[:, 1]
    y = ladder_2d("falls and rises", draw)
    assert np.diff(np.sort(x)).any() and y[np.argsort(x)][0] > y.min() < y[np.argsort(x)][-1]  # falls, rises
    fit = fit_curves(CHINCHILLA, GRID, y[None], scale=np.array([1.0, 1.0]))
    assert fit.objective[0] <= scipy_best(*scipy_2d_problem(y), DELTA) * (1 + 1e-3)
