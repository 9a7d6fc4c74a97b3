"""Which data files of a hub dataset's config the repo's cached file list names (`hubcomplete.check_tree`).

The list is huggingface_hub's tree cache (>= 2.4, `_tree_cache.py`): `<storage folder>/trees/
COMMIT.json`, `{"format_version": 1, "files": {"<repo path>": {"size": ..., "blob_id": ...}}}`, beside
`snapshots/`, written by `snapshot_download` (so `hf download` of a whole repo or of `--include`
patterns; not `hf_hub_download`, nor `hf download REPO FILE` of one file) from the hub's listing before
it fetches a file, and read here offline with `get_cached_repo_tree`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from encoderlab.errors import UserError

BUILDER_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "csv": (".csv", ".tsv"),
    "json": (".json", ".jsonl", ".ndjson"),
    "parquet": (".parquet", ".geoparquet", ".gpq"),
    "arrow": (".arrow",),
    "text": (".txt",),
}
"""The `datasets` builders (their public names, as in `load_dataset("csv", ...)`) whose files
encoderlab looks for in a hub cache snapshot, and the extensions `datasets` reads with each; each also
reads `ARCHIVE`. `datasets`' own table is private (`datasets.packaged_modules._MODULE_TO_EXTENSIONS`):
tests/eval/test_hub_kinds.py checks this one against it, so a `datasets` that reads another extension
with one of these builders fails a test rather than leaving files of it unchecked."""
ARCHIVE = ".zip"
"""An archive every builder of `datasets` reads (it infers the builder from the files inside)."""
ALLOWED_EXTENSIONS = [e for exts in BUILDER_EXTENSIONS.values() for e in exts] + [ARCHIVE]

TREE = "reference://"
"""The root of the repo's file list as an fsspec `ReferenceFileSystem` (in memory: no file is written)."""


@dataclass(frozen=True)
class DatasetsInternals:
    """The functions of `datasets` that resolve and infer a card-less repo's data files, which it does
    not export (`datasets_internals`): hubtree calls them, rather than copying their rules, so that
    what it checks is what `datasets` reads, at the cost of depending on names it may rename. Each is
    in `datasets` 4.0 (pyproject's lowest) and 5.2 (checked), the list of extensions under another name
    (`WHERE`); a `datasets` lacking one is one line (`datasets_internals`), not an AttributeError."""

    get_data_patterns: Callable
    resolve_pattern: Callable
    sanitize_patterns: Callable
    empty_dataset_error: type[Exception]
    xjoin: Callable
    infer_module_for_data_files: Callable
    metadata_configs: type
    all_allowed_extensions: list[str]
    """The extensions `datasets.load` keeps a data file of before inferring a builder (case and all)."""


WHERE: dict[str, tuple[str, tuple[str, ...]]] = {
    "get_data_patterns": ("datasets.data_files", ("get_data_patterns",)),
    "resolve_pattern": ("datasets.data_files", ("resolve_pattern",)),
    "sanitize_patterns": ("datasets.data_files", ("sanitize_patterns",)),
    "empty_dataset_error": ("datasets.data_files", ("EmptyDatasetError",)),
    "xjoin": ("datasets.utils.file_utils", ("xjoin",)),
    "infer_module_for_data_files": ("datasets.load", ("infer_module_for_data_files",)),
    "metadata_configs": ("datasets.utils.metadata", ("MetadataConfigs",)),
    # the list `datasets.load` resolves data files with: `_ALL_ALLOWED_EXTENSIONS` (5.2, from
    # packaged_modules, metadata extensions included), `ALL_ALLOWED_EXTENSIONS` (4.0)
    "all_allowed_extensions": ("datasets.load", ("_ALL_ALLOWED_EXTENSIONS", "ALL_ALLOWED_EXTENSIONS")),
}
"""Where each field of `DatasetsInternals` is, as (module, names to try in turn)."""


