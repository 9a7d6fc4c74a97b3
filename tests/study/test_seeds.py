"""Pretraining seeds as an axis: run ids, data order, claims over pretraining seeds, Holm, LR range."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import fake_study
import numpy as np
import pytest
from fake_study import backend, pair_spec, small_spec
from scipy import stats
from tests.eval.statsref import statsmodels_holm

from encoderlab.errors import UserError
from encoderlab.study.graph import build_graph
from encoderlab.study.nested import compare_runs
from encoderlab.study.nodes import run_config
from encoderlab.study.report import write_report
from encoderlab.study.runner import run_study
from encoderlab.study.spec import ClaimSpec, RunSpec


def _claims(out) -> dict[str, dict]:
    return {c["id"]: c for c in json.loads((out / "report" / "results.json").read_text())["claims"]}


def _seeded(**changes):
    """The fake study with three pretraining seeds for every run."""
    return small_spec(seeds=(0, 1, 2), **changes)


@pytest.fixture(scope="module")
def seeded_study(tmp_path_factory):
    """The whole fake study at three pretraining seeds, run once for the tests that only read it."""
    out = tmp_path_factory.mktemp("seeded")
    run_study(_seeded(), out, backend(), progress=False)
    return out


def test_claims_are_tested_when_runs_have_several_pretraining_seeds(seeded_study):
    # Run ids become name/sN; the claims name runs and must find them (they used to read "Not tested").
    tmp_path = seeded_study
    claims = _claims(tmp_path)
    for cid in ("mlm-sc", "mlm-qa", "early", "stable"):
        assert claims[cid]["status"] != "not tested", claims[cid]["sentence"]
        assert claims[cid]["numbers"]["level"] == "pretraining"
        assert claims[cid]["numbers"]["pretraining_seeds"] == [0, 1, 2]
    assert claims["mlm-sc"]["status"] == "holds" and claims["mlm-sc"]["significant"] is True
    assert "means over 3 pretraining seeds" in claims["mlm-sc"]["sentence"]
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Results per run, over pretraining seeds" in md and "| MLM-40/s1 |" in md


def test_large_pretraining_noise_is_not_a_difference_of_objectives(tmp_path, monkeypatch):
    """Fine-tuning noise is small (+-0.5) and each checkpoint of MLM-40 beats CLM on SC by ~10, but the
    pretraining seeds move whole checkpoints by up to 12 points: across three pretraining runs per
    objective the difference is not established, although the seed-0 checkpoints differ significantly."""
    effects = {("clm", 0): -2.0, ("clm", 1): 10.0, ("clm", 2): 3.0, ("mlm40", 1): -3.0, ("mlm40", 2): -9.0}
    monkeypatch.setattr(fake_study, "PRETRAIN_EFFECT", effects)
    claim = ClaimSpec(id="mlm-sc", text="MLM beats CLM on SC", kind="beats", a="mlm40", b="clm", family="sc")
    run_study(pair_spec(seeds=(0, 1, 2), claims=(claim,)), tmp_path, backend(), progress=False)
    (result,) = _claims(tmp_path).values()
    assert result["status"] != "holds" or result["significant"] is not True
    assert result["sentence"].startswith(
        "Undecided at this scale (same direction as the claim, not significant)"
    )
    seed0 = result["numbers"]["checkpoint"]
    assert seed0["ci_low"] > 0 and seed0["p_value"] < 0.01  # one checkpoint each: "significant"
    diff = result["numbers"]["diff"]
    assert diff["n"] == 3 and diff["ci_low"] < 0 < diff["ci_high"]


def test_the_two_stage_test_is_the_repeated_measures_anova_over_pretraining_seeds():
    """Means over fine-tuning seeds, then a paired t over pretraining seeds: t^2 and p are those of
    statsmodels' repeated-measures ANOVA with the pretraining seed as subject (balanced design)."""
    import pandas as pd
    from statsmodels.stats.anova import AnovaRM

    rng = np.random.default_rng(0)
    seed_shift = rng.normal(0, 3, size=4)
    a = {k: {f: 70 + seed_shift[k] + rng.normal(0, 1) for f in range(5)} for k in range(4)}
    b = {k: {f: 68 + seed_shift[k] + rng.normal(0, 2) for f in range(5)} for k in range(4)}
    nested = compare_runs(a, b)
    rows = [
        {"seed": k, "arm": arm, "score": v}
        for arm, scores in (("a", a), ("b", b))
        for k, by_ft in scores.items()
        for v in by_ft.values()
    ]
    anova = AnovaRM(pd.DataFrame(rows), "score", "seed", within=["arm"], aggregate_func="mean").fit()
    f, p = anova.anova_table.loc["arm", ["F Value", "Pr > F"]]
    assert nested.level == "pretraining" and nested.diff.n == 4
    assert nested.diff.t**2 == pytest.approx(f) and nested.diff.p_value == pytest.approx(p)
    means = [np.mean(list(a[k].values())) - np.mean(list(b[k].values())) for k in range(4)]
    assert nested.diff.p_value == pytest.approx(stats.ttest_1samp(means, 0).pvalue)


