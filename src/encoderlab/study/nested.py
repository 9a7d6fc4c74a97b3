"""Comparing two runs over pretraining seeds, with fine-tuning seeds nested inside each checkpoint.

A study trains each compared run at K pretraining seeds and fine-tunes each checkpoint at F seeds.
A claim is about objectives, so its replicate is the pretraining run: two checkpoints of one seed
share a data order (`resolve.py`), and fine-tuning seeds of one checkpoint measure that checkpoint,
not its objective. Pooling the K x F scores into one test would treat F fine-tuning runs of one
checkpoint as F independent draws of the objective (pseudo-replication): with large pretraining
noise and small fine-tuning noise it calls two checkpoints' difference a difference of objectives.

The estimator (two-stage, the "summary statistics" approach of nested designs):
1. per pretraining seed k, the mean over fine-tuning seeds of each run's score (over the fine-tuning
   seeds both checkpoints have, so the difference is the mean of paired differences);
2. a paired t-test over the K pretraining seeds of those means (`eval.stats.paired_test`).

Why not a mixed model (`score ~ run + (1 | pretraining seed / checkpoint)`)? For a balanced design
(every checkpoint fine-tuned at the same seeds) the two-stage test is exactly the mixed model's test
of the run effect: its error term is the variance between pretraining seeds, fine-tuning noise
included through the means, with K - 1 degrees of freedom. The two-stage form needs no variance
component estimates, which with K = 3 are unstable (REML often puts one at zero and then reports a
too-narrow interval), and it reads in one sentence. Its cost is the mixed model's: with K = 3 the
t-interval has 2 degrees of freedom and is wide; that is the honest width of "three pretraining runs
per objective".

When one run has a single pretraining seed and the other several (`level == "reference"`: a run
continued from one checkpoint against that checkpoint, or a model evaluated as is), the single
checkpoint is taken as a fixed reference: the other run's K seed means are compared with its
fine-tuning scores by Welch's test (`eval.stats.welch_test`), so every seed counts and the
reference's fine-tuning noise is in the interval. The claim is then about the replicated run's
objective against that one model, not against the reference's objective; the report says so.
Before, the comparison used the one seed both had and left the others out. A reference scored at one
fine-tuning seed has no variance of its own to put in the interval: its fine-tuning variance is then
the replicated run's pooled within-checkpoint variance (each checkpoint's variance over its fine-tuning
seeds, pooled with weights n - 1: the same tasks and fine-tuning protocol, assumed equally noisy for the
reference), and the Welch-Satterthwaite degrees of freedom count that estimate's (`borrowed_df`,
`eval.stats.welch_borrowed`). Where no checkpoint of the replicated run has two fine-tuning seeds there is
no such estimate, and the claim reads "cannot tell" (`diff` None). Until 2026-12-04 the one score was
taken as exact (the one-sample test against it), which leaves its fine-tuning noise out: too small a p.

When both runs have two or more pretraining seeds but fewer than two in common (runs given their own
`seeds`: [0, 1, 2] against [3, 4], or [0, 1] against [1, 2]), there is no data order to pair on, but
each run is still replicated: their seed means (each over the fine-tuning seeds every checkpoint of
both runs has) are compared by Welch's test (`level == "unpaired"`), a claim about the two objectives
without the pairing. Before, disjoint seeds read "not tested: no finished results", and one seed in
common compared that seed's two checkpoints alone. The same holds where the runs share pretraining
seeds but fewer than two of them have fine-tuning seeds in common (a report rebuilt while evaluations
are missing); where no fine-tuning seed is common to every checkpoint, each seed mean is over the
checkpoint's own fine-tuning seeds (`own_fine_tuning`). Before, that compared the two checkpoints of
the one seed they could pair, and the report said the runs had one pretraining seed.

With K = 1 on both sides there is nothing to replicate: the comparison falls back to fine-tuning seeds
paired over the one checkpoint each (`level == "fine-tuning"`), which says whether these two
checkpoints differ, and the report says so: such a claim gives a direction only, outside the Holm
family of the study's claims (`results`; until 2026-12-04 it could read "significant"). The
fine-tuning-level comparison of the first common seed's checkpoints is kept beside the
pretraining-level one (`checkpoint`), so the report can show both intervals. At the pretraining level, seeds that only one run has results at are left out of
the pairing and named (`left_out`), so the report says why its means differ from the run table's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import fmean
from typing import Literal

from encoderlab.eval.stats import (
    Estimate,
    PairedTest,
    negated,
    paired_test,
    pooled_variance,
    rounding,
    summarize,
    welch_borrowed,
    welch_test,
)
from encoderlab.eval.summary import paired
from encoderlab.words import noun

Scores = dict[int, dict[int, float]]
"""Pretraining seed -> fine-tuning seed -> score of one run (on one measure)."""


@dataclass(frozen=True, kw_only=True)
class Nested:
    """Run a against run b on one measure."""

    level: Literal["pretraining", "reference", "unpaired", "fine-tuning"]
    """What `a`, `b` and `diff` are over: pretraining seeds (each the mean over its fine-tuning seeds),
    or, against a fixed reference (one pretraining seed), the replicated run's seed means and the
    reference's fine-tuning scores, or, unpaired, each run's own pretraining seeds (fewer than two in
    common), or, with one pretraining seed each, the fine-tuning seeds of one checkpoint each."""
    a: Estimate
    """Run a over the replicates of `level`."""
    b: Estimate
    """Run b over the same replicates (unpaired: over its own)."""
    diff: PairedTest | None
    """Test of a - b over them: paired, or Welch's against a reference or unpaired (None with fewer than 2)."""
    pretraining_seeds: list[int]
    """The pretraining seeds both runs have results at (against a reference: the replicated run's;
    unpaired: either run's)."""
    checkpoint_seed: int | None
    """The pretraining seed of the checkpoint-level comparison (None: the runs share none)."""
    checkpoint: PairedTest | None
    """a - b over the fine-tuning seeds of that seed's two checkpoints (the within-checkpoint interval)."""
    reference: Literal["a", "b"] | None = None
    """At level "reference": the run that is the one fixed checkpoint."""
    left_out: dict[str, list[int]] = field(default_factory=dict)
    """At level "pretraining": "a" or "b" -> that run's pretraining seeds with results that are not in the
    pairing, since the other run has none there (or none at the same fine-tuning seeds); empty when none.
    At level "reference": the replicated run's seeds scored at none of the reference's fine-tuning seeds.
    At level "fine-tuning": the seeds of a run trained at several whose checkpoints share no fine-tuning seed
    with the other run's one checkpoint (else they would be tested against it as a reference)."""
    shared: list[int] = field(default_factory=list)
    """At level "unpaired": the pretraining seeds both runs have (two or more only where fewer than two of
    them have fine-tuning seeds in common)."""
    own_fine_tuning: bool = False
    """At level "unpaired": the checkpoints of both runs share no fine-tuning seed, so each seed mean is over
    the checkpoint's own fine-tuning seeds."""
    unmatched: dict[str, list[int]] = field(default_factory=dict)
    """The seeds of `left_out` at which the other run does have results, but at none of the same fine-tuning
    seeds (so the report does not say it has no results there)."""
    rounding: float = 0.0
    """The spread below which the compared values are equal but for floating-point rounding
    (`eval.stats.rounding`: relative to the largest of them): a mean difference this small has no direction."""
    identical: bool = False
    """The compared values are the same up to `rounding`: paired, every difference; against a reference or
    unpaired (Welch's), the same values on both sides in some order (one score list summed in another order)."""
    borrowed_df: int | None = None
    """At level "reference", with the reference scored at one fine-tuning seed: the degrees of freedom of the
    replicated run's pooled within-checkpoint variance that stands in for the reference's fine-tuning variance
    (None otherwise; 0 when no checkpoint of the replicated run has two fine-tuning seeds, and `diff` is None:
    cannot tell)."""

    def reference_phrase(self, la: str, lb: str) -> str:
        """How a reference scored at one fine-tuning seed was tested ("; CLM's checkpoint was scored at one
        fine-tuning seed: its fine-tuning variance is taken from ..."), or why it could not be; empty otherwise."""
        if self.borrowed_df is None:
            return ""
        many, one = (la, lb) if self.reference == "b" else (lb, la)
        if not self.borrowed_df:
            return (
                f"cannot tell: {one}'s checkpoint was scored at one fine-tuning seed and no checkpoint of {many} at "
                f"two, so the reference's fine-tuning noise has no estimate"
            )
        return (
            f"; {one}'s checkpoint was scored at one fine-tuning seed: its fine-tuning variance is the pooled "
            f"within-checkpoint variance of {many}'s checkpoints (the same fine-tuning protocol, assumed equally "
            f"noisy; {self.borrowed_df} degrees of freedom)"
        )

    def left_out_phrase(self, la: str, lb: str) -> str:
        """ "; left out: A's pretraining seed 0 (B has no results there)" per run (`la`, `lb` its label), and
        "(B has results there only at other fine-tuning seeds)" for the seeds in `unmatched`."""

        def part(who: str, ks: list[int], why: str) -> str:
            seeds = f"{noun(len(ks), 'seed')} {', '.join(map(str, ks))}"
            return f"; left out: {who}'s pretraining {seeds} ({why})" if ks else ""

        out = ""
        for side, who, other in (("a", la, lb), ("b", lb, la)):
            unmatched = self.unmatched.get(side, [])
            absent = [k for k in self.left_out.get(side, []) if k not in unmatched]
            out += part(who, absent, f"{other} has no results there")
            out += part(who, unmatched, f"{other} has results there only at other fine-tuning seeds")
        return out

    def unscored_phrase(self, la: str, lb: str) -> str:
        """ "; left out: A's pretraining seed 2 (scored at none of B's fine-tuning seeds)": the seeds of a run
        compared with the other's one checkpoint (a reference, or one checkpoint each) that share none of its
        fine-tuning seeds; empty when none. Until 2026-12-04 the one-checkpoint-each comparison left them out
        unsaid."""
        side, left = next(iter(self.left_out.items()), ("a", []))
        if not left:
            return ""
        many, one = (la, lb) if side == "a" else (lb, la)
        seeds = f"{noun(len(left), 'seed')} {', '.join(map(str, left))}"
        return f"; left out: {many}'s pretraining {seeds} (scored at none of {one}'s fine-tuning seeds)"

    def unpaired_phrase(self, la: str, lb: str) -> str:
        """What an unpaired claim's test is over: why it could not pair the runs' pretraining seeds."""
        own = " own" * self.own_fine_tuning
        shared = {0: "no pretraining seed", 1: "one pretraining seed"}.get(len(self.shared))
        if shared is None:  # seeds in common, but at most one of them with fine-tuning seeds in common
            shared = (
                f"pretraining seeds {', '.join(map(str, self.shared))}, but at fewer than two of them the checkpoints "
                "have fine-tuning seeds in common"
            )
        return (
            f", {la} and {lb} each over its own pretraining seeds (each the mean over its{own} fine-tuning seeds), "
            f"unpaired: the runs share {shared}, too few to pair them by data order"
            + ("; the checkpoints share no fine-tuning seed" if self.own_fine_tuning else "")
        )


