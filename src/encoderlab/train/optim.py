"""AdamW over the trainable parameters, with its state addressed by parameter *name*.

PyTorch optimizers key their state by position in the parameter list, which changes whenever a
phase freezes or unfreezes layers. Keeping the state by name makes "carry the optimizer across
phases" independent of which parameters each phase trains, and makes checkpoints readable and
checkable (a state for a parameter the model lacks is an error, not a silent skip). Loading goes
through `Optimizer.load_state_dict`, which puts each tensor on the right device and dtype.
"""

from __future__ import annotations

import torch
from torch import nn

from encoderlab.train.config import OptimConfig
from encoderlab.train.distributed import full_tensor

StateByName = dict[str, dict[str, torch.Tensor]]


def _no_decay(name: str, p: nn.Parameter) -> bool:
    return p.ndim < 2  # norm weights and biases


def build_optimizer(model: nn.Module, cfg: OptimConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW over parameters with requires_grad; fused kernels on CUDA when `cfg.fused`."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if not cfg.decay_norms_and_biases and _no_decay(name, p) else decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    return torch.optim.AdamW(
        groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, fused=(cfg.fused and device.type == "cuda") or None
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