def test_holm_decides_significance_over_the_studys_claims(seeded_study):
    tmp_path = seeded_study  # seeded: at one seed there is no family (test_one_seed_claims)
    claims = [c for c in _claims(tmp_path).values() if c["numbers"].get("p_holm") is not None]
    raw = [c["numbers"]["diff"]["p_value"] for c in claims]
    assert [c["numbers"]["p_holm"] for c in claims] == pytest.approx(statsmodels_holm(raw))
    assert all(c["significant"] == (c["numbers"]["p_holm"] < 0.05) for c in claims)
    md = (tmp_path / "report" / "report.md").read_text()
    assert "Holm-adjusted" in md and "one family of tests" in md and "Uncorrected" in md


def test_stability_uses_the_papers_lr_range_by_default(tmp_path):
    """A grid from 1e-5 to 5e-4: the spread is taken over 1e-5..1e-4 only, where MLM-40 is flat in the
    fake world (its LR effect is ~2e4 x |lr - 1e-4|), so the LRs above, where it collapses, do not count."""
    spec = pair_spec()
    claim = ClaimSpec(id="stable", text="CLM is more stable", kind="more_stable", a="clm", b="mlm40")
    spec = replace(spec, eval=replace(spec.eval, lrs=(1e-5, 5e-5, 1e-4, 5e-4)), claims=(claim,))
    run_study(spec, tmp_path, backend(), progress=False)
    (result,) = _claims(tmp_path).values()
    assert "over the LRs 1e-05, 5e-05, 0.0001 (range 1e-05 to 0.0001)" in result["sentence"]
    assert result["numbers"]["b"]["mean"] < 3  # MLM-40's spread inside the range (8+ with 5e-4 in it)


def test_every_arm_at_one_pretraining_seed_reads_the_same_data_order():
    spec = _seeded(runs=(*small_spec().runs, RunSpec(name="cpt", recipe="cpt-mlm", init="clm", group="cpt")))
    graph = build_graph(spec, backend())
    runs = {n.name.split("/", 1)[1]: run_config(n) for n in graph if n.kind == "pretrain"}
    for seed in (0, 1, 2):
        at_seed = {name: cfg for name, cfg in runs.items() if name.endswith(f"/s{seed}")}
        assert len({cfg.data.seed for cfg in at_seed.values()}) == 1  # arms, the twin and the CPT run alike
    assert len({runs[f"mlm40/s{k}"].data.seed for k in (0, 1, 2)}) == 3  # another seed: another order
    assert runs["mlm40-s2/s0"].seed != runs["mlm40/s0"].seed  # the twin: own init and masks, same order
    assert graph.nodes["pretrain/cpt/s1"].deps == ("prepare/main", "pretrain/clm/s1")


def test_runs_may_have_their_own_pretraining_seeds():
    runs = tuple(replace(r, seeds=(0, 1, 2)) if r.name in ("mlm40", "clm") else r for r in small_spec().runs)
    graph = build_graph(small_spec(runs=runs), backend())
    pretrain = sorted(n.name for n in graph if n.kind == "pretrain")
    assert "pretrain/mlm40/s2" in pretrain and "pretrain/clm/s1" in pretrain and "pretrain/mlm20" in pretrain
    two = tuple(replace(r, seeds=(0, 1)) if r.name == "clm" else r for r in small_spec().runs)
    with pytest.raises(
        UserError, match="run cpt continues clm at pretraining seeds \\[0, 1, 2\\], but clm is"
    ):
        small_spec(runs=(*two, RunSpec(name="cpt", recipe="cpt-mlm", init="clm", seeds=(0, 1, 2))))


