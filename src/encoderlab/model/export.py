"""`encoderlab export`: an encoderlab model as a Hugging Face EuroBERT folder (an adapted encoder in its own).

The exported folder is what `transformers.AutoModelForMaskedLM.from_pretrained(folder)` loads as
`EuroBertForMaskedLM` with the same logits: `config.json` (model_type `eurobert`, every
hyperparameter copied from the `ModelConfig`), `model.safetensors` (our parameter names under
`model.`, the LM head at the top, stored once when tied) and the tokenizer files. Special ids come
from the tokenizer when there is one, else from the ids the model config recorded; EuroBERT's
defaults (pad 128001, mask 128002) are never left in place: they
differ per checkpoint, and a small EuroBERT with them refuses to build (`padding_idx` out of range).
EuroBERT puts a bias on all four attention projections when `attention_bias` is set, so a model
with q/k/v biases (from Qwen2) exports with a zero o_proj bias; q/k norms (from Qwen3) have no
EuroBERT equivalent and are refused. The adapters (BERT family, MPNet, DeBERTa, ModernBERT) export
through transformers' own `save_pretrained`; each model writes itself (`LanguageModel.save_hf`; the
EuroBERT mapping is in `hf_eurobert`). The tokenizer's `model_max_length` is at most the model's positions, so truncation
cuts where the model ends. The folder is written through `atomic.atomic_folder`, and an existing folder is
only replaced when asked, and only if it is an earlier export (`encoderlab.outdir`): never a folder
encoderlab did not create, never the source itself or a folder around it. A model EuroBERT cannot
represent is refused before anything is written, and a failed write removes the parents of `out` it
made. A full disk while writing
is exit 3 (atomic_folder turns safetensors' own error into the OSError(ENOSPC) it is). A model card (README.md,
`card.py`) records the run's phases, data, tokenizer and, with `--eval`, its scores.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import tyro

from encoderlab.atomic import atomic_folder, check_sibling
from encoderlab.errors import UserError
from encoderlab.model.protocol import LanguageModel
from encoderlab.model.runlayout import pruned_while_read
from encoderlab.outdir import MARKER, check_output, create_output, missing_folders, remove_folders

KIND = "export"
"""The ownership-marker kind of an exported folder (see `encoderlab.outdir`)."""


def _check_out(out: Path, overwrite: bool, sources: Sequence[Path] = ()) -> None:
    """Refuse an `out` that is or overlaps a source, is foreign, or holds an export without --overwrite."""
    check_output(out, KIND, sources=sources)
    if out.is_dir() and any(p.name != MARKER for p in out.iterdir()) and not overwrite:
        raise UserError(
            f"{out} already holds an export; pass --overwrite to replace it or choose another --out"
        )
    check_sibling(out)  # atomic_folder's scratch sibling: only a leftover of ours is ever deleted


def _bounded(tokenizer, positions: int):
    """`tokenizer`, or a shallow copy whose `model_max_length` is the model's `positions` when it had
    none as small (a trained tokenizer has none: `truncation=True` on the export would then cut
    nothing, and rows longer than the model's positions would reach it)."""
    if tokenizer.model_max_length <= positions:
        return tokenizer
    bounded = copy.copy(tokenizer)  # the caller's tokenizer keeps its own limit
    bounded.model_max_length = positions
    return bounded


def export_hf(
    model: LanguageModel,
    tokenizer,
    out: Path,
    *,
    overwrite: bool = False,
    sources: Sequence[Path] = (),
    card: str | None = None,
) -> Path:
    """Write `model` (and `tokenizer`, and `card` as README.md) as a Hugging Face folder at `out`.

    `out` must not be or overlap one of `sources`, nor be a folder encoderlab did not create; an
    earlier export there is replaced only with `overwrite`. Returns `out`.
    """
    out = Path(out)
    _check_out(out, overwrite, sources)
    spec = None
    if tokenizer is not None:
        from encoderlab.data.tokenizer import token_spec

        spec = token_spec(tokenizer)
    _check_exportable(model, spec)
    made = missing_folders(out.parent)  # atomic_folder makes them for OUT.tmp; a failed export removes them
    try:
        with atomic_folder(out, replace=True) as tmp:  # a full disk leaves it as OSError(ENOSPC)
            create_output(tmp, KIND)  # the finished export carries outdir's ownership marker
            model.save_hf(tmp, spec)
            if tokenizer is not None:
                _bounded(tokenizer, model.config.max_seq_len).save_pretrained(str(tmp))
            if card is not None:
                (tmp / "README.md").write_text(card, encoding="utf-8")
    except BaseException:
        remove_folders(made)
        raise
    return out


def _check_exportable(model: LanguageModel, spec) -> None:
    """Refuse, before anything is written, an encoder EuroBERT cannot represent (q/k norms, no mask
    id): `save_hf` refused it inside the scratch folder, after the folders around `out` were made."""
    from encoderlab.model.encoder import Encoder
    from encoderlab.model.hf_eurobert import eurobert_config

    if isinstance(model, Encoder):
        eurobert_config(model, spec)


def export_command(
    ckpt: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="RUN")],
    out: Path,
    overwrite: bool = False,
    eval: Path | None = None,
) -> None:
    """Export a model folder, run or checkpoint as a Hugging Face folder (EuroBERT for our encoders).

    Args:
        ckpt: encoderlab model folder, run folder (its final model) or checkpoint folder.
        out: Hugging Face folder to write, with a model card (README.md).
        overwrite: Replace `out` if it holds an earlier export.
        eval: An `encoderlab eval --out` folder of this model: its scores go into the model card.
    """
    from encoderlab.model.card import find_run, read_eval_summary, render_card
    from encoderlab.model.fingerprint import fingerprint
    from encoderlab.model.hub import load_pretrained
    from encoderlab.model.sources import guarded_folder, source_folder

    folder = source_folder(ckpt)
    guarded = guarded_folder(ckpt)  # a hub id's cache folder too
    sources = [guarded] if guarded else []
    _check_out(out, overwrite, sources)  # before the (slow) load
    with pruned_while_read(ckpt):  # a running pretrain may delete a checkpoint being read
        # The run record before the weights: a checkpoint pruned after them left the card's step unknown.
        run = find_run(folder) if folder else None
        pre = load_pretrained(ckpt)
    summary = None
    if eval is not None:
        if pre.tokenizer is None:
            raise UserError(f"{ckpt} has no tokenizer, so it cannot have been evaluated; drop --eval")
        summary = read_eval_summary(eval, fingerprint(pre.model, pre.tokenizer))
    kind = pre.model.hf_architecture
    card = render_card(out.name, kind, pre.tokenizer, run, summary, str(ckpt))
    export_hf(pre.model, pre.tokenizer, out, overwrite=overwrite, sources=sources, card=card)
    print(f"exported {ckpt} to {out} ({kind}; load with transformers.AutoModelForMaskedLM.from_pretrained)")
    if pre.tokenizer is None:
        print(f"note: {ckpt} has no tokenizer, so {out} has none either")
