"""The paper's claims checked on a study's numbers: one evaluator per kind of claim.

`EVALUATORS` maps a claim kind to the function that tests it; each returns an `Outcome` (the numbers
and a sentence), and `check_claims` turns the outcome into a verdict the same way for every kind:

- **beats** (a > b on a family, or on the average over all tasks): the family's score per fine-tuning
  seed (evaluation's summary: the test score at the LR chosen on validation per task, averaged over
  the family's tasks seed by seed), paired over the seeds a and b share.
- **faster_early** (a > b early in pretraining): the same on the average over tasks, at the first
  intermediate checkpoint both runs were evaluated at.
- **more_stable** (a's score varies less across fine-tuning LRs than b's): per seed, the range over
  the LR grid of the task-averaged test score; b's range minus a's, paired over seeds.
- **cka_low_layers** (the divergence of a vs b over seed noise is largest in the low third of the
  layers): one CKA per pair, so a direction without an interval.

A claim "holds" when the paired difference has the paper's sign, and is called significant when its
95% interval excludes zero; a difference inside the interval is "undecided" with its direction said.
Direction, difference, interval and p all come from the same paired values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from encoderlab.eval.stats import Estimate, PairedTest, summarize
from encoderlab.eval.summary import ALL, family_by_seed, mean_at_lr, paired
from encoderlab.study.data import StudyData
from encoderlab.study.spec import ClaimKind, ClaimSpec
from encoderlab.study.table import ResultsTable


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What an evaluator found: a verdict, its numbers and the sentence after the verdict's prefix."""

    status: str = "not tested"
    """holds | holds in direction | does not hold | no difference | not tested."""
    significant: bool | None = None
    """Whether the interval excludes zero (None: no interval)."""
    numbers: dict[str, Any] = field(default_factory=dict)
    """The numbers the sentence quotes."""
    sentence: str = "the study has no finished results for it yet."
    """Why, in words."""


@dataclass(frozen=True, kw_only=True)
class ClaimResult:
    """A claim of the spec and what the study says about it."""

    claim: ClaimSpec
    """The claim."""
    status: str
    """As `Outcome.status`."""
    significant: bool | None
    """As `Outcome.significant`."""
    numbers: dict[str, Any]
    """As `Outcome.numbers`."""
    sentence: str
    """The whole sentence the report prints, verdict first."""


def _fmt(x: float | None, sign: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:+.2f}" if sign else f"{x:.2f}"


def _pm(s: Estimate) -> str:
    return f"{_fmt(s.mean)} ± {_fmt(s.half_width)}" if s.half_width is not None else _fmt(s.mean)


def _verdict(diff: PairedTest | None, holds: bool) -> tuple[str, bool | None]:
    """('holds' | 'does not hold' | 'no difference' | 'not tested', significant?)."""
    if diff is None:
        return ("holds in direction" if holds else "does not hold"), None
    if diff.mean == 0:  # identical paired scores (e.g. every model predicts the majority class)
        return "no difference", False
    return ("holds" if holds else "does not hold"), diff.excludes_zero


def _diff_text(diff: PairedTest | None) -> str:
    if diff is None:
        return "fewer than 2 paired seeds, so no interval"
    return (
        f"difference {_fmt(diff.mean, True)}, 95% CI [{_fmt(diff.ci_low, True)}, {_fmt(diff.ci_high, True)}], "
        f"paired p = {diff.p_value:.3g}, n = {diff.n} seeds; the difference "
        + ("exceeds the CI (significant)" if diff.excludes_zero else "is within the CI (not significant)")
    )


def _compared(sa: dict[int, float], sb: dict[int, float]) -> tuple[str, bool | None, dict]:
    """Verdict and numbers of a > b from per-seed scores."""
    diff = paired(sa, sb)
    s_a, s_b = summarize(list(sa.values())), summarize(list(sb.values()))
    status, sig = _verdict(diff, s_a.mean > s_b.mean)
    return status, sig, {"a": s_a, "b": s_b, "diff": diff}


# --------------------------------------------------------------------------- evaluators


def _beats(data: StudyData, table: ResultsTable, claim: ClaimSpec) -> Outcome:
    fam = claim.family or ALL
    if fam != ALL and fam not in {e.record.family for e in data.evals}:
        return Outcome(sentence=f"no {fam.upper()} task is evaluated at this scale.")
    sa, sb = (family_by_seed(data.summary(m).tasks, average=True).get(fam) for m in (claim.a, claim.b))
    if not (sa and sb):
        return Outcome()
    status, sig, numbers = _compared(sa, sb)
    where = "the average over all tasks" if fam == ALL else fam.upper()
    la, lb = data.label(claim.a), data.label(claim.b)
    a, b = numbers["a"], numbers["b"]
    return Outcome(
        status=status,
        significant=sig,
        numbers=numbers,
        sentence=f"{la} {_pm(a)} vs {lb} {_pm(b)} on {where} ({_diff_text(numbers['diff'])}).",
    )


