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
* **The rise test's level** (`flag_shares`): seeded draws of noise around fixed rung means (4 rungs of 2
  seeds); flat means are the least favourable ladder the form can follow, so their share flagged by the rise
  test is its level (`trend.RISE_LEVEL`), and a ladder falling to a floor must be flagged less.
* **A rising ladder's prediction** (`rising_probe`): a schedule whose rung means rise 0.1 a rung beside one
  that improves, advised at a target past the ladder; its curve, which can only fall, is read near its best
  rung, where the straight line through its rung means points higher.

Trade-off: the figures are Monte Carlo estimates from a few hundred draws (an 80% coverage from 600
intervals has a standard error of about 1.6 points); more draws cost proportionally more time.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from unittest import mock

import numpy as np

from encoderlab.advise import predict
from encoderlab.advise.decide import advise
from encoderlab.advise.ladder import KNOWN_METRICS, Ladder, Observation
from encoderlab.advise.predict import Rungs, Target, fit_schedules
from encoderlab.advise.suite import N_BOOT, ladders
from encoderlab.advise.synthetic import CLM_LIKE, MLM_LIKE, SyntheticLadder, synthetic_ladder
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


def by_noise_model(
    draws: int, ties: int, n_boot: int = N_BOOT, models: tuple[str, ...] = tuple(NOISE_MODELS)
) -> dict[str, dict]:
    """Coverage of the suite's ladders under each of `models` (names of `NOISE_MODELS`, all by default; module
    docstring)."""
    syns = ladders(draws, ties)
    out = {}
    for name in models:
        with _resampling(NOISE_MODELS[name]):
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


SIZES = (8e6, 2e7, 5e7, 1.25e8)
"""The rung sizes of the made-up ladders below (the suite's, at 20 tokens per parameter)."""

IMPROVING = (3.0, 2.6, 2.3, 2.1)
RISING = (1.6, 1.7, 1.8, 1.9)
"""`rising_probe`'s rung means: one schedule improving, one rising 0.1 a rung (each rung two seeds, +-0.01)."""


def made_up(
    values: dict, sizes=SIZES, tokens_per_param: float = 20.0, metric=KNOWN_METRICS["val/mlm15"]
) -> Ladder:
    """A ladder of `metric` (`val/mlm15` by default) at `tokens_per_param` tokens per parameter; values:
    schedule -> per rung a tuple of seed values. The tests' made-up ladders are these (`advise_fixtures`)."""
    runs = tuple(
        Observation(schedule=s, params=n, tokens=tokens_per_param * n, seed=k, value=v)
        for s, rungs in values.items()
        for n, seeds in zip(sizes, rungs)
        for k, v in enumerate(seeds)
    )
    return Ladder(metric, runs)


def flag_shares(means, sd: float, draws: int, seed: int) -> dict:
    """Over seeded draws of normal noise of `sd` around `means` (two seeds a rung), the share the rise test
    flags and the share the trend check flags (slope or rise), each draw's rise statistic kept."""
    other = [(m - 0.01, m + 0.01) for m in IMPROVING]  # a ladder compares schedules; only MLM_LIKE is drawn
    runs = made_up({MLM_LIKE: [(m, m) for m in means], CLM_LIKE: other}).of(MLM_LIKE)
    rungs = Rungs.of(runs)
    centre = np.array([o.value for o in runs])
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(draws):
        values = centre + rng.normal(0.0, sd, len(centre))
        t = trend(_Fit(rungs, values[None], MLM_LIKE), None)
        rows.append({"rise_z": float(t.rise.z), "rise": bool(t.rise.significant), "flagged": bool(t.flagged)})
    return {
        "means": [float(m) for m in means],
        "sd": sd,
        "draws": draws,
        "seed": seed,
        "rise_share": float(np.mean([r["rise"] for r in rows])),
        "flagged_share": float(np.mean([r["flagged"] for r in rows])),
        "rows": rows,
    }


@dataclass(frozen=True)
class _Fit:
    """What `trend` reads of a `predict.ScheduleFit`: the rungs, the values (first row), the schedule, no 2-D form."""

    rungs: Rungs
    replicates: np.ndarray
    schedule: object
    form: None = None


def rising_probe(n_boot: int = 60, seed: int = 0, flops: float = 1e19) -> dict:
    """The rising schedule's prediction at `flops` against where its trend line (the seed-weighted straight
    line through its rung means on log10 compute, `trend`'s slope) points there, and whether it is flagged."""
    values = {s: [(m - 0.01, m + 0.01) for m in ms] for s, ms in ((MLM_LIKE, IMPROVING), (CLM_LIKE, RISING))}
    ladder = made_up(values)
    adv = advise(ladder, Target(flops=flops), n_boot=n_boot, seed=seed)
    (pred,) = [p for p in adv.predictions if p.schedule == CLM_LIKE.name]
    (fit,) = [f for f in fit_schedules(ladder, np.random.default_rng(seed), 1) if f.schedule == CLM_LIKE]
    t = trend(fit, None)
    counts = np.bincount(fit.rungs.index).astype(float)
    means = fit.rungs.means(fit.replicates[:1])[0]
    x = np.log10(fit.rungs.compute)
    line = np.average(means, weights=counts) + t.slope * (np.log10(flops) - np.average(x, weights=counts))
    return {
        "rung_means": means.tolist(),
        "target_flops": flops,
        "predicted": float(pred.value),
        "interval": [float(pred.low), float(pred.high)],
        "trend_points_to": float(line),
        "slope_per_decade": t.slope,
        "flagged": t.flagged,
        "recommendation": adv.recommendation,
    }