def datasets_internals() -> DatasetsInternals:
    """`DatasetsInternals` of the installed `datasets`; one line naming the first one it lacks."""
    found = {}
    for field in fields(DatasetsInternals):
        module, names = WHERE[field.name]
        try:
            loaded = importlib.import_module(module)
        except ImportError:  # a module renamed or gone: as a name gone
            loaded = None
        value = next((getattr(loaded, n) for n in names if hasattr(loaded, n)), None)
        if value is None:
            version = getattr(importlib.import_module("datasets"), "__version__", "?")
            raise UserError(
                f"the installed datasets {version} has no `{module}.{names[0]}`, which encoderlab reads a "
                "hub dataset's cached file list with (eval/tasks/hubtree.py); install a datasets it was "
                "checked with: pip install 'datasets>=4,<=5.2'"
            )
        found[field.name] = value
    return DatasetsInternals(**found)


def tree_file(folder: Path) -> Path:
    """huggingface_hub's cached file list of the repo at the commit of its snapshot `folder`."""
    return folder.parents[1] / "trees" / f"{folder.name}.json"


@dataclass(frozen=True)
class Listed:
    """The data files of a config that the repo's cached file list names (`listed_files`): `files`, those
    of the kinds of `BUILDER_EXTENSIONS` the snapshot is checked for; `kind`, the builder `datasets`
    infers from the list's files, where it infers one (a card without configs; None where `data_files=`
    or the card's configs name the files, or the kinds of the splits differ, which `datasets` refuses)."""

    files: list[str]
    kind: str | None = None


def listed_files(repo: str, kwargs: dict, folder: Path) -> Listed | None:
    """The repo paths of the data files of the config `kwargs` that the repo's cached file list at the
    commit of the snapshot `folder` names, of every kind in `BUILDER_EXTENSIONS` (parquet, JSON, CSV,
    ...: a config's files may mix them); None when there is no list to read (none cached, another format, or
    huggingface_hub < 2.4). No files when the list names none, or the card has no such config
    (`datasets` then refuses the load itself).

    The config's patterns are resolved against the list by `datasets`' own `resolve_pattern` (hidden,
    special and card files skipped, as on a folder), over that list as an in-memory fsspec file system,
    with the extensions of `BUILDER_EXTENSIONS` (a config's files are all read, by the builder of one
    kind; files of kinds not there, images or audio, are not looked for: a snapshot of them is not read
    from the hub cache, `hubcomplete.SNAPSHOT_KINDS`); the patterns `datasets` infers from the files' names for a
    repo whose card has no configs, it narrows to the kind it infers from all the files they name, images
    and audio counted (`_inferred`), and so does this: `Listed.kind`."""
    try:
        from huggingface_hub import get_cached_repo_tree
        from huggingface_hub.errors import CachedRepoTreeNotFoundError
    except ImportError:  # huggingface_hub < 2.4: no tree cache to read
        return None
    from datasets import DownloadConfig

    ds = datasets_internals()
    try:
        tree = get_cached_repo_tree(repo, repo_type="dataset", revision=folder.name)
    except CachedRepoTreeNotFoundError:
        return None
    refs = {"version": 1, "refs": {f.path: "" for f in tree}}
    listing = DownloadConfig(storage_options={"reference": {"fo": refs, "skip_instance_cache": True}})
    config = _config_patterns(folder, kwargs)
    if config is None:  # no config of that name: `datasets` refuses the load itself
        return Listed([])
    patterns, data_dir, inferred = config
    base = ds.xjoin(TREE, data_dir) if data_dir else TREE
    try:
        patterns = patterns or ds.get_data_patterns(base, download_config=listing)
    except ds.empty_dataset_error:  # no data file at all in the repo's list
        return Listed([])
    by_split = _resolved(patterns, base, listing)
    files = {f for split_files in by_split.values() for f in split_files if _of(f, ALLOWED_EXTENSIONS)}
    kind = _inferred(by_split) if inferred and by_split else None
    if kind is not None:
        files = {f for f in files if _of(f, (*BUILDER_EXTENSIONS.get(kind, ()), ARCHIVE))}
    return Listed(sorted(files), kind)


