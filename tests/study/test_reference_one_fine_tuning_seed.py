"""A run at several pretraining seeds against one reference checkpoint scored at ONE fine-tuning seed.

The reference's single score carries fine-tuning noise like any other. Until 2026-12-04 it was taken as
exact (the one-sample t-test of the replicated run's seed means against it), which leaves that noise out:
under "no difference" it rejected far more often than 5%. Now its fine-tuning variance is the replicated
run's pooled within-checkpoint variance, with Welch-Satterthwaite degrees of freedom; where no checkpoint
has two fine-tuning seeds there is no estimate, and the claim reads "cannot tell".
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from encoderlab.study.nested import compare_runs
from encoderlab.study.results import _PREFIX, _Tested, _unit, _verdict

MANY = {
    0: {0: 71.2, 1: 72.9, 2: 70.4},
    1: {0: 73.8, 1: 72.1, 2: 74.6},
    2: {0: 72.5, 1: 70.7, 2: 71.9},
}
"""The replicated run: 3 pretraining seeds x 3 fine-tuning seeds."""
ONE = {0: {0: 70.1}}
"""The reference: one checkpoint, scored at fine-tuning seed 0 only."""


def _scipy_p(many: dict, ref: float) -> float:
    """The same test computed independently: scipy's Welch test from summary statistics, with the reference
    side given the pooled variance and (its df + 1) observations, so that its variance of the mean is the
    pooled variance and its degrees of freedom the pooled df."""
    means = [
        many[k][0] for k in sorted(many)
    ]  # each seed's mean over the fine-tuning seeds the reference has
    groups = [np.array(list(v.values())) for v in many.values()]
    df = sum(len(g) - 1 for g in groups)
    pooled = sum(((g - g.mean()) ** 2).sum() for g in groups) / df
    out = stats.ttest_ind_from_stats(
        np.mean(means),
        np.std(means, ddof=1),
        len(means),
        ref,
        np.sqrt(pooled * (df + 1)),
        df + 1,
        equal_var=False,
    )
    # the same by hand: t over the summed variances, Welch-Satterthwaite df
    va, vb = np.var(means, ddof=1) / len(means), pooled
    t = (np.mean(means) - ref) / np.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (len(means) - 1) + vb**2 / df)
    assert out.pvalue == pytest.approx(2 * stats.t.sf(abs(t), dof))
    return float(out.pvalue)


def test_a_one_score_reference_borrows_the_pooled_fine_tuning_variance():
    nested = compare_runs(MANY, ONE)
    assert nested.level == "reference" and nested.borrowed_df == 6
    want = _scipy_p(MANY, 70.1)
    assert nested.diff.p_value == pytest.approx(want)
    exact = stats.ttest_1samp([MANY[k][0] for k in range(3)], 70.1).pvalue  # the old, anticonservative p
    assert want > 1.4 * exact
    lo, hi = nested.diff.ci_low, nested.diff.ci_high
    flipped = compare_runs(ONE, MANY)  # the reference as run a: the same test, negated
    assert flipped.diff.p_value == pytest.approx(want) and (flipped.diff.ci_low, flipped.diff.ci_high) == (
        pytest.approx(-hi),
        pytest.approx(-lo),
    )
    said = _unit(nested, "MLM", "Start", None, nested.diff)
    assert (
        "Start's checkpoint was scored at one fine-tuning seed: its fine-tuning variance is the pooled"
        in said
    )
    assert (
        "of MLM's checkpoints (the same fine-tuning protocol, assumed equally noisy; 6 degrees of freedom)"
        in said
    )


def test_a_reference_with_two_fine_tuning_seeds_is_still_plain_welch():
    ref = {0: {0: 70.1, 1: 69.2}}
    nested = compare_runs(MANY, ref)
    means = [np.mean([MANY[k][0], MANY[k][1]]) for k in range(3)]
    assert nested.borrowed_df is None
    assert nested.diff.p_value == pytest.approx(stats.ttest_ind(means, [70.1, 69.2], equal_var=False).pvalue)


def test_without_an_estimate_of_the_reference_noise_the_claim_cannot_tell():
    many = {k: {0: v[0]} for k, v in MANY.items()}  # every checkpoint at one fine-tuning seed too
    nested = compare_runs(many, ONE)
    assert nested.level == "reference" and nested.diff is None and nested.borrowed_df == 0
    assert _verdict(_Tested(nested, None, True), None) == ("undecided", None)
    assert nested.reference_phrase("MLM", "Start") == (
        "cannot tell: Start's checkpoint was scored at one fine-tuning seed and no checkpoint of MLM at two, so "
        "the reference's fine-tuning noise has no estimate"
    )
    assert _PREFIX["undecided"] == "Undecided at this scale"


def test_the_borrowed_test_keeps_its_level_under_no_difference():
    """Simulated with pretraining and fine-tuning noise both sd 1, the reference drawn from the same mean: the
    borrowed test rejects at about 5%; taking the one score as exact rejected at over twice that."""
    rng = np.random.default_rng(11)
    new = old = 0
    sims = 1500
    for _ in range(sims):
        many = {k: {f: p + rng.normal() for f in range(3)} for k, p in enumerate(rng.normal(size=3))}
        ref = rng.normal()
        new += compare_runs(many, {0: {0: ref}}).diff.p_value < 0.05
        old += stats.ttest_1samp([many[k][0] for k in range(3)], ref).pvalue < 0.05
    assert 0.02 < new / sims < 0.08 and old / sims > 0.1


def test_with_no_noise_anywhere_the_exact_one_sample_p_stands():
    """Every checkpoint's fine-tuning scores identical (pooled variance 0) and the seed means equal: the
    reference's noise is shown to be nil, so the exact permutation p of the one-sample case stands."""
    from encoderlab.eval.stats import pooled_variance, welch_borrowed

    assert pooled_variance([[2.0, 2.0], [2.0, 2.0, 2.0], [5.0]]) == (0.0, 3)
    assert pooled_variance([[1.0], [4.0]]) is None
    out = welch_borrowed([2.0, 2.0, 2.0], 1.0, 0.0, 3)
    assert out.degenerate and out.p_value == 0.25


def test_results_json_holds_the_borrowed_degrees_of_freedom_the_sentence_quotes(tmp_path, monkeypatch):
    """The claim's sentence quoted "6 degrees of freedom" but `numbers` in results.json did not hold them."""
    from fake_study import backend, small_spec

    from encoderlab.study import results
    from encoderlab.study.data import load_study
    from encoderlab.study.runner import run_study

    run_study(small_spec(), tmp_path, backend(), progress=False)
    data = load_study(tmp_path)
    claim = next(c for c in data.spec.claims if c.kind == "beats")
    monkeypatch.setattr(results, "_scores", lambda _data, run, _measure: MANY if run == claim.a else ONE)
    (out,) = [c for c in results.check_claims(data) if c.claim.id == claim.id]
    assert out.numbers["level"] == "reference" and out.numbers["borrowed_df"] == 6
    assert "6 degrees of freedom" in out.sentence
    monkeypatch.setattr(results, "_scores", lambda _data, run, _measure: MANY if run == claim.a else MANY)
    (plain,) = [c for c in results.check_claims(data) if c.claim.id == claim.id]
    assert "borrowed_df" not in plain.numbers  # not a reference comparison: nothing borrowed
