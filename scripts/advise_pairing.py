"""Measure what pairing pretraining seeds across schedules changes in `encoderlab advise`.

Known-answer ladders as in tests/advise/test_synthetic_suite.py (200 draws with a designed crossover
plus 100 near ties, 100 replicates each), but with paired seeds: both schedules run the same seeds,
and a share `shared` of the noise variance is common to the runs of one seed. Each ladder is advised
twice, with seeds resampled jointly (the default) and per schedule (`paired=False`):

    python scripts/advise_pairing.py 0 0.5 0.8

About 40 s per line on one core; docs/advise.md, "Paired pretraining seeds", lists the output.
"""

import sys

import numpy as np

from encoderlab.advise.decide import advise
from encoderlab.advise.predict import Target
from encoderlab.advise.synthetic import synthetic_ladder


def _score(syn, draw: int, paired: bool) -> dict:
    target = Target(params=syn.target_params, tokens=syn.target_tokens)
    adv = advise(syn.ladder, target, n_boot=100, seed=draw, paired=paired)
    truth = {s.name: v for s, v in syn.true_values().items()}
    best = min(truth, key=truth.get)
    return {
        "gap": abs(np.subtract(*truth.values())) / syn.sigma,
        "picked": adv.recommendation == best,
        "insufficient": adv.recommendation is None,
        "wrong": adv.recommendation not in (None, best),
        "covered": np.mean([p.low <= truth[p.schedule] <= p.high for p in adv.predictions]),
    }


def _draws(shared: float, paired: bool) -> list[dict]:
    rng = np.random.default_rng(2026)
    rows = [_score(synthetic_ladder(rng, shared=shared), i, paired) for i in range(200)]
    rng = np.random.default_rng(2027)
    gaps = [synthetic_ladder(rng, shared=shared, gap=rng.uniform(-0.99, 0.99)) for _ in range(100)]
    return rows + [_score(syn, i, paired) for i, syn in enumerate(gaps)]


def _rate(rows: list[dict], key: str, low: float, high: float) -> str:
    kept = [r[key] for r in rows if low < r["gap"] <= high]
    return f"{np.mean(kept):.1%} ({len(kept)})"


if __name__ == "__main__":
    print(
        "| shared | seeds | picked, gap > 3 sd | picked, 1-3 sd | insufficient, gap < 1 sd | wrong, all | coverage |"
    )
    print("|---|---|---|---|---|---|---|")
    for shared in map(float, sys.argv[1:] or ["0", "0.5", "0.8"]):
        for paired in (False, True):
            rows = _draws(shared, paired)
            cells = [
                _rate(rows, "picked", 3, np.inf),
                _rate(rows, "picked", 1, 3),
                _rate(rows, "insufficient", -1, 1),
                _rate(rows, "wrong", -1, np.inf),
                f"{np.mean([r['covered'] for r in rows]):.1%}",
            ]
            print(
                f"| {shared:g} | {'paired' if paired else 'per schedule'} | " + " | ".join(cells) + " |",
                flush=True,
            )
