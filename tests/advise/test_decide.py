"""The advice's parts on ladders whose answer is known by construction."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from tests.advise.advise_fixtures import LOSS, made_up_ladder

from encoderlab.advise.decide import advise, decision_accuracy
from encoderlab.advise.fit import CHINCHILLA, POWER
from encoderlab.advise.ladder import Ladder, Metric, Observation
from encoderlab.advise.predict import Rungs, Target, choose_form, computes, resample
from encoderlab.advise.synthetic import CLM_LIKE, MLM_LIKE, synthetic_ladder
from encoderlab.errors import UserError


def test_decision_accuracy_is_the_share_of_pairs_ordered_as_at_the_target():
    actual = {"a": 1.0, "b": 2.0, "c": 3.0}
    assert decision_accuracy({"a": 1, "b": 2, "c": 3}, actual) == 1.0
    assert decision_accuracy({"a": 2, "b": 1, "c": 3}, actual) == pytest.approx(2 / 3)
    assert decision_accuracy({"a": 3, "b": 2, "c": 1}, actual) == 0.0
    assert (
        decision_accuracy({"a": 1, "b": 2, "c": 3}, {"a": 1.0, "b": 1.0, "c": 0.0}) == 0.0
    )  # tie a=b skipped


def test_the_bootstrap_keeps_rung_means_and_draws_inflated_pooled_seed_deviations():
    runs = made_up_ladder({MLM_LIKE: [(3.0, 3.2), (2.5, 2.5, 2.8), (2.0,)], CLM_LIKE: [(1.0, 1.0)] * 3}).of(
        MLM_LIKE
    )
    loss = np.array([o.value for o in runs])
    rungs = Rungs.of(runs)
    reps = resample(loss, rungs, np.random.default_rng(0), 4000)
    assert np.array_equal(reps[0], loss)
    # modified residuals: +-0.1*sqrt(2) from the 2-seed rung, (-0.1, -0.1, +0.2)*sqrt(1.5) from the 3-seed one;
    # the 1-seed rung adds none but draws from the pool too
    pool = np.concatenate([np.array([-0.1, 0.1]) * np.sqrt(2), np.array([-0.1, -0.1, 0.2]) * np.sqrt(1.5)])
    deviation = reps[1:] - rungs.means(reps[:1])[0][rungs.index]
    assert np.allclose(np.unique(deviation.round(9)), np.unique(pool.round(9)))
    assert deviation.var() == pytest.approx(pool.var(), rel=0.05)


def test_the_curve_follows_what_the_ladder_varies():
    def rungs(points):
        obs = [Observation(schedule=MLM_LIKE, params=n, tokens=d, seed=0, value=1.0) for n, d in points]
        return Rungs.of(tuple(obs))

    assert choose_form(rungs([(1e6, 2e7), (2e6, 4e7), (4e6, 8e7)])) is POWER
    assert choose_form(rungs([(1e6, 2e7), (2e6, 4e7)])) is None
    assert choose_form(rungs([(n, d) for n in (1e6, 2e6) for d in (1e7, 2e7)])) is POWER  # 4 rungs < 6
    assert choose_form(rungs([(n, d) for n in (1e6, 2e6, 4e6) for d in (1e7, 2e7)])) is CHINCHILLA


def test_a_higher_is_better_metric_gives_the_mirrored_advice():
    syn = synthetic_ladder(np.random.default_rng(3), crossover=3.0)
    score = Metric(name="score", better="higher", ceiling=10.0)
    mirrored = Ladder(score, tuple(replace(o, value=10.0 - o.value) for o in syn.ladder.observations))
    target = Target(flops=syn.target_flops)
    a, b = advise(syn.ladder, target, n_boot=60, seed=1), advise(mirrored, target, n_boot=60, seed=1)
    assert (a.recommendation, a.ranking, a.method) == (b.recommendation, b.ranking, b.method)
    for p, q in zip(a.predictions, b.predictions):
        assert q.value == pytest.approx(10 - p.value) and (q.low, q.high) == pytest.approx(
            (10 - p.high, 10 - p.low)
        )
        assert q.p_best == p.p_best


def test_crossover_is_found_near_the_truth_and_parallel_curves_do_not_cross():
    syn = synthetic_ladder(np.random.default_rng(4), crossover=3.0, sigma=0.003)
    adv = advise(syn.ladder, Target(flops=syn.target_flops), n_boot=100, seed=0)
    (c,) = adv.crossovers
    assert c.verdict == "cross" and c.first == CLM_LIKE.name
    assert syn.crossover / 1.5 < c.compute < syn.crossover * 1.5 and c.low <= c.compute <= c.high
    curve = [3.0, 2.6, 2.3, 2.1]
    parallel = made_up_ladder(
        {MLM_LIKE: [(v, v + 0.004) for v in curve], CLM_LIKE: [(v + 0.3, v + 0.302) for v in curve]}
    )
    (c,) = advise(parallel, Target(flops=1e19), n_boot=60).crossovers
    assert c.compute is None and c.verdict == "no crossover"


def test_a_schedule_with_two_rungs_falls_back_to_the_single_rung_ranking():
    ladder = made_up_ladder(
        {MLM_LIKE: [(3.0, 3.01), (2.6, 2.61), (2.3, 2.31)], CLM_LIKE: [(2.9, 2.91), (2.5, 2.52)]},
        sizes=(1e7, 2e7, 4e7),
    )
    adv = advise(ladder, Target(params=1e8, tokens=2e9), n_boot=60)
    assert adv.method == "single rung" and "CLM ran rungs at fewer than 3 computes" in adv.reason
    assert adv.rung == (2e7, 4e8) and adv.ranking == (CLM_LIKE.name, MLM_LIKE.name)
    assert adv.recommendation == CLM_LIKE.name and all(p.value is None for p in adv.predictions)
    # a target far past it is warned about as the ranking it is: the warning spoke of curves, intervals and a
    # backtest that this advice has none of
    (far,) = [w for w in advise(ladder, Target(flops=1e19), n_boot=60).warnings if "ladder spans" in w]
    assert far.endswith(
        "further past it than the ladder spans (16x from its smallest rung to its largest): the advice reads no "
        "curve (a schedule has rungs at fewer than 3 computes), so it is the largest common rung's ranking, which says nothing "
        "of where the schedules stand that far from it; read it as a guess, or add rungs"
    )


def test_a_far_target_without_a_backtest_is_not_said_to_be_backtested():
    """Three rungs per schedule fit curves but allow no backtest (it refits without the largest rung); the
    far-target warning still said "the backtest checked only one rung inside the ladder"."""
    ladder = made_up_ladder(
        {
            MLM_LIKE: [(3.0, 3.01), (2.6, 2.61), (2.3, 2.31)],
            CLM_LIKE: [(2.9, 2.91), (2.55, 2.56), (2.35, 2.36)],
        },
        sizes=(1e7, 2e7, 4e7),
    )
    adv = advise(ladder, Target(flops=1e21), n_boot=40)
    assert adv.backtest is None and all(p.value is not None for p in adv.predictions)  # curves, no backtest
    (far,) = [w for w in adv.warnings if "ladder spans" in w]
    assert "backtest checked" in far and "the backtest checked" not in far
    assert far.endswith(
        "which the intervals do not include and no backtest checked; read the advice as a guess, or add larger rungs"
    )


def test_a_failed_backtest_recommends_the_single_rung_ranking_and_says_why():
    # CLM's gap to MLM zigzags below the top rung, so its curve extrapolates the top rung worse than
    # the rung below it predicts it
    base = np.array([3.0, 2.6, 2.3, 2.1])
    gap = np.array([0.3, 0.38, 0.22, 0.3])
    ladder = made_up_ladder(
        {MLM_LIKE: [(v, v + 0.002) for v in base], CLM_LIKE: [(v, v + 0.002) for v in base + gap]}
    )
    adv = advise(ladder, Target(params=3e8, tokens=6e9), n_boot=60)
    assert adv.backtest is not None and not adv.backtest.passed
    assert adv.backtest.extrapolation_error > adv.backtest.baseline_error
    assert adv.method == "single rung" and adv.reason.startswith(
        "the single-rung ranking is recommended because the backtest failed"
    )
    assert adv.recommendation == MLM_LIKE.name


def test_a_backtest_whose_curves_got_the_held_out_order_wrong_does_not_endorse_extrapolation():
    """CLM closes on MLM from rung to rung and overtakes it at the top: the curves, refitted without it, see
    the gap shrink (a smaller error than the rung below) but still rank the pair the wrong way, as the rung
    below does. Before, 0% of pairs right "at least as well" as the baseline's 0% passed, and the curves were
    recommended after getting the held-out order wrong."""
    base = np.array([3.0, 2.6, 2.3, 2.1])
    gap = np.array([-0.3, -0.2, -0.1, 0.02])
    ladder = made_up_ladder(
        {MLM_LIKE: [(v, v + 0.002) for v in base], CLM_LIKE: [(v, v + 0.002) for v in base + gap]}
    )
    adv = advise(ladder, Target(params=3e8, tokens=6e9), n_boot=60)
    bt = adv.backtest
    assert bt.extrapolation_accuracy == bt.baseline_accuracy == 0.0
    assert bt.extrapolation_error < bt.baseline_error and not bt.passed
    assert adv.method == "single rung" and "the backtest failed" in adv.reason


def test_schedules_sharing_no_rung_are_extrapolated_unchecked():
    curve = [(3.0, 3.01), (2.6, 2.61), (2.3, 2.31)]
    worse = [(a + 0.3, b + 0.3) for a, b in curve]  # far apart at every size: the old code recommended MLM
    runs = list(made_up_ladder({MLM_LIKE: curve, CLM_LIKE: worse}, sizes=(1e7, 2e7, 4e7)).observations)
    runs = [
        replace(o, params=o.params * 1.1, tokens=o.tokens * 1.1) if o.schedule == CLM_LIKE else o
        for o in runs
    ]
    adv = advise(Ladder(LOSS, tuple(runs)), Target(params=1e8, tokens=2e9), n_boot=60)
    assert adv.method == "extrapolation" and adv.rung is None and "unchecked" in adv.reason
    # recommended before, though a recommended extrapolation needs a backtest (docs/advise.md)
    assert adv.recommendation is None and "insufficient evidence" in adv.reason
    assert adv.ranking == (MLM_LIKE.name, CLM_LIKE.name)


def test_a_two_dimensional_ladder_reads_the_compute_optimal_frontier():
    def truth(n, d):
        return 1.8 + 600.0 * n**-0.34 + 900.0 * d**-0.28

    adv = advise(_two_dimensional_ladder(truth), Target(flops=1e18), n_boot=60)
    assert all(p.curve == CHINCHILLA.name for p in adv.predictions) and adv.recommendation == MLM_LIKE.name
    frontier = min(truth(n, 1e18 / (6 * n)) for n in np.geomspace(1e6, 1e10, 4000))
    assert adv.predictions[0].value == pytest.approx(frontier, rel=0.02)


def _two_dimensional_ladder(truth) -> Ladder:
    rng = np.random.default_rng(0)
    sizes, tokens = (4e6, 1e7, 2.5e7), (8e7, 2e8, 5e8)
    runs = [
        Observation(
            schedule=s, params=n, tokens=d, seed=k, value=float(truth(n, d) * f + rng.normal(0, 0.003))
        )
        for s, f in ((MLM_LIKE, 1.0), (CLM_LIKE, 1.02))
        for n in sizes
        for d in tokens
        for k in range(2)
    ]
    return Ladder(LOSS, tuple(runs))


def test_the_curves_of_a_size_target_pass_through_its_prediction():
    """A target given as (N, D) is drawn along its tokens per parameter, so the figure shows the printed
    prediction at the target. Before, the curves were the compute-optimal frontier, which lies below
    any fixed allocation: here 0.2 nats under the prediction at the target line."""

    def truth(n, d):
        return 1.8 + 600.0 * n**-0.34 + 900.0 * d**-0.28

    target = Target(params=1e8, tokens=1e9)
    adv = advise(_two_dimensional_ladder(truth), target, n_boot=60)
    assert "10 tokens per parameter" in adv.path
    for p in adv.predictions:
        curve = [r for r in adv.curves if r["schedule"] == p.schedule]
        c = np.log([r["compute"] for r in curve])
        at_target = np.interp(np.log(adv.target_compute), c, [r["value"] for r in curve])
        assert at_target == pytest.approx(p.value, abs=0.01)
        assert min(r["low"] for r in curve) > 1.8  # bounded below by E, not a frontier far below the runs
    frontier = advise(_two_dimensional_ladder(truth), Target(flops=adv.target_compute), n_boot=60)
    assert "compute-optimal" in frontier.path
    assert frontier.predictions[0].value < adv.predictions[0].value - 0.05


def test_seed_noise_must_be_estimable():
    ladder = made_up_ladder(
        {MLM_LIKE: [(3.0,), (2.6,), (2.3,)], CLM_LIKE: [(2.9, 2.91), (2.5,), (2.2,)]}, sizes=(1e7, 2e7, 4e7)
    )
    with pytest.raises(UserError, match="no rung of MLM-40 has two pretraining seeds"):
        advise(ladder, Target(flops=1e19), n_boot=60)


def test_every_schedule_without_two_seeds_at_a_rung_is_named_at_once():
    # the check ran as each schedule was fitted: a ladder of one seed per rung named MLM-40 alone, and a user
    # who trained its second seeds was refused again for CLM
    ladder = made_up_ladder({MLM_LIKE: [(3.0,), (2.6,), (2.3,)], CLM_LIKE: [(2.9,), (2.5,), (2.2,)]})
    with pytest.raises(UserError) as refused:
        advise(ladder, Target(flops=1e19), n_boot=60)
    assert str(refused.value).startswith(
        "no rung of MLM-40 or of CLM has two pretraining seeds, so their seed"
    )


def test_a_given_seed_noise_lets_a_one_seed_ladder_be_advised():
    syn = synthetic_ladder(np.random.default_rng(8), seeds=(1, 1), crossover=0.1)
    target = Target(flops=syn.target_flops)
    narrow = advise(syn.ladder, target, n_boot=200, seed_noise=0.005)
    wide = advise(syn.ladder, target, n_boot=200, seed_noise=0.02)
    assert narrow.seed_noise == 0.005 and narrow.recommendation == MLM_LIKE.name
    for a, b in zip(narrow.predictions, wide.predictions):
        assert a.value == b.value  # the fit is the data's
        assert 2.5 < (b.high - b.low) / (a.high - a.low) < 6  # the spread follows the noise given (4x)


def test_a_target_far_outside_the_ladder_is_warned_about():
    """Past the ladder by more than the ladder spans, every number at the target is the curve's form
    speaking: the advice says so instead of recommending silently (below its smallest rung it is refused:
    `test_a_target_below_the_ladder_is_refused_and_creates_nothing`)."""
    syn = synthetic_ladder(np.random.default_rng(3), crossover=3.0)
    computes = [o.compute for o in syn.ladder.observations]
    lo, hi = min(computes), max(computes)
    near = advise(syn.ladder, Target(flops=syn.target_flops), n_boot=60)
    assert syn.target_flops > hi and near.warnings == ()
    far = advise(syn.ladder, Target(flops=hi * (hi / lo) * 10), n_boot=60)
    (warning,) = far.warnings
    assert f"{hi * (hi / lo) * 10 / hi:,.0f}x the compute of the ladder's largest rung" in warning
    assert f"({hi / lo:,.0f}x from its smallest rung" in warning and far.to_dict()["warnings"] == (warning,)
    with pytest.raises(UserError, match="below the ladder's smallest rung"):
        advise(syn.ladder, Target(flops=lo / 10), n_boot=60)


def test_a_schedule_whose_own_rungs_stop_short_of_the_target_is_warned_about():
    """Each curve is read at the target from its own schedule's rungs: where the ladder as a whole reaches
    the target but CLM's three rungs end 3,906x below it (a span of 256x), CLM's prediction is the curve's
    form alone. Before, the check read the whole ladder's span (65,536x, the target 15x past its largest
    rung) and said nothing."""
    sizes = (1e6, 4e6, 1.6e7, 6.4e7, 2.56e8)
    mlm = [(3.4, 3.42), (3.0, 3.02), (2.6, 2.62), (2.3, 2.32), (2.1, 2.12)]
    clm = [(3.3, 3.32), (2.95, 2.97), (2.7, 2.72)]
    ladder = made_up_ladder({MLM_LIKE: mlm, CLM_LIKE: clm}, sizes=sizes)
    advice = advise(ladder, Target(params=1e9, tokens=2e10), n_boot=40)
    (warning,) = advice.warnings
    assert warning.startswith(
        f"the target is 3,906x the compute of {CLM_LIKE.name}'s largest rung, further past it than "
        f"{CLM_LIKE.name}'s rungs span (256x from its smallest rung"
    )
    # within both schedules' own reach: no warning
    assert advise(ladder, Target(params=1.6e7 * 4, tokens=20 * 1.6e7 * 4), n_boot=40).warnings == ()


def test_seed_noise_from_too_few_degrees_of_freedom_is_warned_about():
    """One rung of a schedule at two seeds is accepted, but its noise then rests on one deviation: the
    bootstrap's intervals are too narrow, and the advice says so (not with a given --seed-noise)."""
    curve = [3.0, 2.6, 2.3, 2.1]
    one = [(curve[0], curve[0] + 0.01), *((v,) for v in curve[1:])]
    two = [(v + 0.05, v + 0.06) for v in curve[:2]] + [(v + 0.05,) for v in curve[2:]]
    ladder = made_up_ladder({MLM_LIKE: one, CLM_LIKE: two})
    (warning,) = advise(ladder, Target(flops=1e19), n_boot=60).warnings
    assert (
        f"the seed noise of {MLM_LIKE.name} (1), {CLM_LIKE.name} (2) is estimated from fewer than 3"
        in warning
    )
    assert advise(ladder, Target(flops=1e19), n_boot=60, seed_noise=0.01).warnings == ()
    three = [(v, v + 0.01) for v in curve[:3]] + [(curve[3],)]
    assert (
        advise(made_up_ladder({MLM_LIKE: three, CLM_LIKE: three}), Target(flops=1e19), n_boot=60).warnings
        == ()
    )


