"""One entry point for every model source: `load_pretrained(source) -> Pretrained`.

A source is resolved in this order, and each kind has exactly one loader:
  1. an encoderlab model folder, a run folder (its `final/` model) or a checkpoint folder (its
     `model/`): `io.load_model_folder`;
  2. a Hugging Face folder: the family comes from `config.json`'s `model_type`. Llama-style
     families are converted to our `Encoder` (`hf_llama`); BERT and ModernBERT are wrapped in
     transformers' own classes (`hf_adapters`). Either way the result satisfies the LanguageModel
     protocol, so training, evaluation and analysis never ask where a model came from;
  3. an asset name (`minilm`, `smollm2-135m`): its cached folder, then as 2;
  4. anything shaped like `org/name` (or `org/name@rev`, a pinned revision): its mirror folder when
     `ENCODERLAB_HUB_MODELS` is set, else a hub download (safetensors and configs only), then as 2.
     The mirror lookup, the offline refusal and the download are `data/hubmodels.py`'s, the one
     resolver of model hub ids, which tokenizers use too, so a model and its tokenizer never come
     from two places.
Security is decided here, once: weights are read with safetensors; pickled `pytorch_model.bin`
only with `allow_pickle=True`, and then through `torch.load(weights_only=True)`; a folder that
ships its own modelling code (`auto_map`) is refused unless `trust_remote_code=True`, and even then
no remote code runs: the weights go through the same explicit mappings. Its tokenizer is read by
`data.tokenizer.load_tokenizer`, which never runs a tokenizer's own code either.
The HF config object is built from `config.json` with transformers' config class for its
`model_type`, never through `AutoConfig`, so no code from the folder is imported.
What is read of a source without loading it (its folder, its config's positions, whether it exists) is
`sources.py`, free of torch, which `study plan` reads; the loaders here import it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import nn

from encoderlab.data.batch import TokenSpec
from encoderlab.data.hubmodels import TOKENIZER_GLOBS, missing_blob, missing_tokenizer_blob
from encoderlab.errors import UserError, first_line
from encoderlab.model.config import ModelConfig
from encoderlab.model.hf_llama import LLAMA_FAMILIES, encoder_from_hf_state, model_config_from_hf
from encoderlab.model.hf_registry import (
    ADAPTER_FAMILIES,
    adapter_from_hf_state,
    config_errors,
    hf_config_from_dict,
)
from encoderlab.model.io import load_model_folder, unreadable_weights
from encoderlab.model.runlayout import is_run_folder, unfinished_run
from encoderlab.model.sentence import read_sentence_files
from encoderlab.model.sources import (
    config_positions,
    config_vocab_size,
    model_folder_in,
    read_config_json,
    source_path,
)

FAMILIES = (*LLAMA_FAMILIES, *ADAPTER_FAMILIES)


@dataclass
class Pretrained:
    """A loaded model with everything needed to feed it."""

    model: nn.Module
    """An `Encoder` or an adapter; both satisfy the LanguageModel protocol."""
    tokenizer: object | None
    """The folder's tokenizer (a transformers fast tokenizer), None if the folder has none."""
    spec: TokenSpec
    """Vocabulary facts, from the tokenizer when there is one, else from the config."""
    family: str
    """`encoderlab` for our own folders, else the HF `model_type`."""
    notes: list[str] = field(default_factory=list)
    """Anything a user must know about this load (freshly initialised heads, ignored code)."""
    config: dict = field(default_factory=dict)
    """A Hugging Face folder's config.json as read (what it declares beyond the weights' shapes, e.g.
    EuroBERT's `clf_pooling`, which evaluation reads); empty for encoderlab's own folders."""


def load_pretrained(
    source: str | Path,
    *,
    trust_remote_code: bool = False,
    allow_pickle: bool = False,
    files: ModelFiles | None = None,
) -> Pretrained:
    """Load a model from a folder, a run, an asset name or a hub id (see the module docstring). `files`:
    what `model_files(source)` read of it already, whose tokenizer the load takes rather than reading it
    again (a `from_pretrained` of the whole vocabulary); one of another folder is not used."""
    return _load_path(source_path(source), trust_remote_code, allow_pickle, files)


