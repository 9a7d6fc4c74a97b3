"""BERT-family (BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA, DistilBERT) and ModernBERT checkpoints, wrapped in transformers' own classes.

These architectures differ from EuroBERT in more than names (learned positions, LayerNorm, GELU,
biases, ModernBERT's alternating local/global attention), so they are not converted: the adapter
holds transformers' `*ForMaskedLM` and satisfies the LanguageModel protocol (`model/protocol.py`)
that training, evaluation, analysis and export use; its LM loss takes the plain head (transform
and bias), it saves and exports through transformers' own state dict and `save_pretrained`, and
FSDP2 does not shard it.

Masks are where the classes need help (checked on transformers 5.24: `is_causal` on every attention
module makes EuroBERT, Llama and BERT causal, but not ModernBERT, whose SDPA path always gets an
explicit global or sliding-window mask):
  * BERT: causal mode without other masks sets `is_causal` on every self-attention module and
    passes no mask, which keeps SDPA's fused causal kernel; with documents or padding the adapter
    passes a 4D additive mask (documents, padding and causality), which transformers uses as is.
  * ModernBERT: its SDPA path always gets an explicit global or sliding-window mask, so `is_causal`
    does nothing; the adapter builds both masks itself, the sliding one intersected with the
    window (|q - k| <= config.sliding_window), and passes them as the per-layer-type mapping.
  * RoBERTa, XLM-R, CamemBERT and ELECTRA are BERT's layers under other names; their masks are BERT's.
  * DistilBERT's blocks are its own (`attention` + `sa_layer_norm`, `ffn` + `output_layer_norm`), but
    its attention goes through transformers' shared SDPA function with an `is_causal` flag and takes a
    4D additive mask as is (`create_bidirectional_mask` returns a 4D mask unchanged): BERT's masks, the
    flag on another module (`causal_flag`).
DeBERTa v1, v2 and v3 (`hf_deberta`) and MPNet (`hf_mpnet`) build on the same base class; the family
table is `hf_registry`.
The classes run with `attn_implementation="sdpa"` (the path these masks are written for).

Positions: RoBERTa-style families number a row's positions from pad_token_id + 1 (fairseq's
convention, kept by transformers' `create_position_ids_from_input_ids`), so of roberta-base's 514
position rows only 512 hold a real position. Everywhere else encoderlab counts positions from 0 (packed
documents restart at 0), so `forward` shifts given position ids by the family's offset, and a model's
`max_seq_len` is the usable count (`usable_positions`), which every length check reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from encoderlab.model.attention import dense_mask
from encoderlab.model.config import Anatomy, AttentionMode, MatmulShape, RelativePositions
from encoderlab.model.encoder import EncoderOutput, check_segment_ids, mean_rows
from encoderlab.model.sentence import write_sentence_files
from encoderlab.model.sources import position_offset


@dataclass(frozen=True)
class AdapterConfig:
    """The protocol's view of a wrapped transformers config (`hf` is the original)."""

    family: str
    hidden_size: int
    n_layers: int
    vocab_size: int
    max_seq_len: int
    hf: object
    relative: RelativePositions | None = None
    """DeBERTa's disentangled-attention terms (`HFAdapter.relative_positions`)."""
    mlp_matrices: int = 2
    """Matrices of a block's MLP (`HFAdapter.mlp_matrices`)."""
    input_projection: int = 0
    """Width of the embedding projected up to the hidden width per token (`HFAdapter.input_projection`)."""

    def matmul_shape(self) -> MatmulShape:
        """The MLP's matrices as the adapter class says; ModernBERT's local layers (`layer_types`
        "sliding_attention") attend within `sliding_window` positions, as its masks do; the LM head has a
        dense transform before its vocabulary projection; a narrower embedding's projection up to the
        hidden width is the adapter's (`input_projection`)."""
        heads = self.hf.num_attention_heads
        # DistilBERT names its MLP width `hidden_dim` (its config's attribute_map covers hidden_size,
        # layers and heads, not this one)
        ffn = getattr(self.hf, "intermediate_size", None) or self.hf.hidden_dim
        # every family's head transforms before projecting: to the embedding width where a config
        # has one (ELECTRA, DeBERTa), else the hidden width
        transform = getattr(self.hf, "embedding_size", None) or self.hidden_size
        shape = MatmulShape(
            heads,
            heads,
            self.hidden_size // heads,
            ffn,
            self.mlp_matrices,
            relative=self.relative,
            head_transform=transform,
            input_projection=self.input_projection,
        )
        local = list(getattr(self.hf, "layer_types", None) or ()).count("sliding_attention")
        return replace(shape, windowed_layers=local, window=self.hf.sliding_window) if local else shape