def test_no_schedule_is_recommended_where_the_replicates_and_the_point_fit_disagree():
    """A recommendation is the leader of the bootstrap replicates; the ranking is the point fit's. When
    90% of replicates put one schedule first and the fit ranks the other first (a skewed bootstrap
    distribution), naming either would contradict the other half of the report."""
    from types import SimpleNamespace

    from encoderlab.advise.decide import _verdict

    values = {"extrapolation": np.array([2.0, 1.0]), "single rung": np.array([2.0, 1.0])}  # lower: b first
    errors = dict(
        extrapolation_accuracy=1.0, extrapolation_error=0.01, baseline_accuracy=1.0, baseline_error=0.1
    )
    passed = SimpleNamespace(passed=True, held_out=(1e7, 2e8), **errors)  # a backtest the curves passed
    agree = {"extrapolation": np.array([0.05, 0.95])}
    _, rec, ranking, _ = _verdict(("a", "b"), values, agree, passed, "", 0.9, "lower")
    assert rec == "b" and ranking == ("b", "a")
    skewed = {"extrapolation": np.array([0.95, 0.05])}
    _, rec, ranking, reason = _verdict(("a", "b"), values, skewed, passed, "", 0.9, "lower")
    assert rec is None and ranking == ("b", "a")
    assert "insufficient evidence: a is best at the target in 95% of bootstrap replicates" in reason
    assert "but the point fit ranks b first" in reason


