"""The paper's claims checked on a study's numbers: one evaluator per kind of claim, one test for all.

`EVALUATORS` maps a claim kind to the function that says what the claim compares: a `Measure` (a
number per fine-tuning seed for any model id), or an `Outcome` directly when the claim has no such
number (CKA) or cannot be tested. Every measure is then tested the same way:

- **The unit is the pretraining run.** Runs a and b are compared over the pretraining seeds both were
  trained at, each seed's checkpoint scored by its mean over fine-tuning seeds, with a paired t-test
  over pretraining seeds (`nested.compare_runs`: why this estimator, and why not a mixed model, is in
  its docstring). With one pretraining seed each the test falls back to the fine-tuning seeds of
  the two checkpoints, which compares two checkpoints, not two objectives: the claim then gives a
  direction only ("Points the paper's way", `significant` None), outside the Holm family; its p is kept
  as `checkpoint_p` (until 2026-12-04 it read "Holds ... (significant)" and joined the family).
  So is a claim whose runs continue different study runs trained at one pretraining seed (`one_seed_bases`):
  their seeds replicate the continued pretraining, not the bases, so it compares two base checkpoints
  (until 2026-12-07 it read "Holds ... (significant)" and joined the family).
  When only one of the two has a single pretraining seed (a continued run against the checkpoint it
  started from), that checkpoint is a fixed reference: the other run's seed means are tested against
  its fine-tuning scores by Welch's test (`level == "reference"`), and the sentence says the claim is
  about one objective against that one model (a checkpoint scored at one fine-tuning seed borrows the
  other run's pooled fine-tuning variance, or "cannot tell": `nested`). Runs with two or more pretraining seeds each but fewer
  than two in common (at fine-tuning seeds in common) are compared unpaired, their seed means by Welch's
  test (`level == "unpaired"`);
  seeds only one run has are left out of a paired test, and the sentence names them.
- **The same tasks.** A measure averages over the tasks that every model of both runs has results
  for at the compared step (`StudyData.shared_tasks`), and the sentence names those it left out: a report is
  rebuilt mid-study, and a failed node leaves a model without a task the other run has.
- **One analysis.** Direction, difference, interval and p all come from the same values (paired, or Welch's).
- **Rounding is no direction.** A mean difference no larger than `Nested.rounding` (`eval.stats.ROUNDING`,
  1e-9 of the largest value compared) is floating-point noise (one score list summed in another order
  differs by 1e-17), not a direction: the same values on both sides (paired: every difference; Welch's:
  in some order; `Nested.identical`) read "no difference", and paired differences that cancel read
  "undecided". Relative, since scores are percentages or correlations; the cost is that scores all within
  1e-17 of zero keep their rounding as a direction. Until 2026-12-06 only an exact 0 had no direction.
- **The claims are one family.** Each p-value is shown with its Holm-adjusted value over the study's
  claims that have one (`eval.stats.holm`; not those of one pretraining seed or one-seed bases); a claim is significant
  when the adjusted p < 0.05. The intervals are the unadjusted 95% intervals of the differences.
- **What the scale can show.** A claim of the family also says the smallest difference its design detects
  80% of the time at its noise at Holm's strictest step (alpha / m: significant whatever the other claims'
  p), `numbers.detectable` (`eval.stats.detectable`): "not significant" with a detectable difference above
  the paper's effect says the scale was unlikely to show it (less than 80% of the time), not that the claim
  is false. Until 2026-12-07 the report gave no such figure.

What each kind of claim measures, and when it is "not tested", is `measures.py`'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from encoderlab.eval.stats import POWER, PairedTest, detectable, holm, interval_text, negated, p_text
from encoderlab.study.caveats import degenerate_caveat, final_caveats, partial_caveat, step_caveats
from encoderlab.study.data import StudyData
from encoderlab.study.measures import EVALUATORS, Measure, Outcome
from encoderlab.study.nested import Nested, Scores, compare_runs, no_pair_reason
from encoderlab.study.spec import ClaimSpec
from encoderlab.words import decimals, estimate_text, noun, number_text

ALPHA = 0.05
"""Family-wise error rate of a study's claims (Holm-adjusted p below it: significant)."""


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
    """As `Outcome.numbers`, with `p_holm` where the claim was tested."""
    sentence: str
    """The whole sentence the report prints, verdict first."""


