"""A config of a hub dataset's parquet export (`refs/convert/parquet`), as a task file names it
(`data: {hub: OWNER/NAME, revision: refs/convert/parquet, config: CONFIG}`, or `revision:` a commit of that
branch, told by its files: `export_commit`), turned into the export's files.

The hub's parquet converter writes one folder per config on that branch, `<config>/<split>/0000.parquet`
(`0001.parquet`, ... for a large split; its 2023 layout was `<config>/<name>-<split>.parquet`), and no
card: nothing there tells `datasets` the configs. So `load_dataset(repo, name=CONFIG, revision=...)` was
refused as "it has configs default, and no config 'CONFIG'", and without a config `datasets`' default
patterns (`**/train/**`, ...) read every config's split folders as one split: a multi-config export (GLUE's)
mixed its configs' rows, and their label sets, unsaid. Here the export's files are listed, and the config's
splits passed as `data_files` (`hubsource.export_files`: the globs the built-in tasks read an export with), so
the config is picked and its split names are the export's own (`validation_matched`, which the default
patterns would fold into validation with `validation_mismatched`).

Where the listing comes from: a mirror's folder (`ENCODERLAB_HUB_DATA`); with the hub reachable, the
branch's file list (one request, `HfApi.list_repo_files`); offline, the hub cache's snapshot of the branch.
Trade-off: online that is one request more than `load_dataset` makes; a listing that cannot be had (the hub
unreachable, nothing cached) leaves the source as named, and `load_hub` gives its own line for it.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from encoderlab.data.hub import HUB_DATA_ENV, dataset_location, import_datasets, is_commit, quiet_hub
from encoderlab.data.hubdown import HubUnanswered, hub_down
from encoderlab.errors import UserError
from encoderlab.eval.tasks.hubsource import (
    CARD_FILES,
    PARQUET_EXPORT,
    HubSource,
    configs_named,
    parquet_export,
)
from encoderlab.words import noun

SHARD = re.compile(r"-\d{5}-of-\d{5}$")
"""The shard suffix of the 2023 layout's file names (`glue-train-00000-of-00002.parquet`)."""
PUSHED = re.compile(r"-\d{5}-of-\d{5}-[0-9a-f]+$")
"""A shard suffix and a fingerprint after it: `push_to_hub`'s `data/train-00000-of-00001-a09b74b3ef9c3b56`
(datasets 2.x), never the converter's; its fingerprint was taken for the split of `<name>-<split>`."""


def export_source(source: HubSource) -> HubSource:
    """`source` with its parquet export's config as that config's files (`data_files`, config None, as
    the built-in tasks name an export); as it is where it names no export, names files already, or the
    export cannot be listed. An export is named by its branch (`refs/convert/parquet`) or by a commit of
    it (`export_commit`). Refused, naming the export's configs, where it names none and the export has
    several, or one the export lacks."""
    if not source.revision or source.data_files:
        return source
    pinned = source.revision != PARQUET_EXPORT
    if pinned and not is_commit(source.revision):  # a branch or tag other than the export's
        return source
    names = _export_paths(source)
    # files in neither of the converter's layouts (a mirror of the main branch, `data/train-00000-of-00001
    # .parquet`, named at this revision) are `datasets`' to read by its patterns, as before the export was listed
    paths = _shards(names)
    if not paths or (pinned and not export_commit(names)):
        return source
    configs = _configs(paths)
    config = source.config or (configs[0] if len(configs) == 1 else None)
    if config not in configs:
        raise UserError(f"cannot load {source.describe()}: {configs_named(configs, source.config)}")
    splits = sorted({split for p in paths if p.parts[0] == config and (split := _split(p)) is not None})
    return parquet_export(source.repo, config, tuple(splits), source.revision)


SHARD_NAME = re.compile(r"\d{4}")
"""The converter's shard names, `0000.parquet` to `9999.parquet` (huggingface/dataset-viewer#1463)."""


def export_commit(names: list[PurePosixPath]) -> bool:
    """Whether a commit's files `names` are the converter's: a dataset card nowhere (`CARD_FILES`: the
    branch has none, so `datasets` finds no configs), and every parquet file, one at least, in one of its
    layouts (`<config>/<split>/NNNN.parquet`, or 2023's `<config>/<name>-<split>.parquet`). How a commit
    pinned as `revision: <sha>` (what `refs/convert/parquet` resolved to: `hf download --revision`, the
    hub's commit pages) is told from one of the main branch, which the commit alone does not say: read there
    by `datasets`' patterns, as before, an export's configs were refused ("it has configs default") or mixed.
    A main branch's commit whose card is gone and whose files are laid out as the converter's is taken for an
    export too; its config and split folders are then read as the export's are."""
    if any(n.as_posix() in CARD_FILES for n in names):
        return False
    parquet = [n for n in names if n.suffix == ".parquet"]
    return bool(parquet) and all(
        _split(n) is not None and (len(n.parts) != 3 or SHARD_NAME.fullmatch(n.stem)) for n in parquet
    )


