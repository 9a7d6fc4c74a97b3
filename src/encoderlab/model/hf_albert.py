"""ALBERT checkpoints (`model_type` "albert", `AlbertForMaskedLM`): albert/albert-base-v2 and its kin.

ALBERT is BERT's post-norm block with two changes, checked on transformers 5.25
(`models/albert/modeling_albert.py`):
  * Factorised embeddings: word, position and token-type tables of width `embedding_size` (128), a
    LayerNorm, then `encoder.embedding_hidden_mapping_in`, a Linear up to `hidden_size` that every
    token passes through. `AlbertTransformer` builds it whatever the widths, so MFU counts it always
    (`input_projection`). The MLM head mirrors it: `predictions.dense` down to `embedding_size`, the
    activation, a LayerNorm, and the decoder tied to the word embeddings (`head_transform` reads
    `embedding_size`).
  * Cross-layer sharing: `num_hidden_groups` groups of `inner_group_num` layers, the
    `num_hidden_layers` applications walking the groups in order (application i runs group
    int(i / (L / G))). Every released checkpoint has one group of one layer: one set of block weights
    applied L times.
The protocol's `layers` is the list of applications, so `len(layers) == n_layers` and layer i is the
i-th application: CKA and probes read each application's output (one forward hook per distinct module,
`features.block_outputs`, records the calls in order), and masks are set on each once. What acts on a
layer's weights (freezing a layer, transplanting a layer) cannot take one application without the
others that share its weights; `freeze.check_unshared` refuses such a choice with one line, and takes
all of them or none (or, with several groups, whole groups). `inner_group_num` above 1 would make
several blocks per application, which no checkpoint uses: refused at load (`fit_config`).

Positions are BERT's (from 0, not after the pad id), token types BERT's (`type_vocab_size` 2), and the
attention goes through transformers' shared SDPA function with an `is_causal` flag on `AlbertAttention`
and a 4D additive mask taken as is: BERT's masks (`BertAdapter._mask`), the flag on `attention`.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from encoderlab.errors import UserError
from encoderlab.model.config import Anatomy
from encoderlab.model.hf_adapters import BertAdapter


class AlbertAdapter(BertAdapter):
    """`AlbertForMaskedLM`. A base checkpoint (`AlbertModel`) carries its pooler (`albert.pooler.*`)
    and gets an MLM head seeded by its weights, as BERT's do (`hf_registry.adapter_from_hf_state`)."""

    family = "albert"
    hf_name = "AlbertForMaskedLM"
    # Post-norm: attention = self-attention, its output projection and the LayerNorm after its
    # residual (all inside `attention`); mlp = `ffn` + `ffn_output` + the LayerNorm after theirs.
    anatomy: ClassVar[Anatomy] = Anatomy(
        attention=("attention",),
        mlp=("ffn", "ffn_output", "full_layer_layer_norm"),
        embeddings=("hf.albert.embeddings", "hf.albert.encoder.embedding_hidden_mapping_in"),
        head=("hf.predictions",),
    )
    causal_flag: ClassVar[str] = "attention"

    @property
    def layers(self) -> nn.ModuleList:
        """The block each of the `num_hidden_layers` applications runs, in order (the same module
        repeated where the weights are shared), as `AlbertTransformer.forward` picks it."""
        c = self.config.hf
        groups = self.body.encoder.albert_layer_groups
        per_group = c.num_hidden_layers / c.num_hidden_groups
        return nn.ModuleList(groups[int(i / per_group)].albert_layers[0] for i in range(c.num_hidden_layers))

    @classmethod
    def fit_config(cls, hf_config, state: dict[str, torch.Tensor]) -> None:
        """Refuse `inner_group_num` above 1: each application would run several blocks, so the
        protocol's layers (one block per application) would not be the model's."""
        if hf_config.inner_group_num != 1:
            raise UserError(
                f"inner_group_num {hf_config.inner_group_num} runs several ALBERT layers per application, "
                "and encoderlab loads ALBERT with one (inner_group_num 1, as every released ALBERT has); "
                "use a checkpoint with inner_group_num 1"
            )

    @classmethod
    def left_out(cls, hf_config) -> dict[str, str]:
        """ALBERT's sentence-order-prediction head (`sop_classifier`, `AlbertForPreTraining`'s), which no
        masked LM uses: a pretraining checkpoint, not a fine-tuned task model, as it was refused."""
        return {"sop_classifier.": "the sentence-order-prediction head", **super().left_out(hf_config)}

    @classmethod
    def input_projection(cls, hf_config) -> int:
        """`embedding_size`: `embedding_hidden_mapping_in` is built and run on every token, even where
        the widths are equal."""
        return hf_config.embedding_size

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for hidden states of any leading shape."""
        return self.hf.predictions(hidden)
