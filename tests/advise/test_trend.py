"""A schedule whose ladder does not improve with compute: every fitted curve falls towards a floor
capped at the best rung, so it is read at the target as a flat line; the advice must say so."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats
from tests.advise.advise_fixtures import LOSS, made_up_ladder

from encoderlab.advise.calibration import flag_shares
from encoderlab.advise.decide import advise
from encoderlab.advise.ladder import Ladder, Metric
from encoderlab.advise.predict import Target
from encoderlab.advise.report import format_advice
from encoderlab.advise.synthetic import CLM_LIKE, MLM_LIKE, synthetic_ladder
from encoderlab.advise.trend import (
    RISE_LEVEL,
    TREND_Z,
    Trend,
    dominated_pairs,
    rise_critical,
    trend,
    trend_warnings,
)

IMPROVING = [(3.0, 3.02), (2.6, 2.62), (2.3, 2.32), (2.1, 2.12)]
WORSENING = [(1.6, 1.62), (1.7, 1.72), (1.8, 1.82), (1.9, 1.92)]  # +0.1 a rung, seed noise ~0.01


def _flagged(advice) -> list[str]:
    return [w for w in advice.warnings if "does not improve with compute" in w]


def test_a_schedule_getting_worse_with_scale_is_warned_about_and_not_recommended():
    """CLM leads at every rung but its loss rises with compute: the curve, flat at its best rung, still
    puts it first at the target. Before, the advice recommended it with no warning."""
    advice = advise(made_up_ladder({MLM_LIKE: IMPROVING, CLM_LIKE: WORSENING}), Target(flops=1e19), n_boot=60)
    (warning,) = _flagged(advice)
    assert warning.startswith(f"{CLM_LIKE.name} does not improve with compute beyond its seed noise")
    # 0.3 over the ladder's 2.39 decades of compute, against seed noise sd 0.0141 (deviations of +-0.01)
    assert (
        "move by +0.126 per tenfold compute" in warning
        and "cannot represent a ladder that is flat" in warning
    )
    assert f"prediction for {CLM_LIKE.name} at the target is unreliable" in warning
    assert advice.ranking[0] == CLM_LIKE.name and advice.recommendation is None
    assert f"insufficient evidence: the leader, {CLM_LIKE.name}, does not improve" in advice.reason
    assert warning in advice.to_dict()["warnings"] and f"warning: {warning}" in format_advice(advice)


def test_a_worsening_schedule_behind_the_leader_leaves_the_recommendation():
    """Its flat fit is the optimistic reading of a ladder that does not improve: still behind, it stays so."""
    behind = [tuple(v + 1.0 for v in seeds) for seeds in WORSENING]
    advice = advise(made_up_ladder({MLM_LIKE: IMPROVING, CLM_LIKE: behind}), Target(flops=1e19), n_boot=60)
    assert len(_flagged(advice)) == 1 and advice.recommendation == MLM_LIKE.name


def test_the_slope_is_read_against_seed_noise():
    """Rung means within seed noise of each other are not an improvement; the same fall with small noise is."""
    flat_noisy = [(2.5, 2.7), (2.45, 2.65), (2.55, 2.35), (2.4, 2.6)]
    ladder = made_up_ladder({MLM_LIKE: IMPROVING, CLM_LIKE: flat_noisy})
    advice = advise(ladder, Target(flops=1e19), n_boot=60)
    assert [w.split(" does")[0] for w in _flagged(advice)] == [CLM_LIKE.name]
    (fit,) = [f for f in _fits(ladder) if f.schedule == MLM_LIKE]
    t = trend(fit, None)
    assert t.improving and t.slope < 0
    # a given --seed-noise replaces the pooled sd: large enough, it hides the improvement
    assert not trend(fit, seed_noise=5.0).improving


def test_a_falling_score_is_flagged_with_its_own_sign():
    """Higher is better: a score that drops with compute is its loss rising; the warning shows the score's slope."""
    score = Metric(name="score", better="higher", ceiling=10.0)
    loss = made_up_ladder({MLM_LIKE: IMPROVING, CLM_LIKE: WORSENING})
    mirrored = Ladder(score, tuple(replace(o, value=10.0 - o.value) for o in loss.observations))
    (warning,) = _flagged(advise(mirrored, Target(flops=1e19), n_boot=60))
    assert "move by -0.126 per tenfold compute" in warning and "higher is better" in warning


