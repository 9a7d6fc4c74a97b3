"""Statistics over seeds: mean, sd and a t-interval; paired comparison of two models.

With 3-10 seeds a bootstrap interval over seeds is too narrow, so the interval
is Student's t: mean +- t(0.975, n-1) * sd / sqrt(n). Degenerate cases are explicit rather than
NaN: one seed has no spread (sd and the interval half-width are reported as None), and seeds that
all agree give a zero-width interval (scipy would warn and return NaN).

Two models are compared on the same seeds with a paired t-test on the per-seed differences
(`scipy.stats.ttest_rel`, two-sided). Pairing removes the variance that the seed (head init, data
order) induces in both models alike. If every difference is identical the t statistic is
undefined and `degenerate` says so: p is 1.0 when the differences are all zero, and otherwise the exact
sign-flip permutation p, 2 / 2^n (the observed signs are the most extreme of the 2^n equally likely
under "no difference"). A t-test's limit would say p = 0, a certainty no n seeds can give: three
identical differences are p = 0.25, as likely as any other all-one-sign pattern. "Identical" allows
floating-point rounding (`ROUNDING`): 0.7 - 0.6 and 0.1 - 0.0 differ in the last bit, and a t-test on
that spread said p = 1e-32.
The direction, the difference, its interval and p all come from the same paired values.

When one side is a single fixed model and the other a set of replicates (a study's run trained at
several pretraining seeds against the one checkpoint it continued), nothing pairs them: `welch_test`
compares the means with Welch's unequal-variance t-test (`scipy.stats.ttest_ind(equal_var=False)`),
so the fixed model's own fine-tuning noise enters the interval; a single value on one side is taken
as exact (the one-sample test of the other side against it). A fixed model scored once is not exact: its
noise, estimated elsewhere (`pooled_variance` of other checkpoints fine-tuned alike), goes into
`welch_borrowed`, whose Welch-Satterthwaite degrees of freedom count that estimate's.

A study tests several claims at once; `holm` adjusts their p-values for that family (Holm 1979:
step-down Bonferroni, which controls the family-wise error rate under any dependence between the
tests and is uniformly more powerful than Bonferroni), so "significant" means adjusted p < 0.05.
A verdict "not significant" is read with what the design could have found: `detectable` is the smallest true
difference a test of this many seeds, at the noise it measured, calls significant 80% of the time (the
noncentral t; Cohen's power at the observed spread, an estimate as noisy as that spread with 3 seeds: it says
the order of what the scale can show, not a bound).

Every value must be a finite number: a NaN or infinite one is a ValueError naming it (`finite`), not
a NaN mean, interval or p-value from scipy with a RuntimeWarning. No score reaches here so: metrics give
bounded scores (a diverged regression scores 0, `metrics.regression`), the readers of results refuse a
non-finite one naming the file, line and fix (`EvalRecord.non_finite`: results.jsonl, a study's eval
node.json), and a CKA ratio's interval is left out where one is infinite (`cka_report.seed_interval`);
the check guards against a new path that skips them.

Results are frozen dataclasses (`Estimate`, `PairedTest`); `config.to_dict` writes them as the
JSON objects evaluation summaries and study reports have always held.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from encoderlab.words import decimals, number_text


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
    """A t-test of a - b: the mean difference and its interval (the `Estimate` fields), t and p; paired
    (`paired_test`: `sd` and `n` are the differences') or Welch's (`welch_test`: `sd` is the difference's
    standard error times sqrt(n), `n` the replicates of a)."""

    t: float | None
    """t statistic (None when every difference is the same)."""
    p_value: float
    """Two-sided p-value."""
    degenerate: bool
    """Every difference identical (up to floating-point rounding, `ROUNDING`): t undefined, p 1.0 if they
    are all zero, else the exact permutation p (`paired_test`: 2 / 2^n; `welch_test`: 2 / C(n_a + n_b, n_a)
    when n_a = n_b, else 1 / C(n_a + n_b, n_a), as only the observed split is that extreme)."""

    @property
    def excludes_zero(self) -> bool:
        """Whether the difference is significant at 95% by its interval: a degenerate test's interval has
        zero width, so there the exact p decides (three identical differences, p = 0.25, do not)."""
        return super().excludes_zero and (not self.degenerate or self.p_value < 0.05)


def finite(**sides: Sequence[float]) -> None:
    """Refuse a value of `sides` that is not a finite number (module docstring), naming its side and place."""
    for name, values in sides.items():
        bad = next(((i, v) for i, v in enumerate(values) if not math.isfinite(v)), None)
        if bad is not None:
            raise ValueError(
                f"value {bad[0]} of {name} is {bad[1]}: statistics take finite scores only (the readers of "
                "results refuse others, EvalRecord.non_finite)"
            )


@functools.lru_cache(maxsize=256)
def t_quantile(q: float, df: float) -> float:
    """Student's t quantile `q` at `df` degrees of freedom (`scipy.stats.t.ppf`), remembered: a study's report
    summarises thousands of LR-and-seed groups, nearly all at one or two seed counts, and each scipy call
    costs about a millisecond of argument checking, most of a report's summarising. Taken from
    `scipy.special.stdtrit`, the function `t.ppf` calls for q in (0, 1) and df > 0 (the same value): importing
    `scipy.special` costs ~1 s of CPU, `scipy.stats` ~3 s, paid by every eval command that summarises."""
    # imported when a score is summarised, not by every command that reads eval specs
    from scipy import special

    return float(special.stdtrit(df, q))


def summarize(values: Sequence[float], confidence: float = 0.95) -> Estimate:
    """Mean, sample sd, n and the t-interval of `values` (None where undefined)."""
    n = len(values)
    if n == 0:
        raise ValueError("no values to summarize")
    finite(values=values)
    mean = math.fsum(values) / n
    if n == 1:
        return Estimate(mean=mean, sd=None, n=1, ci_low=None, ci_high=None, half_width=None)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return Estimate(mean=mean, sd=sd, n=n, ci_low=mean - half, ci_high=mean + half, half_width=half)


ROUNDING = 1e-9
"""Relative to the largest value compared: spreads this small are floating-point rounding, not data
(scores are percentages of at most millions of examples, so real differences are far larger)."""


def rounding(*sides: Sequence[float]) -> float:
    """The spread below which values of `sides` are equal but for rounding."""
    return ROUNDING * max((abs(v) for side in sides for v in side if math.isfinite(v)), default=0.0)


def paired_test(a: Sequence[float], b: Sequence[float]) -> PairedTest:
    """Paired two-sided t-test of `a` - `b` (same seeds in the same order)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(
            f"a paired test needs two equally long lists of at least 2 values, got {len(a)}, {len(b)}"
        )
    finite(a=a, b=b)
    diffs = [x - y for x, y in zip(a, b)]
    s = summarize(diffs).__dict__
    tol = rounding(a, b)
    if max(diffs) - min(diffs) <= tol:  # identical up to rounding: 0.7 - 0.6 and 0.1 - 0.0 are one difference
        zero = all(abs(d) <= tol for d in diffs)
        exact = 1.0 if zero else min(1.0, 2.0 / 2 ** len(diffs))  # the sign-flip test's floor
        return PairedTest(**s, t=None, p_value=exact, degenerate=True)
    from scipy import stats

    result = stats.ttest_rel(a, b)
    return PairedTest(**s, t=float(result.statistic), p_value=float(result.pvalue), degenerate=False)


def negated(test: PairedTest) -> PairedTest:
    """The test of b - a from that of a - b."""
    flip = {"mean": -test.mean, "t": None if test.t is None else -test.t}
    flip |= {"ci_low": None if test.ci_high is None else -test.ci_high}
    flip |= {"ci_high": None if test.ci_low is None else -test.ci_low}
    return dataclasses.replace(test, **flip)


def welch_test(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> PairedTest:
    """Welch's two-sided t-test of mean(a) - mean(b) (unpaired, unequal variances; Welch-Satterthwaite
    degrees of freedom); a side holding one value is taken as exact, which is the one-sample test of
    the other side against it."""
    if len(a) + len(b) < 3 or not a or not b:
        raise ValueError(f"a Welch test needs values on both sides and 3 in all, got {len(a)}, {len(b)}")
    finite(a=a, b=b)
    if len(a) == 1:
        return negated(welch_test(b, a, confidence))
    if len(b) == 1:
        return paired_test(a, [b[0]] * len(a))
    ea, eb = summarize(a), summarize(b)
    va, vb = ea.sd**2 / ea.n, eb.sd**2 / eb.n
    diff, se = ea.mean - eb.mean, math.sqrt(va + vb)
    tol = rounding(a, b)
    if se <= tol:  # each side constant, up to rounding
        # the exact permutation p: only the observed split is as extreme, and its mirror when n_a = n_b
        splits = math.comb(ea.n + eb.n, ea.n) / (2 if ea.n == eb.n else 1)
        return PairedTest(
            mean=diff, sd=0.0, n=ea.n, ci_low=diff, ci_high=diff, half_width=0.0, t=None,
            p_value=1.0 if abs(diff) <= tol else min(1.0, 1 / splits), degenerate=True,
        )  # fmt: skip
    return _welch(diff, ((va, ea.n - 1), (vb, eb.n - 1)), ea.n, confidence)


def _welch(diff: float, parts: tuple[tuple[float, int], ...], n: int, confidence: float) -> PairedTest:
    """The t-test of `diff` whose variance is the sum of `parts` (each a variance of one side's mean and its
    degrees of freedom), with Welch-Satterthwaite degrees of freedom; `n` the replicates of a."""
    from scipy import stats

    se = math.sqrt(math.fsum(v for v, _ in parts))
    # the variances scaled by the largest: squared, one below 1e-154 underflowed to 0 (ZeroDivisionError)
    top = max(v for v, _ in parts)
    scaled = [(v / top, d) for v, d in parts if v > 0]
    df = math.fsum(w for w, _ in scaled) ** 2 / math.fsum(w**2 / d for w, d in scaled)
    t = diff / se
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    return PairedTest(
        mean=diff, sd=se * math.sqrt(n), n=n, ci_low=diff - half, ci_high=diff + half, half_width=half,
        t=t, p_value=float(2 * stats.t.sf(abs(t), df)), degenerate=False,
    )  # fmt: skip


def pooled_variance(groups: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """The pooled within-group variance of `groups` and its degrees of freedom (sum of n - 1 over the groups
    of two or more values); None when no group has two."""
    finite(**{f"group {i}": g for i, g in enumerate(groups)})
    df = sum(len(g) - 1 for g in groups if len(g) >= 2)
    if df == 0:
        return None
    sq = math.fsum((v - math.fsum(g) / len(g)) ** 2 for g in groups if len(g) >= 2 for v in g)
    return sq / df, df


def welch_borrowed(a: Sequence[float], b: float, var: float, df: int, confidence: float = 0.95) -> PairedTest:
    """Welch's two-sided t-test of mean(a) - b, where b is one value with noise whose variance `var` is
    estimated elsewhere on `df` degrees of freedom (a checkpoint scored at one fine-tuning seed: its
    fine-tuning variance pooled over other checkpoints fine-tuned the same way, `pooled_variance`).
    Welch-Satterthwaite degrees of freedom combine a's n - 1 and `df`. With no spread on either side
    (up to rounding) b's noise is shown to be nil, and the one-sample test's exact p stands."""
    if len(a) < 2:
        raise ValueError(
            f"a Welch test against one value needs at least 2 values on the other side, got {len(a)}"
        )
    finite(a=a, b=[b], var=[var])
    ea = summarize(a)
    va = ea.sd**2 / ea.n
    if math.sqrt(va + var) <= rounding(a, [b]):
        return paired_test(a, [b] * len(a))
    return _welch(ea.mean - b, ((va, ea.n - 1), (var, df)), ea.n, confidence)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    Sorted ascending, the i-th smallest of m p-values becomes max over j <= i of (m - j) * p_(j),
    capped at 1; rejecting where the adjusted p < alpha controls the family-wise error rate at alpha.
    (`statsmodels.stats.multitest.multipletests(method="holm")` gives the same numbers.)
    A NaN p-value is refused: it has no place in the ascending order, so the adjusted values would
    depend on the order the family was listed in; an untested claim stays out of the family."""
    if any(math.isnan(p) for p in p_values):
        raise ValueError("holm: a NaN p-value has no rank; leave untested claims out of the family")
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


POWER = 0.8
"""The probability at which `detectable` finds a difference (Cohen's convention)."""


def degrees_of_freedom(test: PairedTest) -> float:
    """The degrees of freedom `test`'s 95% interval was built with (paired: n - 1; Welch's:
    Welch-Satterthwaite's), from its half-width and standard error, so that no test needs to carry them."""
    from scipy import optimize, stats

    se = test.sd / math.sqrt(test.n)
    gap = lambda df: float(stats.t.ppf(0.975, df)) * se - test.half_width  # noqa: E731  falls with df
    if gap(1e6) >= 0:  # the normal limit, up to rounding
        return 1e6
    return float(optimize.brentq(gap, 0.5, 1e6, xtol=1e-10))


def detectable(test: PairedTest, alpha: float, power: float = POWER) -> float | None:
    """The smallest true difference that a test of `test`'s design (its seeds, its standard error and degrees
    of freedom) finds significant at two-sided `alpha` with probability `power` (noncentral t). None without
    a spread to estimate it from: a degenerate test (every difference alike) or one value."""
    if test.degenerate or test.t is None or not test.half_width:
        return None
    from scipy import optimize, stats

    se, df = test.sd / math.sqrt(test.n), degrees_of_freedom(test)
    crit = float(stats.t.ppf(1 - alpha / 2, df))

    def short(delta: float) -> float:  # power at delta, minus the power wanted; rises with delta
        nc = delta / se
        # the other tail: scipy's nct gives NaN where it underflows
        wrong = float(stats.nct.cdf(-crit, df, nc))
        return float(stats.nct.sf(crit, df, nc)) + (wrong if math.isfinite(wrong) else 0.0) - power

    high = 2 * crit * se
    while short(high) < 0:  # heavy tails at one or two degrees of freedom need more than 2 crit
        high *= 2
    return float(optimize.brentq(short, 0.0, high, xtol=1e-12 * high))


P_FLOOR = 0.001
"""Below it a p-value is printed as `p < 0.001`: with 3-10 seeds a t-test's tail that far out rests on
its normality assumption, so its digits ("p = 6.67e-06") claim a precision the seeds do not have."""


def p_text(p: float, alpha: float = 0.05) -> str:
    """A p-value as every report prints it: `p = 0.0665` (3 significant digits), `p < 0.001` below
    `P_FLOOR`, with more digits where 3 would round it onto the other side of `alpha` (0.04996 is
    `p = 0.04996`, not a significant `p = 0.05`). One implementation: the study report's results table said
    `p=0.066` (2 digits) and its claim the same p as `p = 0.0665`."""
    if math.isnan(p):
        return "p = n/a"
    if p < P_FLOOR:
        return f"p < {P_FLOOR:g}"
    digits = 3
    while digits < 17 and (float(f"{p:.{digits}g}") < alpha) != (p < alpha):
        digits += 1
    return f"p = {p:.{digits}g}"


def interval_text(d: Estimate, sign: bool = True) -> str:
    """A difference and its interval, `+9.82, 95% CI [+9.36, +10.28]`, at the `words.decimals` of its
    half-width, as `words.estimate_text` prints a score."""
    places = decimals(d.half_width)
    low, high = (number_text(x, places, sign) for x in (d.ci_low, d.ci_high))
    return f"{number_text(d.mean, places, sign)}, 95% CI [{low}, {high}]"
