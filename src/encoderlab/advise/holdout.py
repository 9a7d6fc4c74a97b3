"""Score the advisor on a size the ladder trained but the fit does not see.

A ladder study can train its largest size too and keep it out of the fit: that size's rungs are then
targets whose answer is known, the check DataDecide makes for data recipes. For each rung (N_top, D)
of the largest size, `score_held_out` advises from the smaller sizes alone (`decide.advise` at the
target N = N_top, D) and compares three rankings of the schedules with the measured one (means over
pretraining seeds), by decision accuracy (the share of schedule pairs ordered as measured):

- *extrapolation*: the fitted curves' values at the target;
- *single rung*: the means at the largest fitted size and the token budget (tokens per parameter)
  nearest the target's, the baseline DataDecide found hard to beat;
- *advised*: whichever of the two the advisor's own backtest chose.

**The measured ranking is a measurement too**: means over a few pretraining seeds. A pair whose measured
means differ by no more than their seed noise can be ordered either way by another draw of seeds, so scoring
a prediction right or wrong against it scores the seeds, not the advisor. Such a pair is reported as *within
seed noise* and left out of every accuracy: its difference is at most the two-sided 95% bound of a two-sample
test, `t(0.975, df) x sd x sqrt(1/n_a + 1/n_b)` (`noise_bound`; at the bound itself p = 0.05, which a study's
claims, significant at p < 0.05, do not count as a difference either) with the n seeds each ran at that rung and the sd pooled over
both schedules' rungs (every size, the held-out one too: the bootstrap's assumption of one noise size per
schedule at every rung, and the pooled test's of one size for both schedules), or with `--seed-noise` the
normal 1.96 x that sd. Trade-off: a real but small difference goes unscored, and a rung whose every pair is
within noise has no accuracy ("n/a"); the other way, a seed draw decided those pairs (before 2026-12-06 they
were scored). Seeds are not paired across schedules here, as the bootstrap pairs them (`predict.paired_sources`):
where runs of one seed share noise (a study's ladder), a paired test's bound would be narrower, so this one
may leave out a pair a paired test would score.

Trade-off: a held-out size must be trained, so the check costs the largest rung's compute; it is the
only way to know, on one's own objectives and data, whether extrapolating beats ranking at the largest
affordable size. With two schedules a rung has one pair, so its accuracy is 0 or 1; the means over
rungs are reported with how many pairs they count.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np
from scipy import stats

from encoderlab.advise.decide import advise, decision_accuracy, percent, scored_pairs
from encoderlab.advise.ladder import Ladder
from encoderlab.advise.predict import Rungs, Target, check_seed_noise
from encoderlab.errors import UserError
from encoderlab.words import count


@dataclass(frozen=True)
class HeldOutRung:
    """One rung of the held-out size: measured, extrapolated and single-rung values per schedule."""

    params: float
    tokens: float
    measured: dict[str, float]
    extrapolated: dict[str, float] | None
    """The curves' values at this rung (None: a schedule had too few rungs to fit)."""
    single_rung: dict[str, float]
    baseline_rung: tuple[float, float]
    """The (N, D) the single-rung ranking was read at."""
    method: str
    """What the advisor chose: extrapolation or single rung."""
    backtested: bool
    """Whether the advisor had a backtest to choose by; without one it keeps the single rung by construction."""
    extrapolation_accuracy: float | None
    single_rung_accuracy: float
    advised_accuracy: float
    within_noise: tuple[tuple[str, str], ...] = ()
    """Pairs whose measured means differ by no more than their seed noise: not scored (module docstring)."""


@dataclass(frozen=True)
class HeldOutScore:
    """Decision accuracy on every rung of the held-out size, and the means over rungs."""

    held_out_size: float
    rungs: tuple[HeldOutRung, ...]
    extrapolation_accuracy: float | None
    single_rung_accuracy: float
    advised_accuracy: float
    pairs: int
    """Schedule pairs scored over all rungs (measured apart by more than seed noise)."""
    within_noise: int = 0
    """Schedule pairs over all rungs whose measured means are within seed noise, not scored."""

    def to_dict(self) -> dict:
        return asdict(self)


def _means(ladder: Ladder, point: tuple[float, float]) -> dict[str, float]:
    """Mean over seeds per schedule at one (N, D) rung, in metric units."""
    out: dict[str, list[float]] = {}
    for o in ladder.observations:
        if o.rung == point:
            out.setdefault(o.schedule.name, []).append(o.value)
    return {name: float(np.mean(v)) for name, v in out.items()}


