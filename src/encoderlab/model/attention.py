"""Attention masks and kernels: one function picks the kernel, the model never does.

Masks combine three things: the attention mode chosen per forward call (bidirectional or causal),
the document ids of packed rows (attention never crosses a document), and padding (fine-tuning
batches). Backends:
  * `sdpa` (default, everywhere): `F.scaled_dot_product_attention`. With no documents and no
    padding it passes `is_causal` and no mask, which keeps the fused kernels; otherwise it takes a
    dense boolean (B, 1, T, T) mask, which is exact but rules out flash kernels on CUDA.
Faster packed-document kernels (flex attention, varlen flash) plug in here behind the same call.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from encoderlab.model.config import AttentionMode


def dense_mask(
    seq_len: int,
    mode: AttentionMode,
    doc_ids: torch.Tensor | None,
    padding_mask: torch.Tensor | None,
    device: torch.device,
) -> torch.Tensor | None:
    """A boolean (B or 1, 1, T, T) mask, True where a query may attend to a key; None if unmasked."""
    mask = None
    if doc_ids is not None:
        mask = (doc_ids[:, :, None] == doc_ids[:, None, :])[:, None]
    if padding_mask is not None:
        keys = padding_mask.bool()[:, None, None, :]
        mask = keys if mask is None else mask & keys
    if mode == "causal" and mask is not None:
        mask = mask & torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
    return mask


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mode: AttentionMode,
    mask: torch.Tensor | None,
) -> torch.Tensor:
    """Scaled dot-product attention over (B, H, T, D) tensors; k and v may have fewer heads (GQA)."""
    if k.shape[1] != q.shape[1]:
        repeat = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(repeat, dim=1)
        v = v.repeat_interleave(repeat, dim=1)
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=mode == "causal")
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