def narrower_embedding(hf_config) -> int:
    """The width of a config's `embedding_size` where it differs from the hidden width, else 0: what
    ELECTRA's and DeBERTa's embeddings project up to the hidden width per token (both build that Linear
    only then, reading a missing `embedding_size` as the hidden width; checked on transformers 5.25)."""
    width = getattr(hf_config, "embedding_size", None) or hf_config.hidden_size
    return width if width != hf_config.hidden_size else 0


def _with_saved_dtype(config: dict, state: dict[str, torch.Tensor]) -> dict:
    """`config` naming the dtype of the floating-point weights in `state`: a run from a float16 folder
    trains and saves float32, and its config kept the start folder's `dtype` (`torch_dtype` before
    transformers 5) while `save_pretrained` (export) writes the one the weights have."""
    dtypes = {str(t.dtype).removeprefix("torch.") for t in state.values() if t.is_floating_point()}
    if len(dtypes) != 1:  # no weights, or mixed ones: nothing one name could say
        return config
    keys = [key for key in ("dtype", "torch_dtype") if key in config] or ["dtype"]
    return {**config, **dict.fromkeys(keys, dtypes.pop())}


def additive(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(
        ~allowed, torch.finfo(dtype).min
    )


def allowed_pairs(input_ids: torch.Tensor, mode: AttentionMode, doc_ids, padding_mask) -> torch.Tensor | None:
    """`dense_mask`, with causality made explicit where nothing else masks (for the classes whose
    attention has no `is_causal` flag that works); None only for bidirectional rows without masks."""
    t = input_ids.shape[1]
    allowed = dense_mask(t, mode, doc_ids, padding_mask, input_ids.device)
    if allowed is None and mode == "causal":
        allowed = torch.ones(t, t, dtype=torch.bool, device=input_ids.device).tril()[None, None]
    return allowed


def _buffers(state: dict[str, torch.Tensor]) -> nn.Module:
    """A module holding `state` as buffers under the same dotted names (nested modules)."""
    root = nn.Module()
    for key, tensor in state.items():
        *path, leaf = key.split(".")
        module = root
        for part in path:
            if not hasattr(module, part):
                module.add_module(part, nn.Module())
            module = getattr(module, part)
        module.register_buffer(leaf, tensor.detach().clone())
    return root


class HFAdapter(nn.Module):
    """A transformers masked-LM model behind the encoderlab LanguageModel protocol.

    `carried` are checkpoint weights the masked-LM class has no place for but the checkpoint's own
    class uses (BERT's pooler, `bert.pooler.dense.*`: `BertModel` and sentence-transformers read it).
    They are buffers, so no optimizer, freezing or DDP ever sees them; the model folder stores them
    and the export writes them back, so `AutoModel` finds the pooler it had instead of a fresh one.
    `sentence_files` are the source's sentence-transformers files, carried the same way (`sentence`).
    """

    family = ""
    hf_name: ClassVar[str] = ""
    """The transformers masked-LM class wrapped (`hf_class`)."""
    attention_kernel: ClassVar[str] = "sdpa"
    """transformers' `attn_implementation` the class runs with (the path its masks are written for)."""
    mlp_matrices: ClassVar[int] = 2
    """Matrices of a block's MLP, for FLOP counting: 2 for BERT's GELU MLP, 3 for a gated one (ModernBERT)."""

    def __init__(
        self,
        hf_model: nn.Module,
        carried: dict[str, torch.Tensor] | None = None,
        sentence_files: dict[str, str] | None = None,
    ):
        super().__init__()
        self.hf = hf_model
        self.carried = _buffers(carried or {})
        self.sentence_files = dict(sentence_files or {})
        c = hf_model.config
        self.position_offset = position_offset(self.family, c.pad_token_id)  # RoBERTa's: pad id + 1
        self.config = AdapterConfig(
            family=self.family,
            hidden_size=c.hidden_size,
            n_layers=c.num_hidden_layers,
            vocab_size=c.vocab_size,
            max_seq_len=c.max_position_embeddings - self.position_offset,
            hf=c,
            relative=self.relative_positions(c),
            mlp_matrices=self.mlp_matrices,
            input_projection=self.input_projection(c),
        )

    @property
    def body(self) -> nn.Module:
        return getattr(self.hf, self.hf.base_model_prefix)

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
        """Hidden states for (B, T) `input_ids`, with the same arguments as `Encoder.forward`;
        `segment_ids` go to transformers as `token_type_ids` where the model has a segment table
        (`segment_types` above 1), and without one only all-zero ids are taken (`check_segment_ids`)."""
        types = self._token_types(segment_ids)
        mask = self._mask(input_ids, attention_mode, doc_ids, padding_mask)
        out = self.body(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=None if position_ids is None else position_ids + self.position_offset,
            output_hidden_states=output_hidden_states,
            **({} if types is None else {"token_type_ids": types}),
        )
        hidden = list(out.hidden_states) if output_hidden_states else None
        return EncoderOutput(last_hidden_state=out.last_hidden_state, hidden_states=hidden)

    @property
    def segment_types(self) -> int:
        """The config's `type_vocab_size` (BERT's 2; RoBERTa's 1); 1 for a family without the field
        (ModernBERT) or without the table (DeBERTa-v3's 0)."""
        return max(1, getattr(self.config.hf, "type_vocab_size", 1))

    def check_attention_mode(self, mode: AttentionMode) -> None:
        """Nothing to refuse: both modes run (the masks above; `hf_deberta` has an exception)."""

    def _token_types(self, segment_ids: torch.Tensor | None) -> torch.Tensor | None:
        """The `token_type_ids` to hand transformers: `segment_ids` where the model has a segment table,
        else none (all-zero ids only, `check_segment_ids`)."""
        check_segment_ids(segment_ids, self.segment_types)
        return segment_ids if self.segment_types > 1 else None

    def _mask(self, input_ids, mode, doc_ids, padding_mask):
        raise NotImplementedError

    # ---- the rest of the LanguageModel protocol (model/protocol.py) -----------------------------
    def lm_loss(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Summed fp32 cross-entropy through the plain head (transformers' head has a transform and a bias)."""
        return F.cross_entropy(self.lm_logits(hidden).float(), targets, reduction="sum")

    @classmethod
    def fit_config(cls, hf_config, state: dict[str, torch.Tensor]) -> None:
        """Set what a checkpoint's weights decide rather than its config (nothing here; DeBERTa's head),
        or refuse a config the adapter cannot run (`UserError`; ALBERT's several layers per group)."""

    @classmethod
    def relative_positions(cls, hf_config) -> RelativePositions | None:
        """The model's relative-position attention terms, for FLOP counting (none here; DeBERTa's)."""
        return None

    @classmethod
    def input_projection(cls, hf_config) -> int:
        """The embedding width a per-token dense layer projects up to the hidden width before the first
        block, for FLOP counting; 0 for none (here; ELECTRA's)."""
        return 0

    @classmethod
    def left_out(cls, hf_config) -> dict[str, str]:
        """Key fragments of weights the family's checkpoints may carry that the masked LM built from
        `hf_config` has no place for, each with what they are; dropped on load with a note naming them
        (nothing here; DeBERTa's replaced-token-detection head and switched-off absolute positions)."""
        return {}

    @property
    def attn_impl(self) -> str:
        return self.attention_kernel

    def set_attn_impl(self, impl: str) -> None:
        """Nothing to do: the wrapped classes run the transformers path their masks are built for."""

    def fsdp_units(self) -> list[nn.Module]:
        """None: FSDP2 shards encoderlab encoders only (use DDP for adapters)."""
        return []

    def folder_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """transformers' state dict without tied copies (safetensors' `save_file` refuses
        tensors that share memory; they are tied again on load), and the family with transformers' config."""
        state = {**self.hf.state_dict(), **self.carried.state_dict()}
        for key in getattr(self.hf, "_tied_weights_keys", None) or {}:
            state.pop(key, None)
        meta = {"family": self.family, "hf_config": _with_saved_dtype(self.hf.config.to_dict(), state)}
        return state, {**meta, "sentence_transformers": self.sentence_files} if self.sentence_files else meta

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """As nn.Module's; a state without the carried weights (a checkpoint saved before they were
        carried) keeps the model's own rather than failing the strict load of a resume."""
        own = {f"carried.{k}": v for k, v in self.carried.state_dict().items()}
        return super().load_state_dict({**own, **state_dict}, strict=strict, assign=assign)

    @property
    def hf_architecture(self) -> str:
        return type(self.hf).__name__

    def save_hf(self, folder: Path, spec=None) -> None:
        """transformers' own `save_pretrained` (the ids are already in its config), carried weights included."""
        self.hf.save_pretrained(str(folder), state_dict={**self.hf.state_dict(), **self.carried.state_dict()})
        write_sentence_files(self.sentence_files, folder)

    def add_token_rows(self, ids: Sequence[int], mean_of: int) -> None:
        """Rows of token `ids` = the mean of the first `mean_of` rows, in the input embedding, the
        output embedding (when untied) and the head's bias (`protocol.LanguageModel.add_token_rows`);
        transformers' `resize_token_embeddings` grows them and keeps them tied."""
        rows = max(self.config.vocab_size, max(ids) + 1)
        self.hf.resize_token_embeddings(rows, mean_resizing=False)
        heads = [self.hf.get_input_embeddings(), self.hf.get_output_embeddings()]
        with torch.no_grad():
            for module in dict.fromkeys(h for h in heads if h is not None):  # tied: one module
                module.weight.copy_(mean_rows(module.weight[: self.config.vocab_size], rows, ids, mean_of))
                bias = getattr(module, "bias", None)
                if bias is not None:
                    bias.copy_(mean_rows(bias[: self.config.vocab_size], rows, ids, mean_of))
        self.config = replace(self.config, vocab_size=rows)


class BertAdapter(HFAdapter):
    """`BertForMaskedLM` (BERT, MiniLM and other BERT-architecture checkpoints)."""

    family = "bert"
    hf_name = "BertForMaskedLM"
    # Post-norm: the attention part is self-attention, its output projection and the LayerNorm after
    # its residual; the MLP part is `intermediate` + `output` (with its LayerNorm).
    anatomy: ClassVar[Anatomy] = Anatomy(
        attention=("attention",),
        mlp=("intermediate", "output"),
        embeddings=("hf.bert.embeddings",),
        head=("hf.cls",),
    )
    causal_flag: ClassVar[str] = "attention.self"
    """The module of a block whose `is_causal` makes transformers' SDPA call causal."""

    @classmethod
    def left_out(cls, hf_config) -> dict[str, str]:
        """BERT's next-sentence-prediction head (`cls.seq_relationship`, `BertForPreTraining`'s), which the
        original checkpoints carry beside their MLM head though config.json names BertForMaskedLM
        (google-bert/bert-base-uncased, -cased, -chinese, bert-large-*; transformers warns of it unused:
        huggingface/transformers#5404). No masked LM uses it; refused as a checkpoint unlike its config, the
        best-known BERTs did not load."""
        return {"cls.seq_relationship.": "the next-sentence-prediction head"}

    @property
    def layers(self) -> nn.ModuleList:
        return self.body.encoder.layer

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for hidden states of any leading shape."""
        return self.hf.cls(hidden)

    def _mask(self, input_ids, mode, doc_ids, padding_mask):
        causal = mode == "causal"
        for layer in self.layers:
            layer.get_submodule(self.causal_flag).is_causal = causal
        allowed = dense_mask(input_ids.shape[1], mode, doc_ids, padding_mask, input_ids.device)
        return None if allowed is None else additive(allowed, self.hf.dtype)


class ModernBertAdapter(HFAdapter):
    """`ModernBertForMaskedLM`, alternating global and sliding-window attention."""

    family = "modernbert"
    hf_name = "ModernBertForMaskedLM"
    mlp_matrices = 3  # gated (GeGLU): Wi holds two of them
    # Pre-norm; block 0's `attn_norm` is an Identity.
    anatomy: ClassVar[Anatomy] = Anatomy(
        attention=("attn_norm", "attn"),
        mlp=("mlp_norm", "mlp"),
        embeddings=("hf.model.embeddings",),
        head=("hf.model.final_norm", "hf.head", "hf.decoder"),
    )

    @property
    def layers(self) -> nn.ModuleList:
        return self.body.layers

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for hidden states of any leading shape."""
        return self.hf.decoder(self.hf.head(hidden))

    def _mask(self, input_ids, mode, doc_ids, padding_mask):
        allowed = allowed_pairs(input_ids, mode, doc_ids, padding_mask)
        if allowed is None:
            return None  # transformers builds the global and sliding masks itself
        idx = torch.arange(input_ids.shape[1], device=input_ids.device)
        window = (idx[:, None] - idx[None, :]).abs() <= self.config.hf.sliding_window
        dtype = self.hf.dtype
        return {
            "full_attention": additive(allowed, dtype),
            "sliding_attention": additive(allowed & window, dtype),
        }


class RobertaAdapter(BertAdapter):
    """`RobertaForMaskedLM`: BERT's layers (and masks), its own embeddings' position offset and head."""

    family = "roberta"
    hf_name = "RobertaForMaskedLM"
    anatomy: ClassVar[Anatomy] = Anatomy(
        attention=("attention",),
        mlp=("intermediate", "output"),
        embeddings=("hf.roberta.embeddings",),
        head=("hf.lm_head",),
    )

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for hidden states of any leading shape."""
        return self.hf.lm_head(hidden)


class XLMRobertaAdapter(RobertaAdapter):
    """`XLMRobertaForMaskedLM` (XLM-R, the multilingual baseline EuroBERT is compared with): RoBERTa's
    architecture under its own `model_type`."""

    family = "xlm-roberta"
    hf_name = "XLMRobertaForMaskedLM"


class CamembertAdapter(RobertaAdapter):
    """`CamembertForMaskedLM` (CamemBERT, a French RoBERTa): RoBERTa's architecture under its own
    `model_type`, with RoBERTa's position offset."""

    family = "camembert"
    hf_name = "CamembertForMaskedLM"


class ElectraAdapter(BertAdapter):
    """`ElectraForMaskedLM`: BERT's layers (and masks) under ELECTRA's names, a projection from a narrower
    embedding width (`embedding_size`, ELECTRA-small's 128) where the config has one, and the generator's
    MLM head projecting back to that width.

    ELECTRA's discriminators (google/electra-*-discriminator), the checkpoints its GLUE results are
    reported for, store the body and a replaced-token-detection head (`discriminator_predictions`),
    which no masked LM uses: it is left out with a note, and the MLM head is built fresh (seeded by
    the weights, `hf_registry.seeded_init`), as for any base checkpoint. Fine-tuning reads the body
    only; continued MLM pretraining from a discriminator starts that head from scratch. The generators
    (google/electra-*-generator) are masked LMs and keep their head."""

    family = "electra"
    hf_name = "ElectraForMaskedLM"

    @classmethod
    def left_out(cls, hf_config) -> dict[str, str]:
        return {"discriminator_predictions.": "the discriminator's replaced-token-detection head"}

    @classmethod
    def input_projection(cls, hf_config) -> int:
        """`embedding_size` where it differs from the hidden width: only then does `ElectraModel` build
        `embeddings_project`, a Linear every token passes through."""
        return narrower_embedding(hf_config)

    @property
    def anatomy(self) -> Anatomy:
        """BERT's blocks; the embeddings include the projection to the hidden width where there is one."""
        project = ("hf.electra.embeddings_project",) if hasattr(self.body, "embeddings_project") else ()
        return Anatomy(
            attention=("attention",),
            mlp=("intermediate", "output"),
            embeddings=("hf.electra.embeddings", *project),
            head=("hf.generator_predictions", "hf.generator_lm_head"),
        )

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for hidden states of any leading shape."""
        return self.hf.generator_lm_head(self.hf.generator_predictions(hidden))


class DistilBertAdapter(BertAdapter):
    """`DistilBertForMaskedLM` (distilbert-base-uncased and its kin): six BERT-width blocks under their
    own names, BERT's masks (`causal_flag` on the block's attention), no token types, learned positions
    from 0, and the MLM head's transform, norm and projection as three modules of the model."""

    family = "distilbert"
    hf_name = "DistilBertForMaskedLM"
    # Post-norm: each part with the LayerNorm after its residual.
    anatomy: ClassVar[Anatomy] = Anatomy(
        attention=("attention", "sa_layer_norm"),
        mlp=("ffn", "output_layer_norm"),
        embeddings=("hf.distilbert.embeddings",),
        head=("hf.vocab_transform", "hf.vocab_layer_norm", "hf.vocab_projector"),
    )
    causal_flag: ClassVar[str] = "attention"

    @property
    def layers(self) -> nn.ModuleList:
        return self.body.transformer.layer

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for hidden states of any leading shape (`DistilBertForMaskedLM.forward`'s head)."""
        hf = self.hf
        return hf.vocab_projector(hf.vocab_layer_norm(hf.activation(hf.vocab_transform(hidden))))
