"""Exact resume where phases meet: a run stopped at a phase's last step, or inside a phase that resets
the optimizer, continues the uninterrupted run bit for bit (losses, weights, the moments' step counts),
here on a mask-ratio schedule written as MLM phases (0.5, then 0.3 with fresh moments, then a 15% decay)."""

from __future__ import annotations

import dataclasses

import torch
from safetensors.torch import load_file
from tests.train.helpers import metrics, tiny_run

from encoderlab.objectives import MLM
from encoderlab.train import Phase, Schedule, pretrain
from encoderlab.train import checkpoint as ckpt

PHASES = (
    Phase(objective=MLM(mask_ratio=0.5), steps=2, schedule=Schedule(kind="constant", warmup=1), name="mlm50"),
    Phase(objective=MLM(mask_ratio=0.3), steps=3, reset_optimizer=True, name="mlm30"),
    Phase(
        objective=MLM(mask_ratio=0.15, replacement="80-10-10"),
        steps=2,
        schedule=Schedule(kind="1-sqrt", end_fraction=0.1),
        name="decay",
    ),
)


def _run(tmp_path, name):
    cfg = tiny_run(tmp_path / name, phases=PHASES)
    return dataclasses.replace(cfg, checkpoint=dataclasses.replace(cfg.checkpoint, every=1))


def _moment_steps(cfg, step: int) -> set[float]:
    opt, _, _ = ckpt.load_train_state(ckpt.checkpoint_dir(cfg.out, step))
    return {float(state["step"]) for state in opt.values()}


def test_stops_at_a_phase_end_and_inside_a_reset_phase_resume_as_the_run_without_them(tmp_path):
    whole = _run(tmp_path, "whole")
    pretrain(whole)
    cut = _run(tmp_path, "cut")
    pretrain(cut, until_step=2)  # the last step of mlm50: the next phase starts with fresh moments
    pretrain(cut, resume=True, until_step=3)  # the first step of mlm30: a resume here keeps its moments
    pretrain(cut, resume=True)

    records = metrics(cut.out)
    assert [r["objective"] for r in records] == ["mlm50"] * 2 + ["mlm30"] * 3 + ["mlm15"] * 2
    assert [(r["step"], r["loss"]) for r in records] == [(r["step"], r["loss"]) for r in metrics(whole.out)]
    assert (
        _moment_steps(cut, 2) == {2.0} and _moment_steps(cut, 4) == {2.0} and _moment_steps(cut, 7) == {5.0}
    )
    wa, wb = (load_file(f"{run.out}/final/model.safetensors") for run in (whole, cut))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
