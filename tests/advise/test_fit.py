"""The batched log-Huber fit (with its least-squares tie-break) against scipy, and what it recovers from noise-free curves."""

from __future__ import annotations

import numpy as np
import pytest
from tests.advise.advise_fixtures import GRID, scipy_best

from encoderlab.advise.fit import (
    CHINCHILLA,
    DELTA,
    DELTA_RANGE,
    POWER,
    _first_lowest,
    _grid_minima,
    fit_curves,
)

RUNGS = np.repeat(np.array([1 / 64, 1 / 16, 1 / 4, 1.0]), 3)


@pytest.mark.parametrize("delta", [1e-3, 1e-2])
def test_power_fit_reaches_scipys_objective(delta):
    rng = np.random.default_rng(0)
    values = 2.0 + (RUNGS**-0.3)[None] + rng.normal(0, 0.01, (3, len(RUNGS)))
    fits = fit_curves(POWER, RUNGS[:, None], values, scale=np.array([1.0]), delta=delta)
    lx = np.log(RUNGS)[:, None]
    for row, reached in zip(values, fits.objective):
        ly = np.log(row)
        starts = [[np.log(e * row.min()), 0.0, a] for e in (0.01, 0.5, 0.9) for a in (0.1, 0.4, 1.0)]
        best = scipy_best(lx, ly, starts, [-60, -60, 0.01], [ly.min(), 60, 2.5], delta)
        assert reached <= best * (1 + 1e-7) + 1e-15


def test_chinchilla_fit_reaches_scipys_objective():
    rng = np.random.default_rng(1)
    truth = 1.5 + 0.8 * GRID[:, 0] ** -0.35 + 0.6 * GRID[:, 1] ** -0.3
    values = truth[None] + rng.normal(0, 0.005, (2, len(GRID)))
    fits = fit_curves(CHINCHILLA, GRID, values, scale=np.array([1.0, 1.0]))
    lx = np.log(GRID)
    for row, reached in zip(values, fits.objective):
        ly = np.log(row)
        starts = [
            [np.log(e * row.min()), -1.0, a, -1.0, b]
            for e in (0.1, 0.5, 0.9)
            for a in (0.2, 0.8)
            for b in (0.2, 0.8)
        ]
        lower, upper = [-60, -60, 0.01, -60, 0.01], [ly.min(), 60, 2.5, 60, 2.5]
        assert reached <= scipy_best(lx, ly, starts, lower, upper, 1e-3) * (1 + 1e-7) + 1e-15


def test_noise_free_curves_are_recovered_and_extrapolated():
    power = 2.0 + 1.5 * RUNGS**-0.27
    fits = fit_curves(POWER, RUNGS[:, None], power[None], scale=np.array([1.0]))
    assert fits.predict(np.array([[16.0]]))[0, 0] == pytest.approx(2.0 + 1.5 * 16**-0.27, rel=1e-6)
    chin = 1.5 + 0.8 * GRID[:, 0] ** -0.35 + 0.6 * GRID[:, 1] ** -0.3
    fits = fit_curves(CHINCHILLA, GRID, chin[None], scale=np.array([1.0, 1.0]))
    far = 1.5 + 0.8 * 8**-0.35 + 0.6 * 8**-0.3
    assert fits.predict(np.array([[8.0, 8.0]]))[0, 0] == pytest.approx(far, rel=1e-5)


def test_a_zero_weight_point_is_as_if_absent_and_scale_is_only_a_unit():
    rng = np.random.default_rng(2)
    values = 2.0 + RUNGS**-0.3 + rng.normal(0, 0.01, len(RUNGS))
    values[-1] += 5.0  # would wreck the fit if it counted
    weights = np.ones_like(values)
    weights[-1] = 0.0
    masked = fit_curves(POWER, RUNGS[:, None], values[None], weights[None], scale=np.array([1.0]))
    dropped = fit_curves(POWER, RUNGS[:-1, None], values[None, :-1], scale=np.array([1.0]))
    rescaled = fit_curves(POWER, RUNGS[:-1, None] * 1e18, values[None, :-1], scale=np.array([1e18]))
    at = np.array([[4.0]])
    assert masked.predict(at)[0, 0] == pytest.approx(dropped.predict(at)[0, 0], rel=1e-6)
    assert rescaled.predict(at * 1e18)[0, 0] == pytest.approx(dropped.predict(at)[0, 0], rel=1e-6)


