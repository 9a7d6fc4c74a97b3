"""Paper 1's reported averages beside a study's (`study/reported.py`)."""

from __future__ import annotations

from encoderlab.eval.stats import summarize
from encoderlab.eval.suites import suite_tasks
from encoderlab.eval.tasks import TASKS
from encoderlab.study.catalog import get_study
from encoderlab.study.reported import FAMILIES, PAPER1, reported_rows
from encoderlab.study.table import Cell, ResultsTable
from encoderlab.words import decimals, estimate_text


def _table(scores: dict[str, dict[str, list[float]]], drop: str | None = None) -> ResultsTable:
    """A results table of models whose family columns hold the given per-seed scores; every paper task
    has results except `drop`."""
    tasks = [t for t in suite_tasks("paper") if t != drop]
    return ResultsTable(
        models=list(scores),
        families=["sc", "tc", "qa", "ir", "all"],
        tasks=tasks,
        baseline=next(iter(scores)),
        cells={m: {f: Cell(**vars(summarize(v))) for f, v in cols.items()} for m, cols in scores.items()},
        per_task={m: dict.fromkeys(tasks) for m in scores},
        runs={},
    )


def test_a_paper_setup_study_sets_its_averages_beside_paper_1s():
    spec = get_study("paper1-pfs", "gpu-210m")
    table = _table(
        {
            "mlm40": {"sc": [85.0, 86.0], "tc": [92.0, 92.0], "qa": [50.0, 51.0], "ir": [75.0, 76.0]},
            "clm": {"sc": [80.0, 80.0], "tc": [92.0, 93.0], "qa": [40.0, 40.0], "ir": [70.0, 70.0]},
        }
    )
    rows = reported_rows(spec, table, {"mlm40": "mlm40", "clm": "clm", "mlm20": "mlm20"})
    assert [r[0] for r in rows] == ["MLM-40", "CLM"]  # mlm20 has no results; the recap has no full row
    sc = summarize([85.0, 86.0])
    assert rows[0][1] == f"{estimate_text(sc.mean, sc.half_width)} / 84.89 ({85.5 - 84.89:+.1f})"
    # two seeds give a half-width of ~6.4: one decimal, as the results table prints the same cell
    assert decimals(sc.half_width) == 1 and rows[0][1].startswith("85.5 ± 6.4 / 84.89 (+0.6)")
    # seeds that agree: a zero width, printed at two places as the results table prints it
    assert rows[1][3] == f"40.00 ± 0.00 / 39.26 ({40 - PAPER1['210m', 'clm'][2]:+.2f})"


def test_a_difference_is_never_finer_than_paper_1s_digits():
    """Seeds that all but agree give our average four places; paper 1's number has two, so the difference
    keeps two. One seed has no interval: two places, no `±`, as every report prints such a score."""
    spec = get_study("paper1-pfs", "gpu-210m")
    narrow = [85.0001, 85.0002, 85.0003]
    table = _table({"mlm40": {f: narrow for f in ("sc", "tc", "qa", "ir")}, "clm": {"sc": [80.0]}})
    rows = reported_rows(spec, table, {"mlm40": "mlm40", "clm": "clm"})
    estimate = summarize(narrow)
    assert decimals(estimate.half_width) == 4
    ours, rest = rows[0][1].split(" / ")
    assert ours == estimate_text(estimate.mean, estimate.half_width) == f"85.0002 ± {estimate.half_width:.4f}"
    assert rest == f"84.89 ({estimate.mean - 84.89:+.2f})"
    assert rows[1][1] == f"80.00 / 82.80 ({80 - PAPER1['210m', 'clm'][0]:+.2f})"


def test_a_family_missing_a_task_is_not_compared():
    spec = get_study("paper1-pfs", "gpu-610m")
    qa_task = next(t for t in suite_tasks("paper") if TASKS[t].family == "qa")
    table = _table({"mlm40": {f: [80.0, 81.0] for f in ("sc", "tc", "qa", "ir")}}, drop=qa_task)
    (row,) = reported_rows(spec, table, {"mlm40": "mlm40"})
    assert row[3] == "– / 62.77" and row[1].startswith("80.5 ± 6.4 / 87.00")


def test_scales_that_are_not_paper_1s_setup_compare_nothing():
    table = _table({"mlm40": {f: [80.0, 81.0] for f in ("sc", "tc", "qa", "ir")}})
    for study, scale in (("paper1-pfs", "demo"), ("paper1-pfs", "cpu"), ("paper2-detour", "gpu-210m")):
        assert reported_rows(get_study(study, scale), table, {"mlm40": "mlm40"}) == []


def test_every_paper_1_claim_points_the_way_paper_1s_own_numbers_do():
    """A claim a paper-setup study checks as paper 1's must be one its reported numbers make: on the claim's
    family, or, for a claim over all tasks, on the mean of the four family averages (the paper suite has
    as many tasks in each family, so that is the mean over tasks the claim compares). The +12k CPT claim
    was not: the recap puts the CLM base behind the MLM base there on average (QA outweighs the rest)."""
    per_family = [sum(TASKS[t].family == f for t in suite_tasks("paper")) for f in FAMILIES]
    assert len(set(per_family)) == 1  # else the mean of family averages is not the mean over tasks

    def measure(scores: tuple[float, ...], family: str | None) -> float:
        return scores[FAMILIES.index(family)] if family else sum(scores) / len(scores)

    checked = []
    for study in ("paper1-pfs", "paper1-cpt"):
        for scale in ("gpu-210m", "gpu-610m", "gpu-1b"):
            spec = get_study(study, scale)
            for claim in spec.claims:
                a, b = PAPER1.get((spec.size, claim.a)), PAPER1.get((spec.size, claim.b))
                if claim.kind != "beats" or a is None or b is None:
                    continue
                checked.append((study, scale, claim.id))
                assert measure(a, claim.family) > measure(b, claim.family), (study, scale, claim.id)
    assert ("paper1-cpt", "gpu-610m", "cpt-clm-22k") in checked and len(checked) >= 8
