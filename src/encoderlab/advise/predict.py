"""One curve per schedule, its bootstrap, and its predictions at any compute or (N, D).

**Which curve.** A schedule whose runs vary both model size and tokens (at least two of each and
six rungs, so the five parameters leave a degree of freedom) gets Chinchilla's
`E + A/N^a + B/D^b`; otherwise, with at least three rungs at three computes, the 1-D `E + A*C^-a` in
compute. With two rungs no curve is fitted: three parameters cannot be identified from two points, and the
advisor falls back to the single-rung ranking. Nor from rungs at two computes, however many: rungs of one C
(another size at as many FLOPs, an isoFLOP profile) are one x of the 1-D curve, and before 2026-12-06 four
rungs at one C were "fitted" and read at 10x that C with an 80% interval 0.02 wide.

**The bootstrap resamples pretraining seeds within each rung.** Each replicate keeps every rung's
mean and draws its runs' deviations from that mean with replacement; the curve is refitted to each
replicate. Two corrections, both needed because ladders have 2-3 seeds per rung:
* deviations are inflated by sqrt(n/(n-1)) ("modified residuals", Davison & Hinkley 1997, 3.3):
  resampling n values understates the variance of their mean by (n-1)/n, half of it at n = 2;
* deviations are pooled over the schedule's rungs, so a rung of two seeds does not rest on a
  variance estimated from one degree of freedom, and a rung of one seed still varies. This assumes
  a schedule's seed noise has one size, in metric units, at every rung. On the synthetic ladders
  (constant noise) 80% intervals pooled this way covered the truth in 81% of draws; pooled in log
  units (relative noise) 73%, resampled per rung without pooling 74% (docs/advise.md;
  `scripts/advise_calibration.py`). A ladder
  whose small models are much noisier than its large ones gets intervals that are too wide at the
  target, and the reverse.
Where every schedule ran the same (N, D, seed) runs, the draws are shared: a replicate picks seeds,
and each schedule takes its own deviation at the seed picked (`paired_sources`), which keeps the
correlation of runs of one seed across schedules (the same initialisation and documents).
With a seed-noise sd given (`--seed-noise`), replicates draw normal deviations of that size instead:
a parametric bootstrap for ladders with one seed per rung, independent per schedule (one seed per
rung says nothing of how much of the noise the schedules share).
Misfit of the curve itself is not resampled: with 3-4 rungs the fit residuals have one or two
degrees of freedom. That is one reason extrapolation is only recommended after a backtest.

**Compute of a target given as (N, D)** is 6ND times the schedule's measured FLOPs per 6ND
(the median over its runs), so a 1-D curve fitted on measured FLOPs is read on the same scale.
A target given as compute, for a Chinchilla curve, is read on the schedule's compute-optimal
frontier: the lowest predicted value over model sizes N with D = C / (6N x that ratio). With both
exponents positive that minimum is Chinchilla's closed form (`optimal_log_size`), exact at any
compute; a replicate whose fit has an exponent <= 0 has no interior minimum (the curve falls towards
E at one end), and is searched over sizes from 1/1000 to 1000 times the largest rung. The curves
drawn and the crossovers searched follow the same path: that frontier for a compute target, and for a
target given as (N, D) the line of its tokens per parameter, which passes through the target (so the
figure shows the printed prediction there) and through the ladder's runs at that ratio.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from encoderlab.advise.fit import CHINCHILLA, DELTA, POWER, CurveForm, Fits, fit_curves
from encoderlab.advise.ladder import Ladder, Observation, Schedule
from encoderlab.errors import UserError

_FRONTIER_SIZES = np.geomspace(1e-3, 1e3, 97)
"""Model sizes searched for the compute-optimal point of a fit with no interior minimum (an exponent
<= 0), relative to the largest observed size."""


def optimal_log_size(params: np.ndarray, log_k: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(M, G) log of the size N minimising `E + A/N^a + B/D^b` along N x D = K, for each fit's
    (e, log A, a, log B, b) in `params` (M, 5), inputs divided by `scale` (M, 2), and each log K.

    Setting the derivative in log N to zero, a A/N^a = b B/D^b (Chinchilla's Approach 3); in the
    scaled inputs x = log(N/N0), y = log(D/D0) = log K - log N - log D0 that gives
    log N = (log a - log b + log A - log B + a log N0 + b (log K - log D0)) / (a + b).
    Meaningful where a > 0 and b > 0 (NaN elsewhere)."""
    a, b = params[:, 2:3], params[:, 4:5]
    n0, d0 = np.log(scale[:, 0:1]), np.log(scale[:, 1:2])
    with np.errstate(invalid="ignore", divide="ignore"):
        top = np.log(a) - np.log(b) + params[:, 1:2] - params[:, 3:4] + a * n0 + b * (log_k[None] - d0)
        return np.where((a > 0) & (b > 0), top / (a + b), np.nan)