@dataclass(frozen=True)
class ModelFiles:
    """What `load_pretrained` reads of a model besides its weights (`model_files`)."""

    folder: Path
    """The model folder (a run's `final/`, a checkpoint's `model/`, a Hugging Face folder)."""
    tokenizer: object | None
    """Its tokenizer, None if it has none."""
    config: dict
    """A Hugging Face folder's config.json as read (`Pretrained.config`); empty for encoderlab's own."""
    positions: int | None
    """The longest input it takes, from its config (`max_positions`)."""
    vocab_size: int | None = None
    """Its embedding's rows, from its config (`vocab_size`); None where the config records none."""


def model_files(source: str | Path) -> ModelFiles:
    """The tokenizer and config of the model `load_pretrained(source)` would load, refused with the same
    lines, its weights left unread: a hub id's configs and tokenizer only (`TOKENIZER_GLOBS`), read from the
    local hub cache, the hub asked only for what it lacks (`data.hubmodels.check_files`).
    What `eval --check` reads of a model before GPU time is spent."""
    path = source_path(source, TOKENIZER_GLOBS)
    own = own_model_folder(path)
    if own is not None:
        return ModelFiles(own, _load_tokenizer(own), {}, config_positions(own), config_vocab_size(own))
    if not (path / "config.json").is_file():
        raise _not_a_model(path)
    raw = _checked_config(path, trust_remote_code=False)[0]  # as a command's load refuses it, first
    return ModelFiles(path, _load_tokenizer(path), raw, config_positions(path), config_vocab_size(path))


def require_weights(files: ModelFiles) -> None:
    """Refuse, in the line the load gives, a model folder of `model_files` whose weights the load would
    refuse unread: missing, or (a Hugging Face folder) stored only as pickles, which no command reads.
    For copies on this machine only (a folder, an asset, a mirror): a hub id's `model_files` downloads no
    weights, which its run fetches. Before, `eval --check` passed a checkpoint without its
    model.safetensors, or a pytorch_model.bin-only folder, and only the run refused it."""
    folder = files.folder
    if files.config:  # a Hugging Face folder: the files `read_hf_weights` would read, sharded or not
        hf_weight_files(folder, allow_pickle=False)
    elif not (weights := folder / "model.safetensors").is_file():  # encoderlab's own, as `load_model_folder`
        raise unreadable_weights(weights, f"No such file or directory: {weights}")


def _load_path(
    path: Path, trust_remote_code: bool, allow_pickle: bool, files: ModelFiles | None
) -> Pretrained:
    own = own_model_folder(path)
    if own is not None:
        model = load_model_folder(own)
        tokenizer = _tokenizer_of(own, files)
        family = getattr(model.config, "family", "encoderlab")  # adapters keep their HF family
        spec = _spec(tokenizer, model.config)
        # A tokenizer with more ids than embedding rows is one line here, not an IndexError later.
        check_compatible(model, spec)
        return Pretrained(model.eval(), tokenizer, spec, family)
    if (path / "config.json").is_file():
        return load_hf_folder(
            path, trust_remote_code=trust_remote_code, allow_pickle=allow_pickle, files=files
        )
    raise _not_a_model(path)


def _tokenizer_of(folder: Path, files: ModelFiles | None):
    """The tokenizer of model folder `folder`: the one `files` read of it, else read now."""
    return files.tokenizer if files is not None and files.folder == folder else _load_tokenizer(folder)


def _not_a_model(path: Path) -> UserError:
    """A folder without a readable config.json; in a hub cache snapshot whose config blob is gone, the
    download that brings it back (`missing_blob`), not "pass a folder that holds a model"."""
    from encoderlab.model.nearmodel import near_model  # a file of a model folder, or one a level down

    return missing_blob(path / "config.json") or UserError(
        near_model(path)
        or f"{path} is neither an encoderlab model/run/checkpoint folder nor a Hugging Face folder (no config.json); "
        "pass a folder that holds a model"
    )


def own_model_folder(path: Path) -> Path | None:
    """The encoderlab model folder that `path` (model, run or checkpoint folder) stands for."""
    if (found := model_folder_in(path)) is not None:
        return found
    if (path / "checkpoints").is_dir() and (path / "final" / "config.json").is_file():
        raise UserError(  # a final model is there, its config is not readable as ours
            f"{path / 'final' / 'config.json'} is not an encoderlab model config (damaged or replaced): restore "
            f"it from a copy, or pass one of the run's checkpoints, e.g. {path}/checkpoints/step_N"
        )
    if is_run_folder(path):
        raise unfinished_run(path)
    return None