def export_problem(source: HubSource, down: HubUnanswered | None = None) -> str | None:
    """The config or splits of a parquet export that `source` (`parquet_export`) reads and the export lacks,
    naming those it has and the fix; None where the export has them, or cannot be listed. The built-in tasks
    name their export's config and splits; a task file's are the export's own (`export_source`). `down`:
    the hub already did not answer this read (`_export_paths` lists the cache without asking it again)."""
    paths = _shards(_export_paths(source, down))
    config = source.export_config
    if not paths or config is None:
        return None
    configs = _configs(paths)
    fix = f"the dataset's layout is not the one docs/evaluation.md gives: set {HUB_DATA_ENV}=DIR to read a mirror in it"
    if config != "*" and config not in configs:
        return f"its parquet export has no config {config!r} (it has configs {', '.join(configs)}); {fix}"
    held = sorted({s for p in paths if config in ("*", p.parts[0]) and (s := _split(p)) is not None})
    missing = [s for s in dict.fromkeys(split for split, _ in source.data_files) if s not in held]
    if not missing:
        return None
    return f"it has no {noun(len(missing), 'split')} {', '.join(missing)} (it has {', '.join(held)}); {fix}"


def _shards(names: list[PurePosixPath]) -> list[PurePosixPath]:
    """The parquet files of `names` in one of the converter's layouts (those `_split` gives a split)."""
    return [p for p in names if p.suffix == ".parquet" and _split(p) is not None]


def _configs(paths: list[PurePosixPath]) -> list[str]:
    """The configs of an export's `_shards`: their first folder's names, sorted."""
    return sorted({p.parts[0] for p in paths if len(p.parts) > 1})


def _split(path: PurePosixPath) -> str | None:
    """The split a file of the export holds: `<config>/<split>/NNNN.parquet`, or the 2023 layout's
    `<config>/<name>-<split>[-00000-of-0000N].parquet`."""
    if len(path.parts) == 3:
        return path.parts[1]
    # the hub's `data/` layout, `train-00000-of-00001`, leaves `train`: no `<name>-<split>`, no split
    if PUSHED.search(path.stem):
        return None
    stem = SHARD.sub("", path.stem)
    if len(path.parts) == 2 and "-" in stem:
        return stem.rsplit("-", 1)[1]
    return None


def _export_paths(source: HubSource, down: HubUnanswered | None = None) -> list[PurePosixPath]:
    """The files at the export's revision, relative to its root; [] where they cannot be listed. Online,
    one request (`list_repo_files`), also for a commit of another branch (`export_commit` says which);
    offline, or the hub not answering its one request first (`hubdown.hub_down`), the hub cache's snapshot:
    the listing's pages are fetched with `http_backoff`, whose five retries waited ~23 s on a hub refusing
    connections, and then named no files, so a cached export was read as no export (refused unread).
    `down`: the hub already did not answer the caller; not asked again (on a silent hub, one more wait of
    up to HF_HUB_ETAG_TIMEOUT)."""
    location = dataset_location(source.repo, source.revision)
    if location != source.repo:  # a mirror of the branch; `.cache/`: the records `hf download` writes
        folder = Path(location)
        found = [PurePosixPath(p.relative_to(folder).as_posix()) for p in folder.rglob("*") if p.is_file()]
        return [p for p in found if p.parts[0] != ".cache"]
    offline = import_datasets().config.HF_HUB_OFFLINE  # or the hub down: one try, not the listing's retries
    names = (
        _cached_names(source)
        if offline or down is not None or hub_down(source.repo, "dataset", source.revision)
        else _hub_names(source)
    )
    return [PurePosixPath(n) for n in names]


def _hub_names(source: HubSource) -> list[str]:
    from huggingface_hub import HfApi

    try:
        with quiet_hub():
            return HfApi().list_repo_files(source.repo, repo_type="dataset", revision=source.revision)
    except Exception:  # noqa: BLE001 (unreachable, unknown: `load_hub` names the problem in its line)
        return []


def _cached_names(source: HubSource) -> list[str]:
    """The files of the hub cache's snapshot of the export (no network); [] for none."""
    from huggingface_hub import snapshot_download

    try:
        with quiet_hub():
            folder = Path(
                snapshot_download(
                    source.repo, repo_type="dataset", revision=source.revision, local_files_only=True
                )
            )
    except Exception:  # noqa: BLE001 (none cached, or cut short: `load_hub`'s offline lines say which)
        return []
    return [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
