"""Whether each schedule's ladder improves with compute beyond its seed noise.

Every curve the advisor fits falls towards a floor: its exponents are positive and its floor E is
bounded by the best observed value (`fit._bounds`). A schedule whose rung means are flat, or get
*worse* as compute rises, is fitted as a flat curve at about its best rung, and read at the target
as that value, however far the trend pointed elsewhere (rung means 1.6 to 1.9, rising 0.1 a rung, are
predicted at 1.71 at 1e19 FLOPs where their straight line points to 1.99: `calibration.rising_probe`, printed by
scripts/advise_calibration.py --trend-only). Nothing in the fit or its bootstrap shows it,
since every replicate is fitted the same way.

The check: the slope of the rung means (in loss units, where lower is better) on log10 compute, by
least squares weighted by each rung's number of seeds, and its standard error from the schedule's
seed noise alone (the pooled within-rung sd the bootstrap resamples, or `--seed-noise`):
se^2 = sigma^2 / sum_r n_r (x_r - x_bar)^2. A schedule is flagged when the slope is not below zero
by more than the one-sided 95% quantile of that many standard errors (the test of "improves with
compute" fails): Student's t on the pooled noise's degrees of freedom (sum_r (n_r - 1)) when the sd is
estimated from the ladder, the normal `TREND_Z` when it is given. Before commit a167c07e it was `TREND_Z`
either way, which with an estimated sd is a test at a larger level than 5%: slope over standard error is then
Student's t, so with one degree of freedom (one rung of two seeds) a flat ladder passed as improving in 17% of
draws, not 5% (`scipy.stats.t.cdf(-1.645, 1)` = 0.174).
Misfit of a straight line in log compute is left out of the standard error on purpose: a healthy
ladder's rung means fall by many noise sds, and the slope test is only meant to catch the flat or rising.

The slope misses a ladder that falls by more than it rises (rung means 3.0, 2.5, 2.2, 2.4: a negative
slope), whose fitted curve, which cannot rise, is read at the target near its best rung wherever the
ladder turned. So a second test, of the form's own shape: every curve is non-increasing in compute (the
1-D form) or in size and in tokens (the 2-D one), so a rung mean above that of a rung it dominates (at a
larger compute, beyond `COMPUTE_RTOL`; for the 2-D form at no smaller size and no fewer tokens) is a rise
the curve cannot follow. The statistic is the largest such rise over all dominated pairs, each in standard
errors of its difference from the seed noise (sd * sqrt(1/n_i + 1/n_j)); the schedule is flagged when it
exceeds the one-sided 95% quantile of that maximum under flat rung means (`rise_critical`). Flat means are
the least favourable ladder the form can follow: where the true means do not rise, every pair's rise is at
most its flat-ladder draw, so the maximum is too and a healthy ladder is flagged in at most 5% of draws,
fewer the more steeply it falls. The quantile has no closed form (the pairs share rungs), so it is read
from `RISE_DRAWS` fixed-seed draws of the rung means' noise (and of the pooled sd's chi distribution on its
degrees of freedom, when it is estimated), which makes the check deterministic. Taking the maximum over
pairs, not the best rung against the largest, is what keeps the level: the best of several noisy rung
means is biased low, and a fixed pair would miss a turn at a middle rung. The bootstrap replicates were
not used for the null distribution: they take a sd from a few runs as exact (too narrow, the same fault
the t quantile fixes above) and there may be as few as 20 of them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import stats

from encoderlab.advise.fit import CHINCHILLA
from encoderlab.advise.predict import COMPUTE_RTOL, Rungs, ScheduleFit, computes

TREND_Z = 1.645
"""One-sided 95% normal quantile: the slope must be below zero by this many standard errors when the seed
noise is given (`--seed-noise`); estimated from the ladder, Student's t quantile on its degrees of freedom."""

RISE_LEVEL = 0.05
"""One-sided level of the rise test: the share of flat ladders it flags."""