def _faster_early(data: StudyData, table: ResultsTable, claim: ClaimSpec) -> Outcome:
    pair = {claim.a, claim.b}
    steps = sorted({e.step for e in data.evals if e.step is not None and e.model in pair})
    common = [s for s in steps if {e.model for e in data.evals if e.step == s} >= pair]
    if not common:
        return Outcome()
    step = common[0]
    sa, sb = (family_by_seed(data.summary(m, step).tasks, average=True)[ALL] for m in (claim.a, claim.b))
    status, sig, numbers = _compared(sa, sb)
    la, lb = data.label(claim.a), data.label(claim.b)
    return Outcome(
        status=status,
        significant=sig,
        numbers={"step": step, **numbers},
        sentence=(
            f"at step {step}, {la} {_pm(numbers['a'])} vs {lb} {_pm(numbers['b'])} on the average over "
            f"tasks ({_diff_text(numbers['diff'])})."
        ),
    )


def lr_spread_by_seed(tasks) -> dict[int, float]:
    """Per seed: the range (max - min) over the LR grid of the task-averaged test score."""
    lrs = sorted({p.lr for t in tasks.values() for p in t.curve})
    curves = [mean_at_lr(tasks, lr) for lr in lrs]
    seeds = set.intersection(*(set(c) for c in curves)) if curves else set()
    return {sd: max(c[sd] for c in curves) - min(c[sd] for c in curves) for sd in sorted(seeds)}


def _more_stable(data: StudyData, table: ResultsTable, claim: ClaimSpec) -> Outcome:
    if len({e.record.lr for e in data.evals}) < 2:
        return Outcome(sentence="the evaluation grid has a single learning rate at this scale.")
    ra, rb = (lr_spread_by_seed(data.summary(m).tasks) for m in (claim.a, claim.b))
    if not (ra and rb):
        return Outcome()
    diff = paired(rb, ra)  # positive when a's spread is smaller
    s_a, s_b = summarize(list(ra.values())), summarize(list(rb.values()))
    status, sig = _verdict(diff, s_a.mean < s_b.mean)
    la, lb = data.label(claim.a), data.label(claim.b)
    return Outcome(
        status=status,
        significant=sig,
        numbers={"a": s_a, "b": s_b, "diff": diff},
        sentence=(
            f"the spread of the task-averaged test score over the LR grid is {_pm(s_a)} for {la} vs {_pm(s_b)} "
            f"for {lb} (spread of {lb} minus {la}: {_diff_text(diff)})."
        ),
    )


def _cka_low_layers(data: StudyData, table: ResultsTable, claim: ClaimSpec) -> Outcome:
    r = next((c for c in data.cka if c.a == claim.a), None)
    if r is None:
        return Outcome()
    ratio = r.ratio or r.divergence
    n = len(ratio)
    low = fmean(ratio[: max(1, n // 3)])
    rest = fmean(ratio[max(1, n // 3) :]) if n > 1 else float("nan")
    above = r.ratio is not None and low > 1.0
    what = "divergence / seed-noise divergence" if r.ratio is not None else "divergence (no seed-noise pair)"
    return Outcome(
        status="holds" if low > rest else "does not hold",
        numbers={"low": low, "rest": rest, "layers": n, "ratio": ratio},
        sentence=(
            f"mean {what} is {_fmt(low)} in the low third of the {n} layers vs {_fmt(rest)} in the others; "
            + (
                "the low layers diverge more than seed noise."
                if above
                else "the low layers do not exceed seed noise."
            )
            + " (No interval over seeds: one CKA per pair.)"
        ),
    )


EVALUATORS: dict[ClaimKind, Callable[[StudyData, ResultsTable, ClaimSpec], Outcome]] = {
    "beats": _beats,
    "faster_early": _faster_early,
    "more_stable": _more_stable,
    "cka_low_layers": _cka_low_layers,
}
"""How each kind of claim is tested (the kinds of `spec.ClaimKind`)."""

_PREFIX = {
    "holds": "Holds at this scale",
    "holds in direction": "Holds in direction at this scale",
    "does not hold": "Does not hold at this scale",
    "no difference": "Undecided at this scale (identical scores, no difference)",
    "not tested": "Not tested",
}
_UNDECIDED = {
    "holds": "Undecided at this scale (same direction as the paper, not significant)",
    "does not hold": "Undecided at this scale (opposite direction to the paper, not significant)",
}
"""A difference inside its interval neither confirms nor refutes the claim: say only the direction."""


def check_claims(data: StudyData, table: ResultsTable) -> list[ClaimResult]:
    """For each claim of the spec: status, significance, numbers and a generated sentence."""
    out = []
    for claim in data.spec.claims:
        o = EVALUATORS[claim.kind](data, table, claim)
        prefix = _PREFIX[o.status]
        if o.significant:
            prefix += " (significant)"
        elif o.significant is not None:
            prefix = _UNDECIDED.get(o.status, prefix)
        out.append(
            ClaimResult(
                claim=claim,
                status=o.status,
                significant=o.significant,
                numbers=o.numbers,
                sentence=f"{prefix}: {o.sentence}",
            )
        )
    return out
