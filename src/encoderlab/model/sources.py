"""Where a model source is and what its config says, read without loading the model: the folder a
source stands for, a model folder's format mark and the longest row the model takes.

`study plan`, `study list` and the checks `study run` makes before anything trains read these (a start
model's positions, whether a source exists), so they live here, free of torch and transformers; the
loaders (`hub.py`, `io.py`, the adapter classes) import this module, never the other way round. The
trade-off: the families whose positions start after the pad id (`POSITIONS_AFTER_PAD`) are named here
by `model_type` rather than by a flag on their adapter classes, which would need torch to read.
"""

from __future__ import annotations

import json
from pathlib import Path

from encoderlab.data.hub import mirror_root
from encoderlab.data.hubmodels import (
    MODEL_FILES,
    TOKENIZER_GLOBS,
    cached_snapshot,
    check_files,
    download_model_repo,
    is_hub_id,
    mirror_folder,
    model_mirror,
    split_revision,
)
from encoderlab.data.localpath import check_source
from encoderlab.errors import UserError

FORMAT = "encoderlab-model"
"""The `format` of an encoderlab model folder's config.json (`io.save_model_folder` writes it)."""

POSITIONS_AFTER_PAD = frozenset({"roberta", "xlm-roberta", "camembert", "roberta-prelayernorm", "mpnet"})
"""The `model_type`s that number a row's positions from pad_token_id + 1, as transformers'
`create_position_ids_from_input_ids` does for RoBERTa and its descendants (`hf_adapters`,
`hf_roberta_prelayernorm`) and MPNet (`hf_mpnet`)."""

PAD_IN_CODE = {"mpnet": 1}
"""Families of `POSITIONS_AFTER_PAD` whose transformers embeddings number positions after a pad id fixed
in their code, whatever the config's `pad_token_id` says (MPNet's `padding_idx = 1`)."""


def source_path(source: str | Path, patterns: tuple[str, ...] = MODEL_FILES) -> Path:
    """The folder `source` is read from: itself, an asset's, a hub id's mirror, or its download of
    `patterns` (a model's files, or only its configs and tokenizer: `model_files`)."""
    path = Path(source).expanduser()
    if path.exists():
        return path
    name = str(source)
    from encoderlab.data import assets  # lazy: the asset registry imports the data stack

    if name in assets.ASSETS:
        return assets.asset_dir(name)
    check_model_source(name)
    # the ENCODERLAB_HUB_MODELS mirror (offline: the cached snapshot holding `patterns`, else refused)
    mirror = model_mirror(name, patterns=patterns)
    if mirror is not None:
        return mirror
    if patterns != MODEL_FILES:  # no weights read (`eval --check`): the hub asked for what the cache lacks
        return check_files(name, patterns)
    folder = download_model_repo(name, "model", patterns)
    if patterns == MODEL_FILES:
        check_downloaded_weights(name, folder)
    return folder


def check_downloaded_weights(hub_id: str, folder: Path) -> None:
    """Refuse a model download that brought no weights: the repo holds none as safetensors, and a
    download takes no pickle (`MODEL_FILES`). Older repos (deberta-base, the ELECTRA discriminators)
    hold `pytorch_model.bin` on main and their safetensors on the hub bot's unmerged conversion pull
    request, which a pin reads (`OWNER/NAME@refs/pr/N`); the load's own line ("no weights ...
    re-download the model") would send the user to download the same files again."""
    if (folder / "config.json").is_file() and not any(folder.rglob("*.safetensors")):
        repo, revision = split_revision(hub_id)
        at = f" at revision {revision}" if revision else ""
        raise UserError(
            f"hub repo {repo}{at} has no safetensors weights (model.safetensors) to download, and encoderlab "
            "downloads no pickled ones (pytorch_model.bin, which older repos hold only); many such repos have "
            f"a safetensors copy on the hub's conversion pull request: pass {repo}@refs/pr/N (N from the "
            "repo's Community tab), or convert the pickle in a folder you trust and pass the folder"
        )


