"""Scaling curves fitted with a Huber loss in log space, many problems at once.

The estimator is Chinchilla's "approach 3" (Hoffmann et al. 2022, appendix D.2) as OLMo's ladder
runs it (allenai/OLMo-core, `src/olmo_core/model_ladder/analysis/scaling_laws.py`: `log_huber`,
delta 1e-3, a grid of initial values, the best of the local fits):

    minimise  sum_i w_i * [ Huber_delta(r_i) + TIE * r_i^2 / 2 ],   r_i = log f(x_i; theta) - log y_i

with f either `E + A/N^a + B/D^b` (`CHINCHILLA`, when a schedule's runs vary size and tokens) or
`E + A * C^-a` (`POWER`, the 1-D fallback in compute). Positivity comes from Chinchilla's
log-sum-exp form: log f = LSE(e, log A - a log N, log B - b log D), E = exp(e).

One addition, for uniqueness: a least-squares tie-break, `TIE * r^2 / 2` (`TIE` = 1e-4) added to every
point's Huber loss. With seed noise of ~3e-3 in log units, delta 1e-3 makes the loss nearly L1, which is
flat between a rung's two seeds: a curve with as many parameters as rungs (the 3-rung backtest fit of a
4-size ladder) can pass anywhere between each 2-seed rung's runs at one objective, and which point an
optimiser stops at (scipy's, ours, another start) moved the held-out prediction by up to 3.9 noise sd. The
tie-break picks, among those equal-Huber solutions, the one closest to the rung means in least squares
(through them, where the curve can pass through them), and makes the objective strictly convex in the fitted
values, so the fit is unique and any good optimiser finds the same curve. Its cost is bounded: the Huber
part of the objective at the tie-broken fit exceeds its minimum by at most `TIE` times the least-squares
loss sum(r^2)/2 of the Huber fit, ~2e-4 of the Huber objective where residuals are the noise's ~3 delta
(measured on 60 fits of 30 suite ladders: at most 5e-8 of it); where the Huber loss has a unique minimum (a
rung of 3 seeds, at its median) the tie-break moves it by about TIE times the residuals, ~1e-6 in log units;
and robustness is kept, since the tie-break outweighs the Huber loss's linear part only at residuals beyond
2*delta/TIE = 20 in log units. The alternative, fitting rung means whenever the curve has as many parameters
as rungs, is a switch in the estimator at one rung count (a different loss weighting on either side of it)
and leaves other flat sets (a 2-D grid of 2-seed points under the 5-parameter form) as they were; the
tie-break keeps Chinchilla's approach-3 estimator (Hoffmann et al. 2022; as Besiroglu et al. 2024 refit it,
on every run, not on averages) and only chooses within its ties.

Two departures, both for speed (a bootstrap refits every schedule hundreds of times, and the
synthetic test suite does that for 200 ladders in seconds):
* **The grid of initial values is profiled, not optimised from.** For every exponent on a grid the
  linear coefficients (E, A, B) are solved in closed form by least squares in relative units, reweighted
  as the objective weighs each run (`PROFILE_IRLS`, below) (variable projection; Czech et al. 2026, "Problems with Chinchilla Approach 2", show this makes
  approach 3 well conditioned), the log-Huber objective is evaluated there, and only the best
  `STARTS` grid points are refined. OLMo-core instead runs L-BFGS-B from all 4^5 grid points.
* **The refinement is a batched Levenberg-Marquardt with Huber weights (IRLS)**, written in numpy
  over a stack of problems, instead of one scipy call per problem (a call per refit, which a bootstrap
  repeats hundreds of times per schedule). `tests/advise/test_fit.py` checks that
  it reaches the objective of scipy's `least_squares` started from a grid (the same loss, Huber plus
  the tie-break, as a custom `loss`), `tests/advise/test_stats_audit.py` that it does on flat and non-monotone
  ladders, whose optimum lies on the bounds, and `tests/advise/test_crosscheck.py` that the two give one curve.
  Bounds are kept by an active set: a parameter at a bound that the step pushes past it is held there while the
  others move (clipping an unbounded step afterwards stalled such fits at up to 2.7x scipy's objective).
  Refining a few grid starts, not all, is a trade-off that matters where the data do not identify the 2-D form:
  on a flat 2-D ladder, or one that falls and rises again (which the form cannot follow), the objective has
  several near-equal minima (a term killed, its coefficient at its bound; or one small and steep, its exponent at
  the upper bound, and one near-flat carrying the level, with E at its bound, the smallest value), and such
  minima 0.1% apart extrapolate up to 1.5 (falls and rises) and 2.1 (flat) seed sd apart at 10x the largest size and
  budget (30 draws each, `scripts/advise_extrapolation_audit.py`). The trend check (`trend`) flags such a
  ladder where it rises beyond its seed noise (its rise test; the slope alone passed a ladder falling by more
  than it rises), not one that rises within it, whose minima are as near. So `STARTS` (3) grid points are
  refined side by side in the one batch and the lowest objective kept, chosen to land in different basins: the grid spans `EXP_RANGE` (it stopped at 0.05 and 1.5, short of the
  minima's bounds), E is profiled at its bound where its free solution is above it (the refinement clips it
  there, so such starts were ranked by an objective they never had), and the grid's local minima (no neighbour
  lower, one grid step in each exponent) are taken first, the best points alone being mostly neighbours that
  refine into one basin. On 30 draws of a falls-and-rises ladder (generator seeds 0-29) the best three grid
  points ended >0.1% above scipy's best of a grid in 6 (up to 3.2%), now in none; on 90 draws, 13 then, 3 (up to
  0.36%) with the local minima; on 30 flat ones (seeds 100-129, up to 4.0% before) none (`test_stats_audit.py`).
  The cost is about that of the old three starts: as many refinements, the grid's local minima found by
  comparisons on the grid already evaluated (timings belong to a benchmark, and no `encoderlab bench`
  command times the fit); refining every grid point reaches scipy's best on all 90 but refines 85 times
  as many starts (all 256 of the 2-D grid's points, not 3), and refining more
  local minima does not pay either (the 3 draws needed the 4th, 21st and 86th start in their order).
  Those 3 were ranked wrong, not refined wrong: the grid's coefficients solved by least squares rank its points by
  a loss the fit does not minimise, and on such a ladder the basins are 0.1-0.4% apart, less than that difference.
  So the coefficients are solved again `PROFILE_IRLS` (3) times, each run weighted as the objective weighs it (its
  IRLS weight: Huber's delta/|r| past delta, plus the tie-break), before the grid is ranked: none of the 90 draws
  nor the 30 flat ones ends above 0.1% (1 reweighting left 4 of the 90 above it, 2 none). The cost: 3 more solves
  of the grid's small systems per fit, a small share of a batch's time beside the refinement.
Inputs are scaled by a reference point (the largest rung), so the coefficients are O(1).

The arithmetic is laid out for speed without changing a bit of any result (`fitbatch`): the curve is evaluated once
per distinct point (a rung's seeds share theirs), the refinement steps its problems in blocks that stay in the CPU's
cache, a step's two curvatures are multiplied and solved in one call each, and the grid's 1x1 and 2x2 systems are
solved as LAPACK solves them, written out (`fitbatch.solve`). On the synthetic suite's ladders a fit takes about
0.75x its time before (2026-12-07), the written-out solves ~0.94x of that again; the advise tests' figures are in
the commits that made them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from encoderlab.advise.fitbatch import Points, blocks, joined, solve

DELTA = 1e-3
"""Huber threshold on log residuals: Chinchilla's and OLMo-core's default."""

TIE = 1e-4
"""Weight of the least-squares tie-break, relative to the Huber loss's own quadratic part."""

