"""The advisor on known-answer ladders: 100 draws with a designed crossover, plus 100 near ties.

Each draw is a two-schedule ladder of 4 rungs (8M to 125M parameters at 20 tokens each) with 2-3 pretraining seeds
per rung and seed noise of sd 0.01 nats, whose true curves cross at a compute drawn from inside the ladder to far
beyond the target (one size step, ~6x compute, past the largest rung: a 125M ladder advising on 312M). The near-tie
draws place the truth at the target within one noise sd. The rates asserted are the issue's (#22); docs/advise.md
lists the measured ones, which scripts/advise_suite.py prints from all 200 draws of the suite
(`encoderlab.advise.suite`), whose first `TEST_DRAWS` (100) the test scores, each as it is among the 200.

Why 100 of the 200 (until 2026-12-07 all; the 300 advices were ~60 CPU-seconds, a third of them saved), and what
they still catch, as binomial tails over independent draws. Picks: 85 of the 100 are clear (gap > 3 sd; 92.9% of
them picked, the pass needs 77): an advisor that picks the true best in 82% of clear draws fails with probability
97.9% (80%: 99.3%; 85%: 90.7%, where all 200 gave 96.7%). Coverage, over the 100 draws and the 100 ties with each
draw one unit (its two intervals correlated, which this bounds): 80% intervals that cover 60% fail with probability
99.8%. Planted, both fail: the bootstrap's deviations shrunk to 0.65x (coverage 59.5%) and a recommendation only at
P(best) >= 0.99 (true best picked in 88.2% of clear draws).
"""

from __future__ import annotations

import numpy as np
import pytest

from encoderlab.advise.decide import advise
from encoderlab.advise.predict import Target
from encoderlab.advise.suite import TEST_DRAWS, TIES, coverage, rate
from encoderlab.advise.suite import draws as suite_draws
from encoderlab.advise.suite import ties as suite_ties
from encoderlab.advise.synthetic import synthetic_ladder


@pytest.fixture(scope="module")
def draws() -> list[dict]:
    return suite_draws(count=TEST_DRAWS)


@pytest.fixture(scope="module")
def ties() -> list[dict]:
    return suite_ties()


def test_picks_the_true_best_when_the_gap_exceeds_three_noise_sd(draws):
    clear = [r for r in draws if r["gap_sd"] > 3]
    assert len(clear) >= 0.8 * len(draws)  # the design puts most draws there
    assert rate(clear, "picked") >= 0.9, (
        f"picked the true best in {rate(clear, 'picked'):.3f} of {len(clear)}"
    )


def test_80pct_intervals_cover_the_truth_in_70_to_90pct_of_draws(draws, ties):
    share = coverage(draws + ties)
    assert 0.7 <= share <= 0.9, f"coverage {share:.3f}"


def test_says_insufficient_evidence_when_the_gap_is_under_one_noise_sd(ties):
    close = [r for r in ties if r["gap_sd"] < 1]
    assert len(close) == TIES
    assert rate(close, "insufficient") >= 0.8, f"insufficient evidence in {rate(close, 'insufficient'):.3f}"


def test_decision_accuracy_beats_the_single_rung_baseline_past_the_ladder(draws):
    assert rate(draws, "accuracy") >= rate(draws, "baseline")
    past = [r for r in draws if r["past_ladder"]]
    assert len(past) >= 20
    assert rate(past, "accuracy") > rate(past, "baseline") + 0.5, (
        f"{rate(past, 'accuracy'):.3f} vs {rate(past, 'baseline'):.3f} over {len(past)} draws"
    )


def test_the_advice_is_deterministic_under_a_seed():
    syn = synthetic_ladder(np.random.default_rng(5), crossover=3.0)
    target = Target(flops=syn.target_flops)
    first = advise(syn.ladder, target, n_boot=60, seed=11).to_dict()
    assert advise(syn.ladder, target, n_boot=60, seed=11).to_dict() == first
    other = advise(syn.ladder, target, n_boot=60, seed=12).to_dict()
    assert other["predictions"] != first["predictions"]  # the bootstrap moved ...
    assert [p["value"] for p in other["predictions"]] == [
        p["value"] for p in first["predictions"]
    ]  # ... the fit did not