def _noise_sums(ladder: Ladder) -> dict[str, tuple[float, int]]:
    """Each schedule's pooled seed noise over all its rungs (`Rungs.seed_noise`: squared deviations summed,
    degrees of freedom), in metric units as the measured means are."""
    out = {}
    for schedule in ladder.schedules:
        runs = ladder.of(schedule)
        out[schedule.name] = Rungs.of(runs).seed_noise(np.array([o.value for o in runs]))
    return out


def noise_bound(sd: float, critical: float, n_a: int, n_b: int) -> float:
    """The largest difference of two means, over n_a and n_b seeds, that seed noise of size `sd` reaches at the
    two-sided quantile `critical` (t(0.975, df), or the normal 1.96 for a given `--seed-noise`)."""
    return critical * sd * math.sqrt(1 / n_a + 1 / n_b)


def within_noise(
    ladder: Ladder, point: tuple[float, float], names: list[str], seed_noise: float | None
) -> tuple[tuple[str, str], ...]:
    """The pairs (a, b), a < b, of `names` whose measured means at `point` differ by no more than their seed
    noise allows (module docstring); a pair with no estimate of its noise is scored as before."""
    means, sums = _means(ladder, point), _noise_sums(ladder)
    seeds = {n: sum(o.rung == point and o.schedule.name == n for o in ladder.observations) for n in names}
    out = []
    for a, b in combinations(sorted(names), 2):
        if seed_noise is not None:
            sd, critical = seed_noise, float(stats.norm.ppf(0.975))
        else:
            ss, df = (x + y for x, y in zip(sums[a], sums[b]))
            if df == 0:
                continue
            sd, critical = math.sqrt(ss / df), float(stats.t.ppf(0.975, df))
        # at the bound p = 0.05: not significant by a study's p < 0.05, so within noise (docs/advise.md said
        # "less than" while this read <=, and the printed line said "less than" too)
        if abs(means[a] - means[b]) <= noise_bound(sd, critical, seeds[a], seeds[b]):
            out.append((a, b))
    return tuple(out)


def _baseline_rung(fitted: Ladder, params: float, tokens: float) -> tuple[float, float]:
    """The largest fitted size's rung whose tokens per parameter are nearest the target's (log scale)."""
    top = max(o.params for o in fitted.observations)
    rungs = sorted({o.rung for o in fitted.observations if o.params == top})
    ratio = math.log(tokens / params)
    return min(rungs, key=lambda r: (abs(math.log(r[1] / r[0]) - ratio), -r[1]))


def score_held_out(ladder: Ladder, **advise_options) -> HeldOutScore:
    """Advise from every size but the largest and score it on the largest (module docstring)."""
    sizes = sorted({o.params for o in ladder.observations})
    if len(sizes) < 3:
        raise UserError(
            f"holding out the largest size needs 3 sizes or more (two to fit from); the ladder has {len(sizes)}"
        )
    top = sizes[-1]
    points = sorted({o.rung for o in ladder.observations if o.params == top})
    if all(len(_means(ladder, p)) < 2 for p in points):  # was scored: "0 schedule pairs", every accuracy n/a
        held = {o.schedule.name for o in ladder.observations if o.params == top}
        who = f"only {held.pop()} ran it" if len(held) == 1 else "each of its rungs has one schedule's runs"
        raise UserError(
            f"the largest size, N={top:.3g}, has no rung that two schedules ran ({who}), so no ranking can be "
            f"scored there; run every schedule at N={top:.3g}"
        )
    with _fitted_part(top):  # not the options' refusals, which are the caller's (`check_fit_options`)
        fitted = Ladder(ladder.metric, tuple(o for o in ladder.observations if o.params < top))
        if advise_options.get("seed_noise") is None:
            check_seed_noise(fitted)
    return _summarise(top, [_score_rung(ladder, fitted, p, advise_options) for p in points])


@contextmanager
def _fitted_part(top: float):
    """A refusal of the sizes below the held-out one (their ladder, their seeds) says it is theirs: a ladder
    whose second seeds were all at its largest size was refused "no rung of MLM-40 or of CLM has two
    pretraining seeds", which it had."""
    try:
        yield
    except UserError as exc:
        raise UserError(
            f"holding out the largest size, N={top:.3g}, the smaller sizes the advice is fitted from are refused: {exc}"
        ) from None