def test_a_run_at_several_seeds_continues_a_start_model_trained_at_one():
    """Paper 2's setting: one start model, its continued pretraining replicated at several seeds."""
    cpt = RunSpec(name="cpt", recipe="cpt-mlm", init="clm", group="cpt", data="main", seeds=(0, 1, 2))
    graph = build_graph(small_spec(runs=(*small_spec().runs, cpt)), backend())
    assert [graph.nodes[f"pretrain/cpt/s{k}"].deps for k in (0, 1, 2)] == [
        ("prepare/main", "pretrain/clm")
    ] * 3
    seeds = {run_config(graph.nodes[f"pretrain/cpt/s{k}"]).seed for k in (0, 1, 2)}
    assert len(seeds) == 3  # each continuation its own masks
    start = tuple(replace(r, seeds=(1,)) if r.name == "clm" else r for r in small_spec().runs)
    with pytest.raises(UserError, match="must not be below its start model's 1"):
        small_spec(runs=(*start, cpt))


def test_report_configuration_names_the_runs_trained_at_their_own_seeds(tmp_path):
    # The configuration table said "pretraining seeds 0" for a study whose compared runs had 3 seeds.
    base = small_spec()
    runs = tuple(replace(r, seeds=(0, 1, 2)) if r.name in ("mlm40", "clm") else r for r in base.runs)
    run_study(replace(base, runs=runs), tmp_path, backend(), progress=False)
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| pretraining seeds | 0 (mlm40, clm: 0, 1, 2) |" in md


def test_an_untested_difference_is_a_direction_not_a_verdict(tmp_path, monkeypatch):
    """One pretraining seed and one fine-tuning seed: no test, so the opposite direction is not "does not
    hold" (that verdict is kept for a significant difference against the claim), and equal scores are no
    difference rather than a direction."""
    claims = (
        ClaimSpec(id="with", text="MLM beats CLM on SC", kind="beats", a="mlm40", b="clm", family="sc"),
        ClaimSpec(id="against", text="CLM beats MLM on SC", kind="beats", a="clm", b="mlm40", family="sc"),
        ClaimSpec(id="same", text="MLM-40 beats its twin", kind="beats", a="mlm40", b="twin", family="sc"),
    )
    monkeypatch.setattr(fake_study, "SCORED_AS", {"twin": "mlm40"})
    spec = small_spec(claims=claims, runs=(*small_spec().runs, fake_study.TWIN))
    run_study(replace(spec, eval=replace(spec.eval, seeds=(0,))), tmp_path, backend(), progress=False)
    found = _claims(tmp_path)
    assert all(c["numbers"]["diff"] is None and c["significant"] is None for c in found.values())
    assert found["with"]["status"] == "holds in direction"
    assert found["against"]["status"] == "opposite in direction"
    assert found["against"]["sentence"].startswith(
        "Points opposite to the claim at this scale, for one pretraining seed (two checkpoints"
    )
    assert found["same"]["status"] == "no difference"
    assert found["same"]["sentence"].startswith(
        "Undecided at this scale, for one pretraining seed (identical"
    )


@pytest.mark.parametrize(
    ("b", "status"),
    [
        ({0: {0: 70.0, 1: 72.0}}, "no difference"),  # every paired difference 0: identical scores
        ({0: {0: 71.0, 1: 71.0}}, "undecided"),  # differences -1 and +1: mean 0, scores not identical
    ],
)
def test_a_zero_mean_difference_is_identical_scores_only_when_every_difference_is_zero(b, status):
    from encoderlab.study.results import _PREFIX, _Tested, _verdict

    nested = compare_runs({0: {0: 70.0, 1: 72.0}}, b)
    assert nested.diff.mean == 0 and nested.diff.p_value == 1.0
    assert _verdict(_Tested(nested, nested.diff, False), 1.0) == (status, None)  # one seed: no test
    over_seeds = replace(nested, level="pretraining")
    assert _verdict(_Tested(over_seeds, nested.diff, False), 1.0) == (status, False)
    assert ("identical scores" in _PREFIX[status]) == (status == "no difference")


