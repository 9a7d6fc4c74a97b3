"""The crossover verdict `identical` is decided as the others are: where at least `--confidence` of the
bootstrap replicates read as the point fit (`advise.crossover`'s docstring says why). Until 2026-12-06 it
was read off the point fit alone: two schedules with equal scores were "identical" even where their seeds
were drawn apart and the replicates' curves crossed in most draws."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from encoderlab.advise.crossover import crossovers
from encoderlab.advise.decide import advise
from encoderlab.advise.ladder import KNOWN_METRICS, Ladder, Observation
from encoderlab.advise.predict import Target
from encoderlab.advise.report import format_advice
from encoderlab.advise.synthetic import CLM_LIKE, MLM_LIKE

SEEDS = ((4.0, 4.02), (3.6, 3.63), (3.3, 3.31), (3.1, 3.12))
SIZES = (8e6, 2e7, 5e7, 1.25e8)


def _equal_scores(clm_seed_offset: int) -> Ladder:
    """Two schedules with the same scores at every run; CLM's seeds labelled from `clm_seed_offset`."""
    runs = [
        Observation(
            schedule=s, params=n, tokens=20.0 * n, seed=k + (clm_seed_offset if s is CLM_LIKE else 0), value=v
        )
        for s in (MLM_LIKE, CLM_LIKE)
        for n, seeds in zip(SIZES, SEEDS)
        for k, v in enumerate(seeds)
    ]
    return Ladder(KNOWN_METRICS["val/mlm15"], tuple(runs))


def _line(adv, c) -> str:
    (line,) = [x for x in format_advice(adv).splitlines() if x.startswith(f"  {c.a} vs {c.b}")]
    return line


@pytest.mark.parametrize("offset, paired", [(2, True), (0, False)])
def test_equal_scores_at_seeds_drawn_apart_are_insufficient_evidence_not_identical(offset, paired):
    """Equal scores, but each schedule's seeds resampled on its own (seeds labelled apart, or paired=False):
    the point fits are one curve, yet each replicate gives the two different noise and their curves part, so
    the ladder cannot say whether they cross or which leads. The verdict was `identical`."""
    adv = advise(_equal_scores(offset), Target(params=3e8, tokens=6e9), n_boot=40, paired=paired)
    (c,) = adv.crossovers
    assert not adv.seeds_paired and c.verdict == "insufficient evidence"
    assert c.point == "identical" and c.same < 0.9
    line = _line(adv, c)
    assert "insufficient evidence (the point fits are one curve" in line and "identical" not in line, line
    assert adv.recommendation is None  # P(best) says the same of the recommendation


def test_equal_scores_at_paired_seeds_stay_identical():
    """Paired seeds: replicate k draws the same seeds for both, so every replicate's curves coincide too."""
    adv = advise(_equal_scores(0), Target(params=3e8, tokens=6e9), n_boot=40)
    (c,) = adv.crossovers
    assert adv.seeds_paired and (c.point, c.verdict, c.same, c.share) == ("identical", "identical", 1.0, 0.0)
    assert "in the point fit and 100% of replicates" in _line(adv, c)


FITS = [SimpleNamespace(schedule=SimpleNamespace(name=n)) for n in ("A", "B")]
GRID = np.geomspace(1.0, 1e6, 7)
APART, ONE = np.full(7, -0.1), np.zeros(7)  # A - B: A below all the way, or one curve


def _verdict(point: np.ndarray, replicates: list[np.ndarray], confidence: float):
    delta = np.stack([point, *replicates])
    loss = np.stack([2.0 + delta, np.full_like(delta, 2.0)])
    (c,) = crossovers(FITS, GRID, loss, target_compute=1e5, interval=0.8, confidence=confidence)
    return c


@pytest.mark.parametrize("confidence, verdict", [(0.75, "identical"), (0.85, "insufficient evidence")])
def test_identical_is_decided_at_the_confidence_asked(confidence, verdict):
    """The point fits coincide and 8 of 10 replicates do: decided at 0.75, not at 0.85 (was `identical`
    at any confidence)."""
    c = _verdict(ONE, [ONE] * 8 + [APART] * 2, confidence)
    assert c.verdict == verdict
    assert (c.point, c.same, c.share) == ("identical", pytest.approx(0.8), 0.0)


def test_replicates_that_coincide_back_no_order():
    """The point fit apart all the way, but 8 of 10 replicates one curve: a coinciding replicate backs no
    order, so "no crossover" is not decided (it counted every replicate that does not cross as agreeing)."""
    c = _verdict(APART, [ONE] * 8 + [APART] * 2, 0.75)
    assert c.verdict == "insufficient evidence"
    assert (c.point, c.share, c.same) == ("no crossover", 0.0, pytest.approx(0.8))


def test_rounding_is_one_curve_and_noise_is_not():
    """Curves equal to 1e-12 of their value (a fit's last bits) are one curve, and an order of sign changes
    in that rounding is no crossing; a difference of 1e-6, far below seed noise, is still two curves."""
    wobble = 2.0 * 1e-12 * np.array([1, -1, 1, -1, 1, -1, 1])
    c = _verdict(wobble, [wobble] * 10, 0.9)
    assert (c.verdict, c.share, c.compute) == ("identical", 0.0, None)
    c = _verdict(np.full(7, -1e-6), [np.full(7, -1e-6)] * 10, 0.9)
    assert c.verdict == "no crossover"
