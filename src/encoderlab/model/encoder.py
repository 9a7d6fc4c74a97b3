"""The EuroBERT-style encoder: a Llama body whose attention is bidirectional or causal per call.

Notable features
  * pre-norm RMSNorm blocks, SwiGLU MLP, RoPE in Hugging Face's rotate-half layout, grouped-query
    attention, no biases (optional q/k/v biases and q/k norms let Qwen2/Qwen3 decoders load too);
  * `attention_mode` is an argument of `forward`, so the same weights serve MLM (bidirectional)
    and CLM (causal) and any phase sequence of the two;
  * packed rows carry `doc_ids` and per-document `position_ids`: attention stays inside documents
    and RoPE restarts at each document, exactly as if each document were run alone; the mask is
    built once per forward by `attention.build_mask` for the kernel `config.attn_impl` names
    (SDPA, or flex_attention with a BlockMask), so the blocks never see which kernel runs;
  * parameter names follow Hugging Face Llama/EuroBERT (`layers.3.self_attn.q_proj.weight`), so
    checkpoint adapters are a prefix away and nothing needs permuting;
  * the LM head is applied by the caller to the positions that need logits (`lm_logits`, or
    `lm_loss` with the fused head), which is what makes the MLM loss sparse: logits only at
    masked positions;
  * it satisfies the LanguageModel protocol (`model/protocol.py`), as the adapters do.
The model knows nothing about distribution, objectives or the training loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from encoderlab.config import to_dict
from encoderlab.model.attention import attend, build_mask
from encoderlab.model.config import Anatomy, AttentionMode, AttnImpl, ModelConfig
from encoderlab.model.head import LMHead
from encoderlab.model.hf_eurobert import eurobert_config, eurobert_state

if TYPE_CHECKING:
    from encoderlab.data.batch import TokenSpec


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in fp32 as HF Llama does, so bf16 runs and exported models agree; a float64 copy
        # (analysis' recheck of collapsed layers, `analysis.collapsed`) normalises in float64, or the copy
        # would carry float32 rounding. promote_types is float32 for every narrower dtype: bit-identical.
        dtype = x.dtype
        x = x.to(torch.promote_types(dtype, torch.float32))
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, theta: float):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, position_ids: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids[..., None].float() * self.inv_freq  # (B, T, D/2)
        emb = torch.cat((freqs, freqs), dim=-1)[:, None]  # (B, 1, T, D)
        return emb.cos().to(dtype), emb.sin().to(dtype)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        d, h = cfg.hidden_size, cfg.head_dim
        self.q_proj = nn.Linear(d, cfg.n_heads * h, bias=cfg.attention_bias)
        self.k_proj = nn.Linear(d, cfg.n_kv_heads * h, bias=cfg.attention_bias)
        self.v_proj = nn.Linear(d, cfg.n_kv_heads * h, bias=cfg.attention_bias)
        self.o_proj = nn.Linear(cfg.n_heads * h, d, bias=False)
        self.q_norm = RMSNorm(h, cfg.norm_eps) if cfg.qk_norm else None
        self.k_norm = RMSNorm(h, cfg.norm_eps) if cfg.qk_norm else None

    def forward(self, x, cos, sin, mode: AttentionMode, mask) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.n_heads, self.head_dim)
        k = self.k_proj(x).view(b, t, self.n_kv_heads, self.head_dim)
        v = self.v_proj(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)  # (B, H, T, D)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        y = attend(q, k, v, mode, mask)  # (B, H, T, D)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, -1))


class SwiGLU(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.norm_eps)
        self.mlp = SwiGLU(cfg)

    def forward(self, x, cos, sin, mode: AttentionMode, mask) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mode, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


@dataclass
class EncoderOutput:
    last_hidden_state: torch.Tensor
    """(B, T, D) output of the final norm."""
    hidden_states: list[torch.Tensor] | None = None
    """Embedding output then each block's output (n_layers + 1 tensors, before the final norm)."""