def test_a_run_at_several_seeds_is_tested_against_a_one_seed_run_as_a_fixed_reference():
    """A continued run at three pretraining seeds against the one checkpoint it started from: every seed
    counts (Welch's test of its seed means against the reference's fine-tuning scores), not only the
    seed both have."""
    rng = np.random.default_rng(3)
    many = {k: {f: 71 + k + rng.normal(0, 1) for f in range(5)} for k in range(3)}
    one = {0: {f: 69 + rng.normal(0, 1) for f in range(5)}}
    nested = compare_runs(many, one)
    means = [np.mean(list(many[k].values())) for k in range(3)]
    ref = stats.ttest_ind(means, list(one[0].values()), equal_var=False)
    assert nested.level == "reference" and nested.reference == "b" and nested.pretraining_seeds == [0, 1, 2]
    assert nested.diff.p_value == pytest.approx(ref.pvalue) and nested.diff.t == pytest.approx(ref.statistic)
    assert nested.checkpoint is not None and nested.checkpoint.n == 5  # the seed-0 pair, still shown
    flipped = compare_runs(one, many)  # the reference on the other side: the same test, negated
    assert flipped.reference == "a" and flipped.diff.mean == pytest.approx(-nested.diff.mean)
    assert flipped.diff.p_value == pytest.approx(nested.diff.p_value)
    assert compare_runs({0: many[0]}, one).level == "fine-tuning"  # one seed each: two checkpoints


def test_a_claim_against_a_one_seed_run_says_it_is_about_one_model(tmp_path):
    runs = tuple(replace(r, seeds=(0,)) if r.name == "clm" else r for r in small_spec().runs)
    claim = ClaimSpec(id="mlm-sc", text="MLM beats CLM on SC", kind="beats", a="mlm40", b="clm", family="sc")
    run_study(pair_spec(runs, seeds=(0, 1, 2), claims=(claim,)), tmp_path, backend(), progress=False)
    (result,) = _claims(tmp_path).values()
    assert result["numbers"]["level"] == "reference" and result["numbers"]["pretraining_seeds"] == [0, 1, 2]
    assert "at this scale, against one checkpoint" in result["sentence"]
    assert re.search(r"Welch's p (=|<) ", result["sentence"])
    assert (
        "a claim about MLM-40's objective against that one model, not against CLM's objective"
        in (result["sentence"])
    )


def test_runs_without_two_common_pretraining_seeds_are_compared_unpaired_over_their_own():
    """Both runs replicated, at seeds they do not share (or share one of): Welch's test of each run's seed
    means, not "no finished results" (disjoint seeds) nor the one shared seed's two checkpoints alone."""
    rng = np.random.default_rng(5)
    a = {k: {f: 70 + rng.normal(0, 2) + rng.normal(0, 0.5) for f in range(3)} for k in (0, 1, 2)}
    b = {k: {f: 66 + rng.normal(0, 2) + rng.normal(0, 0.5) for f in range(3)} for k in (3, 4)}
    for bs in (b, {1: b[3], 4: b[4]}):
        nested = compare_runs(a, bs)
        means = [[np.mean(list(run[k].values())) for k in sorted(run)] for run in (a, bs)]
        ref = stats.ttest_ind(*means, equal_var=False)
        assert nested is not None and nested.level == "unpaired" and (nested.a.n, nested.b.n) == (3, 2)
        assert nested.diff.p_value == pytest.approx(ref.pvalue) and nested.diff.t == pytest.approx(
            ref.statistic
        )
        assert (nested.checkpoint is None) == (1 not in bs)
    one_each = compare_runs({0: a[0]}, {3: b[3]})  # one checkpoint each, other seeds: still two checkpoints
    assert one_each.level == "fine-tuning" and one_each.diff.n == 3


def test_a_claim_says_which_pretraining_seeds_it_left_out_or_that_it_is_unpaired(tmp_path):
    claim = ClaimSpec(id="mlm-sc", text="MLM beats CLM on SC", kind="beats", a="mlm40", b="clm", family="sc")
    for clm_seeds, level in (((1, 2), "pretraining"), ((3, 4), "unpaired")):
        runs = tuple(
            replace(r, seeds={"mlm40": (0, 1, 2), "clm": clm_seeds}.get(r.name, r.seeds))
            for r in small_spec().runs
        )
        out = tmp_path / level
        run_study(pair_spec(runs, claims=(claim,)), out, backend(), progress=False)
        (result,) = _claims(out).values()
        assert result["numbers"]["level"] == level, result["sentence"]
        if level == "pretraining":
            assert result["numbers"]["left_out"] == {"mlm40": [0]}
            assert "left out: MLM-40's pretraining seed 0 (CLM has no results there)" in result["sentence"]
        else:
            assert "means over 3 and 2 pretraining seeds" in result["sentence"] and re.search(
                r"Welch's p (=|<) ", result["sentence"]
            )
            assert "unpaired: the runs share no pretraining seed" in result["sentence"]


