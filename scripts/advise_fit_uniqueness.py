"""Measure how far the batched fit and scipy's reference fit disagree on the suite's synthetic ladders.

For each ladder (generator seeds 1000-1059 by default, `synthetic_ladder`'s 2-3 seeds a rung) and each
schedule, the curve is fitted twice, by `fit_schedules` (the advisor's batched fit) and by scipy's
`least_squares` from a grid (`tests/advise/test_crosscheck.py`'s reference, the same loss), once without
the largest rung (the backtest) and once on every rung; it prints the share of schedules whose
predictions (at the held-out rung, and at the target) are more than 0.5 noise sd apart, the largest
gap in noise sd, and on how many ladders the backtest's verdict differs:

    PYTHONPATH=. python scripts/advise_fit_uniqueness.py [first last]   # it reuses the test's scipy fit

About 45 s for 60 ladders on one core; docs/advise.md, "What it cannot say", quotes the output.
"""

import sys
from itertools import combinations

import numpy as np
from tests.advise.test_crosscheck import _runs, _scipy_power

from encoderlab.advise.decide import common_rungs
from encoderlab.advise.predict import fit_schedules
from encoderlab.advise.synthetic import synthetic_ladder


def _passed(extrap: dict, actual: dict, single: dict) -> bool:
    """The backtest's verdict from held-out predictions (decide.advise's rule: no worse ordering, smaller error)."""
    pairs = list(combinations(actual, 2))

    def accuracy(pred):
        return np.mean([np.sign(pred[a] - pred[b]) == np.sign(actual[a] - actual[b]) for a, b in pairs])

    def error(pred):
        return np.mean([abs(pred[a] - pred[b] - (actual[a] - actual[b])) for a, b in pairs])

    return bool(accuracy(extrap) >= accuracy(single) and error(extrap) < error(single))


def _ladder(generator: int) -> tuple[list[float], list[float], bool]:
    """Gaps (noise sd) at the held-out rung and at the target per schedule; whether the verdicts differ."""
    syn = synthetic_ladder(np.random.default_rng(generator))
    ladder = syn.ladder
    base, held = common_rungs(ladder)[-2:]
    c_held, c_target = 6.0 * held[0] * held[1], 6.0 * syn.target_params * syn.target_tokens
    at_held, at_target, ours, theirs, actual, single = [], [], {}, {}, {}, {}
    for f in fit_schedules(ladder, np.random.default_rng(0), 0, held):
        compute, rungs = _runs(ladder, f.schedule)
        values = f.replicates[0]
        keep = compute < c_held * (1 - 1e-9)
        name = f.schedule.name
        theirs[name] = float(_scipy_power(compute[keep], values[keep], compute[keep].max())(c_held))
        ours[name] = float(f.at_rung(f.rung_of(held), f.backtest)[0])
        full = float(_scipy_power(compute, values, compute.max())(c_target))
        at_held.append(abs(ours[name] - theirs[name]) / syn.sigma)
        at_target.append(abs(f.at_compute(np.array([c_target]))[0, 0] - full) / syn.sigma)
        actual[name] = values[[r == held for r in rungs]].mean()
        single[name] = values[[r == base for r in rungs]].mean()
    return at_held, at_target, _passed(ours, actual, single) != _passed(theirs, actual, single)


if __name__ == "__main__":
    first, last = map(int, sys.argv[1:3]) if len(sys.argv) > 2 else (1000, 1059)
    rows = [_ladder(g) for g in range(first, last + 1)]
    for label, k in (("held-out rung (backtest, 3 rungs)", 0), ("target (all 4 rungs)", 1)):
        gaps = np.concatenate([r[k] for r in rows])
        print(
            f"{label}: {np.mean(gaps > 0.5):.1%} of {len(gaps)} schedules > 0.5 sd apart, max {gaps.max():.3g} sd"
        )
    print(f"backtest verdict differs on {sum(r[2] for r in rows)} of {len(rows)} ladders")