DELTA_RANGE = (1e-5, 1.0)
"""The thresholds `--huber-delta` takes. Outside them the fit is least squares under the Huber loss's name, as
it was for `inf` (refused). Above 1 every residual short of a run e times off its curve is inside the
quadratic part, so the loss is sum(r^2)/2 (1 is the edge: least squares but for such runs; measured, 1, 10,
1e100 and 1e300 give the docs' ladder one and the same advice, and from ~1e154 delta^2 also overflows, a numpy
warning on stderr). Below 1e-5 the tie-break's TIE r^2/2 outweighs the Huber loss's linear part delta|r| from
|r| = 2 delta/TIE < 0.2, so runs a few percent off their curve are fitted by least squares too (1e-300 gives
that same advice)."""


def huber(r: np.ndarray, delta: float) -> np.ndarray:
    """Huber loss of residuals `r`: quadratic within `delta`, linear beyond."""
    # `np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))`, the same operations in place: a step's search
    # evaluates this on every candidate's residuals (C, M, n), where fresh temporaries cost as much as the arithmetic
    a = np.abs(r)
    inside = a <= delta
    a -= 0.5 * delta
    a *= delta
    quadratic = 0.5 * r
    quadratic *= r
    np.copyto(a, quadratic, where=inside)
    return a


