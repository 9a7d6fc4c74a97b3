"""`encoderlab export`: an encoderlab model as a Hugging Face EuroBERT folder.

The exported folder is what `transformers.AutoModelForMaskedLM.from_pretrained(folder)` loads as
`EuroBertForMaskedLM` with the same logits: `config.json` (model_type `eurobert`, every
hyperparameter copied from the `ModelConfig`), `model.safetensors` (our parameter names under
`model.`, the LM head at the top, stored once when tied) and the tokenizer files. Special ids come
from the tokenizer when there is one, else from the ids the model config recorded; EuroBERT's
defaults (pad 128001, mask 128002) are never left in place (pitfall 14).
EuroBERT puts a bias on all four attention projections when `attention_bias` is set, so a model
with q/k/v biases (from Qwen2) exports with a zero o_proj bias; q/k norms (from Qwen3) have no
EuroBERT equivalent and are refused. BERT and ModernBERT adapters export through transformers'
own `save_pretrained`. The folder is written under a temporary name and renamed, and an existing
folder is only replaced when asked.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import torch
import tyro

from encoderlab.errors import UserError
from encoderlab.model.encoder import Encoder
from encoderlab.model.protocol import LanguageModel


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


def _check_out(out: Path, overwrite: bool) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise UserError(f"{out} already exists and is not empty; choose another --out or pass --overwrite")


def export_hf(model: LanguageModel, tokenizer, out: Path, *, overwrite: bool = False) -> Path:
    """Write `model` (and `tokenizer`) as a Hugging Face folder at `out`; returns `out`."""
    out = Path(out)
    _check_out(out, overwrite)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        spec = None
        if tokenizer is not None:
            from encoderlab.data.tokenizer import token_spec

            spec = token_spec(tokenizer)
        model.save_hf(tmp, spec)
        if tokenizer is not None:
            tokenizer.save_pretrained(str(tmp))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def export_command(
    ckpt: Annotated[str, tyro.conf.Positional],
    out: Path,
    overwrite: bool = False,
) -> None:
    """Export a model folder, run or checkpoint as a Hugging Face folder (EuroBERT for our encoders).

    Args:
        ckpt: encoderlab model folder, run folder (its final model) or checkpoint folder.
        out: Hugging Face folder to write.
        overwrite: replace `out` if it already holds files.
    """
    from encoderlab.model.hub import load_pretrained

    _check_out(out, overwrite)  # before the (slow) load
    pre = load_pretrained(ckpt)
    export_hf(pre.model, pre.tokenizer, out, overwrite=overwrite)
    kind = pre.model.hf_architecture
    print(f"exported {ckpt} to {out} ({kind}; load with transformers.AutoModelForMaskedLM.from_pretrained)")
    if pre.tokenizer is None:
        print(f"note: {ckpt} has no tokenizer, so {out} has none either")