@dataclass(frozen=True)
class Target:
    """Where the advice is wanted: a compute budget, or a model size and token count."""

    flops: float | None = None
    params: float | None = None
    tokens: float | None = None

    def __post_init__(self) -> None:
        by_size = self.params is not None or self.tokens is not None
        if (self.flops is None) == (not by_size) or (
            by_size and (self.params is None or self.tokens is None)
        ):
            raise UserError(
                "give the target as --target-flops C, or as --target-size N with --target-tokens D"
            )
        for name, v in (
            ("--target-flops", self.flops),
            ("--target-size", self.params),
            ("--target-tokens", self.tokens),
        ):
            if v is not None and not (np.isfinite(v) and v > 0):
                raise UserError(f"{name} must be a positive number, got {v}")

    @property
    def ratio(self) -> float | None:
        """Tokens per parameter of a target given as (N, D); None for a compute target."""
        return None if self.flops is not None else self.tokens / self.params

    def path(self, one_d: tuple[str, ...] = (), two_d: bool = True) -> str:
        """Where the curves are read between the ladder and the target (`ScheduleFit.at_compute`). `one_d`:
        the schedules whose curve is in compute alone (`POWER`), which models no allocation, so neither a
        frontier nor the target's tokens per parameter applies to them: they follow their own runs'
        allocation (was said of them too: "on its compute-optimal curve" for a ladder at 20 tokens per
        parameter); `two_d`: whether any schedule has a 2-D curve."""
        alone = "in compute alone, at its runs' own tokens per parameter"
        if not two_d:
            return f"each schedule {alone}"
        where = (
            "on its compute-optimal curve"
            if self.ratio is None
            else f"at the target's {self.ratio:.3g} tokens per parameter"
        )
        return f"each schedule {where}" + (f"; {', '.join(one_d)} {alone}" if one_d else "")

    def describe(self) -> str:
        """`C = 1.2e+21 FLOPs` or `N = 4e+08, D = 8e+09`."""
        if self.flops is not None:
            return f"C = {self.flops:.3g} FLOPs"
        return f"N = {self.params:.3g}, D = {self.tokens:.3g}"


@dataclass(frozen=True)
class Rungs:
    """The (N, D) points of one schedule and which run belongs to which."""

    points: np.ndarray
    """(R, 2) distinct (N, D), by compute."""
    compute: np.ndarray
    """(R,) mean compute of each rung's runs."""
    index: np.ndarray
    """(n,) rung of each run."""

    @classmethod
    def of(cls, runs: tuple[Observation, ...]) -> Rungs:
        keys = list(dict.fromkeys(o.rung for o in runs))
        compute = np.array([np.mean([o.compute for o in runs if o.rung == k]) for k in keys])
        order = np.argsort(compute, kind="stable")
        keys = [keys[i] for i in order]
        index = np.array([keys.index(o.rung) for o in runs])
        return cls(points=np.array(keys, dtype=float), compute=compute[order], index=index)

    def means(self, values: np.ndarray) -> np.ndarray:
        """(M, R) mean of each rung from (M, n) run values."""
        r = len(self.points)
        counts = np.bincount(self.index, minlength=r)
        # one bincount over every row's runs, each row's rungs bins of their own: each bin adds its runs in their
        # order, as a bincount per row did (a row at a time was ~4% of an advice's time, over its replicates)
        values = np.asarray(values, dtype=float)
        bins = (self.index[None] + r * np.arange(len(values))[:, None]).ravel()
        return np.bincount(bins, weights=values.ravel(), minlength=r * len(values)).reshape(-1, r) / counts

    def seed_noise(self, values: np.ndarray) -> tuple[float, int]:
        """The pooled seed noise of (n,) run values: their squared deviations from their rung's mean, summed,
        and its degrees of freedom (runs past the first seed of each rung). One rule for every reader of it:
        the trend check's sd (`trend`), the few-df warning (`decide.noise_warnings`) and the held-out
        within-noise bound (`holdout`); `resample` draws the same deviations."""
        values = np.asarray(values, dtype=float)
        deviations = values - self.means(values[None])[0][self.index]
        return float((deviations**2).sum()), int(len(values) - len(np.unique(self.index)))


