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
own `save_pretrained`; each model writes itself (`LanguageModel.save_hf`; the EuroBERT mapping is
in `hf_eurobert`). The folder is written through `atomic.atomic_folder`, and an existing folder is
only replaced when asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import tyro

from encoderlab.atomic import atomic_folder
from encoderlab.errors import UserError
from encoderlab.model.protocol import LanguageModel


def _check_out(out: Path, overwrite: bool) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise UserError(f"{out} already exists and is not empty; choose another --out or pass --overwrite")


def export_hf(model: LanguageModel, tokenizer, out: Path, *, overwrite: bool = False) -> Path:
    """Write `model` (and `tokenizer`) as a Hugging Face folder at `out`; returns `out`."""
    out = Path(out)
    _check_out(out, overwrite)
    with atomic_folder(out, replace=True) as tmp:
        spec = None
        if tokenizer is not None:
            from encoderlab.data.tokenizer import token_spec

            spec = token_spec(tokenizer)
        model.save_hf(tmp, spec)
        if tokenizer is not None:
            tokenizer.save_pretrained(str(tmp))
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