RISE_DRAWS = 20_000
"""Draws of the rise statistic under flat rung means behind its quantile (its Monte Carlo error in the level:
about sqrt(0.05 * 0.95 / 20000) = 0.0015)."""


@dataclass(frozen=True)
class Rise:
    """The largest rise of a schedule's rung mean over a rung it dominates (module docstring), in loss units."""

    lower: tuple[float, float]
    """(N, D) of the dominated rung, where the ladder was better."""
    higher: tuple[float, float]
    """(N, D) of the rung above it in compute (2-D: in size and tokens), where it was worse."""
    size: float
    """How far the rung mean rose."""
    z: float
    """That rise in standard errors of seed noise: the test's statistic, the largest over pairs."""
    critical: float
    """Its one-sided 95% quantile under flat rung means (`rise_critical`)."""

    @property
    def significant(self) -> bool:
        return self.z > self.critical


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
    rise: Rise | None = None
    """The largest rise over a dominated rung; None where no rung dominates another."""

    @property
    def critical(self) -> float:
        """How many standard errors below zero the slope must be: the one-sided 95% quantile."""
        return TREND_Z if not self.df else float(stats.t.ppf(0.95, self.df))

    @property
    def improving(self) -> bool:
        return self.slope < -self.critical * self.se

    @property
    def flagged(self) -> bool:
        """Whether the fitted curve cannot follow the ladder: flat or worsening overall, or turning worse."""
        return not self.improving or (self.rise is not None and self.rise.significant)

    @property
    def summary(self) -> str:
        """What is wrong with the ladder, as a verb phrase ("X does not improve ...")."""
        if not self.improving:
            return "does not improve with compute beyond its seed noise"
        return "gets worse with compute past one of its rungs beyond its seed noise"


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
    two_d = fit.form is CHINCHILLA  # as `predict` and `reach` tell the 2-D form
    rise = _largest_rise(rungs, means, counts, sd, df, two_d)
    return Trend(fit.schedule.name, slope, sd / np.sqrt(sxx), df, rise)