def test_a_second_crossing_names_who_leads_on_each_side_of_it():
    """Curves of different floors can cross twice: A leads at the low end, B in the middle, A again at
    the top. The crossing nearest the target is the second one, and the line said "A leads below it,
    B above", the reverse of the curves."""
    from types import SimpleNamespace

    from encoderlab.advise.crossover import crossovers
    from encoderlab.advise.report import _crossover_line

    fits = [SimpleNamespace(schedule=SimpleNamespace(name=n)) for n in ("A", "B")]
    grid = np.geomspace(1.0, 1e6, 7)
    delta = np.array([-1.0, -1.0, 1.0, 1.0, 1.0, -1.0, -1.0])  # A - B: A lower (better), then B, then A
    loss = np.stack([np.stack([2.0 + delta] * 2), np.full((2, 7), 2.0)])  # (schedules, 1 + B, grid)
    (c,) = crossovers(fits, grid, loss, target_compute=1e5, interval=0.8, confidence=0.9)
    assert 1e4 < c.compute < 1e5 and c.verdict == "cross"
    assert c.first == "B" and "B leads below" in _crossover_line(c) and "A above" in _crossover_line(c)


@pytest.mark.parametrize("crosses", [True, False])
@pytest.mark.parametrize("confidence, verdict", [(0.75, "decided"), (0.85, "insufficient evidence")])
def test_a_crossover_is_decided_at_the_confidence_asked(crosses, confidence, verdict):
    """8 of 10 replicates agree with the point fit (both cross, or both do not): decided at --confidence
    0.75, not at 0.85. The cut-off was fixed at 90% (10% for no crossing), whatever --confidence said."""
    from types import SimpleNamespace

    from encoderlab.advise.crossover import crossovers

    fits = [SimpleNamespace(schedule=SimpleNamespace(name=n)) for n in ("A", "B")]
    grid = np.geomspace(1.0, 1e6, 7)
    cross, flat = np.linspace(-1.0, 1.0, 7) + 0.1, np.full(7, -1.0)  # A - B: crosses once, or never
    agree, other = (cross, flat) if crosses else (flat, cross)
    delta = np.stack([agree] * 9 + [other] * 2)  # the point fit, then 10 replicates: 8 agree with it
    loss = np.stack([2.0 + delta, np.full_like(delta, 2.0)])
    (c,) = crossovers(fits, grid, loss, target_compute=1e5, interval=0.8, confidence=confidence)
    assert c.share == pytest.approx(0.8 if crosses else 0.2)
    decided = "cross" if crosses else "no crossover"
    assert c.verdict == (decided if verdict == "decided" else verdict)


