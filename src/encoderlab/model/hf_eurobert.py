"""An encoderlab `Encoder` as transformers' EuroBERT: the config and weight mapping of `export`.

The inverse of `hf_llama` for the EuroBERT family: every `ModelConfig` field is copied into an
`EuroBertConfig`, and the weights are named as `EuroBertForMaskedLM` expects (`model.` prefix, the
head at the top, stored once when tied). `Encoder.save_hf` and `bench train` use it. It imports
no model class, so the encoder can call it without an import loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from encoderlab.errors import UserError

if TYPE_CHECKING:
    from encoderlab.model.encoder import Encoder


def eurobert_config(model: Encoder, spec=None):
    """The `EuroBertConfig` computing the same function as `model` (ids from `spec` if given)."""
    from transformers import EuroBertConfig

    c = model.config
    if c.qk_norm:
        raise UserError(
            "the model has q/k norms (a Qwen3 conversion), which EuroBERT cannot represent; it cannot be exported"
        )
    ids = {
        name: getattr(spec if spec is not None else c, f"{name}_id") for name in ("pad", "bos", "eos", "mask")
    }
    if ids["mask"] is None:
        raise UserError(
            "EuroBERT needs a mask token id, and neither the tokenizer nor the model config has one; export with the tokenizer the model was trained with"
        )
    return EuroBertConfig(
        architectures=["EuroBertForMaskedLM"],
        vocab_size=c.vocab_size,
        hidden_size=c.hidden_size,
        intermediate_size=c.intermediate_size,
        num_hidden_layers=c.n_layers,
        num_attention_heads=c.n_heads,
        num_key_value_heads=c.n_kv_heads,
        head_dim=c.head_dim,
        hidden_act="silu",
        max_position_embeddings=c.max_seq_len,
        initializer_range=c.init_std,
        rms_norm_eps=c.norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": c.rope_theta},
        tie_word_embeddings=c.tie_embeddings,
        attention_bias=c.attention_bias,
        mlp_bias=False,
        pad_token_id=ids["pad"],
        bos_token_id=ids["bos"],
        eos_token_id=ids["eos"],
        mask_token_id=ids["mask"],
        dtype="float32",
    )


def eurobert_state(model: Encoder) -> dict[str, torch.Tensor]:
    """`model`'s weights under EuroBertForMaskedLM's names (tied head stored once)."""
    state = {}
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":
            if not model.config.tie_embeddings:
                state[name] = tensor
            continue
        state[f"model.{name}"] = tensor
        if model.config.attention_bias and name.endswith("self_attn.o_proj.weight"):
            state[f"model.{name[: -len('weight')]}bias"] = torch.zeros(tensor.shape[0], dtype=tensor.dtype)
    return {k: v.detach().float().cpu().contiguous() for k, v in state.items()}
