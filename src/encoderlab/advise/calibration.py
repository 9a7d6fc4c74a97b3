"""The calibration figures docs/advise.md quotes in "What it cannot say", recomputed from fixed seeds:
the 80% intervals' coverage by the seed noise's degrees of freedom, under three ways of resampling the
noise, and the trend check on healthy ladders. `scripts/advise_calibration.py` prints them and writes
the numbers behind them as JSON; tests/advise/test_calibration.py runs each on a few draws.

* **Coverage by degrees of freedom** (`by_noise_df`): known-answer ladders of 4 rungs with one seed per
  rung plus a second at the k smallest (k degrees of freedom), the suite's draws otherwise (`suite.ladders`:
  designed crossovers from generator seed 2026, near ties from 2027), advised with `suite.N_BOOT` replicates;
  the share of the schedules' intervals that cover the truth.
* **Coverage by noise model** (`by_noise_model`): the suite's own ladders (2-3 seeds a rung), each
  advised three times: deviations pooled in metric units (the advisor's `predict.resample`), pooled in
  log units (relative noise), and resampled within each rung without pooling. The last two are not the
  advisor's, so they are not in it: `_resampling` swaps them in for `predict.resample` for the duration
  of one measurement. All three draw each schedule's seeds on its own (`paired=False`), since the two
  variants have no paired form; the suite's ladders are unpaired, so this changes only the rare draw whose
  two schedules happened to get the same seed counts at every rung.
* **Trend check** (`trend_check`): default synthetic ladders (improving by construction), and for each
  schedule how many standard errors its slope lies below zero, and whether `trend.not_improving` flags it
  (by its slope or its rise test).

Trade-off: the figures are Monte Carlo estimates from a few hundred draws (an 80% coverage from 600
intervals has a standard error of about 1.6 points); more draws cost proportionally more time.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from unittest import mock

import numpy as np

from encoderlab.advise import predict
from encoderlab.advise.decide import advise
from encoderlab.advise.ladder import Ladder, Observation
from encoderlab.advise.predict import Target, fit_schedules
from encoderlab.advise.suite import N_BOOT, ladders
from encoderlab.advise.synthetic import SyntheticLadder, synthetic_ladder
from encoderlab.advise.trend import not_improving, trend


def with_second_seeds(syn: SyntheticLadder, k: int, rng: np.random.Generator) -> SyntheticLadder:
    """A one-seed-per-rung ladder with a second seed at its `k` smallest rungs (k degrees of freedom)."""
    extra = []
    for schedule, curve in syn.truth.items():
        for n in sorted({o.params for o in syn.ladder.of(schedule)})[:k]:
            value = float(curve(6.0 * n * 20.0 * n) + rng.normal(0.0, syn.sigma))
            extra.append(Observation(schedule=schedule, params=n, tokens=20.0 * n, seed=1, value=value))
    return replace(syn, ladder=Ladder(syn.ladder.metric, syn.ladder.observations + tuple(extra)))


def score(syn: SyntheticLadder, draw: int, n_boot: int = N_BOOT, paired: bool = True) -> dict:
    """Each schedule's interval against its truth, and whether the advice said insufficient evidence."""
    target = Target(params=syn.target_params, tokens=syn.target_tokens)
    adv = advise(syn.ladder, target, n_boot=n_boot, seed=draw, paired=paired)
    truth = {s.name: v for s, v in syn.true_values().items()}
    return {
        "covered": [bool(p.low <= truth[p.schedule] <= p.high) for p in adv.predictions],
        "insufficient": adv.recommendation is None,
    }


def summary(rows: list[dict], ties: int) -> dict:
    """Coverage over every interval, and "insufficient evidence" over the last `ties` rows (the near ties);
    `rows`, each draw's own, are kept beside them (the numbers behind the figures)."""
    tied = [r["insufficient"] for r in rows[len(rows) - ties :]]
    return {
        "coverage": float(np.mean([c for r in rows for c in r["covered"]])),
        "intervals": sum(len(r["covered"]) for r in rows),
        "insufficient_near_ties": float(np.mean(tied)) if tied else None,
        "near_ties": len(tied),
        "rows": rows,
    }


def by_noise_df(ks, draws: int, ties: int, n_boot: int = N_BOOT) -> dict[int, dict]:
    """Coverage with k degrees of freedom of seed noise per schedule, for each k (module docstring)."""
    out = {}
    for k in ks:
        rng = np.random.default_rng(k)
        syns = [with_second_seeds(s, k, rng) for s in ladders(draws, ties, seeds=(1, 1))]
        out[k] = summary([score(s, i, n_boot) for i, s in enumerate(syns)], ties)
    return out


def _log_pooled(loss, rungs, rng, n_boot, noise=None, sources=None):
    """`predict.resample` with deviations pooled in log units (relative noise)."""
    return np.exp(_RESAMPLE(np.log(loss), rungs, rng, n_boot, noise, sources))


def _per_rung(loss, rungs, rng, n_boot, noise=None, sources=None):
    """`predict.resample` with each run's deviation drawn from its own rung's runs (no pooling)."""
    counts = np.bincount(rungs.index)
    members = [np.flatnonzero(rungs.index == r) for r in range(len(counts))]
    picks = rng.integers(0, counts[rungs.index], size=(n_boot, len(loss)))
    own = np.stack([members[r][p] for r, p in zip(rungs.index, picks.T)], axis=1)
    return _RESAMPLE(loss, rungs, rng, n_boot, noise, own)


_RESAMPLE = predict.resample
NOISE_MODELS = {"metric units, pooled": _RESAMPLE, "log units, pooled": _log_pooled, "per rung": _per_rung}
"""The advisor's resampling first, then the two variants it was compared with."""


@contextmanager
def _resampling(model):
    with mock.patch.object(predict, "resample", model):
        yield


def by_noise_model(draws: int, ties: int, n_boot: int = N_BOOT) -> dict[str, dict]:
    """Coverage of the suite's ladders under each of `NOISE_MODELS` (module docstring)."""
    syns = ladders(draws, ties)
    out = {}
    for name, model in NOISE_MODELS.items():
        with _resampling(model):
            out[name] = summary([score(s, i, n_boot, paired=False) for i, s in enumerate(syns)], ties)
    return out


def trend_check(n: int, seed: int = 0) -> dict:
    """How far below zero each healthy schedule's slope lies, in standard errors, and how many are flagged."""
    rng = np.random.default_rng(seed)
    margins, flagged = [], 0
    for _ in range(n):
        fits = fit_schedules(synthetic_ladder(rng).ladder, rng, 1)
        margins += [-t.slope / t.se for t in (trend(f, None) for f in fits)]
        flagged += len(not_improving(fits, None))
    return {
        "ladders": n,
        "schedules": len(margins),
        "flagged": flagged,
        "least_margin_sd": float(min(margins)),
        "margins_sd": [float(m) for m in margins],
    }
