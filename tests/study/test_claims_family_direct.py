"""A family of claims on random nested designs, against a direct computation of what the docs say.

`results.check_claims` is run on a stand-in study (its evaluators and caveats replaced, so only the
statistics are exercised) whose claims compare runs at several pretraining seeds (paired over them), a run
at several seeds against a one-checkpoint reference (Welch's), two runs at one pretraining seed each (two
checkpoints: a direction only, outside the family) and claims that are not tested. The expected numbers
are written here from numpy, scipy and an enumeration of the permutation tests, never from `eval.stats` or
`study.nested`: the per-seed means over the fine-tuning seeds both checkpoints have, scipy's paired or
Welch t-test (the exact sign-flip or split enumeration where every difference is the same), Holm's
step-down over exactly the claims tested over pretraining seeds or against a reference, and the verdict's
direction. Each paired claim is also stated the other way round (b beats a), which must read "does not
hold" wherever the claim "holds", with the same p.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st
from scipy import stats
from tests.study.study_fixtures import stand_in_study

from encoderlab.study import results
from encoderlab.study.spec import ClaimSpec

POOL = [60.0, 60.5, 61.0, 70.0, 70.25, 72.0]
"""Scores drawn from a few values, so that ties, identical scores and constant differences are common."""


def _checkpoint(draw, common: list[int]) -> dict[int, float]:
    """A checkpoint's score per fine-tuning seed: at `common` and maybe at a seed of its own."""
    extra = draw(st.sets(st.integers(3, 5), max_size=1))
    return {f: draw(st.sampled_from(POOL) | st.floats(55, 80)) for f in [*common, *extra]}


@st.composite
def designs(draw) -> dict:
    """One claim's design: "paired" (both runs at the same K >= 2 seeds, a maybe at one more of its own), "reference" (a at K >= 2 seeds,
    b one checkpoint at the same fine-tuning seeds), "unpaired" (a at seeds 0 and 1, b at 2 to 4, all
    checkpoints at fine-tuning seeds in common and maybe one of their own), "one seed" (one checkpoint each)
    or "untested"."""
    kind = draw(st.sampled_from(["paired", "paired", "reference", "unpaired", "one seed", "untested"]))
    lower = draw(st.booleans())  # a spread (more_stable): lower is better
    k = draw(st.integers(2, 4))
    if kind == "paired":
        common = {s: sorted(draw(st.sets(st.integers(0, 2), min_size=1))) for s in range(k)}
        a = {s: _checkpoint(draw, common[s]) for s in range(k)}
        b = {s: _checkpoint(draw, common[s]) for s in range(k)}
        if draw(st.booleans()):  # a seed of a's own: left out of the pairing
            a[k] = _checkpoint(draw, [0])
    elif kind == "reference":
        fts = list(range(draw(st.integers(2, 3))))
        a = {s: {f: draw(st.sampled_from(POOL)) for f in fts} for s in range(k)}
        b = {0: {f: draw(st.sampled_from(POOL) | st.floats(55, 80)) for f in fts}}
    elif kind == "unpaired":
        fts = sorted(draw(st.sets(st.integers(0, 2), min_size=1)))
        a = {s: _checkpoint(draw, fts) for s in range(2)}
        b = {s: _checkpoint(draw, fts) for s in range(2, 2 + k)}
    else:
        fts = list(range(draw(st.integers(1, 3))))
        a, b = ({0: {f: draw(st.sampled_from(POOL)) for f in fts}} for _ in "ab")
    return {"kind": kind, "lower": lower, "a": a, "b": b}


def _tol(*sides) -> float:
    return 1e-9 * max(abs(v) for side in sides for v in side)


def _direct_paired(a: dict, b: dict) -> tuple[float, float, bool, float]:
    """(mean of a - b, two-sided p, identical, rounding) over pretraining seeds, each the mean over the
    fine-tuning seeds both checkpoints have: scipy's paired t-test, or the sign-flip enumeration when every
    difference is one; identical when every difference is 0 up to rounding (1e-9 of the largest value)."""
    seeds = sorted(set(a) & set(b))
    common = {s: sorted(set(a[s]) & set(b[s])) for s in seeds}
    va = [float(np.mean([a[s][f] for f in common[s]])) for s in seeds]
    vb = [float(np.mean([b[s][f] for f in common[s]])) for s in seeds]
    d = np.subtract(va, vb)
    tol = _tol(va, vb)
    same = bool(np.all(np.abs(d) <= tol))
    if np.ptp(d) > tol:
        return float(d.mean()), float(stats.ttest_rel(va, vb).pvalue), same, tol
    if same:
        return float(d.mean()), 1.0, same, tol
    flips = [abs(sum(s * x for s, x in zip(signs, d))) for signs in itertools.product((-1, 1), repeat=len(d))]
    return float(d.mean()), sum(f >= abs(d.sum()) - tol for f in flips) / len(flips), same, tol


