"""The optimizers of both papers over the trainable parameters, with their state addressed by *name*.

Three update rules, chosen by `OptimConfig.kind`; all keep the same per-parameter state
(`step`, `exp_avg`, `exp_avg_sq`), so checkpoints, carried state and `load=full` work alike:

  * `adamw`: `torch.optim.AdamW` (paper 1, Optimus; `AdamW` here, the same update). Its decay follows the absolute LR:
    θ ← θ·(1 − lr_t·wd).
  * `decoupled_adamw`: Composer's `DecoupledAdamW` (the `detour` recipes' default; mosaicml/composer
    composer/optim/decoupled_weight_decay.py, `DecoupledAdamW.adamw` and `.step`). Paper 2 says only
    "decoupled AdamW, eps 1e-6, wd 1e-5, none on bias or norm", which this rule and `stable_adamw`
    both fit; which one it ran is not known (ModernBERT's own pretraining configs and
    BioClinical-ModernBERT's continued-pretraining configs run `decoupled_stableadamw`). Each step, for
    each parameter that has a gradient, *before* the moments:
        θ ← θ·(1 − wd·lr_t/lr_0)                  (lr_0 = the peak LR, `initial_lr` there)
        m ← β1·m + (1 − β1)·g ;  v ← β2·v + (1 − β2)·g²
        θ ← θ − lr_t/(1 − β1^t) · m / (√v/√(1 − β2^t) + ε)
    The decay follows the schedule's multiplier, not the LR: at the peak θ shrinks by (1 − wd) per
    step. With paper 2's wd 1e-5 and lr 2e-4, torch's AdamW would decay 5,000 times less.
  * `stable_adamw`: optimi's `StableAdamW(decouple_lr=True)` (ModernBERT's `decoupled_stableadamw`;
    warner-benjamin/optimi optimi/stableadamw.py `_single_param_stableadamw`, utils.py
    `debias_beta`). Debiased betas β̂_t = β(1 − β^(t−1))/(1 − β^t) replace bias correction:
        m ← m + (1 − β̂1)(g − m) ;  v ← β̂2·v + (1 − β̂2)·g²
        lr_eff = lr_t / max(1, RMS),  RMS = √mean(g² / max(v, ε²))   (per tensor)
        θ ← θ·(1 − wd·lr_eff/lr_0) ;  θ ← θ − lr_eff · m / (√v + ε)
    The per-tensor RMS clip replaces gradient clipping in ModernBERT (set `optim.clip=0` to match).

Our own classes rather than the libraries: Composer is a whole trainer whose releases stopped in
2025-07 on PyPI, and optimi keeps one step counter per parameter *group*, which cannot
follow a parameter frozen for a phase and unfrozen later; here every parameter has its own step,
as in torch's AdamW. Parameters without a gradient are skipped entirely (no decay either), which
with `requires_grad=False` is what keeps frozen layers bit-identical (`train/freeze.py`).
Both run as `torch._foreach_*` kernels over a group (a handful of launches per step on GPU); the
RMS of StableAdamW is gathered with one host synchronisation per step, not one per tensor.

Which parameters decay: with `decay_norms_and_biases=False`, none with ndim ≤ 1 or a name ending
in `.bias` (ModernBERT's `filter_bias_norm_wd`, the rule of optimi's `param_groups_weight_decay`).

PyTorch optimizers key their state by position in the parameter list, which changes whenever a
phase freezes or unfreezes layers. Keeping the state by name makes "carry the optimizer across
phases" independent of which parameters each phase trains, and makes checkpoints readable and
checkable (a state for a parameter the model lacks, or of another shape, is refused when it is
loaded: `state_mismatches`, not a silent skip). Loading goes
through `Optimizer.load_state_dict`, which puts each tensor on the right device and dtype.

No `torch._dynamo` in eager training: `AdamW` and the base of the decoupled rules are
`model/eageroptim.py`'s (`EagerOptimizer`), which skips torch's optimizer guards that import it on first
call (about 3 CPU-s of a fresh process's start-up); evaluation's fine-tuning uses the same class. The
update is the same, bit for bit (tested against torch's AdamW).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from encoderlab.model.eageroptim import AdamW, EagerOptimizer
from encoderlab.train.config import OptimConfig
from encoderlab.train.distributed import full_tensor

StateByName = dict[str, dict[str, torch.Tensor]]


def _no_decay(name: str, p: nn.Parameter) -> bool:
    return p.ndim <= 1 or name.endswith(".bias")  # norm weights and biases


class _DecoupledBase(EagerOptimizer):
    """Shared bookkeeping: the peak LR per group, per-parameter state, parameters with a gradient.
    Subclasses write `_update`, one group's step over the parameters that have a gradient."""

    def __init__(self, params, *, lr: float, betas: tuple[float, float], eps: float, weight_decay: float):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, initial_lr=lr)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params, grads, ms, vs, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "step" not in state:
                    state["step"] = torch.zeros((), dtype=torch.float32)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                params.append(p)
                grads.append(p.grad)
                ms.append(state["exp_avg"])
                vs.append(state["exp_avg_sq"])
                steps.append(int(state["step"].item()))
            if params:
                self._update(group, params, grads, ms, vs, steps)
        return loss

    def _update(self, group: dict, params: list, grads: list, ms: list, vs: list, steps: list[int]) -> None:
        raise NotImplementedError