def _sides(va: list[float], vb: list[float], *, paired: bool) -> dict:
    """The `Nested` fields that describe the compared values: `a`, `b`, `rounding` and `identical`."""
    tol = rounding(va, vb)
    xs, ys = (va, vb) if paired else (sorted(va), sorted(vb))
    same = len(xs) == len(ys) and all(abs(x - y) <= tol for x, y in zip(xs, ys))
    return {"a": summarize(va), "b": summarize(vb), "rounding": tol, "identical": same}


def run_means(scores: Scores, other: Scores) -> dict[int, float]:
    """Per pretraining seed both have: the mean of `scores` over the fine-tuning seeds both have there."""
    out = {}
    for k in sorted(set(scores) & set(other)):
        common = sorted(set(scores[k]) & set(other[k]))
        if common:
            out[k] = fmean(scores[k][f] for f in common)
    return out


def compare_runs(a: Scores, b: Scores) -> Nested | None:
    """The nested comparison of two runs (None when either has no results, or no comparison has a pair
    of fine-tuning seeds to stand on)."""
    a, b = {k: v for k, v in a.items() if v}, {k: v for k, v in b.items() if v}
    ma, mb = run_means(a, b), run_means(b, a)
    seeds = sorted(ma)
    if len(seeds) >= 2:
        va, vb = [ma[k] for k in seeds], [mb[k] for k in seeds]
        left = {side: out for side, mine in (("a", a), ("b", b)) if (out := sorted(set(mine) - set(seeds)))}
        other = {"a": b, "b": a}
        unmatched = {
            side: both for side, out in left.items() if (both := [k for k in out if k in other[side]])
        }
        return Nested(
            level="pretraining",
            **_sides(va, vb, paired=True),
            diff=paired_test(va, vb),
            pretraining_seeds=seeds,
            checkpoint_seed=seeds[0],
            checkpoint=paired(a[seeds[0]], b[seeds[0]]),
            left_out=left,
            unmatched=unmatched,
        )
    if (other := _against_reference(a, b) or _unpaired(a, b)) is not None:
        return other
    if seeds:
        ka = kb = seeds[0]
    elif len(a) == len(b) == 1:  # one checkpoint each, at different pretraining seeds
        (ka,), (kb,) = a, b
    else:
        return None
    common = sorted(set(a[ka]) & set(b[kb]))
    if not common:
        return None
    checkpoint = paired(a[ka], b[kb])
    left = {side: out for side, run, k in (("a", a, ka), ("b", b, kb)) if (out := sorted(set(run) - {k}))}
    return Nested(
        level="fine-tuning",
        **_sides([a[ka][f] for f in common], [b[kb][f] for f in common], paired=True),
        diff=checkpoint,
        pretraining_seeds=seeds,
        checkpoint_seed=ka if ka == kb else None,
        checkpoint=checkpoint,
        left_out=left,
    )


