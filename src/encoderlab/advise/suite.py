"""The known-answer suite's draws and its measured figures, shared by the test that asserts the issue's
rates (tests/advise/test_synthetic_suite.py) and the script that prints what docs/advise.md quotes
(scripts/advise_suite.py), so the documented figures come from the draws the test scores (the test the first
`TEST_DRAWS` of them and every tie, the script all).

Each draw is a two-schedule `synthetic_ladder` advised at its target with 100 bootstrap replicates: 200
draws with a designed crossover (generator seed 2026) plus 100 near ties (seed 2027), the target
`target_steps` size steps past the largest rung (1: one step, ~6x compute; 2: ~40x).
"""

from __future__ import annotations

import numpy as np

from encoderlab.advise.decide import advise, decision_accuracy
from encoderlab.advise.predict import Target
from encoderlab.advise.synthetic import SyntheticLadder, synthetic_ladder

DRAWS, TIES, N_BOOT = 200, 100, 100

TEST_DRAWS = 100
"""The draws with a designed crossover that the test scores, the first of `DRAWS` (tests/advise/test_synthetic_suite.py
says what they can still catch)."""


def score(syn: SyntheticLadder, draw: int, n_boot: int = N_BOOT) -> dict:
    """One ladder's advice against its truth (the advice's bootstrap seeded by `draw`)."""
    target = Target(params=syn.target_params, tokens=syn.target_tokens)
    adv = advise(syn.ladder, target, n_boot=n_boot, seed=draw)
    truth = {s.name: v for s, v in syn.true_values().items()}
    order = {name: k for k, name in enumerate(adv.ranking)}  # rank 0 = predicted best (lowest loss)
    return {
        "gap_sd": abs(np.subtract(*truth.values())) / syn.sigma,
        "picked": adv.recommendation == min(truth, key=truth.get),
        "insufficient": adv.recommendation is None,
        "covered": [p.low <= truth[p.schedule] <= p.high for p in adv.predictions],
        "accuracy": decision_accuracy({k: order[k] for k in truth}, truth),
        "baseline": decision_accuracy({p.schedule: p.rung_value for p in adv.predictions}, truth),
        "past_ladder": syn.largest_rung < syn.crossover < syn.target_flops,
    }


DRAWS_SEED, TIES_SEED = 2026, 2027
"""The generator seeds of the draws with a designed crossover and of the near ties."""


def ladders(draws: int, ties: int, **options) -> list[SyntheticLadder]:
    """`draws` ladders with a designed crossover, then `ties` near ties (true gap at the target within one
    noise sd); `options` go to `synthetic_ladder`. `calibration` draws the same ladders."""
    rng = np.random.default_rng(DRAWS_SEED)
    out = [synthetic_ladder(rng, **options) for _ in range(draws)]
    rng = np.random.default_rng(TIES_SEED)
    return out + [synthetic_ladder(rng, gap=float(rng.uniform(-0.99, 0.99)), **options) for _ in range(ties)]


def draws(target_steps: float = 1.0, count: int = DRAWS) -> list[dict]:
    """The first `count` of the 200 draws with a designed crossover, scored (each as it is among all 200: a ladder
    from the one generator, advised under its own index)."""
    return [score(syn, i) for i, syn in enumerate(ladders(count, 0, target_steps=target_steps))]


def ties(target_steps: float = 1.0) -> list[dict]:
    """The 100 near ties (true gap at the target within one noise sd), scored."""
    return [score(syn, i) for i, syn in enumerate(ladders(0, TIES, target_steps=target_steps))]


def rate(rows: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in rows]))


def coverage(rows: list[dict]) -> float:
    """The share of schedules' 80% intervals that cover the truth."""
    return float(np.mean([c for r in rows for c in r["covered"]]))


def figures(drawn: list[dict], tied: list[dict]) -> dict[str, str]:
    """docs/advise.md's measured column, by property."""
    clear = [r for r in drawn if r["gap_sd"] > 3]
    past = [r for r in drawn if r["past_ladder"]]
    rest = [r for r in drawn if not r["past_ladder"]]
    wrong = 1.0 - rate(clear, "picked") - rate(clear, "insufficient")
    return {
        "picks the true best, gap > 3 sd": f"{rate(clear, 'picked'):.1%} ({len(clear)} draws; "
        f"{rate(clear, 'insufficient'):.1%} insufficient evidence, {wrong:.1%} wrong)",
        "80% intervals cover the truth": f"{coverage(drawn + tied):.1%} ({coverage(drawn):.1%} of the "
        f"{len(drawn)} draws, {coverage(tied):.1%} of the ties)",
        "insufficient evidence, gap < 1 sd": f"{rate(tied, 'insufficient'):.1%} ({len(tied)} draws)",
        "decision accuracy vs the single rung": f"{rate(drawn, 'accuracy'):.1%} vs {rate(drawn, 'baseline'):.1%}",
        "... crossover past the ladder": f"{rate(past, 'accuracy'):.1%} vs {rate(past, 'baseline'):.1%} "
        f"({len(past)} draws)",
        "... elsewhere": f"{rate(rest, 'accuracy'):.1%} vs {rate(rest, 'baseline'):.1%} ({len(rest)} draws)",
    }
