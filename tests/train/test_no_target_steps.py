"""A global batch in which MLM's `bernoulli` selection draws no target has no loss.

Before, such a step logged `loss: 0.0` (a sum of nothing over max(count, 1)) as if the model were
perfect, took an AdamW update on zero gradients (which still decays the weights and moves them by
the moments), and a held-out MLM loss over rows without a target was logged as 0.0 too.
"""

from __future__ import annotations

import json

import torch
from tests.train.helpers import metrics, tiny_run

from encoderlab.data.batch import BatchLayout
from encoderlab.objectives import MLM
from encoderlab.train import Phase, Schedule, pretrain
from encoderlab.train.config import ValidationConfig
from encoderlab.train.step import TrainStep


def _config(out):
    """16-token rows, one a step, 1% bernoulli masking: most steps select nothing (seed 0's do at steps
    3 and 4 only), and the one held-out row none."""
    phase = Phase(
        objective=MLM(mask_ratio=0.01, selection="bernoulli"), steps=6, schedule=Schedule(kind="constant")
    )
    return tiny_run(
        out,
        phases=(phase,),
        layout=BatchLayout(seq_len=16, micro_batch_size=1, grad_accum=1),
        validation=ValidationConfig(rows=1, every=2),
    )


def test_a_step_without_targets_logs_no_loss_and_changes_nothing(tmp_path):
    trainer = TrainStep(_config(tmp_path / "run"))
    trainer.enter_phase(trainer.phase_at(0), 0)
    results = [trainer.step(s) for s in range(4)]
    assert [r.n_targets > 0 for r in results] == [False, False, True, True]  # the seed's draws
    assert all(r.loss is None and r.grad_norm is None and r.finite for r in results[:2])
    params = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    moments = trainer.optimizer_state()
    result = trainer.step(4)
    assert result.n_targets == 0 and result.loss is None and result.grad_norm is None and result.finite
    for name, p in trainer.model.named_parameters():  # no decay, no move by the moments
        assert torch.equal(p, params[name]), name
    for name, state in trainer.optimizer_state().items():  # nor a step counted
        assert all(torch.equal(v, moments[name][k]) for k, v in state.items()), name


def test_metrics_and_validation_leave_out_losses_of_no_target(tmp_path):
    run = pretrain(_config(tmp_path / "run"))
    records = metrics(run)
    empty = [r for r in records if r["targets"] == 0]
    assert [r["step"] for r in empty] == [1, 2, 5, 6]
    assert all(r["loss"] is None and r["grad_norm"] is None for r in empty)
    assert all(r["tokens_per_s"] is None and r["mfu"] is None for r in empty)  # no compute to time
    assert all(r["loss"] > 0 for r in records if r["targets"] > 0)
    # the held-out row selects nothing at 1%: no val/mlm (was 0.0), while val/mlm15 (exact) is scored
    scored = [r for r in records if "val/mlm15" in r]
    assert len(scored) == 3 and not any("val/mlm" in r for r in records)
    assert "val/mlm" not in json.loads((run / "validation.json").read_text())
