"""A claim whose runs continue different base checkpoints, each trained at one pretraining seed, compares
those base checkpoints, not the bases' objectives: a direction only, outside the Holm family.

A study file may train a CLM base and an MLM base at one seed and continue each at three (`init` naming a
base of one seed gives every continuation seed that one model, `StudySpec.init_seed`). "CLM base + MLM beats
MLM base + MLM" was then tested over the three continuation seeds, and read "Holds at this scale
(significant)": the seeds replicate the continued pretraining, not the two bases, whose one draw each is the
very thing the claim is about. Expected numbers are scipy's and statsmodels', from the scores as given.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from fake_study import small_spec
from scipy import stats
from tests.eval.statsref import statsmodels_holm
from tests.study.study_fixtures import ONE_SEED_BASE_RUNS, SEEDS, stand_in_study

from encoderlab.study import results
from encoderlab.study.report import _claims_note
from encoderlab.study.spec import ClaimSpec

RUNS = ONE_SEED_BASE_RUNS
BASES = ClaimSpec(
    id="bases", text="CLM base + MLM beats MLM base + MLM", kind="beats", a="clmcpt", b="mlmcpt"
)
SHARED = ClaimSpec(id="shared", text="one base, two continuations", kind="beats", a="mlmcpt2", b="mlmcpt3")
SCRATCH = ClaimSpec(id="scratch", text="MLM beats CLM", kind="beats", a="mlm", b="clm")


def _run(offset: float, step: float) -> dict[int, dict[int, float]]:
    """Scores per pretraining seed and fine-tuning seed: `offset` above 60, each seed `step` higher."""
    return {k: {f: 60.0 + offset + step * k + 0.4 * f * (k + 1) for f in range(3)} for k in SEEDS}


DESIGNS = {
    BASES: {"kind": "paired", "lower": False, "a": _run(5.0, 1.0), "b": _run(0.0, 1.1)},
    SHARED: {"kind": "paired", "lower": False, "a": _run(2.0, 1.0), "b": _run(0.0, 1.3)},
    SCRATCH: {"kind": "paired", "lower": False, "a": _run(3.0, 0.8), "b": _run(0.0, 1.2)},
}


def _means(scores: dict) -> list[float]:
    return [sum(v.values()) / len(v) for _, v in sorted(scores.items())]


def _study(monkeypatch):
    """The stand-in study of `DESIGNS` (each run in one claim only: the stand-in maps a run to one design's
    scores) with `RUNS` as its spec, which says which runs continue which base."""
    data = stand_in_study(monkeypatch, list(DESIGNS.items()))
    data.spec = replace(small_spec(), runs=RUNS, cka=(), claims=tuple(DESIGNS), baseline="mlm")
    return data


def test_runs_continuing_different_one_seed_bases_give_a_direction_outside_the_family(monkeypatch):
    got = {r.claim.id: r for r in results.check_claims(_study(monkeypatch))}
    bases = got["bases"]
    p = stats.ttest_rel(*(_means(DESIGNS[BASES][s]) for s in "ab")).pvalue
    assert p < 0.05  # over the continuation seeds alone it would read significant
    assert bases.status == "holds in direction" and bases.significant is None
    assert bases.numbers["level"] == "pretraining" and bases.numbers["one_seed_bases"] == ["clmb", "mlmb"]
    assert bases.numbers["p_holm"] is None and "Holm-adjusted" not in bases.sentence
    lead = "Points the claim's way at this scale, for base checkpoints trained at one"  # a study of no paper
    assert bases.sentence.startswith(lead)
    assert "CLMB and MLMB are trained at one pretraining seed" in bases.sentence

    # the two other claims are the family: Holm over their two p-values alone
    ps = [stats.ttest_rel(*(_means(DESIGNS[c][s]) for s in "ab")).pvalue for c in (SHARED, SCRATCH)]
    holm = statsmodels_holm(ps)
    for cid, want in zip(("shared", "scratch"), holm):
        assert got[cid].numbers["p_holm"] == pytest.approx(want)
        assert "one_seed_bases" not in got[cid].numbers  # one base shared (paper 2's design), or none
        assert "over the 2 tested claims" in got[cid].sentence
    note = _claims_note(list(got.values()))
    assert note.startswith("2 claims of the study enter Holm's correction")
    assert "1 claim whose runs continue different base checkpoints" in note


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        ("clmcpt", "mlmcpt", ("clmb", "mlmb")),
        ("clmcpt", "mlm", ("clmb",)),  # a from-scratch run against a continuation of one base
        ("mlmcpt", "mlmb", ()),  # a continuation against its one base: the reference level's own words
        ("mlmcpt", "mlmcpt2", ()),
        ("mlm", "clm", ()),
    ],
)
def test_which_bases_a_claims_seeds_do_not_replicate(a, b, want):
    spec = replace(small_spec(), runs=RUNS, cka=(), claims=(), baseline="mlm")
    assert results.one_seed_bases(spec, a, b) == want
    assert set(results.one_seed_bases(spec, b, a)) == set(want)