def test_a_delta_past_the_accepted_range_is_least_squares_and_one_inside_is_not():
    """Why `--huber-delta` is held to `DELTA_RANGE`: past either end the fit is least squares, the loss `inf`
    (refused) stood for. A value-1.0 outlier (~0.4 in log units) pulls least squares, not the Huber fit."""
    rng = np.random.default_rng(3)
    values = 2.0 + RUNGS**-0.3 + rng.normal(0, 0.01, len(RUNGS))
    values[-1] += 1.0

    def at(delta):
        with np.errstate(over="ignore"):  # delta^2 overflows in the (unused) linear branch past ~1e154
            return fit_curves(
                POWER, RUNGS[:, None], values[None], scale=np.array([1.0]), delta=delta
            ).predict(np.array([[4.0]]))[0, 0]

    least_squares_value = at(1e300)
    assert at(DELTA_RANGE[1] * 10) == pytest.approx(least_squares_value, rel=1e-6)
    assert at(DELTA_RANGE[0] / 1e6) == pytest.approx(least_squares_value, rel=1e-4)
    for inside in (DELTA_RANGE[0], DELTA, 0.1):
        assert abs(at(inside) - least_squares_value) > 0.01


def _one_by_one(obj: np.ndarray) -> np.ndarray:
    """The candidate `fit._lm_step` kept before it evaluated them in one batch: the best so far, replaced only by a
    strictly lower objective (NaN never lower)."""
    best = np.zeros(obj.shape[1], dtype=int)
    for k in range(1, len(obj)):
        best = np.where(obj[k] < obj[best, np.arange(obj.shape[1])], k, best)
    return best


def test_the_batched_step_search_keeps_the_candidate_the_one_by_one_search_kept():
    """`_lm_step` evaluates its candidates in one batch (a speed-up): the same candidate is kept as when each was
    compared with the best so far, ties going to the earlier one, NaN never winning unless first."""
    rng = np.random.default_rng(0)
    obj = rng.choice([0.5, 1.0, 2.0, np.inf, np.nan], size=(17, 4000))
    assert np.array_equal(_first_lowest(obj), _one_by_one(obj))
    assert np.isnan(obj[0]).any() and np.isinf(obj[0]).any()  # the draw holds the NaN and inf first rows


@pytest.mark.parametrize("form", [POWER, CHINCHILLA])
def test_log_predict_on_a_batch_of_candidates_is_each_candidates_own(form):
    rng = np.random.default_rng(1)
    p = rng.normal(0.0, 1.0, (5, 7, form.n_params))
    X = rng.normal(0.0, 1.0, (7, 4, form.dims))
    batched = form.log_predict(p, X)
    assert batched.shape == (5, 7, 4)
    assert all(np.array_equal(batched[c], form.log_predict(p[c], X)) for c in range(5))


@pytest.mark.parametrize("form", [POWER, CHINCHILLA])
def test_grid_minima_from_cached_neighbours_match_the_full_neighbour_mask(form):
    """`_grid_minima` compares each point with its neighbours by index (built once per grid): the same as with
    a (G, G) mask of neighbours, every other point compared against inf, ties, inf and NaN included."""
    grid = form.exponent_grid()
    steps = np.stack([np.unique(col, return_inverse=True)[1] for col in grid.T], -1)
    near = np.abs(steps[:, None] - steps[None]).max(-1) <= 1
    obj = np.random.default_rng(2).choice([0.0, 1.0, 1.5, 2.0, np.inf, np.nan], size=(50, len(grid)))
    full = (obj[:, :, None] <= np.where(near, obj[:, None, :], np.inf)).all(-1)
    assert np.array_equal(_grid_minima(grid, obj), full) and full.any()