def test_the_advice_decides_its_crossovers_at_its_confidence():
    syn = synthetic_ladder(np.random.default_rng(16), crossover=10.0)
    target = Target(flops=syn.target_flops)
    (low,) = advise(syn.ladder, target, n_boot=60, confidence=0.6).crossovers
    (high,) = advise(syn.ladder, target, n_boot=60, confidence=0.9).crossovers
    assert low.compute is not None and 0.6 <= low.share < 0.9 and low.share == high.share
    assert low.verdict == "cross" and high.verdict == "insufficient evidence"


def test_schedules_with_the_same_values_are_a_tie_not_a_recommendation():
    """Two schedules with equal values at every run: every replicate ties, and argmin gave each tie to the
    first listed, so it was recommended with P(best) 1.00 (and the backtest printed "nan%")."""
    from encoderlab.advise.report import format_advice

    seeds = ((4.0, 4.02), (3.6, 3.63), (3.3, 3.31), (3.1, 3.12))
    adv = advise(
        made_up_ladder({MLM_LIKE: seeds, CLM_LIKE: seeds}), Target(params=3e8, tokens=6e9), n_boot=40
    )
    assert adv.recommendation is None
    assert [(p.p_best, p.rung_p_best) for p in adv.predictions] == [(0.5, 0.5), (0.5, 0.5)]
    assert "nan" not in format_advice(adv) and "n/a of pairs ranked right" in format_advice(adv)
    # was "ranking by single rung: MLM-40 > CLM", of schedules whose every value is equal
    assert "ranking by single rung: MLM-40 = CLM" in format_advice(adv).splitlines()


