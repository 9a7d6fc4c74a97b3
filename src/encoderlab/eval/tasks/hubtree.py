"""Which data files of a hub dataset's config the repo's cached file list names (`hubcomplete.check_tree`).

The list is huggingface_hub's tree cache (>= 2.4, `_tree_cache.py`): `<storage folder>/trees/
COMMIT.json`, `{"format_version": 1, "files": {"<repo path>": {"size": ..., "blob_id": ...}}}`, beside
`snapshots/`, written by `snapshot_download` (so `hf download` of a whole repo or of `--include`
patterns; not `hf_hub_download`, nor `hf download REPO FILE` of one file) from the hub's listing before
it fetches a file, and read here offline with `get_cached_repo_tree`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
    from datasets.data_files import EmptyDatasetError, get_data_patterns
    from datasets.download.download_config import DownloadConfig
    from datasets.utils.file_utils import xjoin

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
    base = xjoin(TREE, data_dir) if data_dir else TREE
    try:
        patterns = patterns or get_data_patterns(base, download_config=listing)
    except EmptyDatasetError:  # no data file at all in the repo's list
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
    """The list's files that `patterns` (split -> patterns) name, of every extension, by split."""
    from datasets.data_files import resolve_pattern

    by_split: dict[str, list[str]] = {}
    for split, split_patterns in patterns.items():
        for pattern in split_patterns:
            try:
                found = resolve_pattern(pattern, base, None, listing)
            except FileNotFoundError:  # none of the list's files: nothing this pattern reads is missing
                continue
            by_split.setdefault(split, []).extend(f.removeprefix(TREE) for f in found)
    return by_split


def _inferred(by_split: dict[str, list[str]]) -> str | None:
    """The builder `datasets` infers for files `by_split` that no card names (`infer_module_for_data_files`:
    that of the extension most files have, a tie to parquet, ..., json, csv, then the greatest; metadata
    files last; extensions of no builder passed over; one kind for every split), so that a repo mostly of
    images with a few CSV files is the image folder it is online. `datasets` counts the files of an
    extension it reads (images and audio too); others do not change its pick, except ours in another case
    (`X.CSV`), which it does not read, so they are not counted. None where `datasets` refuses the load
    (splits of different kinds, or no data file)."""
    from datasets.load import infer_module_for_data_files

    ours = {e.lower() for e in ALLOWED_EXTENSIONS}
    counted = {
        split: [f for f in files if _of(f, ALLOWED_EXTENSIONS) or not _of(f.lower(), ours)]
        for split, files in by_split.items()
    }
    try:
        return infer_module_for_data_files(counted)[0]
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
    from datasets.data_files import sanitize_patterns
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    if kwargs.get("data_files"):
        return sanitize_patterns(kwargs["data_files"]), None, False
    readme, extra = folder / "README.md", folder / ".huggingface.yaml"
    card = DatasetCard.load(readme).data if readme.is_file() else DatasetCardData()
    if extra.is_file() and (more := yaml.safe_load(extra.read_text(encoding="utf-8"))):
        card = DatasetCardData(**(card.to_dict() | more))
    configs = MetadataConfigs.from_dataset_card_data(card)
    if not configs:
        return {}, None, True
    config = configs.get(kwargs.get("name") or configs.get_default_config_name() or "")
    if config is None:
        return None
    data_files = config.get("data_files")
    return (sanitize_patterns(data_files) if data_files else {}), config.get("data_dir"), False