def resample(
    loss: np.ndarray,
    rungs: Rungs,
    rng: np.random.Generator,
    n_boot: int,
    noise: float | None = None,
    sources: np.ndarray | None = None,
) -> np.ndarray:
    """(1 + n_boot, n): the runs' values, then replicates with seeds resampled within each rung.

    `sources` (n_boot, n) names the run whose deviation each replicate's run takes (`paired_sources`);
    without it they are drawn here, from the runs of rungs with two seeds or more.
    With `noise` (a seed-to-seed standard deviation known from elsewhere, in metric units) the
    deviations are drawn from a normal distribution of that size instead (a parametric bootstrap),
    which is what a ladder of one seed per rung needs."""
    counts = np.bincount(rungs.index)
    centre = (np.bincount(rungs.index, weights=loss) / counts)[rungs.index]
    if noise is not None:
        draws = rng.normal(0.0, noise, size=(n_boot, len(loss)))
    else:
        n = counts[rungs.index]
        if sources is None:
            pool = np.flatnonzero(n > 1)
            sources = pool[rng.integers(0, len(pool), size=(n_boot, len(loss)))]
        draws = ((loss - centre) * np.sqrt(n / np.maximum(n - 1, 1)))[sources]
    # a draw past the metric's best value (noise as large as the distance to it) stays just short of it
    return np.vstack([loss[None], np.maximum(centre[None] + draws, 1e-6 * centre[None])])


def paired_sources(
    ladder: Ladder, rng: np.random.Generator, n_boot: int
) -> dict[Schedule, np.ndarray] | None:
    """Each schedule's `resample` sources, drawn once for all schedules, when every schedule ran the
    same (N, D, seed) runs; else None (each schedule is resampled on its own).

    A replicate draws pretraining seeds, not runs: where run (N, D, seed) of one schedule takes the
    deviation of (N', D', seed'), so does every other schedule's. Runs of one seed share their
    initialisation and document order (and a CLM-then-MLM run its CLM phase), so their noise is
    correlated across schedules; independent draws would treat the schedules' difference as noisier
    than it is and understate P(best) (docs/advise.md measures by how much)."""
    keyed = {s: [(o.params, o.tokens, o.seed) for o in ladder.of(s)] for s in ladder.schedules}
    keys = sorted(next(iter(keyed.values())))
    if len(keyed) < 2 or any(sorted(k) != keys for k in keyed.values()):
        return None
    seeds_per_rung = Counter(k[:2] for k in keys)
    pool = np.array([j for j, k in enumerate(keys) if seeds_per_rung[k[:2]] > 1], dtype=int)
    if len(pool) == 0:
        return None
    picks = pool[rng.integers(0, len(pool), size=(n_boot, len(keys)))]
    position = {k: j for j, k in enumerate(keys)}
    out = {}
    for schedule, runs in keyed.items():
        key_of_run = np.array([position[k] for k in runs])  # run i of this schedule is key key_of_run[i]
        run_of_key = np.argsort(key_of_run)  # ... and key j is its run run_of_key[j]
        out[schedule] = run_of_key[picks[:, key_of_run]]
    return out


COMPUTE_RTOL = 0.1
"""Computes within this relative distance of the lowest of a group count as one (`computes`) [D]. 6ND of
one product N*D differs in its last bits; measured FLOPs of one budget differ by the attention's share
of them, which varies with the model's shape (a few percent between the sizes of an isoFLOP profile): as
many x values, a 1-D curve "fitted" through them was read at 10x their compute from one x, and the trend
check's slope on a few percent of log compute flagged such a ladder as "not improving". A ladder meant to
span compute steps it by 1.5x or more (2x and 4x are usual), so 10% merges no rungs of one."""


def computes(compute: np.ndarray) -> int:
    """How many distinct computes `compute` holds: the x values a 1-D curve in compute sees. Sorted, a
    compute more than `COMPUTE_RTOL` above the lowest of the current group starts a new one (anchored at
    its lowest, so a dense ladder of rungs 5% apart is not merged into one by chaining)."""
    groups, start = 0, -np.inf
    for log in np.sort(np.log(np.asarray(compute, dtype=float))):
        if log - start > np.log1p(COMPUTE_RTOL):
            groups, start = groups + 1, log
    return groups


def choose_form(rungs: Rungs) -> CurveForm | None:
    """Chinchilla's 2-D curve when size and tokens both vary enough, the 1-D power law in compute
    with three rungs at three computes or more, else None (nothing can be extrapolated)."""
    sizes, tokens = (len(np.unique(rungs.points[:, i])) for i in (0, 1))
    if sizes >= 2 and tokens >= 2 and len(rungs.points) >= 6:
        return CHINCHILLA
    return POWER if computes(rungs.compute) >= 3 else None


