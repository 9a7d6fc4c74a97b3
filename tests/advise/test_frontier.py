"""The compute-optimal frontier of a Chinchilla curve (`ScheduleFit.at_compute` with no ratio): the
closed-form minimum over model sizes, checked against a dense brute-force search."""

from __future__ import annotations

import numpy as np
import pytest

from encoderlab.advise.fit import CHINCHILLA, Fits
from encoderlab.advise.ladder import Schedule
from encoderlab.advise.predict import Rungs, ScheduleFit

LARGEST = 2.5e7  # the ladder's largest size; the old search stopped at 1000 times it


def _fit(rows: list[tuple[float, float, float, float, float]], flops_ratio: float = 1.3) -> ScheduleFit:
    """A schedule whose fitted curves are `rows` of (E, A, a, B, b), inputs scaled by its largest rung."""
    points = np.array([[4e6, 8e7], [1e7, 2e8], [LARGEST, 5e8]])
    rungs = Rungs(points=points, compute=6 * points.prod(1), index=np.arange(3))
    params = np.array([[np.log(e), np.log(a), x, np.log(b), y] for e, a, x, b, y in rows])
    scale = np.repeat(points[-1][None], len(rows), 0)
    fits = Fits(CHINCHILLA, params, np.zeros(len(rows)), scale)
    return ScheduleFit(
        Schedule.biphasic(0.0, 0.4), rungs, np.zeros((len(rows), 3)), flops_ratio, CHINCHILLA, fits
    )


def _brute_force(fit: ScheduleFit, compute: float) -> np.ndarray:
    sizes = np.geomspace(1e-6, 1e12, 200_001) * LARGEST
    points = np.stack([sizes, compute / (6 * fit.flops_ratio * sizes)], -1)
    return fit.fits.predict(points).min(-1)


@pytest.mark.parametrize("compute", [1e15, 1e18, 1e21, 1e26])
def test_the_frontier_is_the_lowest_loss_over_all_sizes(compute):
    # the second curve's optimum at 1e26 FLOPs lies past 1000 times the largest rung (about 5e10
    # parameters): a search bounded there read it too high
    fit = _fit([(0.6, 0.8, 0.34, 1.1, 0.28), (0.5, 2.0, 0.6, 0.7, 0.2), (0.9, 0.3, 0.2, 0.3, 0.45)])
    got = fit.at_compute(np.array([compute]))[:, 0]
    want = _brute_force(fit, compute)
    assert got == pytest.approx(want, rel=1e-7)
    assert np.all(got <= want * (1 + 1e-9))


def test_the_optimum_balances_the_two_terms_as_chinchilla_derives():
    """At the optimum a A / N^a = b B / D^b (the derivative of the loss along N x D = K is zero)."""
    from encoderlab.advise.predict import optimal_log_size

    fit = _fit([(0.6, 0.8, 0.34, 1.1, 0.28)])
    log_k = np.log(np.array([1e19, 1e23]) / (6 * fit.flops_ratio))
    log_n = optimal_log_size(fit.fits.params, log_k, fit.fits.scale)[0]
    n, d = np.exp(log_n) / LARGEST, np.exp(log_k - log_n) / 5e8
    np.testing.assert_allclose(0.34 * 0.8 / n**0.34, 0.28 * 1.1 / d**0.28, rtol=1e-9)


def test_a_fit_with_no_interior_minimum_is_searched_over_sizes():
    """An exponent <= 0 leaves the loss falling towards one end: the bounded search decides there."""
    fit = _fit([(0.6, 0.8, 0.34, 1.1, 0.28), (0.6, 0.8, -0.05, 1.1, 0.28)])
    got = fit.at_compute(np.array([1e18]))[:, 0]
    sizes = np.geomspace(1e-3, 1e3, 97) * LARGEST
    bounded = fit.fits.rows(slice(1, 2)).predict(np.stack([sizes, 1e18 / (6 * 1.3 * sizes)], -1)).min()
    assert got[1] == pytest.approx(bounded) and got[0] == pytest.approx(_brute_force(fit, 1e18)[0], rel=1e-7)