def objective(r: np.ndarray, w: np.ndarray, delta: float) -> np.ndarray:
    """The objective minimised, summed over the last axis: weighted log-Huber plus the tie-break."""
    loss = huber(r, delta)
    tie = 0.5 * TIE * r
    tie *= r
    loss += tie
    return (loss * w).sum(-1)


class CurveForm(Protocol):
    """A parametric curve in log space, evaluated on stacks of problems.

    Shapes: parameters `p` (M, k), or for `log_predict` (C, M, k) (C candidates of every problem); inputs `X`
    (M, n, dims) holding log inputs scaled by the reference point; outputs (M, n), or (C, M, n)."""

    name: str
    n_params: int
    dims: int

    def log_predict(self, p: np.ndarray, X: np.ndarray) -> np.ndarray: ...

    def jacobian(self, p: np.ndarray, X: np.ndarray) -> np.ndarray: ...

    def basis(self, exponents: np.ndarray, X: np.ndarray) -> np.ndarray: ...

    def exponent_grid(self) -> np.ndarray: ...

    def assemble(self, coef: np.ndarray, exponents: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class Power:
    """`E + A * x^-a` in one input (compute): parameters (e, log A, a)."""

    name: str = "E + A*C^-a"
    n_params: int = 3
    dims: int = 1

    def log_predict(self, p, X):
        return np.logaddexp(p[..., None, 0], p[..., None, 1] - p[..., None, 2] * X[..., 0])

    def jacobian(self, p, X):
        t = p[:, None, 1] - p[:, None, 2] * X[..., 0]
        m = np.logaddexp(p[:, None, 0], t)
        we, wa = np.exp(p[:, None, 0] - m), np.exp(t - m)
        return np.stack([we, wa, -wa * X[..., 0]], -1)

    def basis(self, exponents, X):
        # (M, G, n, 2): columns 1 and x^-a for every exponent a on the grid
        pw = np.exp(-exponents[None, :, None, 0] * X[:, None, :, 0])
        return np.stack([np.ones_like(pw), pw], -1)

    def exponent_grid(self):
        return np.linspace(0.02, 1.5, 60)[:, None]

    def assemble(self, coef, exponents):
        return np.concatenate([np.log(coef[:, :1]), np.log(coef[:, 1:2]), exponents], -1)


@dataclass(frozen=True)
class Chinchilla:
    """`E + A/N^a + B/D^b`: parameters (e, log A, a, log B, b)."""

    name: str = "E + A/N^a + B/D^b"
    n_params: int = 5
    dims: int = 2

    def _terms(self, p, X):
        return p[..., None, 1] - p[..., None, 2] * X[..., 0], p[..., None, 3] - p[..., None, 4] * X[..., 1]

    def log_predict(self, p, X):
        tn, td = self._terms(p, X)
        return np.logaddexp(np.logaddexp(p[..., None, 0], tn), td)

    def jacobian(self, p, X):
        tn, td = self._terms(p, X)
        m = np.logaddexp(np.logaddexp(p[:, None, 0], tn), td)
        we, wn, wd = np.exp(p[:, None, 0] - m), np.exp(tn - m), np.exp(td - m)
        return np.stack([we, wn, -wn * X[..., 0], wd, -wd * X[..., 1]], -1)

    def basis(self, exponents, X):
        pn = np.exp(-exponents[None, :, None, 0] * X[:, None, :, 0])
        pd = np.exp(-exponents[None, :, None, 1] * X[:, None, :, 1])
        return np.stack([np.ones_like(pn), pn, pd], -1)

    def exponent_grid(self):
        g = np.linspace(*EXP_RANGE, 16)  # to the bounds: a fit's minima often hold an exponent at one
        return np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)

    def assemble(self, coef, exponents):
        logs = np.log(coef)
        return np.stack([logs[:, 0], logs[:, 1], exponents[:, 0], logs[:, 2], exponents[:, 1]], -1)