def test_schedules_with_the_same_values_are_said_to_be_identical_not_to_have_no_crossover():
    """Equal scores at every rung give one curve twice: the verdict was "no crossover in the searched range",
    which reads as two curves apart all the way."""
    from encoderlab.advise.report import format_advice

    seeds = ((4.0, 4.02), (3.6, 3.63), (3.3, 3.31), (3.1, 3.12))
    adv = advise(
        made_up_ladder({MLM_LIKE: seeds, CLM_LIKE: seeds}), Target(params=3e8, tokens=6e9), n_boot=40
    )
    (c,) = adv.crossovers
    assert c.verdict == "identical" and c.compute is None
    (line,) = [x for x in format_advice(adv).splitlines() if x.startswith(f"  {c.a} vs {c.b}")]
    assert "identical on this ladder" in line and "no crossover" not in line, line


@pytest.mark.parametrize("crossover, past", [(3.0, True), (0.2, False)])
def test_a_crossing_past_the_runs_of_both_schedules_says_it_is_read_from_the_curves(crossover, past):
    """A crossing beyond the largest compute both schedules ran is the curves' extrapolation: the line says
    so. Before, "CLM leads below C = 4.83e+18" read the same as a crossing between two rungs."""
    from encoderlab.advise.report import format_advice

    syn = synthetic_ladder(np.random.default_rng(3), crossover=crossover)
    top = max(o.compute for o in syn.ladder.observations)
    advice = advise(syn.ladder, Target(flops=syn.target_flops), n_boot=60)
    (c,) = advice.crossovers
    assert c.compute is not None and (c.compute > top) == past
    (line,) = [x for x in format_advice(advice).splitlines() if x.startswith(f"  {c.a} vs {c.b}")]
    said = f"past C = {top:.3g}, the largest compute both have runs at: read from the curves alone"
    assert (said in line) == past, line


