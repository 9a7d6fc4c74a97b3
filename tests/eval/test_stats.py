"""t-intervals and paired tests against textbook formulas and the verified reference numbers."""

from __future__ import annotations

import itertools
import math
import re
import warnings

import pytest
from scipy import stats as sps
from tests.eval.statsref import statsmodels_holm

from encoderlab.eval.stats import paired_test, pooled_variance, summarize, welch_borrowed, welch_test


def test_t_interval_reference_values():
    # computed with scipy 1.17.1: 95% t-interval 87.62-89.14
    s = summarize([88.1, 88.9, 87.5, 88.4, 89.0])
    assert s.mean == pytest.approx(88.38) and s.n == 5
    assert s.ci_low == pytest.approx(87.62, abs=0.005) and s.ci_high == pytest.approx(89.14, abs=0.005)


def test_the_remembered_t_quantile_is_scipys_at_each_confidence_and_seed_count():
    """`summarize` remembers its t quantile (`t_quantile`): one asked at another confidence or seed count after
    it must not be handed the first's."""
    values = [88.1, 88.9, 87.5, 88.4, 89.0, 87.9]
    for confidence, n in itertools.product((0.95, 0.8, 0.95), (2, 3, 6, 2)):
        s = summarize(values[:n], confidence)
        sd = sps.tstd(values[:n])
        half = sps.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
        assert s.half_width == pytest.approx(half, rel=1e-12)


def test_degenerate_inputs():
    same = summarize([70.0, 70.0, 70.0])
    assert same.sd == 0.0 and same.ci_low == same.ci_high == 70.0
    one = summarize([70.0])
    assert one.sd is None and one.half_width is None
    with pytest.raises(ValueError):
        summarize([])


def test_paired_t_test_by_hand():
    a, b = [1.0, 2.0, 3.0, 4.0], [0.0, 2.0, 1.0, 3.0]  # differences 1, 0, 2, 1
    sd = math.sqrt(2 / 3)
    t = 1.0 / (sd / 2)
    out = paired_test(a, b)
    assert out.t == pytest.approx(t)
    assert out.p_value == pytest.approx(2 * sps.t.sf(t, 3))
    assert out.mean == pytest.approx(1.0) and not out.degenerate


def test_paired_test_with_constant_differences():
    """Identical non-zero differences: the exact sign-flip permutation p (2 / 2^n), not a t-test's
    limit of 0, which counted three identical differences as certain (and significant after Holm)."""
    assert paired_test([1.0, 2.0], [1.0, 2.0]).p_value == 1.0
    out = paired_test([2.0, 3.0, 4.0], [1.0, 2.0, 3.0])
    assert out.degenerate and out.p_value == 0.25
    flips = [sum(d) for d in itertools.product((-1.0, 1.0), repeat=6)]  # every sign pattern of six 1s
    assert paired_test([1.0] * 6, [0.0] * 6).p_value == sum(abs(f) >= 6 for f in flips) / len(flips)


def test_welch_test_of_two_constant_sides_is_the_exact_permutation_p():
    """Both sides constant and apart: of the C(6, 3) ways to split the six values, the two that keep
    the groups whole are as extreme as the observed one."""
    out = welch_test([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])
    splits = list(itertools.combinations(range(6), 3))
    values = [2.0, 2.0, 2.0, 1.0, 1.0, 1.0]
    diffs = [
        abs(sum(values[i] for i in g) / 3 - sum(values[i] for i in range(6) if i not in g) / 3)
        for g in splits
    ]
    assert out.degenerate and out.p_value == pytest.approx(sum(d >= 1.0 for d in diffs) / len(splits))


@pytest.mark.parametrize(
    "p",
    [
        [0.01, 0.04, 0.03, 0.2],
        [0.001, 0.001, 0.5, 0.049, 0.02, 1.0],
        [0.3],
        [],
        [0.04, 0.04, 0.04],
    ],
)
def test_holm_matches_statsmodels(p):
    from encoderlab.eval.stats import holm

    want = statsmodels_holm(p) if p else []
    assert holm(p) == pytest.approx(want)


def test_holm_by_hand():
    from encoderlab.eval.stats import holm

    # sorted 0.01, 0.03, 0.04, 0.2 -> 4 x 0.01, max(0.04, 3 x 0.03), max(0.09, 2 x 0.04), max(0.09, 0.2)
    assert holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])