def no_pair_reason(a: Scores, b: Scores, la: str, lb: str) -> str | None:
    """Why `compare_runs(a, b)` has nothing to compare though both runs have results (`la`, `lb` their labels): a
    run's one checkpoint shares a fine-tuning seed with fewer than two of the other run's checkpoints (a reference
    needs two), or the one checkpoint each share none. None where a run has no results yet or a comparison exists.
    Until 2026-12-06 such a claim read "the study has no finished results for it yet", which finishing nothing
    could change."""
    a, b = {k: v for k, v in a.items() if v}, {k: v for k, v in b.items() if v}
    if not a or not b or min(len(a), len(b)) != 1 or compare_runs(a, b) is not None:
        return None
    (one, ((k, ref),)), (many, run) = (
        ((lb, b.items()), (la, a)) if len(b) < len(a) else ((la, a.items()), (lb, b))
    )

    def seeds(fs) -> str:
        return f"{noun(len(fs), 'seed')} {', '.join(map(str, sorted(fs)))}"

    theirs = set().union(*map(set, run.values()))
    fine = f"({one}: fine-tuning {seeds(ref)}; {many}: {seeds(theirs)})"
    if len(run) == 1:
        return (
            f"{la}'s and {lb}'s one checkpoint each share no fine-tuning seed {fine}, so there is no pair to "
            "compare; fine-tune both at a common seed."
        )
    sharing = [s for s in sorted(run) if set(run[s]) & set(ref)]
    which = f"only the one at pretraining seed {sharing[0]}" if sharing else "none"
    return (
        f"{one}'s one checkpoint (pretraining seed {k}) is compared with {many}'s checkpoints at the fine-tuning "
        f"seeds both have, and of {many}'s {len(run)} checkpoints {which} shares one {fine}: a comparison "
        f"against one checkpoint needs two; fine-tune {many}'s checkpoints at {one}'s seeds."
    )


