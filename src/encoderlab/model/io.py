"""The encoderlab model folder: `config.json` + `model.safetensors` (+ tokenizer files).

This is what a run writes at every checkpoint and at its end, and what evaluation, analysis and
export read. It is deliberately not a Hugging Face folder (that is what `encoderlab export`
writes): it records the encoderlab `ModelConfig` exactly, with a format version, so loading never
guesses. Weights are safetensors only; a tied LM head is stored once.

A model continued from a BERT or ModernBERT checkpoint is an adapter around transformers' class
(`hf_adapters`); its folder records `family` and the transformers config (`hf_config`) instead of
a `ModelConfig`, and the wrapped model's weights, so runs from those checkpoints save and resume
through the same two functions.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from encoderlab.atomic import atomic_folder, json_text
from encoderlab.config import from_dict
from encoderlab.data.hubmodels import missing_blob
from encoderlab.errors import UserError, first_line
from encoderlab.model.config import ModelConfig, resolve_attn_impl
from encoderlab.model.encoder import Encoder
from encoderlab.model.hf_adapters import HFAdapter
from encoderlab.model.hf_registry import (
    ADAPTER_FAMILIES,
    adapter_from_hf_state,
    config_errors,
    hf_config_from_dict,
)
from encoderlab.model.protocol import LanguageModel
from encoderlab.model.sentence import sentence_files_problem
from encoderlab.model.sources import FORMAT, is_model_folder  # noqa: F401 (is_model_folder: read here too)

log = logging.getLogger(__name__)

FORMAT_VERSION = 1


RESTORE = "restore it from a copy, or for a run's checkpoint delete that checkpoint folder and --resume from the one before"
"""The way on from a damaged file of a model folder (weights or config)."""


def save_model_folder(model: LanguageModel, path: Path, tokenizer=None) -> Path:
    """Write `model` (and `tokenizer`, a HF tokenizer) to `path` atomically."""
    meta: dict = {"format": FORMAT, "format_version": FORMAT_VERSION}
    state, architecture = model.folder_state()
    meta.update(architecture)
    state = {k: v.detach().cpu().contiguous() for k, v in state.items()}
    with atomic_folder(path, replace=True) as tmp:
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": FORMAT})
        (tmp / "config.json").write_text(json_text(meta, indent=2))
        if tokenizer is not None:
            tokenizer.save_pretrained(str(tmp))
    return Path(path)


def check_shapes(own: dict[str, torch.Tensor], state: dict[str, torch.Tensor], config: str) -> None:
    """Refuse weights whose shapes differ from what the config builds (one line, not a size-mismatch dump),
    and weights that are not floating-point numbers (int8 or bool ones were cast silently into the model)."""
    for key, tensor in state.items():
        if key in own and own[key].is_floating_point() and not tensor.is_floating_point():
            raise UserError(
                f"weight '{key}' is stored as {str(tensor.dtype).removeprefix('torch.')}, not as floating-point "
                f"numbers (a quantized or damaged file); {RESTORE}"
            )
        if key in own and tuple(own[key].shape) != tuple(tensor.shape):
            raise shape_refusal(key, tuple(tensor.shape), tuple(own[key].shape), config)


def shape_refusal(key: str, stored: tuple, implied: tuple, config: str) -> UserError:
    """The line of an encoderlab folder's weight whose shape is not its config's; shared by the load
    (`check_shapes`) and `eval --check` (`headercheck.check_embedding_rows`, from the safetensors header)."""
    return UserError(
        f"weight '{key}' has shape {stored} but {config} implies {implied}; "
        "the weights do not match their config: restore the original config.json"
    )


def unreadable_weights(weights: Path, why: object) -> UserError:
    """The refusal of a model folder's weight file that cannot be read (`why`: the reader's error), shared
    by the load and `eval --check` (`hub.require_weights`), which says it before any weight is read. A
    weight file of a hub cache snapshot whose blob is gone gets the download that brings it back instead
    (`missing_blob`): a hub cache has no copy to restore and no checkpoint to resume from."""
    return missing_blob(weights) or UserError(
        f"cannot read {weights} ({why}); the file is corrupt, truncated or missing: {RESTORE}"
    )


def _read_meta(path: Path) -> dict:
    """config.json of a model folder; a missing or damaged one (a checkpoint cut short by hand, a
    bad copy) is one line naming it, not a traceback."""
    where = Path(path) / "config.json"
    try:
        meta = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path} holds no model (no config.json); {RESTORE}") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise UserError(
            f"cannot read {where} ({type(exc).__name__}: {exc}); the file is corrupt: {RESTORE}"
        ) from None
    if not isinstance(meta, dict):
        raise UserError(f"cannot read {where} (not a JSON object); the file is corrupt: {RESTORE}")
    if meta.get("format_version") != FORMAT_VERSION:
        raise UserError(
            f"{path} has model format version {meta.get('format_version')}, this encoderlab reads "
            f"{FORMAT_VERSION}; upgrade encoderlab or re-export the model"
        )
    problem = _architecture_problem(meta)
    if problem:
        raise UserError(f"cannot read {where} ({problem}); the file is corrupt: {RESTORE}")
    return meta


def _architecture_problem(meta: dict) -> str | None:
    """What is wrong with the part of a model folder's config.json that says what to build, if anything:
    an encoder's `model` mapping, or an adapter's `family` with transformers' config of that family."""
    if "family" not in meta:
        sized = isinstance(meta.get("model"), dict)
        return None if sized else "its 'model' is not a mapping of the encoder's sizes"
    if meta["family"] not in ADAPTER_FAMILIES:
        return f"family {meta['family']!r} is none of {', '.join(ADAPTER_FAMILIES)}"
    hf = meta.get("hf_config")
    if not isinstance(hf, dict) or hf.get("model_type") != meta["family"]:
        return f"its 'hf_config' is not a {meta['family']} config"
    return sentence_files_problem(meta.get("sentence_transformers", {}))


