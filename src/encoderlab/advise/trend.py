"""Whether each schedule's ladder improves with compute beyond its seed noise.

Every curve the advisor fits falls towards a floor: its exponents are positive and its floor E is
bounded by the best observed value (`fit._bounds`). A schedule whose rung means are flat, or get
*worse* as compute rises, is fitted as a flat curve at about its best rung, and read at the target
as that value, however far the trend pointed elsewhere (a probe ladder worsening with scale was
predicted at 3.5 where its trend pointed to about 4.0). Nothing in the fit or its bootstrap shows it,
since every replicate is fitted the same way.

The check: the slope of the rung means (in loss units, where lower is better) on log10 compute, by
least squares weighted by each rung's number of seeds, and its standard error from the schedule's
seed noise alone (the pooled within-rung sd the bootstrap resamples, or `--seed-noise`):
se^2 = sigma^2 / sum_r n_r (x_r - x_bar)^2. A schedule is flagged when the slope is not below zero
by more than the one-sided 95% quantile of that many standard errors (the test of "improves with
compute" fails): Student's t on the pooled noise's degrees of freedom (sum_r (n_r - 1)) when the sd is
estimated from the ladder, the normal `TREND_Z` when it is given. Before, it was `TREND_Z` either way,
which with an estimated sd is a test at a larger level than 5%: with one degree of freedom (one rung
of two seeds) a flat ladder passed as improving in 17% of draws, not 5%.
Misfit of a straight line in log compute is left out of the standard error on purpose: a healthy
ladder's rung means fall by many noise sds, and the test is only meant to catch the flat or rising.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from encoderlab.advise.predict import ScheduleFit, computes

TREND_Z = 1.645
"""One-sided 95% normal quantile: the slope must be below zero by this many standard errors when the seed
noise is given (`--seed-noise`); estimated from the ladder, Student's t quantile on its degrees of freedom."""


@dataclass(frozen=True)
class Trend:
    """A schedule's rung means against log10 compute, in loss units (negative: improving)."""

    schedule: str
    slope: float
    """Change of the rung mean per tenfold compute."""
    se: float
    """Its standard error from seed noise."""
    df: int | None = None
    """Degrees of freedom of the seed noise's sd (None: given, taken as exact)."""

    @property
    def critical(self) -> float:
        """How many standard errors below zero the slope must be: the one-sided 95% quantile."""
        return TREND_Z if not self.df else float(stats.t.ppf(0.95, self.df))

    @property
    def improving(self) -> bool:
        return self.slope < -self.critical * self.se


def trend(fit: ScheduleFit, seed_noise: float | None) -> Trend | None:
    """The schedule's trend; None without rungs at two computes (`predict.computes`: no slope; rungs whose
    measured FLOPs differ by a few percent, an isoFLOP profile, gave a slope on that sliver of log compute,
    its standard error huge, and the schedule was flagged as not improving)."""
    rungs = fit.rungs
    if computes(rungs.compute) < 2:
        return None
    loss = fit.replicates[0]
    counts = np.bincount(rungs.index, minlength=len(rungs.points)).astype(float)
    means = rungs.means(loss[None])[0]
    x = np.log10(rungs.compute)
    xc = x - np.average(x, weights=counts)
    sxx = float((counts * xc**2).sum())
    slope = float((counts * xc * (means - np.average(means, weights=counts))).sum() / sxx)
    if seed_noise is None:
        ss, df = rungs.seed_noise(loss)
        sd = float(np.sqrt(ss / df)) if df else 0.0
    else:
        df, sd = None, seed_noise
    return Trend(fit.schedule.name, slope, sd / np.sqrt(sxx), df)


def not_improving(fits: list[ScheduleFit], seed_noise: float | None) -> list[Trend]:
    """The schedules whose rung means do not improve with compute beyond their seed noise."""
    return [t for f in fits if (t := trend(f, seed_noise)) is not None and not t.improving]


def trend_warnings(flagged: list[Trend], better: str) -> tuple[str, ...]:
    """One warning per flagged schedule, its slope in metric units (a score's sign is the loss's flipped)."""
    sign = 1.0 if better == "lower" else -1.0
    return tuple(
        f"{t.schedule} does not improve with compute beyond its seed noise: its rung means move by "
        f"{sign * t.slope:+.3g} per tenfold compute (standard error from seed noise {t.se:.3g}; {better} is "
        "better). The fitted curve can only approach a floor from above, so it cannot represent a ladder that is "
        f"flat or getting worse, and its prediction for {t.schedule} at the target is unreliable; check its runs, "
        "or add rungs"
        for t in flagged
    )