def _score_rung(ladder: Ladder, fitted: Ladder, point: tuple[float, float], options: dict) -> HeldOutRung:
    """Advise at one held-out rung from the fitted sizes and score the three rankings against it."""
    measured = _means(ladder, point)
    advice = advise(fitted, Target(params=point[0], tokens=point[1]), **options)
    extrap = {p.schedule: p.value for p in advice.predictions}
    base_at = _baseline_rung(fitted, *point)
    single = _means(fitted, base_at)
    names = sorted(set(measured) & set(single))
    truth = {n: measured[n] for n in names}
    noisy = within_noise(ladder, point, names, options.get("seed_noise"))
    have_extrap = all(extrap.get(n) is not None for n in names)
    extrap_acc = decision_accuracy({n: extrap[n] for n in names}, truth, noisy) if have_extrap else None
    single_acc = decision_accuracy({n: single[n] for n in names}, truth, noisy)
    chose_extrap = advice.method == "extrapolation" and have_extrap
    return HeldOutRung(
        params=point[0],
        tokens=point[1],
        measured=measured,
        extrapolated=extrap if have_extrap else None,
        single_rung=single,
        baseline_rung=base_at,
        method=advice.method,
        backtested=advice.backtest is not None,
        extrapolation_accuracy=extrap_acc,
        single_rung_accuracy=single_acc,
        advised_accuracy=extrap_acc if chose_extrap else single_acc,
        within_noise=noisy,
    )


def _summarise(top: float, rungs: list[HeldOutRung]) -> HeldOutScore:
    def mean(values):
        kept = [v for v in values if v is not None and not math.isnan(v)]
        return float(np.mean(kept)) if kept else float("nan")

    extrap = [r.extrapolation_accuracy for r in rungs]
    pairs = sum(len(scored_pairs(r.measured, r.within_noise)) for r in rungs)
    return HeldOutScore(
        held_out_size=top,
        rungs=tuple(rungs),
        extrapolation_accuracy=None if any(e is None for e in extrap) else mean(extrap),
        single_rung_accuracy=mean(r.single_rung_accuracy for r in rungs),
        advised_accuracy=mean(r.advised_accuracy for r in rungs),
        pairs=pairs,
        within_noise=sum(len(r.within_noise) for r in rungs),
    )


def format_held_out(score: HeldOutScore) -> str:
    """The table `encoderlab advise --hold-out-largest` prints."""
    # the rung column as wide as its widest label: it was fixed, so "N=7.88e+05, D=768" left the row's
    # other columns three characters short of their headings
    labels = [f"N={r.params:.3g}, D={r.tokens:.3g}" for r in score.rungs]
    width = max(len("rung (N, D)"), *map(len, labels))
    # so is the single rung's: a baseline at D=2.5e+08 (a 2-D ladder's) pushed "advised" past its heading
    ats = [
        f"{percent(r.single_rung_accuracy)} (N={r.baseline_rung[0]:.3g}, D={r.baseline_rung[1]:.3g})"
        for r in score.rungs
    ]
    at_width = max(len("single rung (at)"), *map(len, ats))
    lines = [
        f"held out: the largest size, N = {score.held_out_size:.3g}, fitted from the smaller sizes only",
        f"{'rung (N, D)':<{width}}   advisor's method   extrapolation   {'single rung (at)':<{at_width}}  advised",
    ]
    for r, label, at in zip(score.rungs, labels, ats):
        lines.append(
            f"{label:<{width}}   {r.method:<17}  {percent(r.extrapolation_accuracy):<14}  {at:<{at_width}}  "
            f"{percent(r.advised_accuracy)}"
        )
    lines.append(
        f"decision accuracy over {count(len(score.rungs), 'rung')} ({count(score.pairs, 'schedule pair')}): extrapolation "
        f"{percent(score.extrapolation_accuracy)}, single rung {percent(score.single_rung_accuracy)}, advised "
        f"{percent(score.advised_accuracy)}"
    )
    if score.within_noise:  # scored right or wrong before, as the seed draw fell
        lines.append(
            f"not scored: {count(score.within_noise, 'schedule pair')} whose measured means differ by no more "
            "than their seed noise's 95% bound ("
            + "; ".join(
                f"{a} vs {b} at {label}" for r, label in zip(score.rungs, labels) for a, b in r.within_noise
            )
            + "): either order is what another draw of seeds could measure"
        )
    if not any(r.backtested for r in score.rungs):  # else "advised" read as a choice the advisor never made
        lines.append(
            "note: the advisor had no backtest at any rung (too few rungs below the fitted sizes' largest to refit "
            "its curves), so 'advised' is the single rung by construction; more rungs below the held-out size score it"
        )
    return "\n".join(lines)
