"""RoBERTa-PreLayerNorm checkpoints (`model_type` "roberta-prelayernorm",
`RobertaPreLayerNormForMaskedLM`): the encoders of Wettig et al. 2023 ("Should You Mask 15% in Masked
Language Modeling?"), pretrained at mask rates 15% to 80% (andreasmadsen/efficient_mlm_m0.15 ... m0.80).

The architecture is RoBERTa's with the norms moved, checked on transformers 5.25
(`models/roberta_prelayernorm/modeling_roberta_prelayernorm.py`):
  * Pre-norm blocks: `attention.LayerNorm` normalises the block's input before self-attention and
    `intermediate.LayerNorm` before the MLP's first matrix; the residual sums are left unnormalised.
    Each LayerNorm sits inside the part it feeds, so BERT's anatomy (`attention`, `intermediate` +
    `output`) still partitions a block with each part's norm in it.
  * One final LayerNorm on the body's output, `roberta_prelayernorm.LayerNorm` (on the base model, not
    in the head). `last_hidden_state` is normalised, and transformers ties `hidden_states[-1]` to it, as
    it does ModernBERT's: CKA and probes read the last block's own output through a hook on the block
    (`features.block_outputs`), never `hidden_states`. The anatomy puts the norm with the head, so a
    transplant of blocks never takes it and one of everything reproduces the model.
  * RoBERTa's embeddings (positions numbered after the pad id: `sources.POSITIONS_AFTER_PAD`, read from
    the config's `pad_token_id`, 1 in every released checkpoint), RoBERTa's LM head (`lm_head`: dense,
    GELU, LayerNorm, decoder tied to the word embeddings), BERT's self-attention (`attention.self`,
    transformers' shared SDPA function with an `is_causal` flag, a 4D additive mask taken as is).
So the adapter is `RobertaAdapter` under another class and prefix: BERT's masks, RoBERTa's head. MFU
prices it as BERT: LayerNorms are no matmuls, and the pre-norms replace the post-norms one for one.
"""

from __future__ import annotations

from typing import ClassVar

from encoderlab.model.config import Anatomy
from encoderlab.model.hf_adapters import RobertaAdapter


class RobertaPreLayerNormAdapter(RobertaAdapter):
    """`RobertaPreLayerNormForMaskedLM`. A base checkpoint (`RobertaPreLayerNormModel`) carries its pooler
    and gets an MLM head seeded by its weights, as RoBERTa's do (`hf_registry.adapter_from_hf_state`)."""

    family = "roberta-prelayernorm"
    hf_name = "RobertaPreLayerNormForMaskedLM"
    # Pre-norm: attention = its input LayerNorm, self-attention and the output projection;
    # mlp = `intermediate` (its input LayerNorm and first matrix) + `output`.
    anatomy: ClassVar[Anatomy] = Anatomy(
        attention=("attention",),
        mlp=("intermediate", "output"),
        embeddings=("hf.roberta_prelayernorm.embeddings",),
        head=("hf.roberta_prelayernorm.LayerNorm", "hf.lm_head"),
    )
