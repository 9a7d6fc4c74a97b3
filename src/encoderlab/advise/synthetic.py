"""Known-answer ladders: two schedules whose true curves cross where the test chooses, plus seed noise.

The design mirrors what paper 1 reports for encoders (CLM ahead early, MLM ahead later) on the
scale of a small ladder:
* rungs are model sizes at 20 tokens per parameter (Chinchilla's ratio), so the compute of rung k
  is 6 x N_k x 20 N_k; 3-4 sizes 2.5x apart (e.g. 8M ... 125M), the target 2.5x beyond the
  largest size (about 6x to 40x its compute, as a 150M ladder predicting 400M or 1B would);
* the metric is a loss like `val/mlm15` in nats: `E + A * (C / C_ref)^-a` per schedule. The
  "MLM-like" curve is steeper; the "CLM-like" one is flatter, with a slightly higher floor, and is
  placed to cross the first at the chosen compute, so it leads below the crossover;
* every run adds Gaussian seed noise of standard deviation `sigma` (0.01 nats by default, about
  0.3% of the loss, the size of seed-to-seed differences in small language-model ladders), with
  2 or 3 seeds per rung drawn at random.

`shared` makes the ladder's seeds *paired*, as a study's are: both schedules run the same seeds at
every rung (the count drawn once per rung), and a share `shared` of each run's noise variance is
common to the two schedules' runs of one seed (the same initialisation and document order; a
CLM-then-MLM run also shares its CLM phase). Without it, each schedule draws its own seed count and
the noise is independent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from encoderlab.advise.ladder import KNOWN_METRICS, Ladder, Observation, Schedule

MLM_LIKE = Schedule.biphasic(0.0, 0.4)
CLM_LIKE = Schedule.biphasic(1.0, None)


@dataclass(frozen=True)
class TrueCurve:
    """`E + A * (C / c_ref)^-a`."""

    floor: float
    scale: float
    exponent: float
    c_ref: float

    def __call__(self, compute):
        return self.floor + self.scale * (np.asarray(compute, dtype=float) / self.c_ref) ** -self.exponent


@dataclass(frozen=True)
class SyntheticLadder:
    """A ladder with its truth."""

    ladder: Ladder
    truth: dict[Schedule, TrueCurve]
    target_params: float
    target_tokens: float
    sigma: float
    crossover: float
    """Compute at which the true curves cross."""
    largest_rung: float
    """Compute of the largest rung."""

    @property
    def target_flops(self) -> float:
        return 6.0 * self.target_params * self.target_tokens

    def true_values(self) -> dict[Schedule, float]:
        """Each schedule's true (noise-free) value at the target."""
        return {s: float(c(self.target_flops)) for s, c in self.truth.items()}


def _crossing(a: TrueCurve, b: TrueCurve, around: float) -> float:
    """Compute where two curves cross (searched over 8 decades around `around`; inf if they do not)."""
    grid = np.geomspace(around * 1e-4, around * 1e4, 4001)
    d = a(grid) - b(grid)
    change = np.flatnonzero(np.sign(d[:-1]) != np.sign(d[1:]))
    return float(grid[change[0]]) if len(change) else float("inf")


def synthetic_ladder(
    rng: np.random.Generator,
    *,
    rungs: int = 4,
    seeds: tuple[int, int] = (2, 3),
    sigma: float = 0.01,
    crossover: float | None = None,
    gap: float | None = None,
    target_steps: float = 1.0,
    shared: float | None = None,
) -> SyntheticLadder:
    """A two-schedule ladder. The CLM-like curve crosses the MLM-like one at `crossover` x the
    largest rung's compute, or sits `gap` noise standard deviations above it at the target (a
    negative gap: below); with neither, the crossover is drawn log-uniformly from 1/16 to 256, from
    inside the ladder to beyond the target. The target is `target_steps` size steps (2.5x each)
    beyond the largest rung. `shared` (0 to 1): paired seeds with that share of the noise variance
    common to the schedules (module docstring)."""
    sizes = 8e6 * 2.5 ** np.arange(rungs)
    compute = 6.0 * sizes * 20.0 * sizes
    c_top = compute[-1]
    target_n = sizes[-1] * 2.5**target_steps
    c_target = 6.0 * target_n * 20.0 * target_n
    mlm = TrueCurve(floor=2.0, scale=1.0, exponent=rng.uniform(0.25, 0.35), c_ref=c_top)
    exponent = mlm.exponent - rng.uniform(0.06, 0.15)
    floor = mlm.floor + rng.uniform(0.0, 0.1)
    if gap is not None:
        anchor, value = c_target, mlm(c_target) + gap * sigma
    else:
        anchor = c_top * (
            np.exp(rng.uniform(np.log(1 / 16), np.log(256))) if crossover is None else crossover
        )
        value = mlm(anchor)
    clm = TrueCurve(
        floor=floor, scale=(value - floor) * (anchor / c_top) ** exponent, exponent=exponent, c_ref=c_top
    )
    runs = _runs({MLM_LIKE: mlm, CLM_LIKE: clm}, sizes, compute, rng, seeds, sigma, shared)
    return SyntheticLadder(
        ladder=Ladder(KNOWN_METRICS["val/mlm15"], tuple(runs)),
        truth={MLM_LIKE: mlm, CLM_LIKE: clm},
        target_params=target_n,
        target_tokens=20.0 * target_n,
        sigma=sigma,
        crossover=_crossing(mlm, clm, c_top),
        largest_rung=float(c_top),
    )


def _runs(truth, sizes, compute, rng, seeds, sigma, shared) -> list[Observation]:
    """Every schedule's runs: truth plus seed noise, independent or paired (`synthetic_ladder`)."""
    if shared is None:
        runs = []
        for schedule, curve in truth.items():
            for n, c in zip(sizes, compute):
                for seed in range(int(rng.integers(seeds[0], seeds[1] + 1))):
                    value = float(curve(c) + rng.normal(0.0, sigma))
                    runs.append(
                        Observation(schedule=schedule, params=n, tokens=20.0 * n, seed=seed, value=value)
                    )
        return runs
    runs = []
    for n, c in zip(sizes, compute):
        for seed in range(int(rng.integers(seeds[0], seeds[1] + 1))):
            common = rng.normal(0.0, sigma * np.sqrt(shared))
            for schedule, curve in truth.items():
                value = float(curve(c) + common + rng.normal(0.0, sigma * np.sqrt(1.0 - shared)))
                runs.append(Observation(schedule=schedule, params=n, tokens=20.0 * n, seed=seed, value=value))
    return runs
