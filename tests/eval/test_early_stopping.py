"""Early stopping (`FinetuneConfig.patience`): paper 2's fine-tuning ends after `patience` epochs whose
validation is no better than the best, and the best epoch's weights are the ones tested."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from tests.eval.conftest import flipped_validation, sc_examples
from tests.eval.fixtures import write_jsonl, write_task_file

from encoderlab.errors import UserError
from encoderlab.eval import finetune
from encoderlab.eval.finetune import run_one
from encoderlab.eval.spec import FinetuneConfig, SCOptions, Task
from encoderlab.eval.tasks import TASKS
from encoderlab.eval.tasks.custom import task_from_file

SIX = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=None, epochs=6.0, select="best_epoch")


def _task(cfg: FinetuneConfig) -> Task:
    return Task(
        name="t", description="", options=SCOptions(labels=("neg", "pos")), metric="accuracy",
        loader=lambda: None, finetune=cfg, max_length=64,
    )  # fmt: skip


def test_the_run_stops_after_patience_epochs_without_a_better_validation(model, tokenizer):
    # the first epoch is the best, every later one no better (test_biomed shows it over 4 epochs)
    task = _task(replace(SIX, patience=2))
    prepared, by_epoch = flipped_validation(task, model, tokenizer, SIX)  # the full 6 epochs, by hand
    vals = [v for v, _ in by_epoch]
    assert len(vals) == 6 and max(vals[1:3]) <= vals[0]  # the premise: epochs 2 and 3 are no better

    result = run_one(task, model, tokenizer, prepared, lr=2e-3, seed=0)
    # 1 best epoch + 2 without improvement, then stopped: 3 epochs of 8 steps, not 6
    assert result["steps"] == 3 * 8
    # the epochs it ran are the full run's (the LR schedule is the 6-epoch one, not a 3-epoch one)
    assert result["val_by_epoch"] == pytest.approx(vals[:3])
    assert result["best_epoch"] == 1
    assert result["val"]["accuracy"] == pytest.approx(vals[0])
    assert result["test"]["test"]["accuracy"] == pytest.approx(by_epoch[0][1])  # the best epoch's weights
    assert by_epoch[2][1] != by_epoch[0][1]  # the weights at the stop test otherwise

    without = run_one(_task(SIX), model, tokenizer, prepared, lr=2e-3, seed=0)
    assert without["steps"] == 6 * 8 and len(without["val_by_epoch"]) == 6


def test_patience_counts_validations_in_a_row_not_strictly_better(monkeypatch):
    """Hugging Face's EarlyStoppingCallback (threshold 0): a tie counts as no better, a strictly better
    score resets the count, the stop comes when the count reaches `patience`."""
    module = torch.nn.Linear(2, 2)
    sequence = [50.0, 60.0, 60.0, 55.0, 61.0, 40.0, 40.0, 40.0]
    stops = {}
    for patience in (3, None):
        scores = iter({"accuracy": v} for v in sequence)
        monkeypatch.setattr(finetune, "score", lambda task, module, split, it=scores: (next(it), []))
        best = finetune.BestEpoch(_task(replace(SIX, patience=patience)), None)
        stops[patience] = [best(module, epoch) for epoch in range(1, len(sequence) + 1)]
        assert best.best[0] == 5
    assert stops[3] == [False] * 7 + [True]
    assert stops[None] == [False] * 8


def test_patience_is_refused_when_it_cannot_apply():
    with pytest.raises(UserError, match=r"patience must be >= 1, or null, got patience: 0$"):
        replace(SIX, patience=0).check("here")
    with pytest.raises(UserError, match="patience is read only with select: best_epoch"):
        FinetuneConfig(patience=3).check("here")


def test_a_task_file_sets_patience(tmp_path):
    rows = [{"text": e["text"], "label": ("neg", "pos")[e["label"]]} for e in sc_examples(40, 0)]
    train, test = (
        write_jsonl(tmp_path / "train.jsonl", rows[:30]),
        write_jsonl(tmp_path / "test.jsonl", rows[30:]),
    )
    path = write_task_file(
        tmp_path, name="stops", family="sc", data={"train": train, "test": test},
        finetune={"select": "best_epoch", "max_steps": None, "epochs": 5, "patience": 2},
    )  # fmt: skip
    assert task_from_file(path).finetune.patience == 2


def test_paper2_biomed_tasks_stop_after_3_epochs_and_paper1_never_stops():
    biomed = [t for name, t in TASKS.items() if name.startswith("biomed-")]
    assert biomed and all(t.finetune.patience == 3 for t in biomed)
    assert all(t.finetune.patience is None for name, t in TASKS.items() if not name.startswith("biomed-"))