@pytest.mark.parametrize("draw", range(8))
def test_healthy_ladders_are_not_flagged(draw):
    syn = synthetic_ladder(np.random.default_rng(draw), crossover=3.0)
    assert _flagged(advise(syn.ladder, Target(flops=syn.target_flops), n_boot=20)) == []


def _fits(ladder):
    from encoderlab.advise.predict import fit_schedules

    return fit_schedules(ladder, np.random.default_rng(0), 10)


def test_rungs_of_one_compute_have_no_trend():
    """(N, D) rungs at the same measured FLOPs give no slope to test (it was a division by zero)."""
    from types import SimpleNamespace

    from encoderlab.advise.ladder import Observation
    from encoderlab.advise.predict import Rungs

    runs = tuple(
        Observation(schedule=MLM_LIKE, params=n, tokens=d, seed=k, value=2.0 + k / 100, flops=1e18)
        for n, d in ((1e7, 2e8), (2e7, 1e8))
        for k in (0, 1)
    )
    rungs = Rungs.of(runs)
    fit = SimpleNamespace(rungs=rungs, replicates=np.array([[o.value for o in runs]]), schedule=MLM_LIKE)
    assert trend(fit, None) is None


def test_rungs_whose_measured_flops_differ_in_their_last_bits_have_no_trend():
    """An isoFLOP ladder (four sizes at one compute) whose measured FLOPs differ by ~1e-12 (as `predict.computes`
    reads them: one compute, no curve) was given a slope on that noise and warned about as not improving, its
    rung means moving "+1.77e+10 per tenfold compute"."""
    from encoderlab.advise.ladder import Observation

    jitter = {1e6: 1 + 3e-12, 2e6: 1.0, 4e6: 1 - 2e-12, 8e6: 1 + 1e-12}
    runs = tuple(
        Observation(
            schedule=s, params=n, tokens=1.6e14 / n, seed=k, flops=9.6e14 * j,
            value=base + abs(np.log2(n / 2e6)) / 10 + k / 100,
        )
        for s, base in ((MLM_LIKE, 4.0), (CLM_LIKE, 4.1))
        for n, j in jitter.items()
        for k in (0, 1)
    )  # fmt: skip
    advice = advise(Ladder(LOSS, runs), Target(flops=1e16), n_boot=20)
    assert advice.method == "single rung" and not _flagged(advice)


def test_the_trend_test_is_students_t_on_the_noises_degrees_of_freedom():
    """Checked against a direct computation: the slope is least squares over the runs (scipy's linregress),
    its standard error the pooled within-rung sd over sqrt(Sxx), and a schedule counts as improving only
    when the one-sided t-test on the pooled sd's degrees of freedom (4: four rungs of two seeds) has
    p < 0.05. Here slope / se = -1.9, past the normal 1.645 but not t(0.95, 4) = 2.13: the old z
    threshold called it improving, a 9% test where 5% was said (17% at one degree of freedom: Student's t puts
    `stats.t.cdf(-1.645, df)` = 0.088 and 0.174 below -1.645 at 4 and 1 degrees of freedom)."""
    from types import SimpleNamespace

    from scipy import stats

    from encoderlab.advise.predict import Rungs

    x = np.log10(6.0 * 20.0 * np.array([8e6, 2e7, 5e7, 1.25e8]) ** 2)
    se_per_unit = np.sqrt(2) / np.sqrt((2 * (x - x.mean()) ** 2).sum())  # sd of +-d pairs is d sqrt(2)
    d, ratio = 0.01, -1.9
    means = 2.5 + ratio * se_per_unit * d * (x - x.mean())
    values = {MLM_LIKE: [(m - d, m + d) for m in means], CLM_LIKE: IMPROVING}
    runs = made_up_ladder(values).of(MLM_LIKE)
    loss = np.array([o.value for o in runs])
    fit = SimpleNamespace(rungs=Rungs.of(runs), replicates=loss[None], schedule=MLM_LIKE, form=None)
    got = trend(fit, None)

    cx = np.log10([6.0 * o.params * o.tokens for o in runs])
    line = stats.linregress(cx, loss)
    rung_means = {c: loss[cx == c].mean() for c in set(cx)}
    df = len(loss) - len(rung_means)
    sd = np.sqrt(sum((v - rung_means[c]) ** 2 for c, v in zip(cx, loss)) / df)
    se = sd / np.sqrt(((cx - cx.mean()) ** 2).sum())
    p_improving = stats.t.cdf(line.slope / se, df)  # one-sided: the slope is below zero
    assert not got.improving
    assert df == 4 and got.df == df
    assert (got.slope, got.se) == (pytest.approx(line.slope), pytest.approx(se))
    assert line.slope / se == pytest.approx(ratio)
    assert stats.norm.cdf(ratio) < 0.05 < p_improving  # the normal quantile would call it improving
    assert trend(fit, seed_noise=sd).improving  # a given sd is exact: the normal quantile