def check_model_source(source: str | Path, base: Path | None = None) -> None:
    """Refuse a model source that is no existing path, asset name or hub id (org/name), reading nothing
    (`data.localpath.check_source`, the tokenizer's check too): `load_pretrained` says so when it loads,
    a study before it writes anything. `base`: the folder a relative path was read from (a study
    file's), named in the line; else the working folder."""
    check_source(
        str(source), "model source", "pass a model or run folder, an asset name or a hub id (org/name)", base
    )


def source_folder(source: str | Path) -> Path | None:
    """The folder `load_pretrained(source)` would read, when it is on this machine: the path itself,
    a fetched asset's cache folder or a hub id's mirror folder (None for hub ids without a mirror and
    unfetched assets). Commands pass it to
    `outdir.check_output` so that no output lands in, over or around what is being read."""
    path = Path(source).expanduser()
    if path.exists():
        return path
    from encoderlab.data import assets

    if str(source) in assets.ASSETS and assets.is_fetched(str(source)):
        return assets.asset_dir(str(source))
    return mirror_folder(str(source)) if is_hub_id(str(source)) else None


def guarded_folder(source: str | Path) -> Path | None:
    """The folder no output of a command reading `source` may land in, over or around
    (`outdir.check_output`'s sources): `source_folder`'s, else, for a hub id read from the local hub
    cache (no mirror root set), that repo's cache folder (`models--OWNER--NAME`). The whole repo folder
    rather than the snapshot: a snapshot's files link into its `blobs/`, and its `refs/` pick the
    snapshot, so an output anywhere there is written into what is read. Before, only a mirror was
    guarded, and `eval OWNER/NAME --out` the cached snapshot wrote the evaluation into the hub cache."""
    folder = source_folder(source)
    if folder is not None or not is_hub_id(str(source)) or mirror_root("model") is not None:
        return folder
    snapshot = cached_snapshot(str(source))
    return snapshot.parent.parent if snapshot is not None else None  # snapshots/<commit> -> the repo


def max_positions(source: str | Path, fetch: bool = False) -> int | None:
    """The longest row the model at `source` accepts, read from its config alone (no weights), when
    that config is on this machine: a model folder (encoderlab's `max_seq_len`, a Hugging Face folder's
    `max_position_embeddings`), a fetched asset, a hub id's mirror or its snapshot in the local hub cache
    (`config_folder`). With `fetch`, a hub id found in neither has its configs and tokenizer downloaded
    first, never its weights (`model_files`' download: what `study run` does before anything runs, after
    `study.hubids.check_hub_ids` asked the hub for it). None otherwise (a hub id not fetched, an
    unfetched asset, a run without a final model): the loaded model is checked then.

    Callers refuse a longer sequence before anything is written (MiniLM has 512 learned positions,
    paper 1 packs 2,048-token rows): past the table an embedding lookup fails mid-run, and a RoPE
    model runs but at lengths it never saw, which is no longer the start model the study names."""
    folder = config_folder(source, fetch)
    return config_positions(folder) if folder is not None and folder.is_dir() else None


def config_folder(source: str | Path, fetch: bool = False) -> Path | None:
    """The folder whose config `load_pretrained(source)` would build the model from, when it is on this
    machine: `source_folder`'s, else, for a hub id with no mirror root set, its snapshot in the local
    hub cache (`data.hubmodels.cached_snapshot`, no network; the snapshot it holds, which a download could
    update), else with `fetch` its configs and tokenizer downloaded (`TOKENIZER_GLOBS`, through
    `_source_path`, refused in the line a load gives). With a mirror root set the mirror decides, as
    it does for the load."""
    folder = source_folder(source)
    if folder is not None or not is_hub_id(str(source)) or mirror_root("model") is not None:
        return folder
    return cached_snapshot(str(source), TOKENIZER_GLOBS) or (
        source_path(source, TOKENIZER_GLOBS) if fetch else None
    )


