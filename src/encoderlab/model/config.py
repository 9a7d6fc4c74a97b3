"""Model configuration and the named sizes of paper 1 (plus small ones for CPU work).

A size fixes the body (layers, widths, heads); the vocabulary comes from the tokenizer, so
`ModelConfig.from_size("210m", vocab_size=...)` is how a model config is usually made. The 210m,
610m and 1b shapes are EuroBERT's (the Optimus model file, Nicolas-BZRD/EuroBERT
`optimus/trainer/model/encoder/eurobert.py`, and the 610m card: hidden 1152, 26 layers); 1b follows
the 28-layer / 5120 reading
(1.19B parameters with one embedding), which is what the name "1.2b" in the source commit implies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from encoderlab.errors import did_you_mean

AttentionMode = Literal["bidirectional", "causal"]
AttnImpl = Literal["sdpa", "flex"]
ATTN_IMPLS: tuple[str, ...] = ("sdpa", "flex")


def resolve_attn_impl(requested: str, device_type: str) -> str:
    """The kernel to train with on a device of `device_type` (`cuda`, `cpu`): `auto` is flex on CUDA
    and sdpa elsewhere (the fallback, since flex_attention has no backward on CPU). Here, not in
    `attention.py`, so the memory check a study plan makes reads it without torch."""
    if requested == "auto":
        return "flex" if device_type == "cuda" else "sdpa"
    return requested


SHAPE_FIELDS = (
    "vocab_size",
    "hidden_size",
    "n_layers",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "intermediate_size",
)
"""The sizes that fix a model's parameter shapes (a checkpoint resumes only into the same ones)."""


@dataclass(frozen=True)
class RelativePositions:
    """DeBERTa's disentangled attention, for FLOP counting (`train/flops.py`): besides content-to-content
    scores, each of its terms (content-to-position, position-to-content) scores every query (or key)
    against the 2k rows of the relative-position table, which each block first projects for it."""

    terms: int
    """How many of c2p and p2c the model computes (0 to 2)."""
    span: int
    """k, the table's half-width the model uses: position buckets (v3), else max relative positions."""
    fits_row: bool
    """Whether k shrinks to a shorter row: v1 slices the table to min(k, T) rows either side; v2/v3 never."""

    def rows(self, seq_len: int) -> int:
        """The table rows each term scores against, for rows of `seq_len` tokens: 2k."""
        return 2 * (min(self.span, seq_len) if self.fits_row else self.span)


@dataclass(frozen=True)
class MatmulShape:
    """The widths that decide a block's matmul FLOPs (`train/flops.py`)."""

    n_heads: int
    """Query heads."""
    n_kv_heads: int
    """Key/value heads."""
    head_dim: int
    """Width of one head."""
    intermediate_size: int
    """Inner width of the MLP."""
    mlp_matrices: int
    """Matrices in the MLP: 3 for a gated one (SwiGLU, GeGLU), 2 for a plain GELU MLP."""
    windowed_layers: int = 0
    """Blocks whose attention sees only keys within `window` positions (ModernBERT's local layers)."""
    window: int = 0
    """The farthest key (|query - key| positions) a windowed block attends to."""
    relative: RelativePositions | None = None
    """DeBERTa's position terms; None for attention over content only."""
    head_transform: int = 0
    """Output width of a dense layer the LM head applies before its vocabulary projection (the
    BERT-family heads' transform: the hidden width, or ELECTRA's and DeBERTa's embedding width);
    0 for a head that projects the hidden states directly (ours)."""
    input_projection: int = 0
    """Input width of a dense layer that projects every token's embedding up to the hidden width before
    the first block (ELECTRA's `embeddings_project` from a narrower `embedding_size`, ELECTRA-small's 128
    into 256); 0 where the embedding is already hidden-width (ours, BERT's)."""


