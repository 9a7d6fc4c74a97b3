"""Counted matmul FLOPs of a training step, and the peak they are measured against (MFU).

Counted, not estimated with 6N: per token, every projection (q, k, v, o, the three SwiGLU
matrices, and an embedding's projection up to the hidden width where a model has one, as
ELECTRA-small's 128 into 256) costs 2 x in x out multiply-adds in the forward pass; attention costs
2 x 2 x heads x head_dim per attended (query, key) pair (scores and the weighted sum), where the
pairs are those the mask allows inside each document (len^2 bidirectional, len(len+1)/2 causal;
in a sliding-window layer, as ModernBERT's local ones, only those within its window);
the LM head costs 2 x hidden x vocab per position that has a target (the sparse head), plus its
dense transform where it has one (the BERT-family heads of the adapters). Backward
costs twice the forward. Embedding lookups, norms and the softmax are not matmuls and are left
out, as in PaLM's MFU. Frozen layers still count as trained (their input gradients are computed
anyway; only the weight gradients are saved), so MFU is slightly optimistic during freezing.

DeBERTa's disentangled attention adds its position terms (`relative_flops`): the projections of the
relative-position table and each term's (c2p, p2c) scores of every token against the table's 2k rows.
With v3's 2k = 512 they cost as much as the content scores and weighted sum of a 512-token row,
with v1's 2k = 1024 twice that; left out, DeBERTa's MFU read low by that much.

The dense SDPA kernel computes every pair of a packed row, masked or not: counting only the
allowed pairs makes MFU a measure of useful work, as it should be.
"""

from __future__ import annotations

import functools
import time

import torch

from encoderlab.data.batch import BatchLayout
from encoderlab.model.config import MatmulShape
from encoderlab.model.protocol import ModelShape
from encoderlab.objectives.base import ObjectiveInputs

# bf16 dense peaks (TFLOP/s) of common accelerators, by a substring of the device name.
GPU_PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "A10": 125.0, "MI250X": 383.0}


def attended_pairs(doc_ids: torch.Tensor, causal: bool, window: int | None = None) -> int:
    """Number of (query, key) pairs the document mask allows over a (B, T) batch; with `window`, only
    pairs at most `window` positions apart (a sliding-window layer's mask).

    A document of length L has, at each distance k = 1..m (m = L - 1, or `window` if smaller), L - k
    pairs each way: L + 2 x sum(L - k) bidirectional (L^2 without a window), one way causal."""
    starts = torch.ones_like(doc_ids, dtype=torch.bool)
    starts[:, 1:] = doc_ids[:, 1:] != doc_ids[:, :-1]
    run = torch.cumsum(starts.reshape(-1), 0)
    lengths = torch.bincount(run).double()[1:]
    m = (lengths - 1).clamp(max=window) if window is not None else lengths - 1
    off_diagonal = m * lengths - m * (m + 1) / 2
    return int((lengths + (1 if causal else 2) * off_diagonal).sum())


def forward_flops(cfg: ModelShape, x: ObjectiveInputs) -> int:
    """Matmul FLOPs of one forward pass (with the sparse head) over the micro-batch `x`; windowed
    layers (`MatmulShape.windowed_layers`) count the pairs within their window, and a narrower
    embedding's projection (`MatmulShape.input_projection`) counts once per token, before the blocks."""
    d = cfg.hidden_size
    shape = cfg.matmul_shape()
    n_heads, n_kv, h = shape.n_heads, shape.n_kv_heads, shape.head_dim
    inner, mats = shape.intermediate_size, shape.mlp_matrices
    per_token = 2 * d * h * (2 * n_heads + 2 * n_kv) + 2 * mats * d * inner
    tokens = x.input_ids.numel()
    causal = x.attention_mode == "causal"
    pairs = (cfg.n_layers - shape.windowed_layers) * attended_pairs(x.doc_ids, causal)
    if shape.windowed_layers:
        pairs += shape.windowed_layers * attended_pairs(x.doc_ids, causal, shape.window)
    body = (cfg.n_layers * per_token + 2 * shape.input_projection * d) * tokens + 4 * n_heads * h * pairs
    if shape.relative is not None:
        body += cfg.n_layers * relative_flops(shape, d, tokens, x.input_ids.shape[-1])
    width = shape.head_transform  # a head's transform, then its vocabulary projection from that width
    return body + 2 * x.n_targets * (d * width + (width or d) * cfg.vocab_size)