def _direct_welch(va: list[float], vb: list[float]) -> tuple[float, float, bool, float]:
    """(mean(a) - mean(b), p, identical, rounding) of two unpaired samples, by scipy's Welch test, or the
    enumeration of the splits when both sides are constant; identical when both sides hold the same values
    in some order, or are one value throughout."""
    diff, tol = float(np.mean(va) - np.mean(vb)), _tol(va, vb)
    same = len(va) == len(vb) and bool(np.all(np.abs(np.sort(va) - np.sort(vb)) <= tol))
    if np.ptp(va) > tol and np.ptp(vb) > tol:
        return diff, float(stats.ttest_ind(va, vb, equal_var=False).pvalue), same, tol
    if (
        np.ptp(va) > tol or np.ptp(vb) > tol
    ):  # one side constant up to rounding: its variance is 0, and Welch's
        # test is the one-sample test of the other side against it (scipy's Welch on the constant side warned
        # "Precision loss occurred in moment calculation", its spread being floating-point noise or none)
        varied, constant = (va, vb) if np.ptp(va) > tol else (vb, va)
        return diff, float(stats.ttest_1samp(varied, float(np.mean(constant))).pvalue), same, tol
    if abs(diff) <= tol:
        return diff, 1.0, True, tol
    values, n = [*va, *vb], len(va)
    splits = [
        abs(np.mean([values[i] for i in g]) - np.mean([values[i] for i in range(len(values)) if i not in g]))
        for g in itertools.combinations(range(len(values)), n)
    ]
    return diff, sum(s >= abs(diff) - tol for s in splits) / len(splits), same, tol


def _direct(d: dict) -> tuple[float, float, bool, float]:
    """The direct test of a design's a - b: paired over pretraining seeds; a's seed means against the
    reference's fine-tuning scores; or each run's seed means, over the fine-tuning seeds every checkpoint
    has (the design's first run is the replicated one; a mirrored claim is its negation)."""
    a, b = (d["b"], d["a"]) if d.get("mirrored") else (d["a"], d["b"])
    if d["kind"] == "paired":
        out = _direct_paired(a, b)
    else:
        fine = set.intersection(*(set(v) for v in (*a.values(), *b.values())))
        va, vb = ([float(np.mean([run[s][f] for f in sorted(fine)])) for s in sorted(run)] for run in (a, b))
        out = _direct_welch(va, list(b[0].values()) if d["kind"] == "reference" else vb)
    return (-out[0] if d.get("mirrored") else out[0]), *out[1:]