@dataclass(frozen=True)
class Anatomy:
    """Where a model class keeps the parts a layer transplant can take (`analysis/transplant.py`).

    The attention and MLP parts of a block, each with the norm that belongs to it, partition the
    block's parameters (tested for every class)."""

    attention: tuple[str, ...]
    """Sub-modules of a block (`model.layers[i]`) that make its attention part."""
    mlp: tuple[str, ...]
    """Sub-modules of a block that make its MLP part."""
    embeddings: tuple[str, ...]
    """Modules of the model (dotted paths) that make the input embedding."""
    head: tuple[str, ...]
    """Modules of the model that make the final norm and the LM head."""


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """A Llama-style transformer body used as an encoder (EuroBERT) or loaded from a decoder."""

    vocab_size: int
    """Rows of the embedding and the LM head."""
    hidden_size: int = 768
    """Width of the residual stream."""
    n_layers: int = 12
    """Number of transformer blocks."""
    n_heads: int = 12
    """Query heads."""
    n_kv_heads: int = 12
    """Key/value heads (grouped-query attention when fewer than n_heads)."""
    head_dim: int = 64
    """Width of one attention head."""
    intermediate_size: int = 3072
    """Inner width of the SwiGLU MLP."""
    norm_eps: float = 1e-5
    """RMSNorm epsilon (copied from a source checkpoint, never defaulted: 1e-5 vs 1e-6 matters)."""
    rope_theta: float = 10_000.0
    """RoPE base frequency (rotate-half layout)."""
    max_seq_len: int = 2048
    """Longest sequence the model accepts."""
    tie_embeddings: bool = False
    """Share the LM head with the input embedding (EuroBERT: untied; SmolLM2: tied)."""
    attention_bias: bool = False
    """Biases on q/k/v projections (Qwen2); EuroBERT and Llama have none."""
    qk_norm: bool = False
    """RMSNorm on each head's queries and keys before RoPE (Qwen3)."""
    init_std: float = 0.02
    """Standard deviation of the normal init for Linear and Embedding weights."""
    pad_id: int | None = None
    """Padding id recorded for export (HF configs want one)."""
    bos_id: int | None = None
    """BOS id recorded for export."""
    eos_id: int | None = None
    """EOS id recorded for export."""
    mask_id: int | None = None
    """Mask id recorded for export."""
    attn_impl: AttnImpl = "sdpa"
    """Attention kernel: `sdpa` (everywhere) or `flex` (flex_attention with a document BlockMask, the
    packed path on GPU); a runtime choice that does not change the weights or the outputs."""

    def __post_init__(self) -> None:
        if self.attn_impl not in ATTN_IMPLS:
            raise ValueError(f"attn_impl must be one of {', '.join(ATTN_IMPLS)}, got {self.attn_impl!r}")
        for name in (*SHAPE_FIELDS, "max_seq_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads {self.n_heads} must be a multiple of n_kv_heads {self.n_kv_heads}")
        for name in ("rope_theta", "norm_eps"):  # NaN was exported as is, into an unreadable config.json
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {getattr(self, name)}")

    @classmethod
    def from_size(cls, size: str, vocab_size: int, **overrides) -> ModelConfig:
        """The named size with this vocabulary (and any field overridden)."""
        if size not in SIZES:
            raise did_you_mean(size, list(SIZES), "model size")
        return replace(SIZES[size], vocab_size=vocab_size, **overrides)

    def matmul_shape(self) -> MatmulShape:
        """Head and MLP widths for FLOP counting (a SwiGLU MLP has three matrices)."""
        return MatmulShape(self.n_heads, self.n_kv_heads, self.head_dim, self.intermediate_size, 3)

    def num_params(self, include_embedding: bool = True) -> int:
        """Parameter count (the LM head counted unless tied)."""
        d, h = self.hidden_size, self.head_dim
        attn = d * h * (self.n_heads * 2 + self.n_kv_heads * 2)
        if self.attention_bias:
            attn += h * (self.n_heads + 2 * self.n_kv_heads)
        mlp = 3 * d * self.intermediate_size
        norms = 2 * d + (2 * h if self.qk_norm else 0)
        body = self.n_layers * (attn + mlp + norms) + d
        emb = self.vocab_size * d
        head = 0 if self.tie_embeddings else emb
        return body + (emb + head if include_embedding else 0)


def non_embedding_params(size: str) -> float:
    """N of a named model size: its non-embedding parameters, which the vocabulary does not change. The
    size scaling laws are fitted in (`encoderlab advise`) and that `study plan` prints beside the full
    count, so a size read from a plan means the same in advise."""
    return float(ModelConfig.from_size(size, vocab_size=1).num_params(include_embedding=False))


def _size(layers: int, hidden: int, inner: int, heads: int, kv: int, head_dim: int) -> ModelConfig:
    return ModelConfig(
        vocab_size=1,
        n_layers=layers,
        hidden_size=hidden,
        intermediate_size=inner,
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=head_dim,
    )


SIZES: dict[str, ModelConfig] = {
    # CPU sizes: tiny is under 5M parameters with an 8k vocabulary; mini and small scale it up, nano
    # and micro (0.1M and 0.3M non-embedding parameters) scale it down for a CPU ladder below tiny.
    "nano": _size(layers=2, hidden=64, inner=192, heads=2, kv=1, head_dim=32),
    "micro": _size(layers=3, hidden=96, inner=288, heads=3, kv=1, head_dim=32),
    "tiny": _size(layers=4, hidden=128, inner=384, heads=4, kv=2, head_dim=32),
    "mini": _size(layers=6, hidden=256, inner=768, heads=4, kv=4, head_dim=64),
    "small": _size(layers=8, hidden=512, inner=1536, heads=8, kv=4, head_dim=64),
    # Paper 1's EuroBERT shapes.
    "210m": _size(layers=12, hidden=768, inner=3072, heads=12, kv=12, head_dim=64),
    "610m": _size(layers=26, hidden=1152, inner=4096, heads=18, kv=6, head_dim=64),
    "1b": _size(layers=28, hidden=1728, inner=5120, heads=18, kv=6, head_dim=96),
}