class Encoder(nn.Module):
    """Embedding, `n_layers` blocks, final norm and an LM head (separate or tied)."""

    # A Llama body, pre-norm: each sub-block's norm sits before it.
    anatomy: ClassVar[Anatomy] = Anatomy(
        attention=("input_layernorm", "self_attn"),
        mlp=("post_attention_layernorm", "mlp"),
        embeddings=("embed_tokens",),
        head=("norm", "lm_head"),
    )

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.config = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.norm_eps)
        self.rotary = RotaryEmbedding(cfg.head_dim, cfg.rope_theta)
        self.lm_head = LMHead(cfg.hidden_size, cfg.vocab_size)
        self.reset_parameters()
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    def reset_parameters(self) -> None:
        """N(0, init_std) for Linear and Embedding weights, zeros for biases, ones for norms."""
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, RMSNorm):
                nn.init.ones_(module.weight)

    def forward(
        self,
        input_ids: torch.Tensor,
        *,
        attention_mode: AttentionMode = "bidirectional",
        position_ids: torch.Tensor | None = None,
        doc_ids: torch.Tensor | None = None,
        padding_mask: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        segment_ids: torch.Tensor | None = None,
    ) -> EncoderOutput:
        """Hidden states for (B, T) `input_ids`.

        `doc_ids` (B, T) keeps attention inside packed documents; `padding_mask` (B, T) is True on
        real tokens; `position_ids` default to 0..T-1 per row. `segment_ids`: this body has no segment
        table (`segment_types` is 1, as EuroBERT's and Llama's), so all-zero ids change nothing and any
        other id is refused (`check_segment_ids`): dropping them would run a BERT-style pair as if it
        were one text without saying so. Callers pass none to such a model (`eval/heads.py`).
        """
        check_segment_ids(segment_ids, self.segment_types)
        b, t = input_ids.shape
        if t > self.config.max_seq_len:
            raise ValueError(f"sequence length {t} exceeds max_seq_len {self.config.max_seq_len}")
        if position_ids is None:
            position_ids = torch.arange(t, device=input_ids.device).expand(b, t)
        x = self.embed_tokens(input_ids)
        cos, sin = self.rotary(position_ids, x.dtype)
        mask = build_mask(self.config.attn_impl, t, attention_mode, doc_ids, padding_mask, input_ids.device)
        hidden = [x] if output_hidden_states else None
        for block in self.layers:
            x = block(x, cos, sin, attention_mode, mask)
            if hidden is not None:
                hidden.append(x)
        return EncoderOutput(last_hidden_state=self.norm(x), hidden_states=hidden)

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for hidden states of any leading shape."""
        return self.lm_head(hidden)

    def check_attention_mode(self, mode: AttentionMode) -> None:
        """Nothing to refuse: both modes run."""

    @property
    def segment_types(self) -> int:
        """1: no segment table (`forward` refuses segment ids other than 0)."""
        return 1

    # ---- the rest of the LanguageModel protocol (model/protocol.py) -----------------------------
    def lm_loss(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Summed fp32 cross-entropy of the head on (N, D) `hidden`, through the fused head."""
        return self.lm_head(hidden, targets)  # a module call, so FSDP2 gathers a sharded head

    @property
    def attn_impl(self) -> AttnImpl:
        return self.config.attn_impl

    def set_attn_impl(self, impl: AttnImpl) -> None:
        """Use the attention kernel `impl` from the next forward on (weights and outputs unchanged)."""
        if self.config.attn_impl != impl:
            self.config = replace(self.config, attn_impl=impl)

    def fsdp_units(self) -> list[nn.Module]:
        """Each block, and the LM head when untied: it runs outside the root's forward (sparse head)."""
        return [*self.layers, *([] if self.config.tie_embeddings else [self.lm_head])]

    def folder_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """The state dict (a tied head stored once, as the embedding) and the config to rebuild it."""
        state = self.state_dict()
        if self.config.tie_embeddings:
            state.pop("lm_head.weight")
        return state, {"model": to_dict(self.config)}

    @property
    def hf_architecture(self) -> str:
        return "EuroBertForMaskedLM"

    def save_hf(self, folder: Path, spec: TokenSpec | None = None) -> None:
        """Write the model as a Hugging Face EuroBERT folder (config.json and model.safetensors)."""
        from safetensors.torch import save_file

        eurobert_config(self, spec).save_pretrained(str(folder))
        save_file(eurobert_state(self), str(Path(folder) / "model.safetensors"), metadata={"format": "pt"})

    def add_token_rows(self, ids: Sequence[int], mean_of: int) -> None:
        """Rows of token `ids` = the mean of the first `mean_of` rows, in the embedding and an untied
        head; the vocabulary grows to cover every id (`protocol.LanguageModel.add_token_rows`)."""
        rows = max(self.config.vocab_size, max(ids) + 1)
        with torch.no_grad():
            self.embed_tokens.weight = nn.Parameter(mean_rows(self.embed_tokens.weight, rows, ids, mean_of))
            self.embed_tokens.num_embeddings = rows
            if self.config.tie_embeddings:
                self.lm_head.weight = self.embed_tokens.weight
            else:
                self.lm_head.weight = nn.Parameter(mean_rows(self.lm_head.weight, rows, ids, mean_of))
            self.lm_head.out_features = rows
        self.config = replace(self.config, vocab_size=rows)


def mean_rows(weight: torch.Tensor, rows: int, ids: Sequence[int], mean_of: int) -> torch.Tensor:
    """`weight` grown to `rows` rows; the new rows and those of `ids` set to the mean of the first `mean_of`."""
    out = weight.new_empty((rows, *weight.shape[1:]))
    out[: weight.shape[0]] = weight
    mean = weight[:mean_of].mean(0)
    out[weight.shape[0] :] = mean
    out[list(ids)] = mean
    return out


def check_segment_ids(segment_ids: torch.Tensor | None, segment_types: int) -> None:
    """Refuse segment ids a model of `segment_types` has no row for, when it has one row only (no
    segment table): all zeros is what it runs anyway, any other id would be silently dropped. With a
    table, an id past it is transformers' own IndexError; checking here would cost a device sync per
    forward."""
    if segment_ids is not None and segment_types <= 1 and bool(segment_ids.any()):
        raise ValueError(
            "segment ids other than 0 given to a model without a segment table (segment_types 1); "
            "pass segment_ids only to a model whose segment_types is above 1"
        )