class DecoupledAdamW(_DecoupledBase):
    """Composer's DecoupledAdamW update (see the module docstring); `initial_lr` is the peak LR."""

    def _update(self, group, params, grads, ms, vs, steps):
        (beta1, beta2), lr, eps, wd = group["betas"], group["lr"], group["eps"], group["weight_decay"]
        if wd != 0:
            torch._foreach_mul_(params, 1 - wd * lr / group["initial_lr"])
        torch._foreach_mul_(ms, beta1)
        torch._foreach_add_(ms, grads, alpha=1 - beta1)
        torch._foreach_mul_(vs, beta2)
        torch._foreach_addcmul_(vs, grads, grads, value=1 - beta2)
        denom = torch._foreach_sqrt(vs)
        torch._foreach_div_(denom, [math.sqrt(1 - beta2**t) for t in steps])
        torch._foreach_add_(denom, eps)
        torch._foreach_addcdiv_(params, ms, denom, [-lr / (1 - beta1**t) for t in steps])


def _debias(beta: float, step: int) -> float:
    """optimi's debiased beta, β(1 − β^(t−1))/(1 − β^t): 0 at the first step."""
    return (beta**step - beta) / (beta**step - 1)


class StableAdamW(_DecoupledBase):
    """optimi's StableAdamW with `decouple_lr=True` (see the module docstring); `initial_lr` is its `max_lr`."""

    def _update(self, group, params, grads, ms, vs, steps):
        (beta1, beta2), lr, eps, wd = group["betas"], group["lr"], group["eps"], group["weight_decay"]
        b1 = [_debias(beta1, t) for t in steps]
        b2 = [_debias(beta2, t) for t in steps]
        torch._foreach_lerp_(ms, grads, [1 - b for b in b1])
        torch._foreach_mul_(vs, b2)
        torch._foreach_addcmul_(vs, grads, grads, [1 - b for b in b2])
        ratio = torch._foreach_div(torch._foreach_mul(grads, grads), torch._foreach_clamp_min(vs, eps * eps))
        rms = torch.stack([full_tensor(r.mean()) for r in ratio]).sqrt().tolist()  # one host sync
        lrs = [lr / max(1.0, r) for r in rms]
        if wd != 0:
            torch._foreach_mul_(params, [1 - wd * x / group["initial_lr"] for x in lrs])
        denom = torch._foreach_sqrt(vs)
        torch._foreach_add_(denom, eps)
        torch._foreach_addcdiv_(params, ms, denom, [-x for x in lrs])


OPTIMIZERS = {"decoupled_adamw": DecoupledAdamW, "stable_adamw": StableAdamW}


def build_optimizer(model: nn.Module, cfg: OptimConfig, device: torch.device) -> torch.optim.Optimizer:
    """The `cfg.kind` optimizer over parameters with requires_grad (torch's AdamW fused on CUDA
    when `cfg.fused`); its peak LR is `cfg.lr`, which the trainer scales by the schedule."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if not cfg.decay_norms_and_biases and _no_decay(name, p) else decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    if cfg.kind == "adamw":
        return AdamW(
            groups,
            lr=cfg.lr,
            betas=cfg.betas,
            eps=cfg.eps,
            fused=(cfg.fused and device.type == "cuda") or None,
        )
    return OPTIMIZERS[cfg.kind](
        groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay
    )


def _names(model: nn.Module) -> dict[int, str]:
    return {id(p): n for n, p in model.named_parameters()}


def state_by_name(optimizer: torch.optim.Optimizer, model: nn.Module) -> StateByName:
    """The optimizer's per-parameter state keyed by parameter name (full tensors, detached, on CPU).

    Collective under FSDP2: every rank must call it (shards are gathered).
    """
    names = _names(model)
    return {
        names[id(p)]: {k: full_tensor(v).detach().cpu().clone() for k, v in st.items()}
        for p, st in optimizer.state.items()
    }


def state_mismatches(states: StateByName, model: nn.Module) -> list[str]:
    """What in `states` cannot be loaded into `model`: a parameter it lacks, or moments of another shape
    (`load_state_by_name` would take either silently and the first update would fail mid-run)."""
    params = dict(model.named_parameters())
    out = []
    for name, st in states.items():
        if name not in params:
            out.append(f"{name}: not a parameter of the model")
            continue
        shape = tuple(params[name].shape)
        other = {tuple(v.shape) for k, v in st.items() if k != "step"} - {shape}
        if other:
            out.append(f"{name}: moments of shape {min(other)}, the parameter's {shape}")
    return out


def load_state_by_name(optimizer: torch.optim.Optimizer, model: nn.Module, states: StateByName) -> None:
    """Give each optimized parameter its state from `states` (parameters without one start fresh)."""
    names = _names(model)
    full = optimizer.state_dict()
    index = 0
    for group in optimizer.param_groups:
        for p in group["params"]:
            st = states.get(names[id(p)])
            if st is not None:
                full["state"][index] = st
            index += 1
    optimizer.load_state_dict(full)