def dominated_pairs(rungs: Rungs, two_d: bool) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) rung indices where the form's curve at rung j can be no higher than at rung i: j at a larger
    compute (beyond `COMPUTE_RTOL`, as `computes` separates them) for a curve in compute; for the 2-D curve,
    at no smaller size and no fewer tokens (a larger compute at a worse split of it may be worse)."""
    if two_d:
        n, d = rungs.points[:, 0], rungs.points[:, 1]
        geq = (n[None, :] >= n[:, None]) & (d[None, :] >= d[:, None])
        above = geq & ((n[None, :] > n[:, None]) | (d[None, :] > d[:, None]))
    else:
        c = rungs.compute
        above = c[None, :] > c[:, None] * (1 + COMPUTE_RTOL)
    i, j = np.nonzero(above)
    return i, j


def _largest_rise(rungs: Rungs, means, counts, sd: float, df: int | None, two_d: bool) -> Rise | None:
    i, j = dominated_pairs(rungs, two_d)
    if not len(i):
        return None
    rise = means[j] - means[i]
    if sd > 0:
        z = rise / (sd * np.sqrt(1 / counts[i] + 1 / counts[j]))
    else:  # no noise measured (identical seeds): any rise is past it, as any slope is for the slope test
        z = np.where(rise > 0, np.inf, -np.inf)
    k = int(np.argmax(z))
    pairs = tuple(zip(i.tolist(), j.tolist()))
    critical = rise_critical(tuple(int(c) for c in counts), pairs, df)
    point = rungs.points
    return Rise(tuple(point[i[k]]), tuple(point[j[k]]), float(rise[k]), float(z[k]), critical)


@functools.lru_cache(maxsize=256)
def rise_critical(counts: tuple[int, ...], pairs: tuple[tuple[int, int], ...], df: int | None) -> float:
    """The one-sided `RISE_LEVEL` quantile of max over `pairs` (i, j) of (m_j - m_i) / (s sqrt(1/n_i + 1/n_j))
    where the rung means m_r are those of `counts[r]` standard normal seeds and s is the pooled sd: exact 1 when
    `df` is None (a given sd), else sqrt(chi^2_df / df). Read from `RISE_DRAWS` draws of a fixed generator
    (deterministic; cached, since a bootstrap suite asks for the same few ladders' shapes again and again)."""
    rng = np.random.default_rng(0)
    n = np.asarray(counts, dtype=float)
    i, j = np.asarray(pairs).T
    scale = np.sqrt(1 / n[i] + 1 / n[j])
    stat = []
    for size in np.diff(np.linspace(0, RISE_DRAWS, 11).astype(int)):  # chunks bound the memory of big ladders
        m = rng.standard_normal((size, len(n))) / np.sqrt(n)
        top = ((m[:, j] - m[:, i]) / scale).max(axis=1)
        stat.append(top / np.sqrt(rng.chisquare(df, size) / df) if df else top)
    return float(np.quantile(np.concatenate(stat), 1 - RISE_LEVEL))


def not_improving(fits: list[ScheduleFit], seed_noise: float | None) -> list[Trend]:
    """The schedules whose ladders the fitted form cannot follow beyond their seed noise: rung means that do
    not improve with compute (the slope test), or that rise over a rung they dominate (the rise test)."""
    return [t for f in fits if (t := trend(f, seed_noise)) is not None and t.flagged]


def trend_warnings(flagged: list[Trend], better: str) -> tuple[str, ...]:
    """One warning per flagged schedule, its slope or rise in metric units (a score's sign is the loss's
    flipped); a schedule failing both tests gets the slope's."""
    return tuple(_slope_warning(t, better) if not t.improving else _rise_warning(t, better) for t in flagged)


def _slope_warning(t: Trend, better: str) -> str:
    """The slope, its standard error and the bar it missed. Without the bar, a ladder improving by 5 standard
    errors on one degree of freedom (Student's 6.31 needed) read as "does not improve ... flat or getting worse"
    beside numbers that showed it improving."""
    sign = 1.0 if better == "lower" else -1.0
    noise = f"Student's t on {t.df} degree{'s' if t.df != 1 else ''} of freedom" if t.df else "the normal"
    bar = (
        f"{-t.slope / t.se:.3g} standard errors towards better, where improving needs {t.critical:.3g}, "
        f"the one-sided 95% quantile of {noise}; "
        if t.se > 0
        else ""
    )
    within = ", as this one may be (its improvement is within seed noise)" if t.slope < 0 else ""
    ladder = f"is flat or getting worse{within}"
    return (
        f"{t.schedule} does not improve with compute beyond its seed noise: its rung means move by "
        f"{sign * t.slope:+.3g} per tenfold compute (standard error from seed noise {t.se:.3g}: {bar}{better} is "
        f"better). {_unreliable(t.schedule, ladder)}"
    )


def _rise_warning(t: Trend, better: str) -> str:
    sign = 1.0 if better == "lower" else -1.0
    r = t.rise
    (n0, d0), (n1, d1) = r.lower, r.higher
    return (
        f"{t.schedule} {t.summary}: its rung mean at N={n1:.3g}, D={d1:.3g} moves by {sign * r.size:+.3g} from "
        f"that at the smaller N={n0:.3g}, D={d0:.3g} ({r.z:.3g} standard errors of seed noise, past the "
        f"{r.critical:.3g} that flat rung means exceed in {RISE_LEVEL:.0%} of ladders; {better} is better). "
        f"{_unreliable(t.schedule, 'turns worse')}"
    )


def _unreliable(schedule: str, ladder: str) -> str:
    """Why a flagged schedule's prediction is not to be trusted: the form cannot follow a ladder that `ladder`."""
    return (
        "The fitted curve can only approach a floor from above, so it cannot represent a ladder that "
        f"{ladder}, and its prediction for {schedule} at the target is unreliable; check its runs, or add rungs"
    )