def config_positions(folder: Path) -> int | None:
    """`max_positions` of the model folder, run or checkpoint `folder`."""
    found = model_config(folder)
    if found is None:
        return None
    raw = found[1]
    limit = raw["max_seq_len"] if "max_seq_len" in raw else usable_positions(raw)
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else None


def config_vocab_size(folder: Path) -> int | None:
    """The embedding rows (`vocab_size`) the model folder, run or checkpoint `folder`'s config records,
    its weights unread; None where it records none."""
    found = model_config(folder)
    rows = None if found is None else found[1].get("vocab_size")
    return rows if isinstance(rows, int) and not isinstance(rows, bool) else None


def model_config(folder: Path) -> tuple[Path, dict] | None:
    """The model folder of the model folder, run or checkpoint `folder` (itself, its `final/` or its
    `model/`, the first holding a config.json) and the model's config there: an encoderlab folder's
    encoder config or adapter's transformers config, else the transformers config as read ({} where
    an encoderlab folder's is damaged: its load says so in one line). None where none holds one."""
    for candidate in (folder, folder / "final", folder / "model"):
        if (candidate / "config.json").is_file():
            raw = read_config_json(candidate)
            if raw.get("format") == FORMAT:  # `is_model_folder`, without reading the file again
                raw = raw.get("model") or raw.get("hf_config") or {}
            return candidate, raw if isinstance(raw, dict) else {}
    return None


def read_config_json(path: Path) -> dict:
    """config.json of an HF folder as a dict; unreadable JSON is a UserError."""
    try:
        raw = json.loads((path / "config.json").read_text(encoding="utf-8"))  # whatever the locale says
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:  # nested past Python's stack
        raise UserError(f"{path / 'config.json'} is not valid JSON ({exc}); re-download the model") from None
    if not isinstance(raw, dict):
        raise UserError(f"{path / 'config.json'} is not a JSON object; re-download the model")
    return raw


def model_folder_in(path: Path) -> Path | None:
    """The encoderlab model folder `path` stands for: itself, a run's `final/` or a checkpoint's `model/`."""
    return next((c for c in (path, path / "final", path / "model") if is_model_folder(c)), None)


def tokenizer_home(source: str | Path) -> str:
    """Where the tokenizer of the model `source` belongs, for a refusal of a model without one: the
    folder the load reads (a checkpoint's `model/`, a run's `final/`), not the folder given, which a user
    told "save one in its folder" saved it into, to the same refusal; the source itself otherwise."""
    path = Path(source).expanduser()
    return str((model_folder_in(path) if path.is_dir() else None) or source)


def is_model_folder(path: Path) -> bool:
    """True if `path` holds an encoderlab model folder."""
    cfg = Path(path) / "config.json"
    if not cfg.is_file():
        return False
    try:
        meta = json.loads(cfg.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(meta, dict) and meta.get("format") == FORMAT


def pad_offset(pad_token_id: object) -> int:
    """The first position id of a family that numbers positions after the pad id: pad_token_id + 1
    (transformers' default pad id for those families is 1)."""
    return (pad_token_id if isinstance(pad_token_id, int) and not isinstance(pad_token_id, bool) else 1) + 1


def position_offset(model_type: object, pad_token_id: object) -> int:
    """The position id of a row's first token under a config of `model_type`: 0, or pad_token_id + 1
    for a family of `POSITIONS_AFTER_PAD` (transformers' default pad id for those is 1; the pad id
    of `PAD_IN_CODE` for a family whose code fixes it)."""
    if model_type not in POSITIONS_AFTER_PAD:
        return 0
    return pad_offset(PAD_IN_CODE.get(model_type, pad_token_id))


def usable_positions(raw: dict) -> int | None:
    """The longest row a transformers config dict `raw` takes: max_position_embeddings less the offset."""
    limit = raw.get("max_position_embeddings")
    if not isinstance(limit, int) or isinstance(limit, bool):
        return None
    return limit - position_offset(raw.get("model_type"), raw.get("pad_token_id"))
