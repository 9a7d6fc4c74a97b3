"""BERT-family (BERT, RoBERTa, XLM-R) and ModernBERT checkpoints, wrapped in transformers' own classes.

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
  * RoBERTa and XLM-R are BERT's layers under other names; their masks are BERT's.
The classes run with `attn_implementation="sdpa"` (the path these masks are written for).

Positions: RoBERTa-style families number a row's positions from pad_token_id + 1 (fairseq's
convention, kept by transformers' `create_position_ids_from_input_ids`), so of roberta-base's 514
position rows only 512 hold a real position. Everywhere else encoderlab counts positions from 0 (packed
documents restart at 0), so `forward` shifts given position ids by the family's offset, and a model's
`max_seq_len` is the usable count (`usable_positions`), which every length check reads.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from encoderlab.errors import UserError
from encoderlab.model.attention import dense_mask
from encoderlab.model.config import Anatomy, AttentionMode, MatmulShape
from encoderlab.model.encoder import EncoderOutput, mean_rows
from encoderlab.model.sentence import write_sentence_files


def position_offset(model_type: object, pad_token_id: object) -> int:
    """The position id of a row's first token under a config of `model_type`: 0, or pad_token_id + 1
    for a family whose adapter numbers positions after the pad id (`HFAdapter.positions_after_pad`;
    transformers' default pad id for those is 1)."""
    adapter = ADAPTERS.get(model_type) if isinstance(model_type, str) else None
    if adapter is None or not adapter.positions_after_pad:
        return 0
    return (pad_token_id if isinstance(pad_token_id, int) and not isinstance(pad_token_id, bool) else 1) + 1


def usable_positions(raw: dict) -> int | None:
    """The longest row a transformers config dict `raw` takes: max_position_embeddings less the offset."""
    limit = raw.get("max_position_embeddings")
    if not isinstance(limit, int) or isinstance(limit, bool):
        return None
    return limit - position_offset(raw.get("model_type"), raw.get("pad_token_id"))


@dataclass(frozen=True)
class AdapterConfig:
    """The protocol's view of a wrapped transformers config (`hf` is the original)."""

    family: str
    hidden_size: int
    n_layers: int
    vocab_size: int
    max_seq_len: int
    hf: object

    def matmul_shape(self) -> MatmulShape:
        """BERT's MLP has two matrices (GELU), ModernBERT's gated one three; ModernBERT's local
        layers count as global, so its MFU is a slight overestimate."""
        heads = self.hf.num_attention_heads
        mats = 3 if self.family == "modernbert" else 2
        return MatmulShape(heads, heads, self.hidden_size // heads, self.hf.intermediate_size, mats)


def _additive(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(
        ~allowed, torch.finfo(dtype).min
    )


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
    positions_after_pad: ClassVar[bool] = False
    """Whether the family numbers positions from pad_token_id + 1 (`position_offset`), as transformers'
    `create_position_ids_from_input_ids` does for RoBERTa and its descendants (CamemBERT, Longformer...)."""

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
        self.position_offset = position_offset(c.model_type, c.pad_token_id)
        self.config = AdapterConfig(
            family=self.family,
            hidden_size=c.hidden_size,
            n_layers=c.num_hidden_layers,
            vocab_size=c.vocab_size,
            max_seq_len=c.max_position_embeddings - self.position_offset,
            hf=c,
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
    ) -> EncoderOutput:
        """Hidden states for (B, T) `input_ids`, with the same arguments as `Encoder.forward`."""
        mask = self._mask(input_ids, attention_mode, doc_ids, padding_mask)
        out = self.body(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=None if position_ids is None else position_ids + self.position_offset,
            output_hidden_states=output_hidden_states,
        )
        hidden = list(out.hidden_states) if output_hidden_states else None
        return EncoderOutput(last_hidden_state=out.last_hidden_state, hidden_states=hidden)

    def _mask(self, input_ids, mode, doc_ids, padding_mask):
        raise NotImplementedError

    # ---- the rest of the LanguageModel protocol (model/protocol.py) -----------------------------
    def lm_loss(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Summed fp32 cross-entropy through the plain head (transformers' head has a transform and a bias)."""
        return F.cross_entropy(self.lm_logits(hidden).float(), targets, reduction="sum")

    @property
    def attn_impl(self) -> str:
        return "sdpa"

    def set_attn_impl(self, impl: str) -> None:
        """Nothing to do: the wrapped classes run transformers' sdpa path, which the masks are built for."""

    def fsdp_units(self) -> list[nn.Module]:
        """None: FSDP2 shards encoderlab encoders only (use DDP for adapters)."""
        return []

    def folder_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """transformers' state dict without tied copies (safetensors' `save_file` refuses
        tensors that share memory; they are tied again on load), and the family with transformers' config."""
        state = {**self.hf.state_dict(), **self.carried.state_dict()}
        for key in getattr(self.hf, "_tied_weights_keys", None) or {}:
            state.pop(key, None)
        meta = {"family": self.family, "hf_config": self.hf.config.to_dict()}
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

    @property
    def layers(self) -> nn.ModuleList:
        return self.body.encoder.layer

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for hidden states of any leading shape."""
        return self.hf.cls(hidden)

    def _mask(self, input_ids, mode, doc_ids, padding_mask):
        causal = mode == "causal"
        for layer in self.layers:
            layer.attention.self.is_causal = causal
        allowed = dense_mask(input_ids.shape[1], mode, doc_ids, padding_mask, input_ids.device)
        return None if allowed is None else _additive(allowed, self.hf.dtype)


class ModernBertAdapter(HFAdapter):
    """`ModernBertForMaskedLM`, alternating global and sliding-window attention."""

    family = "modernbert"
    hf_name = "ModernBertForMaskedLM"
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
        if mode == "bidirectional" and doc_ids is None and padding_mask is None:
            return None  # transformers builds the global and sliding masks itself
        t = input_ids.shape[1]
        allowed = dense_mask(t, mode, doc_ids, padding_mask, input_ids.device)
        if allowed is None:  # causal with nothing else
            allowed = torch.ones(t, t, dtype=torch.bool, device=input_ids.device).tril()[None, None]
        idx = torch.arange(t, device=input_ids.device)
        window = (idx[:, None] - idx[None, :]).abs() <= self.config.hf.sliding_window
        dtype = self.hf.dtype
        return {
            "full_attention": _additive(allowed, dtype),
            "sliding_attention": _additive(allowed & window, dtype),
        }


class RobertaAdapter(BertAdapter):
    """`RobertaForMaskedLM`: BERT's layers (and masks), its own embeddings' position offset and head."""

    family = "roberta"
    hf_name = "RobertaForMaskedLM"
    positions_after_pad = True
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


ADAPTERS: dict[str, type[HFAdapter]] = {
    "bert": BertAdapter,
    "modernbert": ModernBertAdapter,
    "roberta": RobertaAdapter,
    "xlm-roberta": XLMRobertaAdapter,
}
ADAPTER_FAMILIES = tuple(ADAPTERS)


def hf_config_from_dict(raw: dict):
    """The transformers config for `raw`, built by the class registered for its `model_type`.

    Never `AutoConfig`: a folder's `auto_map` could make that import code shipped with the folder.
    A config transformers refuses raises one of `config_errors()`.
    """
    from transformers import CONFIG_MAPPING

    return CONFIG_MAPPING[raw["model_type"]].from_dict({k: v for k, v in raw.items() if k != "auto_map"})


def config_errors() -> tuple[type[Exception], ...]:
    """What building a config or a model from a bad `config.json` raises: transformers' own checks
    (ValueError; since transformers 5 also huggingface_hub's `StrictDataclassError` for a value of the
    wrong type, which is no ValueError) and TypeError. Callers turn them into one line."""
    from huggingface_hub.errors import StrictDataclassError

    return (ValueError, TypeError, StrictDataclassError)


def hf_class(family: str):
    """The transformers masked-LM class an adapter family wraps."""
    import transformers

    return getattr(transformers, ADAPTERS[family].hf_name)


@contextlib.contextmanager
def seeded_init(state: dict[str, torch.Tensor]) -> Iterator[None]:
    """Initialise whatever is built inside from a seed derived from the checkpoint's weights.

    Why: a checkpoint without an MLM (or LM) head gets one freshly initialised at load. Unseeded,
    every load draws another head, so the model's fingerprint (which hashes every weight, and keys
    evaluation caches and study nodes) changed on each load and an interrupted evaluation grid never
    resumed. The other fix, leaving the head out of the fingerprint, would hide a real difference
    wherever the head is used (continued MLM pretraining starts from it). Seeding from the weights
    gives the same head on every load of the same checkpoint, different heads for different
    checkpoints, and leaves the global RNG as it was. Cost: one sha256 pass over the weights, paid
    only when something is missing.
    """
    digest = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        digest.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int.from_bytes(digest.digest()[:8], "little"))
        yield


# Keys a masked-LM class does not have but base checkpoints often carry: the pooler is carried
# (`HFAdapter.carried`), the position and token-type id buffers are rebuilt by transformers.
_CARRIED = ".pooler."
_IGNORABLE = (_CARRIED, "position_ids", "token_type_ids")


def adapter_from_hf_state(
    hf_config, state: dict[str, torch.Tensor], where: str, sentence_files: dict[str, str] | None = None
) -> tuple[HFAdapter, list[str]]:
    """Build the adapter for `hf_config.model_type` from an HF state dict (and the folder's
    sentence-transformers files, `sentence`); returns notes.

    A base-model checkpoint (no MLM head, e.g. MiniLM saved as `BertModel`) loads with the head
    freshly initialised by transformers' own init, seeded by the weights (`seeded_init`), and the
    notes say so.
    """
    family = hf_config.model_type
    hf_config._attn_implementation = "sdpa"
    cls = hf_class(family)
    prefix = cls.base_model_prefix
    if not any(k.startswith(prefix + ".") for k in state):
        state = {f"{prefix}.{k}": v for k, v in state.items()}
    headless = all(k.startswith(prefix + ".") for k in state)  # a base model: the MLM head is made here
    with seeded_init(state) if headless else contextlib.nullcontext():
        hf = cls(hf_config)
    own = hf.state_dict()
    for key, tensor in state.items():
        if key in own and tuple(own[key].shape) != tuple(tensor.shape):
            raise UserError(
                f"{where}: weight '{key}' has shape {tuple(tensor.shape)} but config.json implies "
                f"{tuple(own[key].shape)}; the checkpoint does not match its config"
            )
    missing, unexpected = hf.load_state_dict(state, strict=False)
    carried = {k: state[k] for k in unexpected if _CARRIED in k}
    unexpected = [k for k in unexpected if not any(s in k for s in _IGNORABLE)]
    if unexpected:
        raise UserError(
            f"{where}: {len(unexpected)} weights have no place in {type(hf).__name__} (e.g. {unexpected[:3]})"
        )
    body_missing = [k for k in missing if k.startswith(prefix + ".") and not any(s in k for s in _IGNORABLE)]
    if body_missing:
        raise UserError(
            f"{where}: weights missing from the checkpoint (e.g. {body_missing[:3]}); it does not match its config.json"
        )
    # Tied parameters (the decoder shares the word embeddings) are saved once, under their source.
    tied = getattr(hf, "_tied_weights_keys", None) or {}
    missing = [k for k in missing if k not in tied]
    notes = []
    if any(not k.startswith(prefix + ".") for k in missing):
        notes.append(
            "MLM head freshly initialised (the checkpoint has none); its first losses are not a pretrained MLM's"
        )
    hf.tie_weights()
    return ADAPTERS[family](hf.eval(), carried, sentence_files), notes
