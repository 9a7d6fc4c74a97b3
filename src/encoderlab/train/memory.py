"""A memory estimate checked before the model is allocated, so an impossible size is one line.

The estimate is a deliberate *lower bound*: fp32 weights, gradients and the two AdamW moments
(16 bytes per parameter, divided over ranks under FSDP2) plus the activations every block must
keep for backward (its input and the SwiGLU intermediate per token, or only block inputs with
activation checkpointing). Attention scores, the logits of the targets, allocator slack and the
framework are left out. So a refusal is certain to be right (the run could never fit), while a
run that passes may still fail at the allocator; the trade-off favours never refusing a run
that would have worked. Memory available: total GPU memory on CUDA, `MemAvailable` on CPU.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from encoderlab.errors import UserError
from encoderlab.model.config import ModelConfig

GIB = 1024**3


def estimate_bytes(
    model: ModelConfig, tokens_per_micro_batch: int, *, bf16: bool, checkpointing: bool, shards: int = 1
) -> tuple[int, int]:
    """(bytes of weights + gradients + AdamW moments per rank, bytes of kept activations)."""
    state = 16 * model.num_params() // shards
    act_bytes = 2 if bf16 else 4
    per_token = model.hidden_size if checkpointing else 2 * model.hidden_size + 3 * model.intermediate_size
    return state, tokens_per_micro_batch * per_token * model.n_layers * act_bytes


def available_bytes(device: torch.device) -> int | None:
    """Memory the run may use on `device` (None when it cannot be read)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[1]
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def check_fits(model: ModelConfig, cfg, device: torch.device) -> None:
    """Refuse a run (a `RunConfig`) whose lower-bound estimate exceeds the device's memory."""
    have = available_bytes(device)
    if have is None:
        return
    state, acts = estimate_bytes(
        model,
        cfg.layout.micro_batch_size * cfg.layout.seq_len,
        bf16=cfg.precision == "bf16",
        checkpointing=cfg.scale.activation_checkpointing,
        shards=cfg.layout.world_size if cfg.scale.data_parallel == "fsdp" else 1,
    )
    if state + acts <= have:
        return
    raise UserError(
        f"this run needs at least {(state + acts) / GIB:.1f} GiB per {device.type} device "
        f"({state / GIB:.1f} GiB of weights, gradients and AdamW moments for {model.num_params() / 1e6:.0f}M "
        f"parameters + {acts / GIB:.1f} GiB of activations for {cfg.layout.micro_batch_size} x "
        f"{cfg.layout.seq_len} tokens) but {have / GIB:.1f} GiB is available; lower "
        "layout.micro_batch_size (raise layout.grad_accum to keep the batch), set "
        "scale.activation_checkpointing=true, shard with scale.data_parallel=fsdp, or pick a smaller model.size"
    )