def _of(name: str, extensions) -> bool:
    """Whether one of the suffixes of the file `name` is one of `extensions`, as `datasets` tells a data
    file's kind (`data.train.csv`, `rows.jsonl.zip`: each suffix counts; case and all)."""
    return any("." + suffix in extensions for suffix in Path(name).name.split(".")[1:])


def _resolved(patterns: dict, base: str, listing) -> dict[str, list[str]]:
    """The list's files that `patterns` (split -> patterns) name, by split, of the extensions `datasets`
    reads at all (`_ALL_ALLOWED_EXTENSIONS`), as `datasets.load` resolves them before it infers a
    builder (`DataFilesDict.from_patterns`): a file is kept when one of its suffixes is one of them,
    case and all (`.csv`; `.png` and `.PNG`, not `.Png`), so a file `datasets` drops is not counted
    there. A split whose patterns name none is kept, empty: `datasets` then refuses to infer one kind."""
    ds = datasets_internals()
    by_split: dict[str, list[str]] = {}
    for split, split_patterns in patterns.items():
        files = by_split.setdefault(split, [])
        for pattern in split_patterns:
            try:
                found = ds.resolve_pattern(pattern, base, ds.all_allowed_extensions, listing)
            except FileNotFoundError:  # none of the list's files: nothing this pattern reads is missing
                continue
            files.extend(f.removeprefix(TREE) for f in found)
    return by_split


def _inferred(by_split: dict[str, list[str]]) -> str | None:
    """The builder `datasets` infers for files `by_split` (`_resolved`) that no card names, by its own
    `infer_module_for_data_files`: that of the extension most files have, each suffix lower-cased (`X.PNG`
    counts as `.png`), a tie to parquet, ..., json, csv, then the greatest; metadata files last; one kind
    for every split. So a repo mostly of images with a few CSV files is the image folder it is online.
    None where `datasets` refuses the load (splits of different kinds, or no data file)."""
    try:
        return datasets_internals().infer_module_for_data_files(by_split)[0]
    except (ValueError, FileNotFoundError):  # kinds `datasets` refuses to mix, or none: it refuses the load
        return None


def _config_patterns(folder: Path, kwargs: dict) -> tuple[dict, str | None, bool] | None:
    """The data file patterns (split -> patterns) and data_dir of the config `kwargs` picks, and whether
    `datasets` infers its files from their names (a card without `configs`: it then keeps those of one
    kind), as `datasets` takes them from `data_files=` or the card's `configs` (README.md, with
    .huggingface.yaml over it: `datasets.load.LocalDatasetModuleFactory`, which resolves them against
    the folder at once, so cannot serve here); ({}, data_dir, ...) when `datasets` infers the patterns
    from the files' names; None when the card has configs but none that `kwargs` picks (`datasets`
    refuses)."""
    import yaml
    from huggingface_hub import DatasetCard, DatasetCardData

    ds = datasets_internals()
    if kwargs.get("data_files"):
        return ds.sanitize_patterns(kwargs["data_files"]), None, False
    readme, extra = folder / "README.md", folder / ".huggingface.yaml"
    card = DatasetCard.load(readme).data if readme.is_file() else DatasetCardData()
    if extra.is_file() and (more := yaml.safe_load(extra.read_text(encoding="utf-8"))):
        card = DatasetCardData(**(card.to_dict() | more))
    configs = ds.metadata_configs.from_dataset_card_data(card)
    if not configs:
        return {}, None, True
    config = configs.get(kwargs.get("name") or configs.get_default_config_name() or "")
    if config is None:
        return None
    data_files = config.get("data_files")
    return (ds.sanitize_patterns(data_files) if data_files else {}), config.get("data_dir"), False