def relative_flops(shape: MatmulShape, d: int, tokens: int, seq_len: int) -> int:
    """One block's forward FLOPs for DeBERTa's position terms over `tokens` tokens in rows of `seq_len`:
    per term, the projection of the table's 2k rows (once per pass: the table is the same for every
    row) and the scores of every token against all 2k rows, computed densely whatever the documents
    (the gather picks the pairs' positions only afterwards)."""
    rel, width = shape.relative, shape.n_heads * shape.head_dim
    return rel.terms * 2 * rel.rows(seq_len) * width * (d + tokens)


def train_flops(cfg: ModelShape, xs: list[ObjectiveInputs]) -> int:
    """Forward + backward (2x forward) FLOPs of a step over its micro-batches."""
    return 3 * sum(forward_flops(cfg, x) for x in xs)


def step_flops_bound(cfg: ModelShape, layout: BatchLayout) -> int:
    """FLOPs of one global batch as if every row were one document and every position had a target:
    an upper bound (documents and the sparse head only lower it), for estimates before a run."""
    b, t = layout.micro_batch_size, layout.seq_len
    zeros = torch.zeros(b, t, dtype=torch.long)
    whole = ObjectiveInputs(
        input_ids=zeros, position_ids=zeros, doc_ids=zeros, attention_mode="bidirectional", targets=zeros
    )
    return train_flops(cfg, [whole]) * layout.grad_accum * layout.world_size


@functools.cache
def measured_peak_flops(device: str, dtype: torch.dtype) -> float:
    """FLOP/s of a large square matmul on this device: the CPU 'peak' MFU is relative to."""
    n = 1024
    # Its own generator: the global one drives dropout, and a run resumed in a fresh process (where
    # this runs again after the restored RNG) must draw what the uninterrupted run drew.
    g = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=dtype, generator=g)
    b = torch.randn(n, n, device=device, dtype=dtype, generator=g)
    start = time.perf_counter()
    a @ b  # warm-up
    first = time.perf_counter() - start
    if device == "cpu" and first >= 0.2:
        # A CPU matmul this slow (bfloat16 without bf16 units: seconds) is its own measure: the warm-up's
        # one-time costs (a thread pool, a kernel's choice) are a sliver of it, and timing a second one
        # doubled the cost of every CPU run's start that gives no peak_tflops. A GPU's first matmul holds
        # its library's start-up (seconds, not a sliver): a GPU always times the ones after it.
        return 2 * n**3 / first
    # At least 0.2 s of matmuls, and at least one: a bfloat16 matmul on a CPU without bf16 units takes
    # seconds (2.8 s of CPU here), and the three reps asked before timed 8 s where one times it as well;
    # a fast device (a GPU, a float32 CPU matmul of ~60 ms) runs three or more in 0.2 s as before.
    reps, start = 0, time.perf_counter()
    while reps < 1 or time.perf_counter() - start < 0.2:
        a @ b
        reps += 1
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return 2 * n**3 * reps / (time.perf_counter() - start)


def _datasheet(device: torch.device) -> str | None:
    """The `GPU_PEAK_TFLOPS` entry of this device (None: a CPU, or a GPU the table does not know)."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((key for key in GPU_PEAK_TFLOPS if key in name), None)


def peak_flops(device: torch.device, dtype: torch.dtype, override_tflops: float = 0.0) -> float:
    """Peak FLOP/s: the override, a known GPU's datasheet value, else a measured matmul."""
    if override_tflops > 0:
        return override_tflops * 1e12
    if (key := _datasheet(device)) is not None:
        return GPU_PEAK_TFLOPS[key] * 1e12
    return measured_peak_flops(str(device), dtype)


def peak_flops_source(device: torch.device, override_tflops: float = 0.0) -> str:
    """Which of `peak_flops`' three the peak is, as a result records it: "given", "datasheet H100 (bf16)" or
    "measured matmul" (a CPU, or a GPU the table does not know, whose MFU is then against a measured
    matmul, not a datasheet: a record said "datasheet or measured matmul" either way)."""
    if override_tflops > 0:
        return "given"
    key = _datasheet(device)
    return "measured matmul" if key is None else f"datasheet {key} (bf16)"