@dataclass(frozen=True)
class ScheduleFit:
    """A schedule's runs, replicates and curves."""

    schedule: Schedule
    rungs: Rungs
    replicates: np.ndarray
    """(1 + B, n) run values in loss units: row 0 the data, then bootstrap replicates."""
    flops_ratio: float
    """Measured compute per 6ND (median over runs; 1 when no run logged its FLOPs)."""
    form: CurveForm | None
    fits: Fits | None = None
    """Row 0 fitted to the data, rows 1..B to the replicates; None when no curve can be fitted."""
    backtest: Fits | None = None
    """One row fitted to the data without the held-out rung and beyond; None when too few rungs remain."""
    paired: bool = False
    """Whether its replicates drew pretraining seeds jointly with the other schedules' (`paired_sources`)."""

    def inputs(self) -> np.ndarray:
        """Per run: (C,) for the 1-D curve, (N, D) for the 2-D one (each run at its rung's point)."""
        if self.form is POWER:
            return self.rungs.compute[self.rungs.index][:, None]
        return self.rungs.points[self.rungs.index]

    def scale(self) -> np.ndarray:
        """The largest rung, which the curve's inputs are divided by."""
        top = int(np.argmax(self.rungs.compute))
        return np.array([self.rungs.compute[top]]) if self.form is POWER else self.rungs.points[top]

    def rung_of(self, point: tuple[float, float]) -> int:
        """Index of the rung at (N, D)."""
        return [tuple(p) for p in self.rungs.points.tolist()].index(tuple(point))

    def held_out(self, point: tuple[float, float]) -> np.ndarray:
        """(n,) 1 for the runs a backtest keeps: those below the compute of the rung at `point`."""
        limit = self.rungs.compute[self.rung_of(point)]
        return (self.rungs.compute[self.rungs.index] < limit * (1 - 1e-9)).astype(float)

    def at_compute(
        self, compute: np.ndarray, fits: Fits | None = None, ratio: float | None = None
    ) -> np.ndarray:
        """(M, G) predicted loss at each compute. A 2-D curve is read at `ratio` tokens per parameter
        (N = sqrt(C / (6 ratio x the FLOPs ratio)), the path through a target given as (N, D)), or
        with no ratio on its compute-optimal frontier."""
        fits = fits or self.fits
        compute = np.asarray(compute, dtype=float)
        if fits.form is POWER:
            return fits.predict(compute[:, None])
        if ratio is not None:
            n = np.sqrt(compute / (6.0 * ratio * self.flops_ratio))
            return fits.predict(np.stack([n, ratio * n], -1))
        return self._on_frontier(fits, compute)

    def _on_frontier(self, fits: Fits, compute: np.ndarray) -> np.ndarray:
        """(M, G) the lowest predicted loss over sizes N at each compute (module docstring)."""
        log_k = np.log(compute / (6.0 * self.flops_ratio))  # N x D = K at this compute
        log_n = optimal_log_size(fits.params, log_k, fits.scale)
        edge = np.isnan(log_n).any(-1)
        log_n = np.where(edge[:, None], 0.0, log_n)  # those rows are replaced below
        n0, d0 = np.log(fits.scale[:, None, 0]), np.log(fits.scale[:, None, 1])
        scaled = np.stack([log_n - n0, log_k[None] - log_n - d0], -1)
        best = np.exp(fits.form.log_predict(fits.params, scaled))
        if edge.any():  # no interior minimum: search a range of sizes around the ladder
            sizes = self.rungs.points[:, 0].max() * _FRONTIER_SIZES
            n = np.repeat(sizes[None], len(compute), 0)
            grid = np.stack([n.ravel(), (np.exp(log_k)[:, None] / n).ravel()], -1)
            searched = fits.rows(np.flatnonzero(edge)).predict(grid)
            best[edge] = searched.reshape(int(edge.sum()), len(compute), len(sizes)).min(-1)
        return best

    def at_rung(self, rung: int, fits: Fits | None = None) -> np.ndarray:
        """(M,) predicted loss at one of this schedule's rungs."""
        fits = fits or self.fits
        point = self.rungs.compute[[rung]][:, None] if fits.form is POWER else self.rungs.points[[rung]]
        return fits.predict(point)[:, 0]

    def at(self, target: Target) -> np.ndarray:
        """(1 + B,) predicted loss at the target."""
        if target.flops is not None:
            return self.at_compute(np.array([target.flops]))[:, 0]
        if self.form is POWER:
            return self.fits.predict(np.array([[self.target_compute(target)]]))[:, 0]
        return self.fits.predict(np.array([[target.params, target.tokens]]))[:, 0]

    def target_compute(self, target: Target) -> float:
        """The target's compute on this schedule's scale."""
        if target.flops is not None:
            return target.flops
        return 6.0 * target.params * target.tokens * self.flops_ratio