def test_a_size_target_at_an_allocation_no_run_reached_is_warned_about():
    """A target (N, D) whose compute lies inside the ladder can still sit where no run was trained: here D
    100x past the largest token count, or, for a curve in compute alone, at ten times its runs' tokens per
    parameter. Before, only compute was checked, and the advice was silent."""

    def truth(n, d):
        return 1.8 + 600.0 * n**-0.34 + 900.0 * d**-0.28

    two_d = _two_dimensional_ladder(truth)  # N 4e6 to 2.5e7, D 8e7 to 5e8; C 1.9e15 to 7.5e16
    adv = advise(two_d, Target(params=4e6, tokens=5e10), n_boot=20)  # C = 1.2e18
    assert all(p.curve == CHINCHILLA.name for p in adv.predictions)
    both = f"{MLM_LIKE.name}'s and {CLM_LIKE.name}'s"
    assert (
        f"the target's tokens D (5e+10) is 100x the largest that {both} runs were trained at, further past it "
        "than they span (6.2x): the prediction rests on the curve's form; read it as a guess, or add runs nearer "
        "the target"
    ) in adv.warnings
    assert advise(two_d, Target(params=1e7, tokens=2e8), n_boot=20).warnings == ()
    one_d = made_up_ladder(
        {
            MLM_LIKE: [(3.0, 3.02), (2.6, 2.62), (2.3, 2.32), (2.1, 2.12)],
            CLM_LIKE: [(3.1, 3.12), (2.7, 2.72), (2.4, 2.42), (2.2, 2.22)],
        }
    )
    (warning,) = advise(one_d, Target(params=2e7, tokens=200 * 2e7), n_boot=20).warnings
    assert warning.startswith(
        f"the target's 200 tokens per parameter lie outside those {both} runs were trained at (20): "
        "a curve in compute alone"
    )
    assert advise(one_d, Target(params=2e7, tokens=20 * 2e7), n_boot=20).warnings == ()