def test_an_early_claim_without_a_checkpoint_in_common_says_the_study_cannot_show_it(tmp_path):
    # Before: "Not tested: the study has no finished results for it yet", for a study that never evaluates one.
    runs = tuple(replace(r, eval_steps=()) if r.name == "mlm40" else r for r in small_spec().runs)
    claim = ClaimSpec(id="early", text="CLM learns faster early", kind="faster_early", a="clm", b="mlm40")
    run_study(pair_spec(runs, claims=(claim,)), tmp_path, backend(), progress=False)
    (result,) = _claims(tmp_path).values()
    assert result["status"] == "not tested"
    assert (
        "CLM is evaluated at step 20, MLM-40 at no intermediate checkpoint, so no checkpoint is shared and this "
        "claim cannot be tested (give both runs a step in eval_steps)"
    ) in result["sentence"]


def test_an_early_claim_and_the_data_efficiency_figure_name_the_tasks_checkpoints_were_scored_on(tmp_path):
    # Before: "on the average over tasks at step 20" for checkpoints scored on one task of the four,
    # which reads as the final models' average.
    spec = pair_spec(
        claims=(
            ClaimSpec(id="early", text="CLM learns faster early", kind="faster_early", a="clm", b="mlm40"),
        )
    )
    spec = replace(spec, eval=replace(spec.eval, checkpoint_tasks=("ner",)))
    run_study(spec, tmp_path, backend(), progress=False)
    (result,) = _claims(tmp_path).values()
    assert " on ner at step 20 " in result["sentence"], result["sentence"]
    assert "average over tasks" not in result["sentence"]
    write_report(tmp_path)  # with figures (the fake backend's report node draws none)
    md = (tmp_path / "report" / "report.md").read_text()
    assert "the checkpoints were fine-tuned on: ner at LR 0.0001." in md


def test_paired_scores_equal_but_for_rounding_are_no_difference():
    """Scores that agree but for the last bit (a family mean of 0.1 + 0.2 against 0.3) gave a mean
    difference of +3e-17, read as a direction: "Undecided (same direction as the paper)"."""
    from encoderlab.study.results import _Tested, _verdict

    nested = compare_runs({0: {0: 0.1 + 0.2, 1: 0.7}}, {0: {0: 0.3, 1: 0.7}})
    assert nested.diff.mean != 0
    assert _verdict(_Tested(nested, nested.diff, nested.diff.mean > 0), 1.0) == ("no difference", None)


@pytest.mark.parametrize(
    ("a", "b", "status"),
    [  # 0.1 + 0.2 is 0.3 but for the last bit: one score list summed in another order
        ({0: {0: 0.1 + 0.2}}, {0: {0: 0.3}}, "no difference"),  # no test: it pointed a direction
        ({k: {0: v} for k, v in enumerate((0.1 + 0.2, 0.5, 0.9))}, {3: {0: 0.9}, 4: {0: 0.5}, 5: {0: 0.3}},
         "no difference"),  # unpaired, one list in two orders: it read undecided, in a direction
        ({k: {0: v} for k, v in enumerate((0.3, 0.5, 0.9))}, {3: {0: 0.9}, 4: {0: 0.5}, 5: {0: 0.3}},
         "no difference"),  # the same, exactly: it read undecided
        ({0: {0: 0.1 + 0.2}, 1: {0: 0.7}}, {0: {0: 0.7}, 1: {0: 0.3}}, "undecided"),  # +x and -x: no direction
    ],
)  # fmt: skip
def test_a_mean_difference_within_rounding_has_no_direction(a, b, status):
    """A mean difference of 1e-17 is rounding, judged against the scores' size (`Nested.rounding`): the
    same values on both sides are no difference, and paired differences that cancel undecided, with no
    direction either way (they read "holds in direction", or undecided "in the same direction")."""
    from encoderlab.study.results import _Tested, _verdict

    nested = compare_runs(a, b)
    gain = nested.diff
    holds = gain.mean > 0 if gain is not None else nested.a.mean > nested.b.mean
    assert _verdict(_Tested(nested, gain, holds), 1.0)[0] == status


