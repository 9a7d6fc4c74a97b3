"""The LM head: a bias-free vocabulary projection that can also return its fused cross-entropy.

`LMHead(h)` gives logits; `LMHead(h, targets)` gives the summed cross-entropy without materialising
the logits' backward. It is a module call either way, so FSDP2's hooks gather the (sharded) weight
for it, and its parameter is named like `nn.Linear`'s (`lm_head.weight`), so checkpoints and
exports do not change.

The plain path (`F.cross_entropy(head(h).float(), t)`) keeps the (N, V) fp32 logits for backward,
then runs log-softmax forward, log-softmax backward and two matmuls: five passes over an N x V
tensor that for CLM with a 32k vocabulary is larger than everything else in a small model.
Here the rows go through in chunks: each chunk's logits become `softmax - onehot` in place (the
gradient of the summed loss with respect to them), and the gradients of the hidden states and of
the head weight are computed right away, in forward. Backward only scales them by the incoming
gradient. Same FLOPs, no (N, V) buffer outlives a chunk, and each chunk stays in cache on CPU.

Trade-offs: forward does backward's work, so calling it without needing gradients wastes it
(the head computes plain logits then); the head's gradient is held from forward to backward (one
weight-sized fp32 buffer per micro-batch in flight). Numerics follow the plain path under autocast:
matmuls in the autocast dtype, softmax and loss in fp32, the weight gradient accumulated in fp32.
"""

from __future__ import annotations

import torch
from torch import nn

CHUNK_ELEMENTS = 2**25
"""Logits per chunk (128 MiB in fp32): 1024 rows at a 32k vocabulary."""


def _compute_dtype(t: torch.Tensor) -> torch.dtype:
    device = t.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else t.dtype


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        dtype = _compute_dtype(hidden)
        need_h, need_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        with torch.autocast(hidden.device.type, enabled=False):
            w = weight.to(dtype)
            grad_h = torch.empty_like(hidden) if need_h else None
            grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need_w else None
            loss = torch.zeros((), dtype=torch.float32, device=hidden.device)
            rows = max(1, CHUNK_ELEMENTS // weight.shape[0])
            for start in range(0, hidden.shape[0], rows):
                h, t = hidden[start : start + rows].to(dtype), targets[start : start + rows]
                # log_softmax is one fused kernel; logsumexp is five passes on CPU
                logp = torch.log_softmax((h @ w.t()).float(), dim=-1)
                loss -= logp.gather(1, t[:, None]).sum()
                grad = logp.exp_()  # softmax, in place
                grad[torch.arange(t.shape[0], device=t.device), t] -= 1.0
                grad = grad.to(dtype)
                if need_h:
                    grad_h[start : start + rows] = grad @ w
                if need_w:  # the matmul in the compute dtype, as autocast's linear backward does
                    grad_w += grad.t() @ h
        ctx.weight_dtype = weight.dtype
        ctx.save_for_backward(grad_h, grad_w)
        return loss

    @staticmethod
    def backward(ctx, grad_loss: torch.Tensor):
        grad_h, grad_w = ctx.saved_tensors
        return (
            None if grad_h is None else grad_h * grad_loss.to(grad_h.dtype),
            None if grad_w is None else (grad_w * grad_loss).to(ctx.weight_dtype),
            None,
        )


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Summed fp32 cross-entropy of `hidden @ weight.T` (N, V) against `targets` (N,), fused and chunked."""
    return _LinearCrossEntropy.apply(hidden, weight, targets)


class LMHead(nn.Linear):
    """Vocabulary projection without bias; with `targets` it returns the fused summed cross-entropy."""

    def __init__(self, hidden_size: int, vocab_size: int):
        super().__init__(hidden_size, vocab_size, bias=False)

    def forward(self, hidden: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        if targets is None:
            return super().forward(hidden)
        if torch.is_grad_enabled() and (hidden.requires_grad or self.weight.requires_grad):
            return linear_cross_entropy(hidden, self.weight, targets)
        return torch.nn.functional.cross_entropy(super().forward(hidden).float(), targets, reduction="sum")