def _prepare(
    schedule: Schedule, runs: tuple[Observation, ...], loss, rng, n_boot, noise, sources
) -> ScheduleFit:
    rungs = Rungs.of(runs)
    measured = [o.flops / (6.0 * o.params * o.tokens) for o in runs if o.flops is not None]
    return ScheduleFit(
        schedule=schedule,
        rungs=rungs,
        replicates=resample(loss, rungs, rng, n_boot, noise, sources),
        flops_ratio=float(np.median(measured)) if measured else 1.0,
        form=choose_form(rungs),
        paired=sources is not None,
    )


def _problems(fit: ScheduleFit, hold_out: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray, bool]:
    """(values, weights) of a schedule's problems: every replicate, then the backtest's row if it
    leaves enough rungs to fit the form; and whether that row is there."""
    values, weights = fit.replicates, np.ones_like(fit.replicates)
    if hold_out is None:
        return values, weights, False
    kept = fit.held_out(hold_out)
    left = np.unique(fit.rungs.index[kept > 0])
    enough = len(left) >= 6 if fit.form is CHINCHILLA else computes(fit.rungs.compute[left]) >= 3
    if enough:
        values, weights = np.vstack([values, values[:1]]), np.vstack([weights, kept[None]])
    return values, weights, enough


def check_seed_noise(ladder: Ladder) -> None:
    """Refuse a ladder where a schedule has no rung of two pretraining seeds, naming every such schedule: the
    check ran per schedule as each was fitted, so a ladder of one seed per rung named the first schedule only,
    and a user who trained its second seeds was refused again for the next."""
    lacking = [s.name for s in ladder.schedules if max(Counter(o.rung for o in ladder.of(s)).values()) < 2]
    if not lacking:
        return
    one = len(lacking) == 1
    raise UserError(
        f"no rung of {' or of '.join(lacking)} has two pretraining seeds, so {'its' if one else 'their'} seed "
        f"noise cannot be estimated; train a second seed of at least one {'of its rungs' if one else 'rung of each'}, "
        "or give --seed-noise SD from another ladder"
    )


def fit_schedules(
    ladder: Ladder,
    rng: np.random.Generator,
    n_boot: int,
    hold_out: tuple[float, float] | None = None,
    delta: float = DELTA,
    noise: float | None = None,
    paired: bool = True,
) -> list[ScheduleFit]:
    """Every schedule's replicates and curves, fitted in one batch per curve form (schedules padded
    to the same number of runs with zero weights); with `hold_out`, also each backtest's fit.
    `paired`: resample pretraining seeds jointly across schedules where they all ran the same ones
    (`paired_sources`)."""
    if noise is None:
        check_seed_noise(ladder)
    sources = paired_sources(ladder, rng, n_boot) if paired and noise is None else None
    prepared = []
    for schedule in ladder.schedules:
        runs = ladder.of(schedule)
        loss = ladder.metric.to_loss([o.value for o in runs])
        prepared.append(
            _prepare(schedule, runs, loss, rng, n_boot, noise, None if sources is None else sources[schedule])
        )
    done = {id(p): p for p in prepared}
    for form in (POWER, CHINCHILLA):
        group = [p for p in prepared if p.form is form]
        if not group:
            continue
        parts = [_problems(p, hold_out) for p in group]
        width = max(v.shape[1] for v, _, _ in parts)
        pad = [((0, 0), (0, width - v.shape[1])) for v, _, _ in parts]
        values = np.vstack([np.pad(v, pw, constant_values=1.0) for (v, _, _), pw in zip(parts, pad)])
        weights = np.vstack([np.pad(w, pw) for (_, w, _), pw in zip(parts, pad)])
        inputs = np.vstack(
            [
                np.repeat(np.pad(p.inputs(), (pw[1], (0, 0)), mode="edge")[None], len(v), 0)
                for p, (v, _, _), pw in zip(group, parts, pad)
            ]
        )
        scale = np.vstack([np.repeat(p.scale()[None], len(v), 0) for p, (v, _, _) in zip(group, parts)])
        fits = fit_curves(form, inputs, values, weights, scale=scale, delta=delta)
        start = 0
        for p, (v, _, has_backtest) in zip(group, parts):
            rows = n_boot + 1
            done[id(p)] = replace(
                p,
                fits=fits.rows(slice(start, start + rows)),
                backtest=fits.rows(slice(start + rows, start + rows + 1)) if has_backtest else None,
            )
            start += len(v)
    return [done[id(p)] for p in prepared]