# --------------------------------------------------------------------------- testing a measure


def _scores(data: StudyData, run: str, measure: Measure) -> Scores:
    out = {}
    for seed, model in data.model_ids(run).items():
        values = measure.of(model)
        if values:
            out[seed] = values
    return out


def _negate(d: PairedTest | None) -> PairedTest | None:
    """b - a from a - b."""
    return None if d is None else negated(d)


@dataclass(frozen=True)
class _Tested:
    """A measured claim before the family's correction."""

    nested: Nested
    gain: PairedTest | None
    """The paired difference in the claim's favour (a - b, or b - a when lower is better)."""
    holds: bool
    bases: tuple[str, ...] = ()
    """The runs trained at one pretraining seed that every checkpoint of a replicated run continues and the other
    run does not (`one_seed_bases`): the test's seeds do not replicate them."""

    @property
    def outside(self) -> bool:
        """A direction only, outside the Holm family: two checkpoints (one pretraining seed each), or runs that
        continue different base checkpoints trained at one seed."""
        return self.nested.level == "fine-tuning" or bool(self.bases)


def one_seed_bases(spec, a: str, b: str) -> tuple[str, ...]:
    """The study runs trained at one pretraining seed that every checkpoint of run `a` (or `b`), trained at two
    or more, continues (directly or through its bases: `StudySpec.init_seed` gives each seed the one model),
    and that the other run neither continues nor is. Their seeds then replicate the continued pretraining, not
    that base: "CLM base + MLM beats MLM base + MLM" over three continuation seeds of one CLM base and one MLM
    base compares two base checkpoints, not the bases' objectives. Empty for a shared base (paper 2's detour
    and baseline, both from one base) and for a start model evaluated as is (no pretraining of the study)."""
    runs = {r.name: r for r in getattr(spec, "runs", ())}
    if a not in runs or b not in runs:
        return ()
    replicated = [(x, y) for x, y in ((a, b), (b, a)) if len(spec.seeds_of(runs[x])) >= 2]
    return tuple(
        dict.fromkeys(
            r
            for x, y in replicated
            for r in _one_seed_chain(spec, x, False)
            if r not in _one_seed_chain(spec, y, True)
        )
    )


def continued_one_seed_bases(spec, run: str) -> tuple[str, ...]:
    """The study runs trained at one pretraining seed that every checkpoint of `run` continues, where `run` is
    trained at two or more (else empty): its pretraining seeds replicate the continued pretraining only, so an
    interval over them says nothing of those bases' own seed-to-seed variation (`one_seed_bases`)."""
    named = {r.name: r for r in getattr(spec, "runs", ())}
    if run not in named or len(spec.seeds_of(named[run])) < 2:
        return ()
    return tuple(_one_seed_chain(spec, run, False))


def _one_seed_chain(spec, name: str, own: bool) -> list[str]:
    """The runs trained by the study at one pretraining seed along `name`'s chain of `init`s (`name` itself
    too when `own`), nearest first."""
    runs = {r.name: r for r in getattr(spec, "runs", ())}
    out, seen, run = [], set(), runs.get(name)
    while run is not None and run.name not in seen:
        seen.add(run.name)
        if (own or run.name != name) and run.recipe is not None and len(spec.seeds_of(run)) == 1:
            out.append(run.name)
        run = runs.get(run.init) if run.init else None
    return out


def _test(data: StudyData, claim: ClaimSpec, measure: Measure) -> _Tested | None:
    nested = compare_runs(_scores(data, claim.a, measure), _scores(data, claim.b, measure))
    if nested is None:
        return None
    gain = nested.diff if measure.higher_is_better else _negate(nested.diff)
    unpaired = (nested.a.mean > nested.b.mean) == measure.higher_is_better
    holds = gain.mean > 0 if gain is not None else unpaired
    bases = one_seed_bases(data.spec, claim.a, claim.b) if nested.level != "fine-tuning" else ()
    return _Tested(nested, gain, holds, bases)


