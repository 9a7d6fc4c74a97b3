"""The public training step (`train/step.py`): usable without a run folder, and exactly the
trainer's step.

Driving a `TrainStep` by hand through both phases of the tiny run must give the losses, gradient
norms, learning rates and final weights that `pretrain` logs and saves, bit for bit: the trainer
adds the loop, files and policies around the step and nothing to what the step computes.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import torch
from safetensors.torch import load_file
from tests.train.helpers import metrics, tiny_run

from encoderlab.train import OptimConfig, pretrain
from encoderlab.train.step import TrainStep


def test_building_and_stepping_writes_no_files(tmp_path):
    step = TrainStep(tiny_run(tmp_path / "run"))
    step.enter_phase(step.plan[0], 0)
    assert step.step(0).finite
    assert list(tmp_path.iterdir()) == []


def test_steps_driven_by_hand_are_the_trainers_bit_for_bit(tmp_path):
    cfg = tiny_run(tmp_path / "run")
    pretrain(cfg)
    logged = metrics(cfg.out)
    step = TrainStep(cfg)
    results = []
    for n in range(cfg.plan()[-1].end):
        if not step.ready_for(n):
            step.enter_phase(step.phase_at(n), n)
        results.append(step.step(n))
    assert [(r.loss, r.grad_norm, r.lr, r.n_targets, r.flops) for r in results] == [
        (m["loss"], m["grad_norm"], m["lr"], m["targets"], m["flops"]) for m in logged
    ]
    saved = load_file(str(Path(cfg.out) / "final" / "model.safetensors"))
    for name, p in step.model.state_dict().items():
        assert torch.equal(p, saved[name]), name


def test_a_non_finite_step_applies_no_update(tmp_path):
    step = TrainStep(tiny_run(tmp_path / "run"))
    step.enter_phase(step.plan[0], 0)
    before = {k: v.clone() for k, v in step.model.state_dict().items()}
    with torch.no_grad():
        step.model.layers[0].mlp.down_proj.weight[0, 0] = float("nan")
    result = step.step(0)
    assert not result.finite and result.flops == 0
    assert all(p.grad is None for p in step.model.parameters())
    after = step.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before if k != "layers.0.mlp.down_proj.weight")


class SyncProbe:
    """Stands for a DDP/FSDP2 module: runs the model and records, at each backward, whether the
    gradient sync was deferred (`no_sync` active), as FSDP2 decides it: when the backward ends."""

    def __init__(self, model):
        self.model, self.deferred, self.at_backward = model, False, []
        model.embed_tokens.weight.register_hook(self._seen)

    def _seen(self, grad):
        self.at_backward.append(self.deferred)
        return grad

    def __call__(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        self.deferred = True
        try:
            yield
        finally:
            self.deferred = False


def test_accumulated_backwards_run_inside_no_sync_except_the_last(tmp_path):
    # FSDP2 reads `set_requires_gradient_sync` in its post-backward hook, so a backward outside the
    # context reduce-scatters every micro-batch (torch.distributed.fsdp _fsdp_param_group.post_backward).
    step = TrainStep(tiny_run(tmp_path / "run"))  # grad_accum=2
    probe = step.forward_model = SyncProbe(step.model)
    step.enter_phase(step.plan[0], 0)
    assert step.step(0).finite
    assert probe.at_backward == [True, False]


def _state_across_the_switch(tmp_path, reset: bool):
    """The optimizer state just before the CLM -> MLM switch and after the MLM phase's first update."""
    cfg = tiny_run(tmp_path / f"run{reset}")
    cfg = dataclasses.replace(
        cfg, phases=(cfg.phases[0], dataclasses.replace(cfg.phases[1], reset_optimizer=reset))
    )
    step = TrainStep(cfg)
    switch = step.plan[1].start
    for n in range(switch):
        if not step.ready_for(n):
            step.enter_phase(step.phase_at(n), n)
        step.step(n)
    before = step.optimizer_state()
    step.enter_phase(step.phase_at(switch), switch)
    first = step.step(switch)
    return before, step.optimizer_state(), first, switch


def test_the_switch_to_mlm_carries_the_optimizer_state_unless_the_phase_resets_it(tmp_path):
    # Paper 1's biphasic runs and paper 2's decay keep the AdamW state at the switch (reset_optimizer
    # false, the default); reset_optimizer true starts the phase from fresh moments and step 1. Both
    # runs are identical up to the switch, so its first update sees the same gradient g in both:
    # fresh m = (1 - b1) g and v = (1 - b2) g^2, carried m = b1 m_before + (1 - b1) g (same for v).
    before, kept, first, switch = _state_across_the_switch(tmp_path, reset=False)
    _, fresh, first_reset, _ = _state_across_the_switch(tmp_path, reset=True)
    (b1, b2), name = OptimConfig().betas, "layers.0.mlp.up_proj.weight"
    assert float(before[name]["step"]) == switch
    assert float(kept[name]["step"]) == switch + 1 and float(fresh[name]["step"]) == 1
    m, v = before[name]["exp_avg"], before[name]["exp_avg_sq"]
    assert torch.allclose(kept[name]["exp_avg"], b1 * m + fresh[name]["exp_avg"], atol=1e-9)
    assert torch.allclose(kept[name]["exp_avg_sq"], b2 * v + fresh[name]["exp_avg_sq"], atol=1e-12)
    # the 1-sqrt decay restarts its schedule at the switch: its first update runs at the peak, no warmup
    assert first.lr == first_reset.lr == 3e-3  # tiny_run's peak
