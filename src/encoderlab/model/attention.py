"""Attention masks and kernels: one function picks the kernel, the model never does.

Masks combine three things: the attention mode chosen per forward call (bidirectional or causal),
the document ids of packed rows (attention never crosses a document), and padding (fine-tuning
batches). `build_mask` runs once per forward and returns a backend-specific mask object that every
layer reuses; `attend` dispatches on the type of that object. Backends (`ModelConfig.attn_impl`):
  * `sdpa` (default, everywhere): `F.scaled_dot_product_attention`. With no documents and no
    padding it passes `is_causal` and no mask, which keeps the fused kernels; otherwise it takes a
    dense boolean (B, 1, T, T) mask, which is exact but rules out flash kernels on CUDA and costs
    O(T^2) memory per row.
  * `flex`: `flex_attention` with a `BlockMask` built from a `mask_mod` (document, padding and
    causal predicates), so fully masked blocks are skipped: the packed-document path on GPU. It is
    compiled on CUDA; on CPU it runs eagerly (an unfused reference implementation, only useful for
    tests). Unmasked batches still take the SDPA `is_causal` path, which is already optimal.
    Where flex_attention cannot run (missing from the torch build, or CUDA without Triton) `flex`
    falls back to `sdpa` with a warning.
A varlen flash-attention backend would plug in the same way: a mask object holding `cu_seqlens`
built from `doc_ids` in `build_mask`, and one more branch in `attend`.
"""

from __future__ import annotations

import functools
import warnings

import torch
import torch.nn.functional as F

from encoderlab.model.compilecache import private_compile_cache
from encoderlab.model.config import ATTN_IMPLS, AttentionMode

try:  # flex_attention is a prototype API: absent from some builds, and it may move.
    from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention
except ImportError:  # pragma: no cover - depends on the installed torch
    BlockMask = create_block_mask = flex_attention = None


def flex_available(device: torch.device | None = None) -> bool:
    """True when flex_attention can run on `device` (on CUDA it is compiled, which needs Triton)."""
    if flex_attention is None:
        return False
    if device is not None and device.type == "cuda":
        from torch.utils._triton import has_triton

        return has_triton()
    return True


def resolve_impl(impl: str, device: torch.device | None = None) -> str:
    """The backend that will actually run for `impl` (flex falls back to sdpa where it cannot run)."""
    if impl not in ATTN_IMPLS:
        raise ValueError(f"unknown attention implementation {impl!r}; valid: {', '.join(ATTN_IMPLS)}")
    if impl == "flex" and not flex_available(device):
        warnings.warn(f"flex_attention cannot run on {device or 'this torch'}; using sdpa", stacklevel=3)
        return "sdpa"
    return impl


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


def block_mask(
    seq_len: int,
    mode: AttentionMode,
    doc_ids: torch.Tensor | None,
    padding_mask: torch.Tensor | None,
    device: torch.device,
) -> BlockMask:
    """The flex `BlockMask` allowing exactly what `dense_mask` allows."""
    ref = doc_ids if doc_ids is not None else padding_mask
    keep = padding_mask.bool() if padding_mask is not None else None
    causal = mode == "causal"

    def mask_mod(b, h, q, kv):
        allowed = doc_ids[b, q] == doc_ids[b, kv] if doc_ids is not None else q >= 0
        if keep is not None:
            allowed = allowed & keep[b, kv]
        if causal:
            allowed = allowed & (q >= kv)
        return allowed

    # Compiled, building the mask is a few fused kernels instead of dozens of eager ones over
    # B x T x T elements; CPU keeps the eager path (no compiler needed, and flex there is a fallback).
    compiled = device.type == "cuda"
    if compiled:  # a forward's first compile, before `attend`'s: inductor reads its cache from here on
        private_compile_cache()  # a mkdir and an lstat per forward, against a forward's milliseconds
    return create_block_mask(mask_mod, ref.shape[0], None, seq_len, seq_len, device=device, _compile=compiled)


def build_mask(
    impl: str,
    seq_len: int,
    mode: AttentionMode,
    doc_ids: torch.Tensor | None,
    padding_mask: torch.Tensor | None,
    device: torch.device,
) -> torch.Tensor | BlockMask | None:
    """The mask object for one forward pass: None (unmasked), a dense tensor or a BlockMask."""
    if doc_ids is None and padding_mask is None:
        return None
    if resolve_impl(impl, device) == "flex":
        return block_mask(seq_len, mode, doc_ids, padding_mask, device)
    return dense_mask(seq_len, mode, doc_ids, padding_mask, device)


@functools.cache
def _compiled_flex():
    private_compile_cache()  # inductor's cache is read from here on (model/compilecache.py)
    return torch.compile(flex_attention, dynamic=False)


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mode: AttentionMode,
    mask: torch.Tensor | BlockMask | None,
) -> torch.Tensor:
    """Scaled dot-product attention over (B, H, T, D) tensors; k and v may have fewer heads (GQA)."""
    gqa = k.shape[1] != q.shape[1]
    if BlockMask is not None and isinstance(mask, BlockMask):
        # Eager flex on CUDA materialises the scores; compiled it is a fused kernel. Inside a compiled
        # block the plain function is traced into that block's graph already.
        fused = q.is_cuda and not torch.compiler.is_compiling()
        kernel = _compiled_flex() if fused else flex_attention
        return kernel(q, k, v, block_mask=mask, enable_gqa=gqa)
    if gqa:
        repeat = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(repeat, dim=1)
        v = v.repeat_interleave(repeat, dim=1)
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=mode == "causal")
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
