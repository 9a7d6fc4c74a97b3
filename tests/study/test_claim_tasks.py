"""A claim compares its two runs on the same tasks: those every model of both runs has results for.

A report is rebuilt at any time (`study report` mid-study), and a failed node leaves a model without a
task: a family mean over {sst, mnli} against one over {sst} compared tasks, not runs, and could turn a
verdict round.
"""

from __future__ import annotations

from statistics import fmean

import pytest
from fake_study import record, small_spec

from encoderlab.config import from_dict
from encoderlab.eval.summary import EvalRecord
from encoderlab.study.data import StudyData, StudyEval
from encoderlab.study.results import check_claims
from encoderlab.study.spec import ClaimSpec
from encoderlab.study.table import results_table

NOISE = (0.0, 0.7, -0.4)
"""Per fine-tuning seed, so that paired differences are not all equal."""


def _record(model: str, task: str, lr: float, seed: int, score: float) -> EvalRecord:
    family = {"sst": "sc", "mnli": "sc", "ner": "tc"}[task]
    cfg = {"model": model, "task": task, "family": family, "task_signature": f"sig-{task}", "lr": lr}
    return from_dict(EvalRecord, record({**cfg, "seed": seed}, score, score))


def _data(claim: ClaimSpec, scores: dict[tuple[str, str, float], float], **spec) -> StudyData:
    """A study whose finished eval nodes hold `scores`: (model, task, lr) -> score at fine-tuning seeds 0-2
    (`spec`: changes to the fake study's spec)."""
    data = StudyData(spec=small_spec(claims=(claim,), **spec), nodes=[])
    data.__dict__["evals"] = [
        StudyEval(model, None, _record(model, task, lr, seed, score + NOISE[seed] * (1 + (model == "clm"))))
        for (model, task, lr), score in scores.items()
        for seed in range(3)
    ]
    return data


def _only_result(data: StudyData):
    (result,) = check_claims(data)
    return result


def test_a_family_claim_leaves_out_a_task_one_run_has_no_results_for():
    """MLM-40 has sst (80) and mnli (60), CLM only sst (75): on the shared task MLM-40 is ahead by 5; the
    family means over different tasks (70 vs 75) said the opposite."""
    claim = ClaimSpec(id="mlm-sc", text="MLM beats CLM on SC", kind="beats", a="mlm40", b="clm", family="sc")
    data = _data(
        claim, {("mlm40", "sst", 1e-4): 80.0, ("mlm40", "mnli", 1e-4): 60.0, ("clm", "sst", 1e-4): 75.0}
    )
    result = _only_result(data)
    assert result.status == "holds in direction", result.sentence  # one pretraining seed
    mlm_sst = [80.0 + n for n in NOISE]
    assert result.numbers["a"].mean == pytest.approx(fmean(mlm_sst))
    assert result.numbers["diff"].mean == pytest.approx(fmean(mlm_sst) - fmean(75.0 + 2 * n for n in NOISE))
    assert (
        "(on sst only, the tasks every model of both runs has results for; left out: mnli)" in result.sentence
    )


def test_the_average_over_all_tasks_uses_the_shared_tasks():
    claim = ClaimSpec(id="avg", text="MLM beats CLM", kind="beats", a="mlm40", b="clm")
    scores = {("mlm40", "sst", 1e-4): 80.0, ("mlm40", "ner", 1e-4): 40.0, ("clm", "sst", 1e-4): 75.0}
    result = _only_result(_data(claim, scores))
    assert result.status == "holds in direction" and result.numbers["diff"].mean == pytest.approx(
        5.0, abs=0.5
    )


def test_stability_is_compared_on_the_shared_tasks():
    """CLM's sst moves 5 points between the LRs, MLM-40's 2 (and its mnli, which CLM lacks, 20): CLM is
    not the more stable one on the task both have; with mnli averaged in for MLM-40 alone it looked so."""
    claim = ClaimSpec(
        id="stable", text="CLM is more stable", kind="more_stable", a="clm", b="mlm40", lr_range=(1e-4, 5e-4)
    )
    scores = {
        ("mlm40", "sst", 1e-4): 80.0,
        ("mlm40", "sst", 5e-4): 78.0,
        ("mlm40", "mnli", 1e-4): 60.0,
        ("mlm40", "mnli", 5e-4): 40.0,
        ("clm", "sst", 1e-4): 75.0,
        ("clm", "sst", 5e-4): 70.0,
    }
    result = _only_result(_data(claim, scores))
    assert result.status == "opposite in direction", result.sentence  # one pretraining seed
    assert result.numbers["b"].mean == pytest.approx(2.0)
    assert "left out: mnli)" in result.sentence


