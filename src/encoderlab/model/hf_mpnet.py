"""MPNet checkpoints (`model_type` "mpnet", `MPNetForMaskedLM`): microsoft/mpnet-base and the
sentence-transformers models built on it (all-mpnet-base-v2, the most used sentence-embedding baseline).

MPNet is BERT's post-norm block under other names (`attention.attn.{q,k,v,o}`) with two additions,
checked on transformers 5.25 (`models/mpnet/modeling_mpnet.py`):
  * RoBERTa's learned positions, numbered from the pad id + 1 (`sources.POSITIONS_AFTER_PAD`). The
    embeddings hard-code that pad id as 1 rather than reading the config, so the shift does too
    (`sources.PAD_IN_CODE`): a config whose `pad_token_id` says otherwise still gets transformers' numbering.
  * A T5-style relative-position bias, one table shared by every block (`encoder.relative_attention_bias`,
    32 buckets, bidirectional), added to the attention scores. `MPNetEncoder` computes it from the
    token index within the row, never from the position ids, so it depends on distances only: packed
    documents behind a document mask see the same distances, hence the same bias, as each document alone,
    and a causal mask only hides keys. Both modes are exact (tested); nothing is refused.
Attention is MPNet's own eager code (transformers has no SDPA path for it): the scores plus whatever
additive mask `MPNetModel.forward` hands on, and `create_bidirectional_mask` hands a 4D mask on as is.
So the adapter passes one 4D additive mask (documents, padding and causality) whenever anything masks;
there is no `is_causal` flag to set.

FLOPs: the bias is a table lookup and an addition, no matmul, so MFU's attention and projection terms
price MPNet as BERT (tested against torch's count). The table goes with the embeddings in the anatomy,
as DeBERTa's shared table does, so a transplant of blocks never takes it.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from encoderlab.model.config import Anatomy
from encoderlab.model.hf_adapters import HFAdapter, additive, allowed_pairs


class MPNetAdapter(HFAdapter):
    """`MPNetForMaskedLM`. A sentence-transformers checkpoint (all-mpnet-base-v2) stores `MPNetModel`
    weights, pooler included and no MLM head: the pooler is carried and the head is built fresh,
    seeded by the weights (`hf_registry.adapter_from_hf_state`), as for BERT base checkpoints."""

    family = "mpnet"
    hf_name = "MPNetForMaskedLM"
    attention_kernel: ClassVar[str] = "eager"
    anatomy: ClassVar[Anatomy] = Anatomy(
        attention=("attention",),
        mlp=("intermediate", "output"),
        embeddings=("hf.mpnet.embeddings", "hf.mpnet.encoder.relative_attention_bias"),
        head=("hf.lm_head",),
    )

    @property
    def layers(self) -> nn.ModuleList:
        return self.body.encoder.layer

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for hidden states of any leading shape."""
        return self.hf.lm_head(hidden)

    def _mask(self, input_ids, mode, doc_ids, padding_mask):
        allowed = allowed_pairs(input_ids, mode, doc_ids, padding_mask)
        return None if allowed is None else additive(allowed, self.hf.dtype)
