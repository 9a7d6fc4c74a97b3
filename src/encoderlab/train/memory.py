"""A memory estimate checked before the model is allocated, so an impossible size is one line.

The estimate is a deliberate *lower bound*: fp32 weights, gradients and the two AdamW moments
(16 bytes per parameter, divided over ranks under FSDP2), the activations every block must keep
for backward (its input and the SwiGLU intermediate per token, or only block inputs with
activation checkpointing), and with the sdpa kernel the boolean document mask (B x T x T bytes,
the one term quadratic in the sequence length). Attention scores, the logits of the targets,
allocator slack and the framework are left out. So a refusal is certain to be right (the run could never fit), while a
run that passes may still fail at the allocator; the trade-off favours never refusing a run
that would have worked. Memory available: total GPU memory on CUDA, `MemAvailable` on CPU.

A device is named by its string (`cpu`, `cuda`, `cuda:1`, `str(torch.device)`), and torch is imported only
to read a CUDA device's memory: `study plan` checks its CPU runs here without importing torch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.model.config import ModelConfig, resolve_attn_impl

GIB = 1024**3


def estimate_bytes(
    model: ModelConfig, tokens_per_micro_batch: int, *, bf16: bool, checkpointing: bool, shards: int = 1
) -> tuple[int, int]:
    """(bytes of weights + gradients + AdamW moments per rank, bytes of kept activations)."""
    state = 16 * model.num_params() // shards
    act_bytes = 2 if bf16 else 4
    per_token = model.hidden_size if checkpointing else 2 * model.hidden_size + 3 * model.intermediate_size
    return state, tokens_per_micro_batch * per_token * model.n_layers * act_bytes


def device_type(device: str) -> str:
    """`cuda` of `cuda:1`: the kind of device a device string names."""
    return device.partition(":")[0]


def available_bytes(device: str) -> int | None:
    """Memory the run may use on `device` (None when it cannot be read)."""
    if device_type(device) == "cuda":
        import torch

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


def dense_mask_bytes(cfg, device: str) -> int:
    """Bytes of the boolean (B, 1, T, T) document mask one forward builds with the sdpa kernel, and
    of the copy in the compute dtype SDPA turns it into (an additive mask, 4 bytes an entry in fp32,
    2 in bf16).

    It is the one allocation quadratic in `seq_len` (`attention.dense_mask`: 40 GB for four rows of
    100,000 tokens), built once per micro-batch and kept for backward. The copy was left out, so a run
    with room for the boolean mask alone passed the check and failed in SDPA with a traceback (80 GB
    asked at 2 x 100,000 tokens in fp32). Causal phases add a (T, T) triangle, left out (a lower bound).
    flex builds a block mask of (T / 128)^2 entries instead, which is negligible.
    """
    if resolve_attn_impl(cfg.scale.attn_impl, device_type(device)) != "sdpa":
        return 0
    copy = 2 if cfg.precision == "bf16" else 4
    return cfg.layout.micro_batch_size * cfg.layout.seq_len**2 * (1 + copy)


def check_fits(model: ModelConfig | None, cfg, device: str, names: Mapping[str, str] | None = None) -> None:
    """Refuse a run (a `RunConfig`) whose lower-bound estimate exceeds the device's memory.

    `model` is None when the model comes from a checkpoint (its size is not known before loading):
    then only the attention mask is counted. `names` says how the user sets the config's fields when
    that is not `--set FIELD=` (`bench train`'s `--batch` for `layout.micro_batch_size`); the refusal
    suggests only the fields it names (`bench train` has no flag for activation checkpointing).
    """
    have = available_bytes(device)
    if have is None:
        return
    state, acts = 0, 0
    if model is not None:
        state, acts = estimate_bytes(
            model,
            cfg.layout.micro_batch_size * cfg.layout.seq_len,
            bf16=cfg.precision == "bf16",
            checkpointing=cfg.scale.activation_checkpointing,
            shards=cfg.layout.world_size if cfg.scale.data_parallel == "fsdp" else 1,
        )
    mask = dense_mask_bytes(cfg, device)
    if state + acts + mask <= have:
        return
    b, t = cfg.layout.micro_batch_size, cfg.layout.seq_len
    parts = [] if model is None else [
        f"{state / GIB:.1f} GiB of weights, gradients and AdamW moments for {model.num_params() / 1e6:.0f}M parameters",
        f"{acts / GIB:.1f} GiB of activations for {b} x {t} tokens",
    ]  # fmt: skip
    if mask:
        parts.append(f"{mask / GIB:.1f} GiB of dense attention mask for {b} x {t} x {t} positions")
    fixes = _fixes(sized=model is not None, mask=bool(mask), names=names) or ["use a device with more memory"]
    fix = fixes[0] if len(fixes) == 1 else f"{', '.join(fixes[:-1])}, or {fixes[-1]}"
    raise UserError(
        f"this run needs at least {(state + acts + mask) / GIB:.1f} GiB per {device_type(device)} device "
        f"({' + '.join(parts)}) but {have / GIB:.1f} GiB is available; {fix}"
    )


def _fixes(*, sized: bool, mask: bool, names: Mapping[str, str] | None) -> list[str]:
    """What lowers the estimate, each under the name its command sets it by (`check_fits`)."""

    def name(field: str) -> str | None:
        return field if names is None else names.get(field)

    batch, accum, seq = name("layout.micro_batch_size"), name("layout.grad_accum"), name("layout.seq_len")
    attn, size = name("scale.attn_impl"), name("model.size")
    fixes = [f"lower {batch}" + (f" (raise {accum} to keep the batch)" if accum else "")] if batch else []
    if mask and seq:
        fixes.append(f"lower {seq}" + (f" or use {attn}=flex on CUDA (no dense mask)" if attn else ""))
    if sized:
        ckpt, parallel = name("scale.activation_checkpointing"), name("scale.data_parallel")
        fixes += [f"set {ckpt}=true"] if ckpt else []
        fixes += [f"shard with {parallel}=fsdp"] if parallel else []
        fixes += [f"pick a smaller {size}"] if size else []
    return fixes