def _verdict(t: _Tested, p_holm: float | None) -> tuple[str, bool | None]:
    if t.gain is None:  # no test: a direction at most, never a verdict
        if t.nested.level == "reference":  # a one-score reference with no estimate of its noise
            return "undecided", None
        if t.nested.identical:
            return "no difference", None
        return ("holds in direction" if t.holds else "opposite in direction"), None
    one_seed = t.outside  # two checkpoints (or two bases' continuations), not objectives: outside the family
    if t.nested.identical or (t.gain.degenerate and t.gain.p_value == 1.0):
        return "no difference", None if one_seed else False  # identical scores, e.g. all the majority class
    if abs(t.gain.mean) <= t.nested.rounding:  # no direction: differences that cancel (+x and -x), up to
        return "undecided", None if one_seed else False  # rounding (a mean of 1e-17 pointed a direction)
    if one_seed:  # a direction only: its p says these two checkpoints differ, not their objectives
        return ("holds in direction" if t.holds else "opposite in direction"), None
    return ("holds" if t.holds else "does not hold"), p_holm is not None and p_holm < ALPHA


def _sentence(
    data: StudyData, claim: ClaimSpec, measure: Measure, t: _Tested, p_holm: float | None, m: int
) -> str:
    n, la, lb = t.nested, data.label(claim.a), data.label(claim.b)
    over = {
        "pretraining": f", means over {len(n.pretraining_seeds)} pretraining seeds",
        "unpaired": f", means over {n.a.n} and {n.b.n} pretraining seeds",
    }.get(n.level, "")
    head = f"{la} {estimate_text(n.a.mean, n.a.half_width)} vs {lb} {estimate_text(n.b.mean, n.b.half_width)} on {measure.where}{over}"
    if t.gain is None:
        return f"{head} ({n.reference_phrase(la, lb) or 'fewer than 2 paired seeds, so no interval'})."
    what = "difference" if measure.higher_is_better else f"{lb} minus {la}"
    unit = _unit(n, la, lb, measure, t.gain)
    if n.level == "fine-tuning":
        return f"{head} ({what} {interval_text(t.gain)}, checkpoint-level paired {p_text(t.gain.p_value)}{unit})."
    test = "Welch's" if n.level in ("reference", "unpaired") else "paired"
    if t.bases:
        said = _bases_phrase(data, t.bases)
        return f"{head} ({what} {interval_text(t.gain)}, {test} {p_text(t.gain.p_value)}{unit}{said})."
    stats = (
        f"{what} {interval_text(t.gain)}, {test} {p_text(t.gain.p_value)}, Holm-adjusted over the {m} tested "
        f"{noun(m, 'claim')} {p_text(p_holm)}"  # a family of one read "the 1 tested claims"
    )
    sig = p_holm is not None and p_holm < ALPHA
    return (
        f"{head} ({stats}{unit}{_detectable_phrase(t.gain, m)}; "
        + ("significant" if sig else "not significant")
        + " after Holm's correction)."
    )


def _detectable_phrase(gain: PairedTest, m: int) -> str:
    """What the claim's design could show (`eval.stats.detectable` at Holm's strictest step), if estimable; with
    every difference alike, whether the exact test's p (its smallest at these seeds: 0.25 at 3) could be
    significant at all: an "undecided" +2 on every seed was not the scale showing no effect."""
    if gain.degenerate and ALPHA <= gain.p_value < 1.0:
        return (
            f"; every difference is the same, and {p_text(gain.p_value)} is the smallest p the exact test gives "
            "at these seeds, so this design cannot call a difference significant at any size"
        )
    d = detectable(gain, ALPHA / m)
    if d is None:
        return ""
    step = f"{ALPHA:g} / {m}" if m > 1 else f"{ALPHA:g}"
    return (
        f"; at this noise the design detects a difference of {number_text(d, decimals(gain.half_width), False)} or more {POWER:.0%} of the time at "
        f"Holm's strictest threshold ({step}), and may miss a smaller one"
    )


