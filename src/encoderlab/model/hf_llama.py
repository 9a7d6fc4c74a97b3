"""Llama-style Hugging Face checkpoints (EuroBERT, Llama, Qwen2, Qwen3, SmolLM2) as an `Encoder`.

These families share EuroBERT's body (RMSNorm, SwiGLU, rotate-half RoPE, GQA) and its parameter
names, so conversion is two explicit steps rather than a generic loader:
  1. `model_config_from_hf` copies every hyperparameter that changes the function computed, field by
     field (RMSNorm eps, RoPE theta, head_dim, tied embeddings, q/k/v biases, q/k norms), and refuses
     anything the encoder does not implement (RoPE scaling, sliding windows, other activations,
     biases on the output projection) instead of silently computing a different function;
  2. `encoder_from_hf_state` maps each encoder parameter to its HF key and asserts its shape, so a
     checkpoint that does not fit its config fails loudly and no key is left unused.
A decoder converted this way gives `AutoModelForCausalLM`'s logits in causal mode and becomes a
bidirectional encoder in bidirectional mode, with no other change.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import torch

from encoderlab.errors import UserError
from encoderlab.model.config import ModelConfig
from encoderlab.model.encoder import Encoder
from encoderlab.model.hf_registry import check_tied, checkpoint_shape_refusal, seeded_init, unplaced_fix

LLAMA_FAMILIES = ("eurobert", "llama", "qwen2", "qwen3")
LOADED_ARCHITECTURES = ("ForMaskedLM", "ForCausalLM", "Model")
"""The transformers classes (by name ending) whose checkpoints are a body and an LM head, or a body alone."""


def _first_id(value) -> int | None:
    # eos_token_id may be a list (Llama 3 chat checkpoints): the first one is the document end.
    if isinstance(value, (list, tuple)):
        return value[0] if value else None
    return value


def _refuse(where: str, problem: str) -> UserError:
    return UserError(
        f"{where}: {problem}, which encoderlab's encoder does not implement; use a checkpoint without it"
    )


def model_config_from_hf(hf, where: str) -> ModelConfig:
    """An encoderlab `ModelConfig` equal to the transformers config `hf` (Llama-style families)."""
    family = hf.model_type
    rope = dict(getattr(hf, "rope_parameters", None) or {})
    if rope.get("rope_type", "default") != "default":
        raise _refuse(where, f"RoPE scaling '{rope['rope_type']}' is set")
    if rope.get("partial_rotary_factor", 1.0) != 1.0:
        raise _refuse(where, f"partial rotary factor {rope['partial_rotary_factor']} is set")
    if getattr(hf, "hidden_act", "silu") not in ("silu", "swish"):  # transformers' two names of SiLU
        raise _refuse(where, f"activation '{hf.hidden_act}' is used instead of SiLU")
    if getattr(hf, "mlp_bias", False):
        raise _refuse(where, "mlp_bias is set")
    if getattr(hf, "use_sliding_window", False) or any(
        t != "full_attention" for t in getattr(hf, "layer_types", None) or ()
    ):
        raise _refuse(where, "sliding-window attention is used")
    # Qwen2 always has q/k/v biases and none on o_proj; elsewhere attention_bias covers o_proj too.
    if family != "qwen2" and getattr(hf, "attention_bias", False):
        raise _refuse(where, "attention_bias puts a bias on o_proj")
    return ModelConfig(
        vocab_size=hf.vocab_size,
        hidden_size=hf.hidden_size,
        n_layers=hf.num_hidden_layers,
        n_heads=hf.num_attention_heads,
        n_kv_heads=hf.num_key_value_heads or hf.num_attention_heads,
        head_dim=getattr(hf, "head_dim", None) or hf.hidden_size // hf.num_attention_heads,
        intermediate_size=hf.intermediate_size,
        norm_eps=hf.rms_norm_eps,
        rope_theta=float(rope.get("rope_theta", getattr(hf, "rope_theta", 10_000.0))),
        max_seq_len=hf.max_position_embeddings,
        tie_embeddings=bool(hf.tie_word_embeddings),
        attention_bias=family == "qwen2",
        qk_norm=family == "qwen3",
        init_std=hf.initializer_range,
        pad_id=hf.pad_token_id,
        bos_id=_first_id(hf.bos_token_id),
        eos_id=_first_id(hf.eos_token_id),
        mask_id=getattr(hf, "mask_token_id", None),
    )


def hf_key(name: str, prefix: str) -> str:
    """The HF key of an encoder parameter: the body sits under `prefix`, the LM head at the top."""
    return name if name.startswith("lm_head.") or not prefix else f"{prefix}.{name}"


def encoder_from_hf_state(
    cfg: ModelConfig, state: dict[str, torch.Tensor], where: str, architectures: Sequence[str] = ()
) -> tuple[Encoder, list[str]]:
    """Build an `Encoder` from an HF state dict (with or without the `model.` prefix); returns notes.
    `architectures` (config.json's) tells a fine-tuned task model's head from a checkpoint unlike its config."""
    prefix = "model" if any(k.startswith("model.") for k in state) else ""
    if cfg.tie_embeddings:
        check_tied(where, state, "lm_head.weight", hf_key("embed_tokens.weight", prefix))
    headless = not cfg.tie_embeddings and "lm_head.weight" not in state
    with seeded_init(state) if headless else contextlib.nullcontext():  # one head per checkpoint
        model = Encoder(cfg)
    notes: list[str] = []
    own = model.state_dict()
    used: set[str] = set()
    loaded: dict[str, torch.Tensor] = {}
    for name, param in own.items():
        if name == "lm_head.weight" and cfg.tie_embeddings:
            continue
        key = hf_key(name, prefix)
        if key not in state:
            if name == "lm_head.weight":
                notes.append("LM head freshly initialised (the checkpoint has none)")
                continue
            raise UserError(
                f"{where}: weight '{key}' is missing; the checkpoint does not match its config.json"
            )
        tensor = state[key]
        if tuple(tensor.shape) != tuple(param.shape):
            raise checkpoint_shape_refusal(where, key, tuple(tensor.shape), tuple(param.shape))
        loaded[name] = tensor.to(param.dtype)
        used.add(key)
    # Old checkpoints store RoPE's inverse frequencies; they are recomputed from rope_theta.
    unused = sorted(k for k in state if k not in used and not k.endswith("rotary_emb.inv_freq"))
    if cfg.tie_embeddings:
        unused = [k for k in unused if k != "lm_head.weight"]
    if unused:
        raise UserError(
            f"{where}: {len(unused)} weights have no place in the encoder (e.g. {unused[:3]}); "
            + unplaced_fix(architectures, prefix, LOADED_ARCHITECTURES)
        )
    model.load_state_dict(loaded, strict=False)
    return model, notes