def _unpaired(a: Scores, b: Scores) -> Nested | None:
    """a against b when both have two or more pretraining seeds but fewer than two in common (at fine-tuning
    seeds in common): each run's seed means (over the fine-tuning seeds every checkpoint of both has, or,
    where they have none in common, each over its own) by Welch's test; None otherwise."""
    if min(len(a), len(b)) < 2:
        return None
    fine = set.intersection(*(set(v) for v in (*a.values(), *b.values())))
    va, vb = ([fmean(run[k][f] for f in (fine or run[k])) for k in sorted(run)] for run in (a, b))
    shared = sorted(set(a) & set(b))
    return Nested(
        level="unpaired",
        shared=shared,
        own_fine_tuning=not fine,
        **_sides(va, vb, paired=False),
        diff=welch_test(va, vb),
        pretraining_seeds=sorted(set(a) | set(b)),
        checkpoint_seed=shared[0] if shared else None,
        checkpoint=paired(a[shared[0]], b[shared[0]]) if shared else None,
    )


def _against_reference(a: Scores, b: Scores) -> Nested | None:
    """a against b when exactly one of them has a single pretraining seed and the other at least two:
    the replicated run's seed means (each over the fine-tuning seeds the reference has) against the
    reference checkpoint's fine-tuning scores, by Welch's test; None otherwise."""
    a, b = {k: v for k, v in a.items() if v}, {k: v for k, v in b.items() if v}
    if min(len(a), len(b)) != 1 or max(len(a), len(b)) < 2:
        return None
    ref_is_b = len(b) == 1
    (ref_seed, ref), many = next(iter((b if ref_is_b else a).items())), (a if ref_is_b else b)
    means = {k: fmean(v[f] for f in common) for k, v in many.items() if (common := set(v) & set(ref))}
    used = set().union(*(set(v) & set(ref) for v in many.values()))
    fixed = [ref[f] for f in sorted(used)]
    if len(means) < 2 or not fixed:
        return None
    values = [means[k] for k in sorted(means)]
    va, vb = (values, fixed) if ref_is_b else (fixed, values)
    diff, borrowed_df = welch_test(va, vb), None
    if len(fixed) == 1:  # the reference's fine-tuning noise, from its one score: none; borrowed, or no test
        pooled = pooled_variance([list(v.values()) for v in many.values()])
        borrowed_df = pooled[1] if pooled else 0
        diff = welch_borrowed(values, fixed[0], *pooled) if pooled else None
        diff = negated(diff) if diff is not None and not ref_is_b else diff
    shared = ref_seed if ref_seed in many else None
    left = sorted(set(many) - set(means))
    return Nested(
        level="reference",
        left_out={("a" if ref_is_b else "b"): left} if left else {},
        **_sides(va, vb, paired=False),
        diff=diff,
        borrowed_df=borrowed_df,
        pretraining_seeds=sorted(means),
        checkpoint_seed=ref_seed,
        checkpoint=paired(a[shared], b[shared]) if shared is not None else None,
        reference="b" if ref_is_b else "a",
    )


def over_pretraining(scores: Scores) -> Estimate | None:
    """A run's score over its pretraining seeds (each the mean over its fine-tuning seeds); None with
    fewer than 2 seeds, where only the checkpoint's own interval exists."""
    means = [fmean(v.values()) for _, v in sorted(scores.items()) if v]
    return summarize(means) if len(means) >= 2 else None