def _bases_phrase(data: StudyData, bases: tuple[str, ...]) -> str:
    """Why a claim whose runs continue different one-seed bases gives a direction only (`one_seed_bases`)."""
    named, many = " and ".join(data.label(b) for b in bases), len(bases) > 1
    return (
        f"; but {named} {noun(len(bases), 'is', 'are')} trained at one pretraining seed and continued by one of the "
        f"runs only (each of its checkpoints continues that one model), so the pretraining seeds replicate the "
        f"continued pretraining, not {'those bases' if many else 'that base'}: this compares base checkpoints, not "
        "their objectives, and the claim gives a direction only, left out of the Holm family of the study's claims"
    )


def _unit(n: Nested, la: str, lb: str, measure: Measure, gain: PairedTest) -> str:
    """What the claim's test is over, and what that makes it a claim about."""
    if n.level == "reference":
        many, one = (la, lb) if n.reference == "b" else (lb, la)
        return (
            f", {many} over {len(n.pretraining_seeds)} pretraining seeds (each the mean over its fine-tuning seeds) "
            f"against {one}'s one checkpoint over its fine-tuning seeds: a claim about {many}'s objective against "
            f"that one model, not against {one}'s objective"
            + n.reference_phrase(la, lb)
            + n.unscored_phrase(la, lb)
        )
    if n.level == "unpaired":
        return n.unpaired_phrase(la, lb)
    if n.level == "fine-tuning":  # a run's other seeds were scored at none of the one checkpoint's seeds
        return (
            f", n = {gain.n} fine-tuning seeds of one checkpoint each (one pretraining seed: this compares two "
            "checkpoints, not two objectives, so the claim gives a direction only and is left out of the Holm "
            "family of the study's claims)" + n.unscored_phrase(la, lb)
        )
    check = n.checkpoint if measure.higher_is_better else _negate(n.checkpoint)
    within = (
        f"; the seed-{n.checkpoint_seed} checkpoints alone, over {check.n} fine-tuning seeds: {interval_text(check)}"
        if check is not None
        else ""
    )
    left = n.left_out_phrase(la, lb)
    return f", n = {gain.n} pretraining seeds (each the mean over its fine-tuning seeds){within}{left}"


_PREFIX = {
    "holds": "Holds at this scale",
    "holds in direction": "Holds in direction at this scale",
    "does not hold": "Does not hold at this scale",
    "opposite in direction": "Opposite in direction at this scale",
    "no difference": "Undecided at this scale (identical scores, no difference)",
    "undecided": "Undecided at this scale",
    "not tested": "Not tested",
}
_UNDECIDED = {
    "holds": "Undecided at this scale (same direction as the paper, not significant)",
    "does not hold": "Undecided at this scale (opposite direction to the paper, not significant)",
}
"""A difference inside its interval neither confirms nor refutes the claim: say only the direction."""
_ONE_SEED = {
    "holds in direction": "Points the paper's way",
    "opposite in direction": "Points opposite to the paper",
}
"""One pretraining seed each (level "fine-tuning"): a direction of two checkpoints, never a verdict."""
_ONE_SEED_WHY = (", for one pretraining seed", " (two checkpoints; cannot speak to the objectives)")
_BASES = (", for base checkpoints trained at one pretraining seed", " (cannot speak to the objectives)")
"""The prefix's words for a claim whose runs continue different one-seed bases (`one_seed_bases`): where, and
why a direction only."""


_CKA_CHECKPOINTS = (
    ", for one checkpoint of each run (their first pretraining seeds; cannot speak to the objectives' "
    "seed-to-seed variation)"
)
"""The CKA claim compares one checkpoint per run at every scale (`data.cka_models`): its "Holds at this
scale" stood beside "each run is trained at one pretraining seed, so a claim gives a direction only"."""


def _prefix(o: Outcome, kind: str, paper: str) -> str:
    """The verdict the sentence starts with (`kind`: the claim's; `paper`: the study's, empty for a study of
    one's own, whose claims are no paper's: its report said "Points opposite to the paper" after "This study
    names no paper")."""
    verdict = _paper_verdict(o, kind)
    return (
        verdict
        if paper
        else verdict.replace("the paper's way", "the claim's way").replace("the paper", "the claim")
    )


