"""DeBERTa checkpoints: v1 (`model_type` "deberta", `DebertaForMaskedLM`: deberta-base, -large, -xlarge)
and v2/v3 (`model_type` "deberta-v2", `DebertaV2ForMaskedLM`: DeBERTa-v2, -v3, mDeBERTa-v3).

DeBERTa-v3 is the strongest common encoder baseline of the English GLUE/SQuAD tables, and v1 is the
model its papers compare against, so a study that asks which objective gives the best encoder needs
them beside BERT and ModernBERT. transformers' two classes are the same design under other names
(checked on transformers 5.25: the same embeddings, encoder, mask handling and heads), so one adapter
class (`DisentangledAdapter`) serves both and each family is a row of names; what differs is in the
weights (v1's fused `in_proj`, v2's log buckets and shared keys), which transformers' modules hold.
Their body differs from BERT's in ways the other adapters' masks do not cover:
  * Disentangled attention: content-to-position terms from a shared relative-position table
    (`encoder.rel_embeddings`), computed from token distance within the row; v1 and v3 have no
    absolute positions (`position_biased_input: false`), so packed documents need no position ids,
    and where a config has them (`position_biased_input: true`) the given ids are used as is.
  * Eager attention only (no SDPA path in transformers): the masks are boolean and dense.
  * The mask: both models take a 2D padding mask or a 3D (B, T, T) one, but with a 3D mask their
    `forward` also multiplies the embeddings by it, which fails (or silently broadcasts when T
    equals the width). So `forward` runs the embeddings with the 2D padding mask and the encoder with
    the 3D document/causal mask: the same two calls the models' own `forward` makes.
  * v2-xlarge/xxlarge add a width-3 convolution after block 0 (`conv_kernel_size`). It sees the next
    token, so causal mode on such a checkpoint is refused (it would leak the target); with packed
    documents it sees one token across each boundary, which masks cannot prevent (packed rows are
    then close to, not equal to, the documents alone; v1 and v3 have no convolution).

The head: the original DeBERTa head (`lm_predictions.lm_head`, projecting through the word
embeddings) is what Microsoft's checkpoints store, but both classes build their `legacy` BERT-style
head (`cls.predictions`) unless the config says `legacy: false`, and then drop the stored head and
initialise a new one. The adapter reads which head the weights hold (`fit_config`), so a checkpoint
keeps its own. Weights the masked LM has no place for are left out with a note (`left_out`), as
transformers leaves them out: v3's replaced-token-detection head (`mask_predictions.*`), and v1's
absolute position table where `position_biased_input` is false (deberta-base stores one: the original
model adds absolute positions only in its enhanced mask decoder, before the head, which transformers
does not build; so v1's MLM logits here are transformers', not the original pretraining's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import nn

from encoderlab.errors import UserError
from encoderlab.model.attention import dense_mask
from encoderlab.model.config import Anatomy, AttentionMode, RelativePositions
from encoderlab.model.encoder import EncoderOutput, mean_rows
from encoderlab.model.hf_adapters import HFAdapter, narrower_embedding

_HEADS = {"lm_predictions.": False, "cls.predictions.": True}
"""Key prefix of each head a DeBERTa masked LM can build, and the `legacy` value that builds it."""


class DisentangledAdapter(HFAdapter):
    """A DeBERTa masked LM (v1 or v2, the families below): the two transformers classes share every
    name the adapter reads."""

    attention_kernel = "eager"

    @classmethod
    def fit_config(cls, hf_config, state: dict[str, torch.Tensor]) -> None:
        """Build the head the weights hold; a checkpoint without one gets the head its config names.
        Refuse the original head over an embedding narrower than the hidden width (transformers cannot
        run it)."""
        held = {legacy for prefix, legacy in _HEADS.items() if any(k.startswith(prefix) for k in state)}
        if len(held) == 1:
            hf_config.legacy = held.pop()
        if not hf_config.legacy and narrower_embedding(hf_config):
            # transformers' own head multiplies the hidden states by the word embeddings: a traceback
            # at the first forward where the two widths differ, so the load says it instead
            raise UserError(
                f"embedding_size {hf_config.embedding_size} differs from hidden_size {hf_config.hidden_size}, "
                "which DeBERTa's original MLM head (lm_predictions) cannot run: transformers multiplies the "
                "hidden states by the word embeddings; use a checkpoint whose two widths agree, or one with "
                "the legacy head (cls.predictions, legacy: true in config.json)"
            )

    @classmethod
    def relative_positions(cls, hf_config) -> RelativePositions | None:
        """The terms as v1 computes them: over max_relative_positions (max_position_embeddings when
        unset) either side of a token, cut to the row (v2 overrides the span)."""
        if not getattr(hf_config, "relative_attention", False):
            return None
        terms = len({"c2p", "p2c"} & set(hf_config.pos_att_type or ()))
        span = hf_config.max_relative_positions
        return RelativePositions(terms, span if span >= 1 else hf_config.max_position_embeddings, True)

    @classmethod
    def input_projection(cls, hf_config) -> int:
        """`embedding_size` where it differs from the hidden width: only then do both classes'
        embeddings build `embed_proj` (no bias), which every token passes through before the LayerNorm."""
        return narrower_embedding(hf_config)

    @classmethod
    def left_out(cls, hf_config) -> dict[str, str]:
        """The stored absolute position table where the config switches absolute positions off
        (transformers builds none then, and would drop it too)."""
        if getattr(hf_config, "position_biased_input", True):
            return {}
        return {
            "embeddings.position_embeddings.": "absolute positions (config.json's position_biased_input "
            "is false, so the model adds none)"
        }

    @property
    def layers(self) -> nn.ModuleList:
        return self.body.encoder.layer

    @property
    def anatomy(self) -> Anatomy:
        """BERT's block parts; the parts every block shares (the relative-position table and its norm,
        v2's convolution) go with the embeddings, so a transplant of blocks never takes them. The head
        depends on the checkpoint's (`fit_config`): the original one projects through the word
        embeddings, which it therefore includes, so the two are tied as the legacy head's are."""
        encoder = self.body.encoder
        shared = [n for n in ("rel_embeddings", "LayerNorm", "conv") if getattr(encoder, n, None) is not None]
        return Anatomy(
            attention=("attention",),
            mlp=("intermediate", "output"),
            embeddings=("hf.deberta.embeddings", *(f"hf.deberta.encoder.{n}" for n in shared)),
            head=("hf.cls",)
            if self.hf.legacy
            else ("hf.lm_predictions", "hf.deberta.embeddings.word_embeddings"),
        )

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
        """Hidden states for (B, T) `input_ids`, with the same arguments as `Encoder.forward`
        (`segment_ids` as `HFAdapter.forward` takes them)."""
        self.check_attention_mode(attention_mode)
        types = self._token_types(segment_ids)
        body = self.body
        real = padding_mask.long() if padding_mask is not None else torch.ones_like(input_ids)
        embedded = body.embeddings(
            input_ids=input_ids, token_type_ids=types, position_ids=position_ids, mask=real
        )
        out = body.encoder(embedded, self._mask(input_ids, attention_mode, doc_ids, real), return_dict=True)
        hidden = list(out.hidden_states) if output_hidden_states else None
        return EncoderOutput(last_hidden_state=out.last_hidden_state, hidden_states=hidden)

    def check_attention_mode(self, mode: AttentionMode) -> None:
        """Refuse causal mode where a v2 convolution after block 0 sees the next token (v1 has none)."""
        if mode == "causal" and getattr(self.body.encoder, "conv", None) is not None:
            raise UserError(
                f"this DeBERTa checkpoint has a convolution after block 0 (conv_kernel_size "
                f"{self.config.hf.conv_kernel_size}) that sees the next token, so it cannot run causally; "
                "use an MLM objective, or a checkpoint without one (DeBERTa-v3)"
            )

    def _mask(self, input_ids, mode, doc_ids, real):
        """The padding mask alone (transformers' own 2D path) when nothing else restricts attention,
        else the boolean (B, T, T) mask of documents, padding and causality."""
        if mode == "bidirectional" and doc_ids is None:
            return real
        b, t = input_ids.shape
        return dense_mask(t, mode, doc_ids, real, input_ids.device)[:, 0].expand(b, t, t)

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for hidden states of any leading shape."""
        if self.hf.legacy:
            return self.hf.cls(hidden)
        return self.hf.lm_predictions(hidden, self.body.embeddings.word_embeddings)

    def add_token_rows(self, ids: Sequence[int], mean_of: int) -> None:
        """As `HFAdapter.add_token_rows`. The original head has no output embedding of its own (it
        projects through the input one) but a vocabulary bias; transformers' resizing takes its
        hidden-to-hidden `dense` for the output embedding and would grow that to the vocabulary, so
        this head grows the input embedding (body only) and the bias here."""
        if self.hf.legacy:
            return super().add_token_rows(ids, mean_of)
        old, rows = self.config.vocab_size, max(self.config.vocab_size, max(ids) + 1)
        self.body.resize_token_embeddings(rows, mean_resizing=False)
        head = self.hf.lm_predictions.lm_head
        with torch.no_grad():
            emb = self.body.get_input_embeddings().weight
            emb.copy_(mean_rows(emb[:old], rows, ids, mean_of))
            head.bias = nn.Parameter(mean_rows(head.bias[:old], rows, ids, mean_of))
        self.config = replace(self.config, vocab_size=rows)


class DebertaAdapter(DisentangledAdapter):
    """`DebertaForMaskedLM` (DeBERTa v1: deberta-base, deberta-large, deberta-xlarge)."""

    family = "deberta"
    hf_name = "DebertaForMaskedLM"


class DebertaV2Adapter(DisentangledAdapter):
    """`DebertaV2ForMaskedLM` (DeBERTa-v2, DeBERTa-v3, mDeBERTa-v3)."""

    family = "deberta-v2"
    hf_name = "DebertaV2ForMaskedLM"

    @classmethod
    def relative_positions(cls, hf_config) -> RelativePositions | None:
        """v2's terms: the table is its position buckets (v3's 256) when set, never cut to the row. (With
        shared keys and one term, v2 also projects the table for the term it lacks and never uses
        that projection: wasted work, not counted.)"""
        v1 = super().relative_positions(hf_config)
        if v1 is None:
            return None
        buckets = getattr(hf_config, "position_buckets", -1)
        return replace(v1, span=buckets if buckets > 0 else v1.span, fits_row=False)

    @classmethod
    def left_out(cls, hf_config) -> dict[str, str]:
        """v3's replaced-token-detection head, besides what every DeBERTa leaves out."""
        return {"mask_predictions.": "a head no masked LM uses", **super().left_out(hf_config)}