def _family(raw: dict, where: Path) -> str:
    family = raw.get("model_type")
    if family is None:  # said "has model_type 'None'", as if None were a family
        raise UserError(
            f"{where / 'config.json'} names no model_type; add the family it is ({_named_family(raw)}), or re-download the model"
        )
    if family not in FAMILIES:
        raise UserError(
            f"{where} has model_type '{family}', which encoderlab cannot load; supported: {', '.join(FAMILIES)}"
        )
    return family


def _named_family(raw: dict) -> str:
    """The `"model_type": ...` that config.json's `architectures` names (BertForMaskedLM: bert), else
    the supported families."""
    architectures = raw.get("architectures")
    first = architectures[0] if isinstance(architectures, list) and architectures else None
    stem = first.split("For")[0].removesuffix("Model").lower() if isinstance(first, str) else None
    named = [f for f in FAMILIES if f.replace("-", "") == stem]
    return (
        f'"model_type": "{named[0]}", as its architectures {first} says'
        if named
        else "one of: " + ", ".join(FAMILIES)
    )


_DIMS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "max_position_embeddings",
)
_DERIVED = ("num_key_value_heads", "head_dim")
"""Sizes that may be null: transformers derives them (as many KV heads as heads, hidden / heads)."""


def _check_dims(raw: dict, family: str, path: Path) -> None:
    """The sizes a model is built from must be positive integers, before anything is allocated.

    A wrong but plausible size (a hidden_size of 48 for 32-wide weights) is caught later, by the
    shape check against the weights; this catches what would crash the constructor instead.
    """
    for key in _DIMS:
        value = raw.get(key)
        if value is None and key in _DERIVED:
            continue
        if key in raw and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise UserError(
                f"{path / 'config.json'}: {key} must be a positive integer, got {value!r}; "
                "fix config.json or re-download the model"
            )
    hidden, heads = raw.get("hidden_size"), raw.get("num_attention_heads")
    if hidden and heads and "head_dim" not in raw and hidden % heads:
        raise UserError(
            f"{path / 'config.json'}: hidden_size {hidden} is not a multiple of num_attention_heads {heads} "
            f"({family} needs that); fix config.json or re-download the model"
        )
    kv = raw.get("num_key_value_heads")
    if heads and kv and heads % kv:
        raise UserError(
            f"{path / 'config.json'}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv} "
            "(grouped-query attention needs that); fix config.json or re-download the model"
        )


def load_hf_folder(
    path: Path,
    *,
    trust_remote_code: bool = False,
    allow_pickle: bool = False,
    files: ModelFiles | None = None,
) -> Pretrained:
    """Load a Hugging Face model folder of a supported family (`files`: as `load_pretrained`'s)."""
    path = Path(path)
    raw, hf, cfg = _checked_config(path, trust_remote_code=trust_remote_code)
    notes = (
        ["the folder's own modelling code was not run; weights were mapped by encoderlab"]
        if "auto_map" in raw
        else []
    )
    state = read_hf_weights(path, allow_pickle=allow_pickle)
    where = str(path)
    if cfg is not None:
        model, more = encoder_from_hf_state(cfg, state, where, getattr(hf, "architectures", None) or ())
    else:
        sentence_files, kept_none = read_sentence_files(path)
        model, more = adapter_from_hf_state(hf, state, where, sentence_files)
        more += kept_none
    tokenizer = _tokenizer_of(path, files)
    spec = _spec(tokenizer, model.config)
    check_compatible(model, spec)
    if spec.mask_id is None:
        notes.append("the tokenizer has no mask token; MLM needs one added before training")
    return Pretrained(model.eval(), tokenizer, spec, hf.model_type, notes + more, raw)


def _checked_config(path: Path, *, trust_remote_code: bool) -> tuple[dict, object, ModelConfig | None]:
    """A Hugging Face folder's config.json as read, transformers' config and encoderlab's (`_configs`),
    refused before any weight or tokenizer is read: its own modelling code (unless trusted), a family no
    loader takes, sizes that would crash a constructor. Shared by the load and `model_files`, so
    `eval --check` refuses a config in the run's line."""
    raw = read_config_json(path)
    if "auto_map" in raw and not trust_remote_code:
        raise UserError(
            f"{path} ships its own modelling code (auto_map in config.json), which encoderlab never runs; "
            "remove auto_map from config.json, or if you trust the folder load it from Python with "
            "load_pretrained(path, trust_remote_code=True)"
        )
    family = _family(raw, path)
    _check_dims(raw, family, path)
    return raw, *_configs(raw, family, path)


