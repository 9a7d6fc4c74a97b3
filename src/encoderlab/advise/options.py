"""The checks of the fits' and bootstrap's options, one implementation for `advise(...)` and the CLI.

The Python API (`decide.advise`, and `holdout.score_held_out`, which calls it) took any value: a Huber
delta of 1e300 was fitted as least squares under the Huber loss's name, a negative seed was numpy's
traceback, an infinite seed noise gave NaN intervals beside a recommendation. `advise` now checks its
options here, and `encoderlab advise` checks the same values here first, before it reads a ladder or
touches `--out`. Each message names the option as its caller wrote it (`NAMES`: `--huber-delta` on the
command line, `delta` in Python), so one message serves both without naming a flag a Python caller never
passed. Trade-off: the CLI's floor of 50 bootstrap replicates (`MIN_CLI_BOOTSTRAP`) is the command's
policy on interval quality, not a range of the computation: the API keeps taking fewer (its tests and the
calibration runs use 20 to 40 for speed) and refuses only what cannot be computed (no replicate).
"""

from __future__ import annotations

import math
from typing import Literal

from encoderlab.advise.fit import DELTA, DELTA_RANGE
from encoderlab.errors import UserError

MAX_BOOTSTRAP = 10_000
"""The most bootstrap replicates: each refits every schedule (about 1 ms and 0.1 MB a replicate on
a 20-run ladder)."""
MIN_CLI_BOOTSTRAP = 50
"""The fewest `--bootstrap` replicates the command takes (module docstring: the API's floor is 1)."""

NAMES = {
    "cli": {
        "n_boot": "--bootstrap",
        "seed": "--seed",
        "confidence": "--confidence",
        "interval": "--interval",
        "delta": "--huber-delta",
        "seed_noise": "--seed-noise",
    },
    "api": {k: k for k in ("n_boot", "seed", "confidence", "interval", "delta", "seed_noise")},
}
"""How each caller names the options in its refusals: the command's flags, or `advise`'s keywords."""


def check_fit_options(
    *,
    n_boot: int,
    seed: int,
    confidence: float,
    interval: float,
    delta: float,
    seed_noise: float | None,
    caller: Literal["cli", "api"] = "api",
) -> dict:
    """The options as keyword arguments of `advise`/`score_held_out`, each checked; a UserError names the
    first out of range, as `caller` calls it (`NAMES`)."""
    name = NAMES[caller]
    if not 1 <= n_boot <= MAX_BOOTSTRAP:  # 1e10 was a MemoryError traceback (745 GiB), or hours of fits
        raise UserError(
            f"{name['n_boot']} {n_boot} is more replicates than an interval needs (at {MAX_BOOTSTRAP} its Monte "
            f"Carlo error is a small part of its width); use {MAX_BOOTSTRAP} or fewer"
            if n_boot > MAX_BOOTSTRAP
            else f"{name['n_boot']} {n_boot} is no bootstrap replicate; use 1 or more ({MIN_CLI_BOOTSTRAP} or more "
            "for an interval worth reading)"
        )
    if not 0.5 < confidence < 1.0:
        raise UserError(f"{name['confidence']} must be in (0.5, 1), got {confidence}")
    if not 0.0 < interval < 1.0:
        raise UserError(f"{name['interval']} must be in (0, 1), got {interval}")
    # inf, and 1e300 or 1e-300, were taken: fitted as least squares under the option's name (fit.DELTA_RANGE)
    if not DELTA_RANGE[0] <= delta <= DELTA_RANGE[1]:
        raise UserError(
            f"{name['delta']} must be a threshold on log residuals from {DELTA_RANGE[0]:g} to {DELTA_RANGE[1]:g} "
            f"(Chinchilla's and OLMo's {DELTA:g}), got {delta:g}"
        )
    if seed < 0:  # numpy's generators take no negative seed
        raise UserError(f"{name['seed']} must be >= 0, got {seed}")
    if seed_noise is not None and not (math.isfinite(seed_noise) and seed_noise > 0):
        # inf was accepted: every interval NaN, yet a recommendation at P(best) 1.00
        raise UserError(
            f"{name['seed_noise']} must be a finite positive standard deviation, got {seed_noise}"
        )
    return dict(
        n_boot=n_boot, seed=seed, confidence=confidence, interval=interval, delta=delta, seed_noise=seed_noise
    )