def test_a_claim_whose_family_no_shared_task_covers_waits_for_results():
    claim = ClaimSpec(id="mlm-sc", text="MLM beats CLM on SC", kind="beats", a="mlm40", b="clm", family="sc")
    data = _data(claim, {("mlm40", "sst", 1e-4): 80.0, ("clm", "mnli", 1e-4): 75.0})
    result = _only_result(data)
    assert result.status == "not tested" and "no finished results" in result.sentence


def test_the_tables_difference_to_the_baseline_uses_the_shared_tasks():
    """The cell keeps the model's own mean; its paired difference to the baseline is over sst only."""
    claim = ClaimSpec(id="mlm-sc", text="MLM beats CLM on SC", kind="beats", a="mlm40", b="clm", family="sc")
    data = _data(
        claim, {("mlm40", "sst", 1e-4): 80.0, ("mlm40", "mnli", 1e-4): 60.0, ("clm", "sst", 1e-4): 75.0}
    )
    table = results_table(data)
    clm_sst, mlm_sst = [75.0 + 2 * n for n in NOISE], [80.0 + n for n in NOISE]
    assert table.cells["mlm40"]["sc"].mean == pytest.approx(fmean([70.0 + n for n in NOISE]))
    assert table.cells["clm"]["sc"].vs_baseline.mean == pytest.approx(fmean(clm_sst) - fmean(mlm_sst))


def test_a_claim_says_when_the_study_can_never_test_it_and_not_when_it_has_not_yet(tmp_path):
    """Before: a family whose eval nodes had not finished (or had failed) read "no QA task is evaluated at
    this scale", and runs evaluated on different tasks of a family read "no finished results yet" for ever."""
    import json
    from dataclasses import replace

    from fake_study import backend

    from encoderlab.study.report import write_report
    from encoderlab.study.runner import run_study

    qa = ClaimSpec(id="mlm-qa", text="MLM beats CLM on QA", kind="beats", a="mlm40", b="clm", family="qa")
    sc = ClaimSpec(id="mlm-sc", text="MLM beats CLM on SC", kind="beats", a="mlm40", b="clm", family="sc")
    tasks = {"mlm40": ("sst", "squad"), "clm": ("mnli", "squad")}
    runs = tuple(replace(r, tasks=tasks.get(r.name, r.tasks)) for r in small_spec().runs)
    run_study(small_spec(runs=runs, claims=(qa, sc)), tmp_path, backend(), progress=False)
    for marker in (tmp_path / "nodes" / "eval").glob("*_squad_*/node.json"):
        marker.unlink()  # the QA runs have not finished
    write_report(tmp_path, figures=False)
    found = {c["id"]: c for c in json.loads((tmp_path / "report" / "results.json").read_text())["claims"]}
    assert found["mlm-qa"]["sentence"] == "Not tested: the study has no finished results for it yet."
    assert found["mlm-sc"]["status"] == "not tested"
    assert (
        "MLM-40 is evaluated on sst, CLM on mnli: the two runs share no SC task, so this claim cannot be tested"
        in found["mlm-sc"]["sentence"]
    )


def test_a_task_missing_at_one_pretraining_seed_of_one_run_leaves_it_out_of_every_seed():
    """Three pretraining seeds each; CLM's seed-1 checkpoint has no mnli (a failed node). The claim is still the
    paired test over the three seeds (scipy, on each checkpoint's sst mean), on sst alone at every seed: mnli
    at seeds 0 and 2 only would compare a family mean over two tasks with one over one at seed 1."""
    import numpy as np
    from scipy import stats

    claim = ClaimSpec(id="mlm-sc", text="MLM beats CLM on SC", kind="beats", a="mlm40", b="clm", family="sc")
    sst = {("mlm40", k): 80.0 + k for k in range(3)} | {("clm", k): 76.0 + 2 * (k == 1) for k in range(3)}
    scores = {(f"{run}/s{k}", "sst", 1e-4): v for (run, k), v in sst.items()}
    scores |= {(f"{run}/s{k}", "mnli", 1e-4): 50.0 for run in ("mlm40", "clm") for k in range(3)}
    del scores[("clm/s1", "mnli", 1e-4)]
    result = _only_result(_data(claim, scores, seeds=(0, 1, 2)))
    means = {key: fmean(v + n for n in NOISE) for key, v in sst.items()}  # "clm/s1" is not "clm": noise alike
    a, b = ([means[(run, k)] for k in range(3)] for run in ("mlm40", "clm"))
    want = stats.ttest_rel(a, b)
    assert result.numbers["level"] == "pretraining" and result.numbers["pretraining_seeds"] == [0, 1, 2]
    assert result.numbers["diff"].mean == pytest.approx(float(np.mean(np.subtract(a, b))))
    assert result.numbers["diff"].p_value == pytest.approx(want.pvalue)
    assert "left out: mnli)" in result.sentence