def _configs(raw: dict, family: str, path: Path) -> tuple[object, ModelConfig | None]:
    """transformers' config of `raw` and, for a Llama-style family, the `ModelConfig` it converts to,
    both before any weight is read; a value either refuses (a string where a number belongs, KV heads
    that do not divide the heads) is one line, not a traceback."""
    try:
        hf = hf_config_from_dict(raw)
        return hf, model_config_from_hf(hf, str(path)) if family in LLAMA_FAMILIES else None
    except config_errors() as exc:
        raise UserError(
            f"{path / 'config.json'} is not a valid {family} config ({first_line(exc)}); "
            "fix config.json or re-download the model"
        ) from None


def hf_weight_files(path: Path, *, allow_pickle: bool = False) -> list[Path]:
    """The weight files `read_hf_weights` reads in the Hugging Face folder `path`: model.safetensors or
    its shards, else (with `allow_pickle` only) pytorch_model.bin or its shards; no weights, or pickles
    not allowed, is one line. Shared with `require_weights`, so `eval --check` refuses what the run does."""
    files = _weight_files(path, "model.safetensors")
    if files:
        return files
    files = _weight_files(path, "pytorch_model.bin")
    if not files:
        raise UserError(
            f"{path} has no weights (model.safetensors or pytorch_model.bin); re-download the model"
        )
    if not allow_pickle:
        raise UserError(
            f"{path} stores its weights as pickle (pytorch_model.bin); convert them to safetensors, or if "
            "you trust the file load it from Python with load_pretrained(path, allow_pickle=True) "
            "(read with torch.load(weights_only=True); no command takes pickles)"
        )
    return files


def read_hf_weights(path: Path, *, allow_pickle: bool = False) -> dict[str, torch.Tensor]:
    """All weights of an HF folder (single or sharded safetensors; pickle only when allowed), in fp32."""
    state = {}
    for f in hf_weight_files(path, allow_pickle=allow_pickle):
        if f.name.endswith(".safetensors"):
            try:
                state.update(load_file(str(f)))
            except (SafetensorError, OSError) as exc:
                raise UserError(
                    f"cannot read {f} ({exc}); the file is corrupt or truncated, re-download it"
                ) from None
            continue
        try:
            state.update(torch.load(f, map_location="cpu", weights_only=True))
        except Exception as exc:  # torch raises several types for unsafe or damaged pickles
            raise UserError(
                f"cannot read {f} safely ({type(exc).__name__}); convert it to safetensors"
            ) from None
    return {k: v.float() if v.is_floating_point() else v for k, v in state.items()}


def _weight_files(path: Path, name: str) -> list[Path]:
    """The weight file `name`, or the shards listed in its `.index.json`.

    Shard names must be relative paths below the model folder: an index that points elsewhere
    (`../x`, an absolute path) is refused, so a downloaded folder cannot make encoderlab read a file
    the user did not hand it. The check is on the names, not on resolved paths: the hub's cache stores
    every file of a snapshot as a symlink into a shared `blobs/` folder, and those must keep loading.
    """
    if (path / name).is_file():
        return [path / name]
    if (refused := missing_blob(path / name)) is not None:  # read as "no weights, re-download the model"
        raise refused
    stem, ext = name.rsplit(".", 1)
    index = path / f"{stem}.{ext}.index.json"
    if not index.is_file():  # a sharded snapshot's index link whose blob is gone too (a copy without blobs/)
        if (refused := missing_blob(index)) is not None:
            raise refused
        return []
    shards = sorted(set(_index_weight_map(index).values()))
    outside = [s for s in shards if Path(s).is_absolute() or ".." in Path(s).parts or not Path(s).parts]
    if outside:
        raise UserError(
            f"{index} points weight shards outside the model folder ({outside[0]}); shard names must be "
            "files inside the folder: fix the index or re-download the model"
        )
    missing = [s for s in shards if not (path / s).is_file()]
    if missing and (refused := missing_blob(path / missing[0])) is not None:
        raise refused
    if missing:
        raise UserError(
            f"{path} lacks weight shards {missing[:3]} listed in {index.name}; re-download the model"
        )
    return [path / s for s in shards]


