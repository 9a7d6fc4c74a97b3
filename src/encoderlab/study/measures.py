"""What each kind of claim compares: one evaluator per kind (`EVALUATORS`), the numbers before any test.

An evaluator reads a study's data and a claim and returns a `Measure` (a number per fine-tuning seed for
any model id, which `results.check_claims` then tests the same way for every kind) or an `Outcome`
directly, when the claim has no such number (CKA, decided by its own intervals) or cannot be tested: it
says why in the words of the study ("no SC task is evaluated at this scale", "no checkpoint is shared").

Design: a new kind of claim is a new evaluator here and a name in `spec.ClaimKind`; the test, the Holm
family, the verdict and the sentence around the measure are `results.py`'s, written once. Trade-off: the
reasons a claim is "not tested" live with the evaluator that knows them, so two evaluators may phrase
a like reason slightly differently; they share `_each_run` and `_left_out` for the common ones.

The measures:
- **beats** (a > b on a family, or on the average over all tasks): the family's score per fine-tuning
  seed (evaluation's summary: the test score at the LR chosen on validation per task, averaged over
  the family's tasks seed by seed). "Not tested" says why when the study's graph evaluates no task of the
  family, or none of it on every model of both runs; "no finished results yet" only when it does.
- **faster_early** (a > b early in pretraining): the average over the tasks (named) at the first intermediate
  checkpoint both runs were evaluated at; runs with no `eval_steps` in common read "not tested" with
  their steps, since no finished result would ever test it.
- **more_stable** (a varies less across fine-tuning LRs than b): per fine-tuning seed, the range over
  the LRs of the claim's `lr_range` (paper 1: 1e-5 to 1e-4) of the task-averaged test score; lower is
  better. LRs outside the range, where runs may diverge, are left out.
- **cka_low_layers** (paper 2's low layers diverge beyond seed noise, and more than the other layers):
  `analysis.cka_report.low_layer_summary` of the CKA node, the per-layer ratio d(a, b) / d(b's twin, b)
  averaged over the low and the other layers per sampling seed, with 95% t-intervals over the seeds.
  It holds when the low layers' interval lies above 1 and the low-minus-other interval above 0, does
  not hold when either lies wholly on the other side (below 1, below 0), and is undecided otherwise: an
  interval across its bound, or none (every seed drew the same texts) (`analysis.cka_report.low_layer_verdict`).
  It is decided by its own intervals, not by a p-value, so Holm's correction leaves it out, and its
  sentence says so (`CKA_UNCORRECTED`), and which pretraining seed of each run it compared (the first only,
  `data.cka_models`). Its intervals cover the choice of texts for the fixed models
  (widened for the texts the sampling seeds' draws share, `analysis.cka`), not pretraining-seed variation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from encoderlab.analysis.cka_report import low_layer_verdict, too_few_layers
from encoderlab.eval.summary import ALL, TaskSummary, family_by_seed, mean_at_lr
from encoderlab.study.caveats import claim_ids
from encoderlab.study.data import StudyData, cka_models
from encoderlab.study.spec import ClaimKind, ClaimSpec
from encoderlab.words import count, lr_text, noun


@dataclass(frozen=True, kw_only=True)
class Measure:
    """What a claim compares: a score per fine-tuning seed of any model id."""

    of: Callable[[str], dict[int, float] | None]
    """Model id -> fine-tuning seed -> score (None without results)."""
    where: str
    """What the score is, for the sentence ("SC", "the average over brown-pos, tweets at step 125", ...)."""
    higher_is_better: bool = True
    """False when the claim says a's score is lower (a spread)."""
    step: int | None = None
    """The checkpoint step it is measured at (None: final models)."""
    tasks: tuple[str, ...] = ()
    """The tasks whose scores at the chosen LR it averages, checked for degenerate predictions (none for a
    spread over LRs, which reads every LR, not the chosen one)."""


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What the study says about a claim: a verdict, its numbers and the sentence after the verdict."""

    status: str = "not tested"
    """holds | holds in direction | does not hold | opposite in direction | no difference | undecided | not
    tested. "does not hold" is a difference against the claim (significant when `significant`); without a
    test (fewer than 2 paired seeds), or with one pretraining seed each (two checkpoints, not two
    objectives), the status is only a direction, "holds in direction" or "opposite in direction" (a reference
    scored at one fine-tuning seed with no estimate of its noise: "undecided")."""
    significant: bool | None = None
    """Holm-adjusted p < ALPHA (None: no test in the Holm family, as with one pretraining seed each)."""
    numbers: dict[str, Any] = field(default_factory=dict)
    """The numbers the sentence quotes."""
    sentence: str = "the study has no finished results for it yet."
    """Why, in words."""


def _not_tested(why: str) -> Outcome:
    return Outcome(sentence=why)


def _only(tasks: dict[str, TaskSummary], keep: dict[str, str]) -> dict[str, TaskSummary]:
    return {t: s for t, s in tasks.items() if t in keep}


def _over(tasks: dict[str, str]) -> str:
    """The score a checkpoint claim compares, naming its tasks: checkpoints are often evaluated on
    fewer tasks than the final models (a scale's `checkpoint_tasks`), so "the average over tasks"
    alone would read as the final models' average."""
    names = sorted(tasks)
    return names[0] if len(names) == 1 else f"the average over {', '.join(names)}"


def _left_out(shared: dict[str, str], others: dict[str, str]) -> str:
    """What the sentence says when some tasks are not shared by every model (empty when none)."""
    if not others:
        return ""
    return (
        f" (on {', '.join(sorted(shared))} only, the tasks every model of both runs has results for; left "
        f"out: {', '.join(sorted(others))})"
    )


def _never_shared(data: StudyData, claim: ClaimSpec, fam: str) -> Outcome | None:
    """A "not tested" when the study's graph evaluates the claim's models on no task of `fam` in common."""
    planned = data.planned_tasks(claim_ids(data, claim), None)
    if fam != ALL and fam not in {f for tasks in planned.values() for f in tasks.values()}:
        return _not_tested(f"no {fam.upper()} task is evaluated at this scale.")
    if not any(n.kind == "eval" for n in data.nodes):
        return None  # no graph to read the plan from: what has finished may still grow
    runs = {r: [planned.get(m, {}) for m in data.model_ids(r).values()] for r in (claim.a, claim.b)}
    mine = {r: [{t for t, f in tasks.items() if fam in (ALL, f)} for tasks in of] for r, of in runs.items()}
    sets = [*mine[claim.a], *mine[claim.b]]
    if not sets or set.intersection(*sets):
        return None
    what = "task" if fam == ALL else f"{fam.upper()} task"
    tasks = {r: sorted(set().union(*s)) for r, s in mine.items()}
    said = _each_run(data, {r: f"on {', '.join(t)}" if t else f"on no {what}" for r, t in tasks.items()})
    return _not_tested(
        f"{said}: the two runs share no {what}, so this claim cannot be tested (a comparison needs the same "
        "tasks)."
    )


def _each_run(data: StudyData, said: dict[str, str]) -> str:
    """What each run of a claim is evaluated on, as one clause ("CLM is evaluated at step 20, MLM-40 at
    no intermediate checkpoint"), from run name -> its phrase. Was a raw "CLM: 20; MLM-40: none"."""
    return ", ".join(
        f"{data.label(r)}{' is evaluated' * (i == 0)} {x}" for i, (r, x) in enumerate(said.items())
    )


def _beats(data: StudyData, claim: ClaimSpec) -> Measure | Outcome:
    fam = claim.family or ALL
    if (never := _never_shared(data, claim, fam)) is not None:
        return never
    shared, others = data.shared_tasks(claim_ids(data, claim), None)
    if fam != ALL:
        shared, others = ({t: f for t, f in d.items() if f == fam} for d in (shared, others))
    if not shared:
        return Outcome()
    return Measure(
        of=lambda m: family_by_seed(_only(data.summary(m).tasks, shared), average=True).get(fam) or None,
        where=(
            fam.upper() if fam != ALL else _over(shared) if len(shared) == 1 else "the average over all tasks"
        )
        + _left_out(shared, others),  # one task is named: "the average over all tasks" of one read as several
        tasks=tuple(sorted(shared)),
    )


def _faster_early(data: StudyData, claim: ClaimSpec) -> Measure | Outcome:
    ids = claim_ids(data, claim)
    at = {}
    for e in data.evals:
        if e.step is not None and e.model in ids:
            at.setdefault(e.step, set()).add(e.model)
    runs = {claim.a: set(data.model_ids(claim.a).values()), claim.b: set(data.model_ids(claim.b).values())}
    common = [s for s in sorted(at) if all(at[s] & mine for mine in runs.values())]
    if not common:
        return _no_common_checkpoint(data, claim)
    step = common[0]
    shared, others = data.shared_tasks(ids, step)
    if not shared:
        return Outcome()
    return Measure(
        of=lambda m: (
            family_by_seed(_only(data.summary(m, step).tasks, shared), average=True).get(ALL) or None
        ),
        where=f"{_over(shared)} at step {step}" + _left_out(shared, others),
        step=step,
        tasks=tuple(sorted(shared)),
    )


def _at_steps(steps: list[int]) -> str:
    return (
        f"at {noun(len(steps), 'step')} {', '.join(map(str, steps))}"
        if steps
        else "at no intermediate checkpoint"
    )


def _no_common_checkpoint(data: StudyData, claim: ClaimSpec) -> Outcome:
    """Why a faster_early claim has no checkpoint to compare: not finished yet, or none in common planned."""
    planned = {
        r: (run.eval_steps if (run := data.spec.run(r)) is not None else ()) for r in (claim.a, claim.b)
    }
    if set(planned[claim.a]) & set(planned[claim.b]):
        return Outcome()
    said = _each_run(data, {r: _at_steps(sorted(s)) for r, s in planned.items()})
    return _not_tested(
        f"the claim compares the runs at an intermediate checkpoint both are evaluated at; {said}, so no "
        "checkpoint is shared and this claim cannot be tested (give both runs a step in eval_steps)."
    )


def lr_spread_by_seed(tasks: dict[str, TaskSummary], lrs: list[float]) -> dict[int, float]:
    """Per fine-tuning seed: the range (max - min) over `lrs` of the task-averaged test score."""
    curves = [mean_at_lr(tasks, lr) for lr in lrs]
    seeds = set.intersection(*(set(c) for c in curves)) if curves else set()
    return {sd: max(c[sd] for c in curves) - min(c[sd] for c in curves) for sd in sorted(seeds)}


def _more_stable(data: StudyData, claim: ClaimSpec) -> Measure | Outcome:
    lo, hi = claim.lr_range
    grid = sorted({e.record.lr for e in data.evals})
    lrs = claim.lrs_in_range(grid)
    span = f"{lr_text(lo)} to {lr_text(hi)}"
    if len(lrs) < 2:
        have = ", ".join(map(lr_text, lrs)) or "none"
        return _not_tested(
            f"the evaluation grid ({', '.join(map(lr_text, grid))}) has {count(len(lrs), 'learning rate')} in the "
            f"claim's range {span} ({have}); the spread needs two."
        )
    shared, others = data.shared_tasks(claim_ids(data, claim), None)
    if not shared:
        return Outcome()
    return Measure(
        of=lambda m: lr_spread_by_seed(_only(data.summary(m).tasks, shared), lrs) or None,
        where=f"the spread (max - min) of the task-averaged test score over the LRs {', '.join(map(lr_text, lrs))} (range {span})"
        + _left_out(shared, others),
        higher_is_better=False,
    )


CKA_UNCORRECTED = (
    "decided by two unadjusted 95% intervals, not a p-value, so this claim is outside the Holm family of the "
    "other claims and not corrected for multiplicity"
)


def _cka_low_layers(data: StudyData, claim: ClaimSpec) -> Measure | Outcome:
    entry = next((c for c in data.spec.cka if (c.a, c.b) == (claim.a, claim.b)), None)
    if entry is None:
        return _not_tested(  # was "no finished results for it yet", forever
            f"the study runs no CKA of {data.label(claim.a)} against {data.label(claim.b)}; the claim needs one "
            "(a `cka` entry with that a, b and b's seed twin as noise)."
        )
    r = next((c for c in data.cka if (c.a, c.b) == (claim.a, claim.b)), None)  # a alone took another b's
    if r is None:
        return Outcome()
    if r.low_layers is None and r.noise_divergence is not None and len(r.divergence) < 3:
        return _not_tested(too_few_layers(len(r.divergence)))
    if r.low_layers is None:
        return _not_tested(
            f"the CKA of {data.label(claim.a)} has no seed-noise pair; the claim needs the reference's seed twin."
        )
    s = r.low_layers
    return Outcome(
        status=low_layer_verdict(s["holds"], s["low_ci"], s["difference_ci"]),
        numbers=r.low_layers,  # which seeds: the graph compares each run's first only (`cka_models`)
        sentence=f"{s['sentence']}{_others_above(s)}{r.few_texts}{cka_models(data.spec, entry, data.label)}; "
        f"{CKA_UNCORRECTED}.",
    )


def _others_above(summary: dict) -> str:
    """The claim's note when the other layers too lie above seed noise: holding by the low-minus-other difference
    alone, "concentrated in the low layers" read as paper 2's picture, whose mid and deep layers sat at about 1x
    (the demo's other layers: 1.94x, 95% CI [1.37, 2.51])."""
    ci = summary.get("other_ci")
    if ci is None or ci[0] <= 1.0:
        return ""
    return (
        "; the other layers too diverge beyond seed noise (their interval lies above 1), where paper 2's mid and "
        "deep layers were at about 1x"
    )


EVALUATORS: dict[ClaimKind, Callable[[StudyData, ClaimSpec], Measure | Outcome]] = {
    "beats": _beats,
    "faster_early": _faster_early,
    "more_stable": _more_stable,
    "cka_low_layers": _cka_low_layers,
}
"""What each kind of claim compares (the kinds of `spec.ClaimKind`)."""
