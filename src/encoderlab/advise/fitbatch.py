"""How `fit`'s batch of problems is laid out for speed: distinct points, blocks of problems, small solves.

A bootstrap refits every schedule hundreds of times, so the fit's arithmetic is what an advice costs. Two layouts
and one rewriting cut it without changing a bit of any result:
* **Points** (`Points`): a ladder's seeds share their rung's (N, D), 2-3 runs a rung, so the curve's log-sum-exp
  (`np.logaddexp`, ~40 ns an element, most of a refinement step's time) is evaluated once per distinct point and
  copied to the runs (`Points.expand`), not once per run.
* **Blocks** (`blocks`): a refinement step of hundreds of problems searched its 17 candidates in (17, M, n) arrays of
  about a megabyte each, which spilled the CPU's cache to memory; in blocks of `CHUNK` elements the objective's
  passes over them take ~40% of the time.
* **Small solves written out** (`solve`): the grid search solves a 1x1 or 2x2 system per grid point of every problem
  (12,000 a call on a suite ladder's bootstrap), and numpy's per-matrix LAPACK call cost ten times the arithmetic.
  Written out as LAPACK's LU solve of them, they are the same bits on the machines measured; another CPU's LAPACK
  kernels need not round as these do (a fused multiply-add), so its test compares to a few rounding errors.

Why the results are the same bits, and the trade-off it costs. A ufunc computes each element alone, whatever its
place in an array (checked for `logaddexp`, `exp`, `log`, `log1p`), and each problem's matrix products and solves
are their own (numpy calls BLAS and LAPACK once per matrix of a stack), so a value computed once per point, or a
problem stepped in a smaller block, is what the whole batch computed. What does depend on layout is *how* numpy
calls them: a sum over a non-contiguous row, a matrix product whose operand strides pick another kernel (the old
fit's parameters moved by ~1e-8 between the same values stored C- and Fortran-ordered). So only the refinement is
blocked, whose rows are copied by index (always C-ordered) before and after; the grid search of starts (`fit`'s
`_starts`) reads the caller's arrays as they are laid out, and stays one batch (in blocks it gave other bits on a
Fortran-ordered bootstrap), though blocks would speed it too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Points:
    """A batch's log inputs (M, n, dims) as each problem's distinct points and the one each run is at."""

    unique: np.ndarray
    """(M, R, dims) each problem's distinct points, a problem with fewer than R padded with its last."""
    flat: np.ndarray
    """(M * n,) each run's point, an index into `unique` flattened to (M * R, dims)."""

    @classmethod
    def of(cls, X: np.ndarray) -> Points:
        """The distinct points of float64 log inputs `X` (M, n, dims)."""
        m, n, d = X.shape
        X = np.ascontiguousarray(X, dtype=np.float64)
        # points equal as bits (a void view), not as floats: 0.0 and -0.0 stay two points
        rows = X.view(np.dtype((np.void, 8 * d)))[..., 0]  # (M, n)
        # the problems of one layout (a bootstrap's replicates share their schedule's) are deduplicated once
        _, first, layout = np.unique(
            rows.view(np.dtype((np.void, 8 * d * n)))[:, 0], return_index=True, return_inverse=True
        )
        found = [np.unique(rows[i], return_index=True, return_inverse=True)[1:] for i in first]
        r = max(len(at) for at, _ in found)
        unique = np.stack(
            [X[i, np.pad(at, (0, r - len(at)), mode="edge")] for i, (at, _) in zip(first, found)]
        )
        index = np.stack([inverse.reshape(n) for _, inverse in found])[layout.reshape(m)]
        return cls(unique[layout.reshape(m)], (np.arange(m)[:, None] * r + index).ravel())

    def rows(self, index: np.ndarray) -> Points:
        """The problems at `index` (an index array), in its order."""
        m, r = self.unique.shape[:2]
        at = self.flat.reshape(m, -1)[index] - (index * r)[:, None]  # each run's point within its problem
        return Points(self.unique[index], (np.arange(len(index))[:, None] * r + at).ravel())

    def expand(self, values: np.ndarray, tail: int = 0) -> np.ndarray:
        """(..., M, n, *tail) per run from (..., M, R, *tail) per point, as a new C-ordered array (the one the
        per-run evaluation made); the `tail` last axes are carried along."""
        m, r = self.unique.shape[:2]
        axis = values.ndim - 2 - tail
        lead, rest = values.shape[:axis], values.shape[axis + 2 :]
        out = np.take(values.reshape(*lead, m * r, *rest), self.flat, axis=axis)
        return out.reshape(*lead, m, len(self.flat) // m, *rest)


CHUNK = 1 << 15
"""Elements of the largest temporary one call on a block of problems makes (`blocks`): 256 KiB, half of a core's
L2 cache on the machines measured (the objective over (17, M, n) candidates took 2.5x as long in one batch of
megabyte arrays as in blocks of this size)."""


def blocks(m: int, per_problem: int) -> list[slice]:
    """`m` problems in blocks whose temporaries of `per_problem` elements a problem stay within `CHUNK`."""
    size = max(1, CHUNK // per_problem)
    return [slice(start, start + size) for start in range(0, m, size)]


def joined(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """Blocks' results (each a tuple of arrays over its problems) joined along the problems' axis."""
    return parts[0] if len(parts) == 1 else tuple(np.concatenate(column) for column in zip(*parts))


def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.linalg.solve(a, b[..., None])[..., 0]` for stacks (..., c, c) of systems; those of 1 and 2 unknowns (the
    grid search's, thousands a call) written out as the LU solve LAPACK makes of them, at a tenth of the time of
    numpy's call per matrix. The same bits (checked against numpy's OpenBLAS on a million random systems and on
    every fit's grids): the row of the larger pivot first (the first of equals), the multiplier the other row's
    entry times the pivot's reciprocal, the back substitution by division. Where numpy would refuse a stack as
    singular (a zero pivot, or an invalid operation such as inf - inf, which it reports so), for a NaN anywhere (how
    LAPACK pivots on one, and the sign it gives the NaNs out, are its own) and for larger systems, `np.linalg.solve`
    itself is called, so it answers (or raises) as it did."""
    c = a.shape[-1]
    if c > 2 or (a[..., 0, 0] == 0).any() or np.isnan(a).any() or np.isnan(b).any():  # NaN: LAPACK's own ways
        return np.linalg.solve(a, b[..., None])[..., 0]
    try:
        # numpy's own error state for its solve, but for the invalid operation, which it raises as singular
        with np.errstate(invalid="raise", divide="ignore", over="ignore", under="ignore"):
            return b / a[..., 0] if c == 1 else _solve_two(a, b)
    except (FloatingPointError, ZeroDivisionError):
        return np.linalg.solve(a, b[..., None])[..., 0]


def _solve_two(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`solve` of 2x2 systems (..., 2, 2): partial pivoting (NaN never swaps), then the LU solve."""
    swap = np.abs(a[..., 1, 0]) > np.abs(a[..., 0, 0])
    first = np.where(swap[..., None], a[..., 1, :], a[..., 0, :])
    second = np.where(swap[..., None], a[..., 0, :], a[..., 1, :])
    q0, q1 = np.where(swap, b[..., 1], b[..., 0]), np.where(swap, b[..., 0], b[..., 1])
    multiplier = second[..., 0] * (1.0 / first[..., 0])
    pivot = second[..., 1] - multiplier * first[..., 1]
    if (first[..., 0] == 0).any() or (pivot == 0).any():
        raise ZeroDivisionError  # singular: `solve` hands it to numpy
    x1 = (q1 - multiplier * q0) / pivot
    return np.stack([(q0 - first[..., 1] * x1) / first[..., 0], x1], -1)