def _index_weight_map(index: Path) -> dict[str, str]:
    """The `weight_map` of a sharded checkpoint's index; anything malformed is one line."""
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise UserError(
            f"{index} is not a valid shard index ({type(exc).__name__}: {exc}); re-download the model"
        ) from None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise UserError(
            f"{index}: weight_map must map weight names to shard file names; re-download the model"
        )
    return weight_map


def _load_tokenizer(path: Path):
    """The folder's tokenizer, or None when it has no tokenizer files (nor a slow vocabulary, which
    `load_tokenizer` converts: BERT's vocab.txt beside config.json). A hub cache snapshot whose tokenizer
    blobs are gone is refused (`missing_tokenizer_blob`), not read as a model without a tokenizer."""
    from encoderlab.data.tokenizer import TOKENIZER_FILES, load_tokenizer, slow_vocabulary

    if (refused := missing_tokenizer_blob(path)) is not None:
        raise refused
    files = any((path / f).is_file() for f in TOKENIZER_FILES) or slow_vocabulary(path) is not None
    return load_tokenizer(path) if files else None


def _spec(tokenizer, config) -> TokenSpec:
    """Token facts from the tokenizer when there is one; otherwise the ids the config records."""
    if tokenizer is not None:
        from encoderlab.data.tokenizer import token_spec

        return token_spec(tokenizer)
    hf = getattr(config, "hf", None)  # adapters: the ids live on the transformers config
    roles = ("pad", "bos", "eos", "mask")
    ids = {
        r: getattr(hf, f"{r}_token_id", None) if hf is not None else getattr(config, f"{r}_id") for r in roles
    }
    specials = tuple(sorted({v for v in ids.values() if v is not None}))
    return TokenSpec(
        vocab_size=config.vocab_size, **{f"{r}_id": v for r, v in ids.items()}, special_ids=specials
    )


def check_compatible(
    model: nn.Module,
    spec: TokenSpec,
    expected: ModelConfig | None = None,
    *,
    tokenizer: str = "the tokenizer",
) -> None:
    """Refuse a model that cannot serve `spec`'s token ids, or whose architecture is not `expected`.

    `tokenizer` names where `spec` came from in the message (e.g. "the data's tokenizer").
    The trainer calls this before using a checkpoint it did not build itself (continued
    pretraining, resume), so a mismatch is one clear line instead of an index error deep inside
    an embedding lookup, or a silently different model.
    """
    check_vocabulary(model.config.vocab_size, spec, tokenizer=tokenizer)
    if expected is None:
        return
    if not isinstance(model.config, ModelConfig):
        raise UserError(
            f"the checkpoint is a {model.config.family} model, not an encoderlab encoder as the config expects"
        )
    # Token ids and the kernel choice do not change the architecture.
    skip = {"pad_id", "bos_id", "eos_id", "mask_id", "attn_impl", "init_std"}
    diff = [
        f"{name} {getattr(model.config, name)} != {getattr(expected, name)}"
        for name in expected.__dataclass_fields__
        if name not in skip and getattr(model.config, name) != getattr(expected, name)
    ]
    if diff:
        raise UserError(
            f"the checkpoint's architecture differs from the config ({'; '.join(diff)}); load a matching checkpoint or change the model config"
        )


def check_vocabulary(vocab: int, spec: TokenSpec, *, tokenizer: str = "the tokenizer") -> None:
    """Refuse a `vocab`-row embedding that cannot serve `spec`'s token ids: more ids than rows, or a
    special token past them. The one check, on a built model (`check_compatible`) and on a config's
    `vocab_size` before any weight is read (`eval --check`, through `ModelFiles.vocab_size`)."""
    if spec.vocab_size > vocab:
        raise UserError(
            f"{tokenizer} has {spec.vocab_size} ids but the model's embedding has {vocab} rows; "
            "use the tokenizer the model was trained with"
        )
    too_big = [
        i
        for i in (spec.pad_id, spec.bos_id, spec.eos_id, spec.mask_id, *spec.special_ids)
        if i is not None and i >= vocab
    ]
    if too_big:
        raise UserError(
            f"special token ids {sorted(set(too_big))} are outside the model's {vocab}-row embedding; use the model's tokenizer"
        )