def test_welch_test_is_scipys_unequal_variance_t_test():
    import numpy as np

    from encoderlab.eval.stats import welch_test

    rng = np.random.default_rng(7)
    for _ in range(50):
        a, b = rng.normal(1, 2, rng.integers(2, 8)).tolist(), rng.normal(0, 0.5, rng.integers(2, 8)).tolist()
        ref = sps.ttest_ind(a, b, equal_var=False)
        got = welch_test(a, b)
        assert got.t == pytest.approx(ref.statistic) and got.p_value == pytest.approx(ref.pvalue)
        low, high = ref.confidence_interval(0.95)
        assert (got.ci_low, got.ci_high) == pytest.approx((low, high))
    one = welch_test([3.0, 4.0, 6.0], [2.0])  # a single value is exact: the one-sample test against it
    assert one.p_value == pytest.approx(sps.ttest_1samp([3.0, 4.0, 6.0], 2.0).pvalue)
    assert welch_test([2.0], [3.0, 4.0, 6.0]).mean == pytest.approx(-one.mean)
    assert welch_test([1.0, 1.0], [1.0, 1.0]).degenerate


def test_holm_refuses_nan_rather_than_depend_on_order():
    from encoderlab.eval.stats import holm

    # Before: NaN broke the sort, so [nan, 0.01, 0.04] and [0.01, 0.04, nan] adjusted 0.01 differently.
    for family in ([float("nan"), 0.01, 0.04], [0.01, 0.04, float("nan")]):
        with pytest.raises(ValueError, match="NaN p-value"):
            holm(family)


def test_differences_equal_but_for_rounding_are_identical():
    """0.7 - 0.6 and 0.1 - 0.0 differ in the last bit: the t-test on that spread said p = 1e-32
    (significant after any correction) where the same differences exactly said 0.25."""
    out = paired_test([0.7, 0.1, 0.3], [0.6, 0.0, 0.2])
    assert out.degenerate and out.p_value == 0.25 and out.t is None
    assert paired_test([0.1 + 0.2, 0.7], [0.3, 0.7]).p_value == 1.0  # zero up to rounding
    same = welch_test([0.7, 0.7, 0.7], [0.1 + 0.2, 0.3, 0.3])
    assert same.degenerate and same.p_value == pytest.approx(2 / math.comb(6, 3))
    assert (
        paired_test([70.1, 72.4, 69.8], [70.0, 72.0, 70.0]).degenerate is False
    )  # real spread stays a t-test


def test_welch_exact_p_of_unequal_constant_sides_counts_only_the_observed_split():
    """a = [2, 2], b = [1, 1, 1]: of the C(5, 2) splits only the observed one is as extreme (the mirror,
    a taking two 1s, gives a difference of -2/3), so p = 1/10; it said 2/10."""
    values = [2.0, 2.0, 1.0, 1.0, 1.0]
    splits = list(itertools.combinations(range(5), 2))
    diffs = [
        abs(sum(values[i] for i in g) / 2 - sum(values[i] for i in range(5) if i not in g) / 3)
        for g in splits
    ]
    want = sum(d >= 1.0 - 1e-12 for d in diffs) / len(splits)
    assert welch_test([2.0, 2.0], [1.0, 1.0, 1.0]).p_value == pytest.approx(want) == 0.1