def read_model_config(path: Path) -> ModelConfig:
    """The ModelConfig stored in an encoderlab model folder."""
    meta = _read_meta(path)
    if "model" not in meta:
        raise UserError(f"{path} holds a {meta.get('family')} adapter model, not an encoderlab encoder")
    return from_dict(ModelConfig, meta["model"], where=f"{path}/config.json")


def load_model_folder(path: Path, device: str | torch.device = "cpu") -> Encoder | HFAdapter:
    """Load an encoderlab model folder; a corrupt weight file is a UserError, not a crash.

    A model saved with `attn_impl: flex` loads with sdpa where flex cannot train (CPU), logged.
    """
    path = Path(path)
    meta = _read_meta(path)
    try:
        state = load_file(str(path / "model.safetensors"), device=str(device))
    except (SafetensorError, OSError) as exc:
        raise unreadable_weights(path / "model.safetensors", exc) from None
    if "family" in meta:
        try:  # transformers' checks of the config's values, in the config or in the model's constructor
            hf = hf_config_from_dict(meta["hf_config"])
            model, _ = adapter_from_hf_state(hf, state, str(path), meta.get("sentence_transformers"))
        except config_errors() as exc:
            raise UserError(
                f"cannot read {path / 'config.json'} ({first_line(exc)}); the file is corrupt: {RESTORE}"
            ) from None
        return model.to(device)
    cfg = from_dict(ModelConfig, meta["model"], where=f"{path}/config.json")
    device = torch.device(device)
    if cfg.attn_impl == "flex" and resolve_attn_impl("auto", device.type) != "flex":
        # flex_attention has no CPU backward, so a flex model could not be fine-tuned here;
        # sdpa computes the same attention (the trainer picks its kernel again anyway).
        log.info("%s was saved with attn_impl=flex; using sdpa on %s", path, device)
        cfg = dataclasses.replace(cfg, attn_impl=resolve_attn_impl("auto", device.type))
    model = Encoder(cfg).to(device)
    if cfg.tie_embeddings and "embed_tokens.weight" in state:
        _check_tied_head(state, path)
        state["lm_head.weight"] = state["embed_tokens.weight"]
    check_shapes(model.state_dict(), state, f"{path}/config.json")
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise UserError(
            f"the weights of {path} do not match its config.json (missing {sorted(missing)[:3]}, unexpected "
            f"{sorted(unexpected)[:3]}); restore the original config.json"
        )
    return model


def _check_tied_head(state: dict[str, torch.Tensor], path: Path) -> None:
    """A tied model's weights hold its LM head once, as the embeddings; an LM head of its own beside
    them (an untied model's weights under a config.json edited to `tie_embeddings: true`) was
    replaced by the embeddings without a word, so export wrote, and every command used, another model."""
    head, embeddings = state.get("lm_head.weight"), state["embed_tokens.weight"]
    if head is not None and not (head.shape == embeddings.shape and torch.equal(head, embeddings)):
        raise UserError(
            f"the weights of {path} hold an LM head of their own (lm_head.weight), but its config.json ties "
            "the head to the embeddings (tie_embeddings: true), which would discard it; restore the "
            "original config.json"
        )