EXP_RANGE = (0.01, 2.5)
"""Bounds of every exponent (OLMo-core bounds them to [0.01, 2]); the 2-D exponent grid spans them."""

POWER = Power()
CHINCHILLA = Chinchilla()


def _bounds(form: CurveForm, logy: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-problem bounds: E at most the smallest observed value (as OLMo-core bounds it)."""
    ymin = np.where(w > 0, logy, np.inf).min(1)
    lo = np.full((len(logy), form.n_params), -60.0)
    hi = np.full((len(logy), form.n_params), 60.0)
    exps = [2] if form.n_params == 3 else [2, 4]
    lo[:, exps], hi[:, exps] = EXP_RANGE
    lo[:, 0], hi[:, 0] = ymin - 30.0, ymin
    return lo, hi


def _weighted_least_squares(basis: np.ndarray, y: np.ndarray, rw: np.ndarray) -> np.ndarray:
    """Coefficients (M, G, c) fitting `y` (M, n) by the columns of `basis` (M, G, n, c) at every grid point, each
    point weighted by `rw` (M, G, n)."""
    bwt = (basis * rw[..., None]).swapaxes(-1, -2)  # (M, G, c, n)
    gram = bwt @ basis
    # the ridge added to the diagonal in place: `gram + 1e-12 * eye` cost a third of the products' time, and adding
    # its zeros elsewhere changed no bit (every entry is a sum of non-negative products, never -0.0)
    diagonal = np.arange(basis.shape[-1])
    gram[..., diagonal, diagonal] += 1e-12
    rhs = bwt @ np.broadcast_to(y[:, None, :, None], (*basis.shape[:3], 1))
    return solve(gram, rhs[..., 0])


def _starts(
    form: CurveForm, X: np.ndarray, points: Points, logy: np.ndarray, w: np.ndarray, delta: float, k: int
) -> np.ndarray:
    """The `k` best points (M, k, params) of the exponent grid, the linear coefficients solved by relative least
    squares reweighted as the objective weighs each run (`PROFILE_IRLS` times), best first."""
    grid = form.exponent_grid()
    basis = form.basis(grid, X)  # (M, G, n, c)
    m, g = basis.shape[:2]
    relative = (w / np.exp(2 * logy))[:, None]  # relative residuals ~ log residuals
    rw = np.broadcast_to(relative, basis.shape[:3])
    at_grid = points.rows(np.repeat(np.arange(m), g))  # problem i's grid points are rows i*g .. i*g + g-1
    for _ in range(PROFILE_IRLS + 1):
        params = _profiled(form, grid, basis, X, logy, w, rw)
        r = (
            at_grid.expand(form.log_predict(params.reshape(m * g, -1), at_grid.unique)).reshape(m, g, -1)
            - logy[:, None]
        )
        # the objective's IRLS weight (Huber's delta/|r| past delta, plus the tie-break): least squares alone ranked
        # the grid by a loss the fit does not minimise, and on a ladder that falls and rises its best-ranked points
        # lay in other basins than the objective's best (tests/advise/test_stats_audit.py)
        rw = relative * (np.minimum(1.0, delta / np.maximum(np.abs(r), 1e-300)) + TIE)
    obj = objective(r, w[:, None], delta)
    obj = np.where(np.isfinite(obj), obj, np.inf)
    # local minima of the grid first: the best points alone are mostly neighbours, which refine into one basin
    order = np.lexsort((obj, ~_grid_minima(grid, obj)), axis=-1)[:, : min(k, g)]
    return params[np.arange(m)[:, None], order]


def _profiled(form, grid, basis, X, logy, w, rw) -> np.ndarray:
    """(M, G, params) at every grid point, its linear coefficients solved by least squares weighted by `rw`."""
    y = np.exp(logy)
    coef = _weighted_least_squares(basis, y, rw)
    # E is bounded by the smallest value (`_bounds`): where its free solution is above it, E is put at the bound and
    # the other coefficients solved again for what is left. Clipped by the refinement instead, such a start was
    # ranked by an objective it never had, and where the data sit above their smallest value (a ladder that
    # falls and rises, the level carried by a term of exponent near 0 with E at its bound) the best-ranked starts
    # lay in other basins (tests/advise/test_stats_audit.py)
    e_max = np.exp(_bounds(form, logy, w)[1][:, 0])[:, None, None]  # (M, 1, 1)
    rest = _weighted_least_squares(basis[..., 1:], y - e_max[..., 0], rw)
    at_bound = np.concatenate([np.broadcast_to(e_max, rest[..., :1].shape), rest], -1)
    coef = np.where(coef[..., :1] > e_max, at_bound, coef)
    floor = 1e-9 * y.max(1)[:, None, None]
    coef = np.maximum(coef, floor)  # a negative coefficient becomes (almost) absent
    m, g = coef.shape[:2]
    return form.assemble(coef.reshape(m * g, -1), np.tile(grid, (m, 1))).reshape(m, g, -1)


def _grid_minima(grid: np.ndarray, obj: np.ndarray) -> np.ndarray:
    """(M, G) whether each grid point's objective is at most every neighbour's (one grid step in each exponent)."""
    # compared with its (at most 3^dims) neighbours only, their indices built once per grid: a (G, G) neighbour mask
    # rebuilt on every call and an (M, G, G) comparison against it were ~9% of an advice's time on the 2-D grid
    return (obj[:, :, None] <= obj[:, _neighbours(grid.tobytes(), grid.shape)]).all(-1)


@functools.lru_cache(maxsize=8)
def _neighbours(grid_bytes: bytes, shape: tuple[int, int]) -> np.ndarray:
    """(G, 3^dims) indices of each grid point's neighbours (itself included), a row short of them padded with the
    point itself, which compares equal to itself (`_grid_minima`; keyed by the grid's bytes, as an array is not
    hashable)."""
    grid = np.frombuffer(grid_bytes).reshape(shape)
    steps = np.stack([np.unique(col, return_inverse=True)[1] for col in grid.T], -1)
    near = np.abs(steps[:, None] - steps[None]).max(-1) <= 1  # (G, G), each point its own neighbour
    out = np.tile(np.arange(len(grid))[:, None], (1, 3 ** grid.shape[1]))
    for i, row in enumerate(near):
        found = np.flatnonzero(row)
        out[i, : len(found)] = found
    out.setflags(write=False)  # shared by every call on this grid
    return out


PROFILE_IRLS = 3
"""Reweightings of the grid's linear least squares by the objective's IRLS weights before the grid is ranked (see
the module docstring)."""

STARTS = 3
"""How many of the exponent grid's best points are refined, the lowest objective kept (see the module docstring)."""

_HALVINGS = 16
"""Halvings of the Newton step tried in each Levenberg-Marquardt step (down to 3e-5 of it)."""

_SHRINK = 0.5 ** np.arange(_HALVINGS)[:, None, None]
"""(C - 1, 1, 1) the factors the Newton step is halved by, built once, not on every step."""

_EYES = {k: np.eye(k) for k in (3, 5)}
"""The identity of each form's parameter count (the damping's diagonal), built once, not on every step."""


def _lm_step(form, p, r, lam, points, logy, w, lo, hi, delta):
    """One damped Gauss-Newton step, the best of an IRLS step and a searched Newton step.

    Both share the gradient. The IRLS curvature (Huber weight delta/|r| past delta) majorises the loss,
    so its damped step is safe, but it crawls along the tie-break's valleys, where the true curvature is
    only TIE; the loss's own curvature (0 past delta, plus TIE) points across such a valley but
    overshoots across kinks, so its step is searched back by halving: one more solve and `_HALVINGS`
    objective evaluations a step."""
    J = points.expand(form.jacobian(p, points.unique), tail=1)
    inside = np.abs(r) <= delta
    g = (J.transpose(0, 2, 1) @ (w * (np.clip(r, -delta, delta) + TIE * r))[..., None])[..., 0]
    # a parameter at a bound that descent pushes past it is held there (an active set): solved for with the
    # others, its share of the step was clipped away afterwards and the rest of the step no longer descended,
    # so a flat or non-monotone ladder (E at its bound, the smallest value; the exponent at its lowest) stopped
    # at up to 2.7x scipy's objective (tests/advise/test_stats_audit.py)
    held = ((p <= lo) & (g > 0)) | ((p >= hi) & (g < 0))
    if held.any():
        J, g = np.where(held[:, None, :], 0.0, J), np.where(held, 0.0, g)
    # the two curvatures' systems (2, M, ...) stacked in one product and one solve: each problem's matrix is
    # multiplied and solved alone, as two calls did (a step of a few problems is mostly the calls' overhead)
    curv = np.stack([np.where(inside, 1.0, delta / np.maximum(np.abs(r), 1e-300)), inside])
    JWt = (J * (w * (curv + TIE))[..., None]).transpose(0, 1, 3, 2)
    H = JWt @ J
    damp = (
        (np.stack([lam, 0 * lam])[..., None, None] + 1e-9)
        * _EYES[form.n_params]
        * (np.diagonal(H, axis1=-2, axis2=-1)[..., None] + 1e-12)
    )
    steps = np.linalg.solve(H + damp, -g[..., None])[..., 0]
    # every candidate (C = 1 + _HALVINGS) evaluated in one batch (C, M, ...), not one at a time (a third of the
    # fit's time went to the per-candidate calls); the same arithmetic element by element
    halved = p + _SHRINK * steps[1]
    cands = np.clip(np.concatenate([(p + steps[0])[None], halved]), lo, hi)
    r_all = points.expand(form.log_predict(cands, points.unique))
    r_all -= logy
    obj_all = objective(r_all, w, delta)
    pick, rows = _first_lowest(obj_all), np.arange(len(p))
    return cands[pick, rows], r_all[pick, rows], obj_all[pick, rows]


def _first_lowest(obj: np.ndarray) -> np.ndarray:
    """(M,) per column of `obj` (C, M) the candidate that keeping the best so far, row by row, ends at: the first
    lowest, where a later one wins only by being strictly lower; NaN (an overflowing step) never wins, and a NaN
    first candidate is kept (nothing compares lower than it)."""
    return np.where(np.isnan(obj[0]), 0, np.where(np.isnan(obj), np.inf, obj).argmin(0))


def _levenberg_marquardt(form, p, points, logy, w, delta, lo, hi, max_iter=1000):
    """Minimise the objective (log-Huber plus tie-break) of every problem from `p`.

    Only problems still moving are stepped (an active set), so a few slow ones (the near-L1
    objective of a small delta converges slowly) do not make every problem pay for their iterations.
    A problem is done once a step gains nothing measurable or no damping finds a better point."""
    p = np.clip(p, lo, hi).copy()
    r = points.expand(form.log_predict(p, points.unique)) - logy
    obj = objective(r, w, delta)
    lam = np.full(len(p), 1e-3)
    active = np.arange(len(p))
    blocked = 0
    for _ in range(max_iter):
        if not len(active):
            break
        a = active
        if blocked != len(a):  # the active set shrank (it never grows): its blocks and their fixed rows again
            # stepped in blocks (`fitbatch.blocks`): 17 candidates of hundreds of problems spilled the cache
            blocked, cut = len(a), blocks(len(a), (1 + _HALVINGS) * logy.shape[1])
            fixed = [(points.rows(a[b]), logy[a[b]], w[a[b]], lo[a[b]], hi[a[b]]) for b in cut]
        p_a, r_a, obj_a, lam_a = p[a], r[a], obj[a], lam[a]
        cand, r_new, obj_new = joined(
            [_lm_step(form, p_a[b], r_a[b], lam_a[b], *rows, delta) for b, rows in zip(cut, fixed)]
        )
        better = obj_new < obj_a
        gain = np.where(better, obj_a - obj_new, 0.0)
        p[a] = np.where(better[:, None], cand, p_a)
        r[a] = np.where(better[:, None], r_new, r_a)
        obj[a] = obj_a = np.where(better, obj_new, obj_a)
        lam[a] = lam_a = np.clip(np.where(better, lam_a * 0.3, lam_a * 10.0), 1e-10, 1e10)
        done = (better & (gain <= 1e-10 * obj_a + 1e-24)) | (lam_a >= 1e10)
        active = a[~done]
    return p, obj


@dataclass(frozen=True)
class Fits:
    """Fitted parameters of M problems of one form, and the reference point of each."""

    form: CurveForm
    params: np.ndarray
    """(M, k) parameters in the form's log-sum-exp coordinates."""
    objective: np.ndarray
    """(M,) the objective reached: weighted log-Huber plus the tie-break (`objective`)."""
    scale: np.ndarray
    """(M, dims) the reference point each problem's inputs were divided by."""

    def rows(self, index) -> Fits:
        """The problems at `index` (a slice or an index array)."""
        return Fits(self.form, self.params[index], self.objective[index], self.scale[index])

    def predict(self, inputs: np.ndarray) -> np.ndarray:
        """Predicted values (M, q) at `inputs` (q, dims) in natural units."""
        X = np.log(np.asarray(inputs, dtype=float)[None] / self.scale[:, None, :])
        return np.exp(self.form.log_predict(self.params, X))


def fit_curves(
    form: CurveForm,
    inputs: np.ndarray,
    values: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    scale: np.ndarray,
    delta: float = DELTA,
) -> Fits:
    """Fit `form` to M problems at once.

    `inputs` (n, dims) shared by all problems, or (M, n, dims); `values` (M, n), all > 0 where
    weighted; `weights` (M, n) of 0/1 masks out points per problem (a held-out rung, padding);
    `scale` (dims,) or (M, dims) is the reference point the inputs are divided by.
    """
    values = np.atleast_2d(np.asarray(values, dtype=float))
    m = len(values)
    scale = np.broadcast_to(np.asarray(scale, dtype=float), (m, form.dims))
    inputs = np.asarray(inputs, dtype=float)
    inputs = np.broadcast_to(inputs, (m, *inputs.shape[-2:]))
    X = np.log(inputs / scale[:, None, :])
    w = np.ones_like(values) if weights is None else np.asarray(weights, dtype=float)
    logy = np.log(np.where(w > 0, values, 1.0))
    lo, hi = _bounds(form, logy, w)
    # the K best grid points are refined side by side as K * M problems of one batch, the lowest kept per problem
    points = Points.of(X)
    start = _starts(form, X, points, logy, w, delta, STARTS)  # (M, K, params)
    k = start.shape[1]

    def rep(a: np.ndarray) -> np.ndarray:  # problem i's copies are rows i*k .. i*k + k-1
        return np.repeat(a, k, 0)

    params, obj = _levenberg_marquardt(
        form,
        start.reshape(m * k, -1),
        points.rows(rep(np.arange(m))),
        rep(logy),
        rep(w),
        delta,
        rep(lo),
        rep(hi),
    )
    params, obj = params.reshape(m, k, -1), obj.reshape(m, k)
    best = np.where(np.isfinite(obj), obj, np.inf).argmin(1)
    rows = np.arange(m)
    return Fits(form=form, params=params[rows, best], objective=obj[rows, best], scale=scale.copy())
