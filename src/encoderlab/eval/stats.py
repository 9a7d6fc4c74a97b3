"""Statistics over seeds: mean, sd and a t-interval; paired comparison of two models.

With 3-10 seeds a bootstrap interval over seeds is too narrow, so the interval
is Student's t: mean +- t(0.975, n-1) * sd / sqrt(n). Degenerate cases are explicit rather than
NaN: one seed has no spread (sd and the interval half-width are reported as None), and seeds that
all agree give a zero-width interval (scipy would warn and return NaN).

Two models are compared on the same seeds with a paired t-test on the per-seed differences
(`scipy.stats.ttest_rel`, two-sided). Pairing removes the variance that the seed (head init, data
order) induces in both models alike. If every difference is identical the t statistic is
undefined: p is 1.0 when the differences are all zero and 0.0 otherwise, and `degenerate` says so.
The direction, the difference, its interval and p all come from the same paired values.

A study tests several claims at once; `holm` adjusts their p-values for that family (Holm 1979:
step-down Bonferroni, which controls the family-wise error rate under any dependence between the
tests and is uniformly more powerful than Bonferroni), so "significant" means adjusted p < 0.05.

Results are frozen dataclasses (`Estimate`, `PairedTest`); `config.to_dict` writes them as the
JSON objects evaluation summaries and study reports have always held.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """A mean over seeds with its spread and 95% t-interval (None where one value leaves them undefined)."""

    mean: float
    """Mean of the values."""
    sd: float | None
    """Sample standard deviation (None for one value)."""
    n: int
    """Number of values (seeds)."""
    ci_low: float | None
    """Lower end of the t-interval."""
    ci_high: float | None
    """Upper end of the t-interval."""
    half_width: float | None
    """Half-width of the t-interval."""

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of 0 (False without an interval)."""
        return self.ci_low is not None and (self.ci_low > 0 or self.ci_high < 0)


@dataclass(frozen=True, kw_only=True)
class PairedTest(Estimate):
    """A paired t-test of a - b: the mean difference and its interval (the `Estimate` fields), t and p."""

    t: float | None
    """t statistic (None when every difference is the same)."""
    p_value: float
    """Two-sided p-value."""
    degenerate: bool
    """Every difference identical: t undefined, p 1.0 if they are all zero else 0.0."""


def summarize(values: Sequence[float], confidence: float = 0.95) -> Estimate:
    """Mean, sample sd, n and the t-interval of `values` (None where undefined)."""
    n = len(values)
    if n == 0:
        raise ValueError("no values to summarize")
    mean = math.fsum(values) / n
    if n == 1:
        return Estimate(mean=mean, sd=None, n=1, ci_low=None, ci_high=None, half_width=None)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return Estimate(mean=mean, sd=sd, n=n, ci_low=mean - half, ci_high=mean + half, half_width=half)


def paired_test(a: Sequence[float], b: Sequence[float]) -> PairedTest:
    """Paired two-sided t-test of `a` - `b` (same seeds in the same order)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(
            f"a paired test needs two equally long lists of at least 2 values, got {len(a)}, {len(b)}"
        )
    diffs = [x - y for x, y in zip(a, b)]
    s = summarize(diffs).__dict__
    if all(d == diffs[0] for d in diffs):
        return PairedTest(**s, t=None, p_value=1.0 if diffs[0] == 0 else 0.0, degenerate=True)
    result = stats.ttest_rel(a, b)
    return PairedTest(**s, t=float(result.statistic), p_value=float(result.pvalue), degenerate=False)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    Sorted ascending, the i-th smallest of m p-values becomes max over j <= i of (m - j) * p_(j),
    capped at 1; rejecting where the adjusted p < alpha controls the family-wise error rate at alpha.
    (`statsmodels.stats.multitest.multipletests(method="holm")` gives the same numbers.)"""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