def test_rungs_whose_measured_flops_differ_by_a_few_percent_are_one_compute():
    """An isoFLOP profile with measured FLOPs: three sizes at one 6ND budget log FLOPs a few percent apart
    (the attention's share varies with the shape). As three computes, the trend's slope on 2.5% of log
    compute had a huge standard error and the schedule was flagged as not improving, and a 1-D curve was
    fitted from one x. Within `COMPUTE_RTOL` (10%) of a group's lowest they are one compute; anchored at
    the lowest, so a dense ladder (5% steps) is not chained into one."""
    from types import SimpleNamespace

    from encoderlab.advise.ladder import Observation
    from encoderlab.advise.predict import COMPUTE_RTOL, Rungs, choose_form, computes

    sizes = ((1e7, 2e8, 1.0), (2e7, 1e8, 1.03), (4e7, 5e7, 1.06))  # N, D and measured FLOPs / 1e18
    runs = tuple(
        Observation(schedule=MLM_LIKE, params=n, tokens=d, seed=k, value=2.0 + k / 100, flops=f * 1e18)
        for n, d, f in sizes
        for k in (0, 1)
    )
    rungs = Rungs.of(runs)
    fit = SimpleNamespace(rungs=rungs, replicates=np.array([[o.value for o in runs]]), schedule=MLM_LIKE)
    assert computes(rungs.compute) == 1 and trend(fit, None) is None and choose_form(rungs) is None
    assert COMPUTE_RTOL < 0.5  # a ladder's rungs 1.5x apart stay apart
    assert computes(np.array([1e18, 1.5e18, 2.25e18])) == 3
    assert computes(1e18 * 1.05 ** np.arange(41)) == 21  # groups of two 5% steps, not one chain


# falls by 0.8, then rises by 0.15 (seed deviations +-0.01): the slope is negative by many standard errors
TURNING = [(2.9, 2.92), (2.4, 2.42), (1.9, 1.92), (2.05, 2.07)]


def test_a_ladder_that_falls_more_than_it_rises_is_flagged_though_its_slope_falls():
    """CLM leads at the largest rung, but its loss rose there: a curve that can only fall towards a floor
    reads it near its best rung at the target. Its slope is far below zero, so the slope test passed it and
    the advice recommended CLM with no warning."""
    ladder = made_up_ladder({MLM_LIKE: IMPROVING, CLM_LIKE: TURNING})
    (fit,) = [f for f in _fits(ladder) if f.schedule == CLM_LIKE]
    t = trend(fit, None)
    assert t.improving and t.rise.significant and t.flagged
    assert (t.rise.lower, t.rise.higher) == ((5e7, 1e9), (1.25e8, 2.5e9))
    advice = advise(ladder, Target(flops=1e19), n_boot=60)
    (warning,) = [w for w in advice.warnings if "gets worse with compute past one of its rungs" in w]
    assert warning.startswith(
        f"{CLM_LIKE.name} gets worse with compute past one of its rungs beyond its seed noise"
    )
    assert "N=1.25e+08, D=2.5e+09 moves by +0.15 from that at the smaller N=5e+07, D=1e+09" in warning
    assert advice.ranking[0] == CLM_LIKE.name and advice.recommendation is None
    assert f"insufficient evidence: the leader, {CLM_LIKE.name}, gets worse with compute" in advice.reason