@pytest.mark.parametrize(
    ("target", "what"),
    [
        (Target(params=4e4, tokens=2e11), "size N (4e+04)"),
        (Target(params=2.5e7, tokens=5e7), "tokens D (5e+07)"),
    ],
)
def test_a_size_target_below_every_run_is_refused_as_a_compute_target_below_the_ladder_is(target, what):
    """N 100x below the smallest size at a compute inside the ladder (C = 4.8e16) reads the size term where no
    run was trained, as a compute below the smallest rung does; it was advised beside a warning only, while
    the compute target was refused. Likewise D below every run's tokens."""

    def truth(n, d):
        return 1.8 + 600.0 * n**-0.34 + 900.0 * d**-0.28

    smallest = "4e+06" if what.startswith("size") else "8e+07"
    with pytest.raises(UserError) as refused:
        advise(_two_dimensional_ladder(truth), target, n_boot=20)
    assert str(refused.value) == (
        f"the target's {what} is below the smallest the ladder's runs were trained at ({smallest}), where no run "
        "speaks for the curves; give a target at or above it, or add smaller runs"
    )


def test_a_backtest_with_one_near_tied_pair_of_three_ranked_wrong_still_endorses_the_curves():
    """Three schedules: two far apart and ordered alike at every rung, the third closing on the middle one
    and passing it at the top. The curves and the rung below both rank that one pair wrong (2 of 3 right)
    while the curves err less: a majority right, as many as the baseline. Asking every pair right would
    send any ladder with a near tie among many schedules back to the single rung."""
    from encoderlab.advise.ladder import Schedule

    third = Schedule.biphasic(0.5, 0.3)
    base = np.array([3.0, 2.6, 2.3, 2.1])
    gap = np.array([-0.3, -0.2, -0.1, 0.02])
    ladder = made_up_ladder(
        {
            MLM_LIKE: [(v, v + 0.002) for v in base],
            CLM_LIKE: [(v, v + 0.002) for v in base + gap],
            third: [(v, v + 0.002) for v in base + 0.5],
        }
    )
    bt = advise(ladder, Target(params=3e8, tokens=6e9), n_boot=60).backtest
    assert bt.extrapolation_accuracy == pytest.approx(2 / 3) and bt.baseline_accuracy == pytest.approx(2 / 3)
    assert bt.extrapolation_error < bt.baseline_error and bt.passed