def test_a_degenerate_difference_is_starred_only_when_its_exact_p_is_below_5_percent():
    """The results table stars a difference whose 95% interval excludes 0; a degenerate test's interval
    has zero width, so three identical differences read "p=0.25*"."""
    assert not paired_test([2.0, 3.0, 4.0], [1.0, 2.0, 3.0]).excludes_zero
    assert paired_test([1.0] * 6, [0.0] * 6).excludes_zero  # p = 2 / 64
    assert paired_test([1.0, 2.0, 3.5], [0.0, 1.1, 2.4]).excludes_zero  # an ordinary t-interval


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (lambda: paired_test([math.inf, 1.0, 2.0], [0.0, 0.0, 0.0]), "value 0 of a is inf"),
        (lambda: paired_test([1.0, 1.0, 2.0], [0.0, math.nan, 0.0]), "value 1 of b is nan"),
        (lambda: summarize([1.0, -math.inf]), "value 1 of values is -inf"),
        (lambda: welch_test([1.0, 2.0, 3.0], [math.nan]), "value 0 of b is nan"),
        (lambda: welch_test([math.nan], [1.0, 2.0, 3.0]), "value 0 of a is nan"),
        (lambda: welch_borrowed([1.0, 2.0], 1.5, math.inf, 3), "value 0 of var is inf"),
        (lambda: pooled_variance([[1.0, 2.0], [3.0, math.nan]]), "value 1 of group 1 is nan"),
    ],
)
def test_a_score_that_is_not_finite_is_refused_naming_it(call, said):
    """An infinite score made the t-test's mean inf and its p NaN (scipy's RuntimeWarning: 'invalid value
    encountered in subtract'), a NaN one a NaN interval, which a report printed or Holm refused; no reader
    hands one on (`EvalRecord.non_finite`), and the statistics say which value if a new path does."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=f"^{re.escape(said)}: statistics take finite scores only"):
            call()


def test_holm_matches_its_definition_on_random_families_with_ties():
    """Families of 1-12 p-values drawn from a few values (so most have ties), in random order, against Holm's
    step-down written directly: p_i becomes the largest (m - #{p_k < p_j}) p_j over the p_j <= p_i, capped at
    1 (and statsmodels on some of them: `statsmodels_holm`). So the adjusted values are
    never below the raw p, at most 1, and ordered as the raw p-values, ties equal."""
    import numpy as np

    from encoderlab.eval.stats import holm

    rng = np.random.default_rng(11)
    for draw in range(300):
        p = rng.choice([0.0, 0.001, 0.01, 0.02, 0.04, 0.2, 0.5, 1.0], size=rng.integers(1, 13)).tolist()
        m = len(p)
        want = [min(1.0, max((m - sum(q < pj for q in p)) * pj for pj in p if pj <= pi)) for pi in p]
        got = holm(p)
        assert got == pytest.approx(want)
        if draw < 20:
            assert got == pytest.approx(statsmodels_holm(p))
        assert all(got[i] <= got[j] for i in range(m) for j in range(m) if p[i] <= p[j])


def test_welch_degrees_of_freedom_do_not_underflow_on_tiny_variances():
    """A t-test is scale-free: the same values times 1e120 give the same t, df and p. Scores near 1e-120 (far
    below any metric's, but nothing refuses them) squared each side's variance of the mean to 0, and the
    Welch-Satterthwaite degrees of freedom divided by zero."""
    a, b = [1e-120, 3e-120, 2e-120], [5e-120, 9e-120]
    ref = sps.ttest_ind([x * 1e120 for x in a], [x * 1e120 for x in b], equal_var=False)
    got = welch_test(a, b)
    assert got.t == pytest.approx(ref.statistic) and got.p_value == pytest.approx(ref.pvalue)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([0.7, 0.1, 0.3], [0.6, 0.0, 0.2]),  # 0.1 three times, differing in the last bits
        ([70.1, 60.7, 65.3], [65.1, 55.7, 60.3]),  # 5.0 three times, to rounding
        ([61.2, math.nextafter(61.2, 99), 61.2], [1.2, 1.2, 1.2]),  # one difference a last bit apart
    ],
)
def test_nearly_equal_differences_raise_no_precision_warning_and_read_as_equal(a, b):
    """Differences equal but for floating-point noise are where scipy's t-test warns "Precision loss occurred
    in moment calculation" (its spread is at the noise, so its t is noise too: p far below 0.05 for three
    seeds). `paired_test` decides them without scipy: one difference, the exact sign-flip p (here 2 / 2^3),
    which an enumeration of the sign patterns gives directly; no warning reaches the user."""
    with pytest.warns(RuntimeWarning, match="Precision loss"):  # the case is the one scipy warns on
        sps.ttest_rel(a, b)
    diffs = [x - y for x, y in zip(a, b)]
    tol = 1e-9 * max(map(abs, [*a, *b]))
    flips = [abs(sum(s * d for s, d in zip(signs, diffs))) for signs in itertools.product((-1, 1), repeat=3)]
    direct = sum(f >= abs(sum(diffs)) - tol for f in flips) / len(flips)
    out = paired_test(a, b)
    assert out.degenerate and out.t is None and out.p_value == direct == 0.25
    assert not out.excludes_zero  # three seeds cannot make it significant
    assert welch_test(a, [b[0]]).degenerate is (max(b) == min(b))  # one reference value: the same test