def test_a_left_out_seed_where_the_other_run_has_results_at_other_fine_tuning_seeds_says_so():
    """Seed 2 of a is left out because b's seed-2 checkpoint was fine-tuned at other seeds, not because b has
    no results there; seed 3 of a has no counterpart at all. Before, both read "(b has no results there)"."""
    a = {k: {0: 70.0 + k, 1: 71.0 + k} for k in (0, 1, 2, 3)}
    b = {k: {0: 66.0 + k, 1: 67.5 + k} for k in (0, 1)} | {2: {5: 60.0, 6: 61.0}}
    nested = compare_runs(a, b)
    assert nested.level == "pretraining" and nested.pretraining_seeds == [0, 1]
    assert nested.left_out == {"a": [2, 3], "b": [2]} and nested.unmatched == {"a": [2], "b": [2]}
    assert nested.left_out_phrase("A", "B") == (
        "; left out: A's pretraining seed 3 (B has no results there)"
        "; left out: A's pretraining seed 2 (B has results there only at other fine-tuning seeds)"
        "; left out: B's pretraining seed 2 (A has results there only at other fine-tuning seeds)"
    )


def test_runs_sharing_seeds_but_not_fine_tuning_seeds_are_compared_unpaired_not_as_one_checkpoint():
    """Both runs at pretraining seeds 0, 1 and 2, but only seed 0's checkpoints share fine-tuning seeds (a
    report rebuilt while evaluations are missing): each run's three checkpoints still replicate its
    objective, so Welch's test of their means (each over its own fine-tuning seeds), not seed 0's two
    checkpoints alone, which the report called "one pretraining seed: this compares two checkpoints"."""
    from encoderlab.study.results import _unit

    a = {k: {f: 70.0 + k + 0.1 * f for f in (0, 1)} for k in range(3)}
    b = {0: {0: 69.0, 1: 69.2}, 1: {2: 70.0, 3: 70.1}, 2: {2: 71.0, 3: 71.2}}
    nested = compare_runs(a, b)
    means = [[np.mean(list(run[k].values())) for k in range(3)] for run in (a, b)]
    ref = stats.ttest_ind(*means, equal_var=False)
    assert nested.level == "unpaired" and (nested.a.n, nested.b.n) == (3, 3) and nested.own_fine_tuning
    assert nested.diff.p_value == pytest.approx(ref.pvalue) and nested.diff.mean == pytest.approx(
        np.mean(means[0]) - np.mean(means[1])
    )
    said = _unit(nested, "MLM", "CLM", None, nested.diff)
    assert "the runs share pretraining seeds 0, 1, 2, but at fewer than two of them" in said
    assert "the mean over its own fine-tuning seeds" in said and "one pretraining seed" not in said


def test_a_seed_left_out_of_a_reference_comparison_is_named():
    """Against a one-seed reference, a seed of the replicated run scored at none of the reference's
    fine-tuning seeds (an evaluation missing mid-study) drops out of the test: the sentence names it, as a
    paired test names its left-out seeds. Before, it read "over 2 pretraining seeds" of a run trained at 3."""
    from encoderlab.study.results import _unit

    many = {0: {0: 71.0, 1: 71.5}, 1: {0: 72.0, 1: 72.4}, 2: {5: 73.0}}
    nested = compare_runs(many, {0: {0: 69.0, 1: 69.6}})
    assert (
        nested.level == "reference" and nested.pretraining_seeds == [0, 1] and nested.left_out == {"a": [2]}
    )
    said = _unit(nested, "MLM", "Start", None, nested.diff)
    assert "left out: MLM's pretraining seed 2 (scored at none of Start's fine-tuning seeds)" in said


def test_a_seed_left_out_of_a_one_checkpoint_each_comparison_is_named():
    """MLM at two pretraining seeds against one Start checkpoint, but MLM's seed-1 checkpoint was fine-tuned at
    none of Start's fine-tuning seeds: only the seed-0 checkpoints can be compared. Before, the sentence said
    "one pretraining seed" and nothing of MLM's seed 1, and `numbers.left_out` was empty."""
    from encoderlab.study.results import _unit

    many = {0: {0: 71.0, 1: 71.5, 2: 70.9}, 1: {5: 72.0, 6: 72.4}}
    one = {0: {0: 69.0, 1: 69.6, 2: 69.1}}
    for a, b, la, lb in ((many, one, "MLM", "Start"), (one, many, "Start", "MLM")):
        nested = compare_runs(a, b)
        assert nested.level == "fine-tuning" and nested.diff.n == 3
        assert nested.left_out == {("a" if a is many else "b"): [1]}
        said = _unit(nested, la, lb, None, nested.diff)
        assert said.endswith(
            "; left out: MLM's pretraining seed 1 (scored at none of Start's fine-tuning seeds)"
        )
    assert compare_runs({0: many[0]}, {3: one[0]}).left_out == {}  # one checkpoint each: nothing left out
