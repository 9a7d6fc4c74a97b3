"""Tasks that share one fine-tuning run (`Task.trains_as`): NQ and MLDR are scored with the MS MARCO
retriever, as EncodEval reloads `fine-tuned/IR/msmarco_pairs/lr…_sd…` for all three. One run per
(LR, seed) scores them all, and each score is the one a run of that task alone gives."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fixtures import model_folder
from tests.eval import hub_fixtures as hub

from encoderlab.eval import protocol
from encoderlab.eval.protocol import evaluate
from encoderlab.eval.spec import FinetuneConfig, training_groups
from encoderlab.eval.tasks import TASKS

IR = hub.PAPER_IR
QUICK = FinetuneConfig(batch_size=8, micro_batch_size=8, max_steps=6)


@pytest.fixture
def paper_ir(tmp_path, monkeypatch):
    """Paper 1's three IR tasks on the simulated hub, at a 6-step schedule (the same for all three)."""
    hub.use_paper_ir(tmp_path, monkeypatch, QUICK)
    return str(model_folder(tmp_path / "model"))


def _count_runs(monkeypatch) -> list:
    runs, real = [], protocol.run_one
    monkeypatch.setattr(
        protocol, "run_one", lambda task, *a, **k: runs.append((task.name, a[3], a[4])) or real(task, *a, **k)
    )
    return runs


def test_the_three_ir_tasks_share_one_run_per_lr_and_seed(paper_ir, tmp_path, monkeypatch):
    assert [[t.name for t in g] for g in training_groups([TASKS[n] for n in IR])] == [list(IR)]
    runs = _count_runs(monkeypatch)
    grid = dict(suite=None, lrs=[1e-3], seeds=[0, 1], progress=False)
    shared = evaluate(paper_ir, tasks=list(IR), out=tmp_path / "all", **grid)
    assert runs == [("paper-msmarco", 1e-3, 0), ("paper-msmarco", 1e-3, 1)]  # was 6: one per task
    records = protocol.ResultsStore(tmp_path / "all" / protocol.RESULTS).records.values()
    assert sorted(r.task for r in records) == sorted(IR * 2)
    assert all((tmp_path / "all" / r.predictions).is_file() for r in records)

    runs.clear()  # NQ alone trains its own run: the same model, so the same scores
    alone = evaluate(paper_ir, tasks=["paper-nq"], out=tmp_path / "nq", **grid)
    assert runs == [("paper-nq", 1e-3, 0), ("paper-nq", 1e-3, 1)]
    assert alone.tasks["paper-nq"].test == shared.tasks["paper-nq"].test
    assert alone.tasks["paper-nq"].val == shared.tasks["paper-nq"].val

    runs.clear()  # cached: nothing trains again; a missing member alone trains once
    evaluate(paper_ir, tasks=list(IR), out=tmp_path / "all", **grid)
    assert runs == []


def test_a_task_choosing_its_best_epoch_never_shares():
    mine = replace(TASKS["paper-msmarco"], finetune=replace(QUICK, select="best_epoch"))
    other = replace(mine, name="paper-nq", trains_as="paper-msmarco")
    assert [[t.name for t in g] for g in training_groups([mine, other])] == [["paper-msmarco"], ["paper-nq"]]


def test_tasks_declaring_one_run_but_other_examples_are_refused(paper_ir, tmp_path, monkeypatch):
    from encoderlab.errors import UserError

    nq = TASKS["paper-nq"]
    loader = nq.loader
    monkeypatch.setitem(
        TASKS, "paper-nq", replace(nq, loader=lambda: replace(loader(), train=loader().train[:8]))
    )
    with pytest.raises(
        UserError, match="task paper-nq trains as paper-msmarco but its training examples differ"
    ):
        evaluate(paper_ir, suite=None, tasks=["paper-msmarco", "paper-nq"], lrs=[1e-3], seeds=[0],
                 out=tmp_path / "o", progress=False)  # fmt: skip


def test_a_broken_shared_run_is_refused_before_any_run_of_the_grid(paper_ir, tmp_path, monkeypatch):
    """The check ran inside the grid: the runs of earlier (LR, seed) points had fine-tuned and were
    written when a later point brought in the task whose examples differ. Now nothing runs or is
    written, in `evaluate` and in the study's `eval_node` (which made its results folder first)."""
    from encoderlab.errors import UserError

    out, grid = tmp_path / "o", dict(suite=None, lrs=[1e-3], progress=False)
    evaluate(paper_ir, tasks=["paper-nq"], seeds=[0], out=out, **grid)  # cached: paper-nq at seed 0
    before = sorted((p.relative_to(out), p.read_bytes()) for p in out.rglob("*") if p.is_file())
    nq = TASKS["paper-nq"]
    loader = nq.loader
    monkeypatch.setitem(
        TASKS, "paper-nq", replace(nq, loader=lambda: replace(loader(), train=loader().train[:8]))
    )
    runs = _count_runs(monkeypatch)
    refused = "task paper-nq trains as paper-msmarco but its training examples differ"
    with pytest.raises(UserError, match=refused):  # seed 0 would train paper-msmarco alone first
        evaluate(paper_ir, tasks=["paper-msmarco", "paper-nq"], seeds=[0, 1], out=out, **grid)
    assert runs == []
    assert sorted((p.relative_to(out), p.read_bytes()) for p in out.rglob("*") if p.is_file()) == before
    with pytest.raises(UserError, match=refused):
        protocol.eval_node(paper_ir, "paper-msmarco", 1e-3, 1, tmp_path / "node", also=["paper-nq"])
    assert runs == [] and not (tmp_path / "node").exists()
