"""The fit's layouts for speed (`advise.fitbatch`) give the same bits as the arithmetic they replace: the curve at each
distinct point copied to its runs is the curve at every run, a fit stepped in blocks of problems is the fit in one
batch, and the in-place Huber loss is the `np.where` it was written as."""

from __future__ import annotations

import numpy as np
import pytest

from encoderlab.advise import fitbatch
from encoderlab.advise.fit import CHINCHILLA, DELTA, POWER, fit_curves, huber
from encoderlab.advise.fitbatch import Points

RUNGS = np.repeat(np.array([1 / 64, 1 / 16, 1 / 4, 1.0]), 3)


def _inputs(form, rng) -> np.ndarray:
    """(6, 9, dims) log inputs: two layouts of repeated points (a rung's seeds), one of them with 0.0 and -0.0."""
    points = rng.normal(0.0, 1.0, (4, form.dims))
    points[0], points[1] = 0.0, -0.0  # equal as floats, not as bits: kept apart
    first = points[[0, 0, 1, 2, 2, 2, 3, 3, 1]]
    second = rng.normal(0.0, 1.0, (9, form.dims))  # no point repeated
    return np.stack([first, second, first, first, second, first])


@pytest.mark.parametrize("form", [POWER, CHINCHILLA])
def test_the_curve_at_each_distinct_point_is_the_curve_at_every_run(form):
    rng = np.random.default_rng(0)
    X = _inputs(form, rng)
    points = Points.of(X)
    assert points.unique.shape[:2] == (6, 9) and len(np.unique(points.flat)) < X.shape[0] * X.shape[1]
    p = rng.normal(0.0, 1.0, (17, 6, form.n_params))
    expanded = points.expand(form.log_predict(p, points.unique))
    assert expanded.flags.c_contiguous and expanded.tobytes() == form.log_predict(p, X).tobytes()
    jac = points.expand(form.jacobian(p[0], points.unique), tail=1)
    assert jac.flags.c_contiguous and jac.tobytes() == form.jacobian(p[0], X).tobytes()
    rows = np.array([5, 1, 1, 0])
    picked = points.rows(rows)
    assert picked.expand(form.log_predict(p[0, rows], picked.unique)).tobytes() == (
        form.log_predict(p[0, rows], X[rows]).tobytes()
    )


def test_a_fit_stepped_in_blocks_of_one_problem_is_the_fit_in_one_batch(monkeypatch):
    rng = np.random.default_rng(1)
    values = 2.0 + (RUNGS**-0.3)[None] + rng.normal(0, 0.01, (4, len(RUNGS)))
    weights = np.ones_like(values)
    weights[1, -3:] = 0.0  # a held-out rung

    def fit():
        return fit_curves(POWER, RUNGS[:, None], values, weights, scale=np.array([1.0]))

    monkeypatch.setattr(fitbatch, "CHUNK", 10**9)
    whole = fit()
    monkeypatch.setattr(fitbatch, "CHUNK", 1)
    assert fitbatch.blocks(12, 17 * len(RUNGS)) == [slice(i, i + 1) for i in range(12)]
    blocked = fit()
    assert blocked.params.tobytes() == whole.params.tobytes()
    assert blocked.objective.tobytes() == whole.objective.tobytes()


def test_the_in_place_huber_loss_is_the_where_it_was_written_as():
    r = np.random.default_rng(2).normal(0.0, 3e-3, (17, 40, 9))
    r[0, 0, :4] = [np.inf, -np.inf, np.nan, DELTA]
    written = np.where(np.abs(r) <= DELTA, 0.5 * r * r, DELTA * (np.abs(r) - 0.5 * DELTA))
    assert huber(r, DELTA).tobytes() == written.tobytes()


@pytest.mark.parametrize("unknowns", [1, 2, 3])
def test_the_written_out_solve_is_numpys(unknowns):
    """`fitbatch.solve` against `np.linalg.solve`: 1 and 2 unknowns written out (pivoting on the larger entry of the
    first column, the first of equals), 3 handed to numpy. Equal here to a few rounding errors, not to the bit: the
    bits are LAPACK's on the machines measured (advise/fitbatch.py), which another CPU's kernels need not share."""
    rng = np.random.default_rng(3)
    a = rng.normal(0.0, 1.0, (4000, unknowns, unknowns)) * np.exp(
        rng.normal(0.0, 2.0, (4000, unknowns, unknowns))
    )
    a += 2 * np.eye(unknowns) * np.abs(a).sum(-1, keepdims=True)  # diagonally dominant, well conditioned
    a[:1000, 0, 0] *= 1e-6  # the second row pivots ...
    a[1000:1100, -1, 0] = -a[1000:1100, 0, 0]  # ... and at a tie the first
    b = rng.normal(0.0, 1.0, (4000, unknowns))
    np.testing.assert_allclose(fitbatch.solve(a, b), np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-12)
    a[7] = 0.0
    with pytest.raises(np.linalg.LinAlgError):
        fitbatch.solve(a, b)