def _paper_verdict(o: Outcome, kind: str) -> str:
    """`_prefix` in a paper's words."""
    prefix = _PREFIX[o.status]
    if kind == "cka_low_layers":
        return prefix.replace("at this scale", f"at this scale{_CKA_CHECKPOINTS}")
    if o.significant:
        prefix += " (significant)"
    elif o.significant is not None:
        prefix = _UNDECIDED.get(o.status, prefix)
    if o.numbers.get("level") == "fine-tuning" or o.numbers.get("one_seed_bases"):
        one = _ONE_SEED.get(o.status)
        seed, why = _ONE_SEED_WHY if o.numbers.get("level") == "fine-tuning" else _BASES
        seed += why * bool(one)
        return (
            f"{one} at this scale{seed}" if one else prefix.replace("at this scale", f"at this scale{seed}")
        )
    if o.numbers.get("level") == "reference":
        return prefix.replace("at this scale", "at this scale, against one checkpoint")
    return prefix


def _untested(data: StudyData, claim: ClaimSpec, measure: Measure) -> Outcome:
    """A measured claim with nothing to compare: why, where both runs have results (`nested.no_pair_reason`:
    their checkpoints share too few fine-tuning seeds), else "no finished results yet"."""
    scores = (_scores(data, run, measure) for run in (claim.a, claim.b))
    why = no_pair_reason(*scores, data.label(claim.a), data.label(claim.b))
    return Outcome(sentence=why) if why else Outcome()


def check_claims(data: StudyData) -> list[ClaimResult]:
    """For each claim of the spec: status, significance, numbers and a generated sentence."""
    found = [(c, EVALUATORS[c.kind](data, c)) for c in data.spec.claims]
    tested = {c.id: _test(data, c, x) for c, x in found if isinstance(x, Measure)}
    with_p = [cid for cid, t in tested.items() if t and t.gain and not t.outside]
    adjusted = dict(zip(with_p, holm([tested[cid].gain.p_value for cid in with_p])))
    out = []
    for claim, x in found:
        t = tested.get(claim.id)
        if isinstance(x, Measure) and t is not None:
            p_holm = adjusted.get(claim.id)
            status, sig = _verdict(t, p_holm)
            numbers = {"level": t.nested.level, "a": t.nested.a, "b": t.nested.b, "diff": t.gain}
            numbers |= {"p_holm": p_holm, "pretraining_seeds": t.nested.pretraining_seeds}
            # in the claim's favour, as `diff` and the sentence give it: a spread's was a - b beside b - a
            checkpoint = t.nested.checkpoint if x.higher_is_better else _negate(t.nested.checkpoint)
            numbers |= {"checkpoint": checkpoint} | ({"step": x.step} if x.step is not None else {})
            if t.nested.level == "fine-tuning" and t.gain is not None:  # information, not in the family
                numbers["checkpoint_p"] = t.gain.p_value
            numbers |= {"one_seed_bases": list(t.bases)} if t.bases else {}  # its p too: outside the family
            left = {(claim.a if side == "a" else claim.b): k for side, k in t.nested.left_out.items()}
            numbers |= {"left_out": left} if left else {}
            numbers |= {"borrowed_df": t.nested.borrowed_df} if t.nested.borrowed_df is not None else {}
            if p_holm is not None and (found_d := detectable(t.gain, ALPHA / len(with_p))) is not None:
                numbers["detectable"] = found_d  # at Holm's strictest step, `_detectable_phrase`
            said, caveat = final_caveats(data, claim) if x.step is None else step_caveats(data, claim, x.step)
            numbers |= said
            prior, on_prior = degenerate_caveat(data, claim, x.tasks, x.step)
            numbers |= prior
            unfinished, partial = partial_caveat(data, claim, x.step)
            numbers |= {"unfinished_evals": unfinished} if unfinished else {}
            o = Outcome(
                status=status,
                significant=sig,
                numbers=numbers,
                sentence=_sentence(data, claim, x, t, p_holm, len(with_p)) + caveat + on_prior + partial,
            )
        else:
            o = x if isinstance(x, Outcome) else _untested(data, claim, x)
        out.append(
            ClaimResult(
                claim=claim,
                status=o.status,
                significant=o.significant,
                numbers=o.numbers,
                sentence=f"{_prefix(o, claim.kind, data.spec.paper)}: {o.sentence}",
            )
        )
    return out