def test_the_rise_quantile_of_one_pair_is_the_normal_or_students_t():
    """Two rungs give one pair, whose standardised rise is normal (a given sd) or Student's t on the pooled
    sd's degrees of freedom: the Monte Carlo quantile must agree with both."""
    from scipy import stats

    assert rise_critical((2, 2), ((0, 1),), None) == pytest.approx(stats.norm.ppf(0.95), abs=0.03)
    assert rise_critical((2, 3), ((0, 1),), 3) == pytest.approx(stats.t.ppf(0.95, 3), abs=0.06)
    # more pairs sharing rungs: a larger maximum, so a larger quantile
    assert rise_critical((2,) * 4, ((0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3)), 4) > stats.t.ppf(0.95, 4)


def test_the_rise_test_flags_flat_ladders_at_its_level():
    """Flat rung means are the least favourable ladder the form can follow: the rise test flags them in
    `RISE_LEVEL` of draws (here 2000 draws: a binomial sd of 0.005; scripts/advise_calibration.py --trend-only
    prints the share these draws give)."""
    shares = flag_shares([2.5] * 4, 0.05, 2000, seed=1)
    assert abs(shares["rise_share"] - RISE_LEVEL) < 0.015


def test_a_clean_monotone_ladder_with_noise_is_rarely_flagged():
    """A ladder falling to a floor, its last step two standard errors of seed noise (0.147 against sd 0.075
    of a two-seed rung mean's difference): neither test may flag it in more than `RISE_LEVEL` of draws (the
    rise test's bound: falling means rise less than flat ones)."""
    means = 2.0 + 1.0 * (np.array([8e6, 2e7, 5e7, 1.25e8]) / 8e6) ** -0.5  # 3.0, 2.63, 2.40, 2.25
    assert flag_shares(means, 0.075, 1000, seed=2)["flagged_share"] < RISE_LEVEL


def test_a_2d_ladder_pairs_rungs_by_size_and_tokens_not_compute():
    """For the 2-D form a rung at larger compute but fewer tokens may be worse (a worse split of more compute):
    it is not a rise the form cannot follow; a rung at no smaller size and no fewer tokens is."""
    from types import SimpleNamespace

    rungs = SimpleNamespace(
        points=np.array([[1e7, 4e9], [4e7, 2e9], [4e7, 4e9]]), compute=np.array([2.4e17, 4.8e17, 9.6e17])
    )
    assert {tuple(p) for p in np.transpose(dominated_pairs(rungs, two_d=True))} == {(0, 2), (1, 2)}
    assert len(np.transpose(dominated_pairs(rungs, two_d=False))) == 3


def test_the_slope_warning_gives_the_bar_an_improving_ladder_missed():
    """Two rungs of two seeds (one degree of freedom) whose means fall by 5 standard errors: not enough for
    Student's one-sided 95% quantile on 1 df. The warning said "does not improve ... a ladder that is flat or
    getting worse" beside a slope and standard error that read as a clear improvement, and named no bar."""
    slope, se = -0.374, 0.0719
    (warning,) = trend_warnings([Trend("MLM-30", slope, se, df=1)], "lower")
    bar = (
        f"{-slope / se:.3g} standard errors towards better, where improving needs {stats.t.ppf(0.95, 1):.3g}"
    )
    assert bar in warning and "Student's t on 1 degree of freedom" in warning
    assert "as this one may be (its improvement is within seed noise)" in warning
    (rising,) = trend_warnings([Trend("CLM", 0.1, 0.05, df=None)], "lower")
    assert f"improving needs {TREND_Z:.3g}, the one-sided 95% quantile of the normal" in rising
    assert "as this one may be" not in rising
