"""A model's identity as evaluated: a hash of its weights and its tokenizer.

Evaluation results, probe caches and model cards are keyed by it, so a score is never attributed to
other weights: `encoderlab eval` records it with every result, `analysis/probe.py` names its feature
cache by it, and `export --eval` refuses a summary of another model. It lives with the models so that
each of those (eval, analysis, export) reads it from below rather than from one another.
"""

from __future__ import annotations

import hashlib

import torch


def fingerprint(model: torch.nn.Module, tokenizer) -> str:
    """sha256 of every weight (name, dtype, shape, bytes) and of the tokenizer."""
    from encoderlab.data.tokenizer import tokenizer_hash

    h = hashlib.sha256(tokenizer_hash(tokenizer).encode())
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()[:20]
