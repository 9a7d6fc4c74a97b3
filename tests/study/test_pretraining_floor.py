"""Pretraining GPU-hours take a per-step floor, as evaluation's do (`evalcost.floored_seconds`): they were
6 N D at 40% MFU alone, so a cpu scale's 1,000 steps of a 4-layer model came to 2.7 GPU-seconds, though
each eager optimizer step takes at least the fine-tuning step's floor. At the paper scales a step's
FLOPs take seconds and the figures are unchanged."""

from __future__ import annotations

import dataclasses

import pytest

import encoderlab.study.plan as plan_module
from encoderlab.cli import main
from encoderlab.data.batch import BatchLayout
from encoderlab.model.config import SIZES
from encoderlab.study.catalog import get_study
from encoderlab.study.evalcost import BASE_LAYERS, STEP_FLOOR_S, hours_text
from encoderlab.study.graph import pretraining
from encoderlab.study.scales import GPU_FLOPS


def _own_steps(p) -> int:
    """The steps a run trains itself (a branch's earlier ones are its base's)."""
    return p.config.steps - (p.branch.step if p.branch else 0)


@pytest.mark.parametrize("study", ["paper1-pfs", "paper2-detour"])
def test_a_paper_scale_runs_hours_are_its_flops(study):
    spec = get_study(study, "gpu-210m")
    trained = {p.model: p for p in pretraining(spec) if p.config is not None}
    runs = plan_module.plan_study(spec).runs
    assert runs and {r.model for r in runs} == set(trained)
    for r in runs:
        p = trained[r.model]
        per_step = p.config.layout.tokens_per_step
        assert 6 * r.params * per_step / GPU_FLOPS > 10 * STEP_FLOOR_S * r.layers / BASE_LAYERS  # FLOPs-bound
        assert r.gpu_hours == pytest.approx(6 * r.params * _own_steps(p) * per_step / GPU_FLOPS / 3600)


def test_a_tiny_models_many_steps_take_the_floor(capsys):
    """paper1-pfs at cpu: 4-layer models of ~4M parameters, steps of 4,096 tokens: each step ~17 ms."""
    spec = get_study("paper1-pfs", "cpu")
    trained = {p.model: p for p in pretraining(spec) if p.config is not None}
    plan = plan_module.plan_study(spec)
    for r in plan.runs:
        p = trained[r.model]
        layers = SIZES[p.config.model.size].n_layers
        floor = _own_steps(p) * STEP_FLOOR_S * layers / BASE_LAYERS
        flops = 6 * r.params * _own_steps(p) * p.config.layout.tokens_per_step / GPU_FLOPS
        assert flops < floor / 10
        assert r.gpu_hours == pytest.approx(floor / 3600)
    main(["study", "plan", "paper1-pfs", "--scale", "cpu"])
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("pretraining: "))
    assert line.startswith(f"pretraining: {hours_text(plan.gpu_hours)} (") and "GPU-minutes" in line
    assert "each step at least 50 ms per 12 layers" in line


def test_each_data_parallel_rank_takes_the_floor():
    """The same tokens a step, from 2 accumulated micro-batches on one GPU or 1 on each of 2 GPUs: the
    2 GPUs each take the floor, twice the GPU-seconds."""
    p = next(p for p in pretraining(get_study("paper1-pfs", "cpu")) if p.config is not None)
    layout = p.config.layout
    hours = []
    for accum, ranks in ((2, 1), (1, 2)):
        shape = BatchLayout(
            seq_len=layout.seq_len,
            micro_batch_size=layout.micro_batch_size,
            grad_accum=accum,
            world_size=ranks,
        )
        cfg = dataclasses.replace(p.config, layout=shape)
        hours.append(plan_module._run_plan(p.model, "main", cfg, None, 4e6, layers=4).gpu_hours)
    assert hours[0] == pytest.approx(p.config.steps * STEP_FLOOR_S * 4 / BASE_LAYERS / 3600)
    assert hours[1] == pytest.approx(2 * hours[0])