def _direct_holm(p: list[float]) -> list[float]:
    """Holm's step-down: the i-th smallest becomes max over j <= i of (m - j) p_(j), capped at 1."""
    m, order, out, running = len(p), np.argsort(p, kind="stable"), [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def _claims(family: list[dict]) -> list[tuple[ClaimSpec, dict]]:
    """Each design as a claim "a_i beats b_i", and each tested one also as "b_i beats a_i"."""
    out = []
    for i, d in enumerate(family):
        out.append((ClaimSpec(id=f"c{i}", text="", kind="beats", a=f"a{i}", b=f"b{i}"), d))
        if d["kind"] in ("paired", "reference", "unpaired"):
            rev = ClaimSpec(id=f"r{i}", text="", kind="beats", a=f"b{i}", b=f"a{i}")
            out.append((rev, d | {"a": d["b"], "b": d["a"], "mirrored": True}))
    return out


def _expected_status(gain: float, p_holm: float, same: bool, tol: float) -> tuple[str, bool]:
    """The verdict the docs give a tested claim: identical scores read "no difference", a mean difference
    within rounding "undecided", else the direction, significant when the Holm-adjusted p < 0.05."""
    if same:
        return "no difference", False
    if abs(gain) <= tol:
        return "undecided", False
    return ("holds" if gain > 0 else "does not hold"), p_holm < 0.05


def _one_seed_status(d: dict) -> str:
    """One checkpoint each: the direction of the mean paired difference over their fine-tuning seeds, never a
    verdict ("no difference" where every difference is 0 up to rounding, "undecided" where they cancel)."""
    a, b = d["a"][0], d["b"][0]
    common = sorted(set(a) & set(b))
    diffs = [a[f] - b[f] for f in common]
    tol = _tol([a[f] for f in common], [b[f] for f in common])
    gain = -np.mean(diffs) if d["lower"] else np.mean(diffs)
    if all(abs(x) <= tol for x in diffs):
        return "no difference"
    if abs(gain) <= tol:
        return "undecided"
    return "holds in direction" if gain > 0 else "opposite in direction"


def _check_mirrored(got: dict) -> None:
    """A claim stated the other way round (b beats a): the opposite verdict, the same Holm-adjusted p."""
    flip = {"holds": "does not hold", "does not hold": "holds"}
    for cid, mine in got.items():
        if cid.startswith("r"):
            theirs = got["c" + cid[1:]]
            assert mine.status == flip.get(theirs.status, theirs.status)
            assert mine.numbers["p_holm"] == pytest.approx(theirs.numbers["p_holm"])


def _edge(kind: str, a: dict, b: dict) -> dict:
    """A design given explicitly (the `@example`s below): a constant difference over 3 pretraining seeds
    (zero variance between seeds: the exact p 2 / 2^3), one fine-tuning seed per checkpoint, identical scores
    (with a fine-tuning seed one checkpoint has and the other lacks), both sides constant against a reference
    (the exact split p), a constant replicated side against a varied reference (the one-sample test, where
    scipy's Welch test warned), the same values unpaired in another order, one checkpoint each at one fine-tuning
    seed (no test), and a claim not tested."""
    return {"kind": kind, "lower": False, "a": a, "b": b}


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no warning from the claims or their direct test
@settings(max_examples=60, deadline=None)
@given(st.lists(designs(), min_size=1, max_size=5))
@example(
    [
        _edge(
            "paired",
            {s: {0: 71.0 + s, 1: 72.0 + s} for s in range(3)},
            {s: {0: 70.0 + s, 1: 71.0 + s} for s in range(3)},
        )
    ]
)
@example([_edge("paired", {0: {0: 71.0}, 1: {0: 72.0}}, {0: {0: 70.0}, 1: {0: 73.0}})])
@example(
    [_edge("paired", {0: {0: 70.0, 1: 72.0}, 1: {1: 61.0}}, {0: {0: 70.0, 1: 72.0}, 1: {1: 61.0, 4: 60.0}})]
)
@example([_edge("reference", {s: {0: 70.0, 1: 70.0} for s in range(3)}, {0: {0: 72.0, 1: 72.0}})])
@example([_edge("unpaired", {0: {0: 70.0}, 1: {0: 71.0}}, {2: {0: 71.0}, 3: {0: 70.0}})])
@example([_edge("reference", {0: {0: 60.0, 1: 60.0}, 1: {0: 60.0, 1: 60.0}}, {0: {0: 60.0, 1: 60.5}})])
@example([_edge("one seed", {0: {0: 70.0}}, {0: {0: 71.0}}), _edge("untested", {}, {})])
def test_a_family_of_claims_is_the_direct_two_stage_test_with_holm_over_the_tested(family):
    with pytest.MonkeyPatch.context() as monkeypatch:
        claims = _claims(family)
        got = {r.claim.id: r for r in results.check_claims(stand_in_study(monkeypatch, claims))}
    tested = {}
    for claim, d in claims:
        if d["kind"] != "untested" and d["kind"] != "one seed":
            diff, p, same, tol = _direct(d)
            tested[claim.id] = (-diff if d["lower"] else diff, p, same, tol)
    adjusted = dict(zip(tested, _direct_holm([t[1] for t in tested.values()])))
    for claim, d in claims:
        r = got[claim.id]
        event(f"{d['kind']}: {r.status}{' (significant)' * bool(r.significant)}")
        if d["kind"] == "untested":
            assert (r.status, r.significant, r.numbers) == ("not tested", None, {})
        elif d["kind"] == "one seed":  # two checkpoints: a direction at most, outside the family
            assert r.numbers["p_holm"] is None and r.significant is None
            assert r.status == _one_seed_status(d)
        else:
            gain, p, same, tol = tested[claim.id]
            assert r.numbers["diff"].mean == pytest.approx(gain, abs=1e-9)
            assert r.numbers["diff"].p_value == pytest.approx(p, rel=1e-6, abs=1e-12)
            assert r.numbers["p_holm"] == pytest.approx(adjusted[claim.id], rel=1e-6, abs=1e-12)
            assert (r.status, r.significant) == _expected_status(gain, adjusted[claim.id], same, tol)
            assert r.numbers["level"] == {"paired": "pretraining"}.get(d["kind"], d["kind"])
            if d["kind"] == "paired":  # a seed only one run has is left out, and named
                own = {claim.a: sorted(set(d["a"]) - set(d["b"])), claim.b: sorted(set(d["b"]) - set(d["a"]))}
                assert r.numbers.get("left_out", {}) == {run: ks for run, ks in own.items() if ks}
    _check_mirrored(got)
    assert f"over the {len(tested)} tested" in " ".join(r.sentence for r in got.values()) or not tested
