"""The LanguageModel protocol: what training, evaluation, analysis and export ask of a model.

Two kinds of model satisfy it: encoderlab's own `Encoder` (a Llama body, also what Llama, Qwen,
SmolLM2 and EuroBERT checkpoints convert into) and the adapters around transformers' BERT and
ModernBERT classes (`hf_adapters`). Callers hold a `LanguageModel` and never ask which class it is:
every place that used to branch on `isinstance(model, Encoder)` now calls a method here, and each
model class answers for itself (its fused or plain LM head, its saved state, its export format,
its attention kernel, what FSDP2 may shard, where a transplant finds a block's parts).

Design trade-offs
  * A structural `typing.Protocol`, not a base class: `Encoder` stays a plain `nn.Module` readable
    on its own, adapters keep transformers' modules inside, and a third kind of model only has to
    grow these methods. `runtime_checkable` checks that the names exist; the tests also compare
    each class's signatures against the protocol's, which `isinstance` cannot.
  * The methods are the seams callers needed, no more: a caller that needs a new capability adds a
    method here and to every class, rather than asking for the class again.
  * `config` is typed by the small `ModelShape` protocol (sizes and the matmul shape FLOP counts
    need); `ModelConfig` and `AdapterConfig` both satisfy it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import torch
from torch import nn

from encoderlab.model.config import Anatomy, AttentionMode, MatmulShape


@runtime_checkable
class ModelShape(Protocol):
    """The sizes every model config exposes (`ModelConfig`, `AdapterConfig`)."""

    hidden_size: int
    n_layers: int
    vocab_size: int
    max_seq_len: int

    def matmul_shape(self) -> MatmulShape:
        """Head and MLP widths for FLOP counting."""
        ...


@runtime_checkable
class LanguageModel(Protocol):
    """A transformer with an LM head whose attention is bidirectional or causal per call."""

    config: ModelShape
    anatomy: ClassVar[Anatomy]
    """Where the class keeps each block's attention and MLP parts, the embeddings and the head: what a
    layer transplant copies (`analysis/transplant.py`)."""

    @property
    def layers(self) -> nn.ModuleList:
        """The transformer blocks, in order (freezing, CKA and transplants index them)."""
        ...

    def __call__(self, input_ids: torch.Tensor, **kwargs: Any) -> Any: ...

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
    ) -> Any:
        """An `EncoderOutput`: the final hidden states (and each block's with `output_hidden_states`).

        `doc_ids` keeps attention inside packed documents, `padding_mask` is True on real tokens,
        `position_ids` default to 0..T-1 per row. `segment_ids` (B, T) are BERT's token types (0 on a
        pair's first text, 1 on its second); a model of one `segment_types` refuses any but 0
        (ValueError) rather than dropping them.
        """
        ...

    def check_attention_mode(self, mode: AttentionMode) -> None:
        """Refuse, in one line (`UserError`), an attention mode the model cannot run (a DeBERTa-v2
        convolution sees the next token: no causal mode); training asks for every phase's objective
        before it writes anything, and `forward` asks again."""
        ...

    @property
    def segment_types(self) -> int:
        """How many segment ids the model embeds (BERT's `type_vocab_size`); 1 for a model without a
        segment table (encoderlab's `Encoder`, ModernBERT, RoBERTa's single row). Callers pass
        `segment_ids` only where this is above 1 and the tokenizer gives them (`token_type_ids`)."""
        ...

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for hidden states of any leading shape."""
        ...

    def lm_loss(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Summed fp32 cross-entropy of the LM head on (N, D) `hidden` against (N,) `targets`.

        Each model picks its own path: `Encoder` its fused, chunked head; adapters the plain one.
        """
        ...

    @property
    def attn_impl(self) -> str:
        """The attention kernel the next forward uses."""
        ...

    def set_attn_impl(self, impl: str) -> None:
        """Use the attention kernel `impl` (`sdpa` or `flex`) from now on where the model can."""
        ...

    def fsdp_units(self) -> list[nn.Module]:
        """The submodules FSDP2 shards one by one (empty: the model cannot be sharded)."""
        ...

    def folder_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """The tensors an encoderlab model folder stores (tied copies left out) and the
        `config.json` entries that rebuild the architecture on load."""
        ...

    @property
    def hf_architecture(self) -> str:
        """The transformers class an export of this model loads as."""
        ...

    def save_hf(self, folder: Path, spec: Any = None) -> None:
        """Write the config and weights as a Hugging Face folder (special ids from `spec`, a
        `TokenSpec`, when given)."""
        ...

    def add_token_rows(self, ids: Sequence[int], mean_of: int) -> None:
        """Set the input-embedding and LM-head rows (and head bias) of token `ids` to the mean of the
        first `mean_of` rows, growing the vocabulary when an id is past its end (rows added in between
        get the mean too). A token added to a tokenizer (a decoder's missing mask token) gets rows this way."""
        ...