@pytest.mark.parametrize("target", [Target(flops=2e19), Target(params=2e8, tokens=8e9)])
def test_curves_in_compute_alone_are_not_said_to_follow_a_frontier_or_the_targets_allocation(target):
    """A 1-D curve `E + A*C^-a` models no allocation: it is read along its runs' own tokens per parameter
    (20 here). Before, the output said "each schedule on its compute-optimal curve" for a compute target and
    "at the target's 40 tokens per parameter" for a target at 40, of curves that follow neither."""
    syn = synthetic_ladder(np.random.default_rng(3), crossover=3.0)
    adv = advise(syn.ladder, target, n_boot=20)
    assert all(p.curve == POWER.name for p in adv.predictions)
    assert adv.path == "each schedule in compute alone, at its runs' own tokens per parameter"


def test_the_crossover_line_gives_its_intervals_width():
    """The crossing's interval is `--interval`'s over the replicates that cross; before it read "interval [...]"
    whatever the width, beside a table headed "80% interval" that `--interval 0.5` had changed."""
    from encoderlab.advise.report import format_advice

    syn = synthetic_ladder(np.random.default_rng(3), crossover=3.0)
    advice = advise(syn.ladder, Target(flops=syn.target_flops), n_boot=20, interval=0.5)
    (line,) = [x for x in format_advice(advice).splitlines() if x.startswith("  MLM-40 vs CLM")]
    assert "(50% interval [" in line and "over the replicates that cross" in line, line


def test_rungs_at_one_compute_fit_no_curve_in_compute():
    """An isoFLOP ladder (four sizes, each at the tokens that give it the same 6ND) is one x of the 1-D curve
    in compute, whose three parameters it cannot identify. Before, it was "fitted" and read at 10x that compute
    with an 80% interval 0.02 wide, beside a warning that the ladder spans 1x."""
    sizes = (1e6, 2e6, 4e6, 8e6)
    runs = [
        Observation(
            schedule=s,
            params=n,
            tokens=1.6e14 / n,
            seed=k,
            value=base + abs(math.log2(n / 2e6)) / 10 + k / 100,
        )
        for s, base in ((MLM_LIKE, 4.0), (CLM_LIKE, 4.1))
        for n in sizes
        for k in (0, 1)
    ]
    adv = advise(Ladder(LOSS, tuple(runs)), Target(flops=1e16), n_boot=60)
    assert all(p.value is None and p.curve is None for p in adv.predictions)
    assert adv.method == "single rung" and "rungs at fewer than 3 computes" in adv.reason
    # rungs at three computes still get the curve (6ND of one N*D product differs only in its last bits)
    assert computes(np.array([6e15, 6 * 2e6 * (1e15 / 2e6), 1.2e16, 2.4e16])) == 3


def test_the_path_names_the_schedules_in_compute_alone_beside_a_2d_curve():
    """`Advice.path` with one schedule on a 2-D curve (3 sizes x 3 budgets) and one on the 1-D power law in compute
    (`fit.POWER`, 4 sizes at 20 tokens per parameter): the 2-D curve follows the target's allocation and the 1-D one
    is named as read in compute alone (decide._path; its test for the 2-D form once read "not POWER", the form's
    name, not a test's power)."""

    def truth(n, d):
        return 1.8 + 300 / n**0.3 + 400 / d**0.3

    grid = [(n, r * n) for n in (8e6, 2e7, 5e7) for r in (10.0, 20.0, 40.0)]
    line = [(n, 20.0 * n) for n in (8e6, 2e7, 5e7, 1.25e8)]
    runs = [
        Observation(schedule=s, params=n, tokens=d, seed=k, value=truth(n, d) + shift + 0.002 * k)
        for s, points, shift in ((MLM_LIKE, grid, 0.0), (CLM_LIKE, line, 0.05))
        for n, d in points
        for k in range(2)
    ]
    adv = advise(Ladder(LOSS, tuple(runs)), Target(params=1.25e8, tokens=2.5e9), n_boot=20)
    assert {p.schedule: p.curve for p in adv.predictions} == {
        MLM_LIKE.name: CHINCHILLA.name,
        CLM_LIKE.name: POWER.name,
    }
    assert adv.path == (
        f"each schedule at the target's 20 tokens per parameter; {CLM_LIKE.name} in compute alone, at its runs' own "
        "tokens per parameter"
    )
