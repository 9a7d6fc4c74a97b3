"""A hub dataset's files read from the local hub cache's snapshot of its repository, as from a mirror:
fetched there at the commit `datasets` resolved (`hub_snapshot` online), or found there complete offline
(`_cached_snapshot`), for `hub.load_hub` to read.

CSV or TSV files are read with a task file's options and checks (`localfiles.csv_options`), which need
their headers first: a hub dataset of them is read from the snapshot of its files as from a mirror, and the
hub only resolves and fetches them (docs/evaluation.md, "Sources"). Offline, so is a parquet, JSON, Arrow or
text dataset whose snapshot is checked complete (`SNAPSHOT_KINDS`; the checks and their records are
`hubcomplete`'s). A parquet export's config (`hubsource.parquet_export`) is fetched into that snapshot and
read from it as CSV files are, online too, so that the one read works offline. A snapshot not read
(unchecked, or of another kind) is an `Unread`: `datasets`' offline path, with the line to give when
it has no copy either.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from encoderlab.data.hub import (
    HF_URL,
    HUB_DATA_ENV,
    incomplete_snapshot_error,
    listing_builder,
    quiet_hub,
    transport_errors,
)
from encoderlab.data.hubdown import hub_down, note_cached_read, unanswered
from encoderlab.errors import UserError
from encoderlab.eval.tasks.hubcomplete import (
    SNAPSHOT_KINDS,
    check_complete,
    check_tree,
    record_snapshot,
    refuse_missing,
    unchecked,
)
from encoderlab.eval.tasks.hubsource import CARD_FILES, HubSource, config_problem
from encoderlab.eval.tasks.hubtree import tree_file
from encoderlab.outdir import missing_folders, remove_folders


@dataclass(frozen=True)
class Unread:
    """A hub cache snapshot that `_cached_snapshot` does not read (not checked complete, or of a kind
    not in `SNAPSHOT_KINDS`), left to `datasets`' offline path: the copy it prepared when the dataset was
    loaded with the hub reachable. `line`: the refusal when it has none (it said "check the name and your
    connection", the files on disk)."""

    line: str


def hub_snapshot(datasets, source: HubSource, kwargs: dict):
    """The local hub cache's snapshot folder of `source`'s repo holding the CSV or TSV files of its
    config, which `load_hub` then reads as a mirror (with `csv_options`), or a parquet export's files
    (`_export_parquet`); for a dataset of other files
    (or CSV files not of one commit), the builder `datasets` resolved on the hub, which `load_hub` reads
    with as `load_dataset` would (`hub._read`); None when the hub is not asked (offline) and the cache has
    no snapshot (`load_dataset` then finds the copy it prepared before, or says it has none).

    With the hub reachable, `datasets` resolves the config (metadata: the card and the file tree, the
    same resolution `load_dataset` makes, made once) and `huggingface_hub.hf_hub_download` fetches
    those files at the resolved commit, with the card (`_fetch_snapshot`); offline (`HF_HUB_OFFLINE` or
    `HF_DATASETS_OFFLINE`), or when the hub cannot be reached, the snapshot the cache already holds for
    the revision is read, as `huggingface_hub` reads a model offline, if it is known complete: it holds
    the files its fetch recorded (`check_complete`), or those the repo's cached file list names
    (`check_tree`); with neither record nor list, it is refused (`unchecked`). Offline, a
    checked snapshot of parquet, JSON, Arrow or text files is read as a mirror too (`SNAPSHOT_KINDS`). `datasets`
    itself fetches a hub dataset's files with `hf_hub_download` into that cache, with neither: such a
    snapshot of CSV files is refused offline until loaded once with the hub reachable (or `hf download`).
    Why not `load_dataset(repo, **csv_options)`: `datasets` falls back offline only to a copy prepared
    with the same options, so every copy prepared before would have been refused offline."""
    unreachable = builder = down = None
    if not datasets.config.HF_HUB_OFFLINE:
        down = hub_down(source.repo, "dataset", source.revision)  # one try, not `datasets`' five retries
        unreachable = unanswered(down) if down is not None else None
        try:
            if unreachable is None:
                builder = _unlocked_builder(datasets, source.repo, **kwargs, revision=source.revision)
        except (ConnectionError, *transport_errors()) as exc:  # the hub unreachable: the cache may hold it
            builder, unreachable = None, unanswered(exc)  # an httpx2 error `datasets` let through
        if builder is not None and (builder.name == "csv" or _export_parquet(source, builder)):
            return _fetch_snapshot(source, builder, kwargs) or builder
        if builder is not None and builder.name != "cache":  # "cache": `datasets`' prepared copy, offline
            return builder
    folder = _cached_snapshot(datasets, source, kwargs)
    if isinstance(folder, str) and unreachable is not None:
        note_cached_read("dataset", "dataset", source.repo, unreachable, Path(folder).name)
    if isinstance(folder, str) or builder is not None:  # the snapshot, or the copy `datasets` prepared
        return folder if isinstance(folder, str) else builder
    if unreachable is not None and not (down and isinstance(folder, Unread)):  # `datasets` tried its copy
        raise UserError(folder.line) if folder else unreachable  # not a second round of its attempts
    return folder


def _unlocked_builder(datasets, path: str, **kwargs):
    """`datasets.load_dataset_builder(path, **kwargs)` in `datasets`' own cache (a builder resolved on the hub
    is prepared there), without the lock file its construction leaves: `DatasetBuilder.__init__` holds it
    only while it looks for a prepared copy, and leaves it (with the cache folder, made for it) behind a
    refusal that follows (a snapshot's CSV header, the hub gone mid-fetch), where a CSV dataset's builder is
    a listing alone. Not `hub.listing_builder`'s temporary cache: the builder that `datasets` prepares from
    would then be resolved a second time (each load asked the hub twice). The lock's name is `datasets`'
    own (5.x: the cache folder, `/` as `_`); preparing takes locks of its own, left as `datasets` leaves them."""
    root = Path(kwargs.get("cache_dir") or datasets.config.HF_DATASETS_CACHE)
    made = missing_folders(root)
    builder = datasets.load_dataset_builder(path, **kwargs)
    folder = getattr(builder, "_cache_dir", None)  # None where a later `datasets` renames it: the lock stays
    if folder is not None:
        (root / (Path(folder).as_posix().replace("/", "_") + ".lock")).unlink(missing_ok=True)
    remove_folders(made)  # only while empty
    return builder


def _export_parquet(source: HubSource, builder) -> bool:
    """Whether `builder` reads the parquet files of a parquet export's config (`hubsource.parquet_export`), which
    `load_hub` then reads from the hub cache's snapshot as a mirror, online and offline alike. Read by
    `datasets` from the hub, its prepared copy was keyed on a config id that `datasets` did not find
    offline (its config's `data_files` resolve to other names there: "Couldn't find cache for OWNER/NAME
    for config 'default-...'"), so an export read online was refused with the hub down or HF_HUB_OFFLINE=1.
    Cost: a copy `datasets` prepared of an export before is prepared once more, from the snapshot."""
    return source.export_config is not None and builder.name == "parquet"


def _fetch_snapshot(source: HubSource, builder, kwargs: dict) -> str | None:
    """The hub cache's snapshot of the files `builder` (a CSV config resolved on the hub) names, fetched
    at their commit with the card; None when they are not files of one commit of this repo.

    The files are fetched one by one at the commit `datasets` resolved (`hf_hub_download` with a commit
    sha asks the hub about that file only, and nothing for a file the cache holds): the repo's metadata
    is resolved once, by `datasets`. `snapshot_download` resolved it again (`repo_info`; given a commit
    sha, recent huggingface_hub lists the whole tree instead, huggingface/huggingface_hub#4604).
    Which files the config needs is recorded first (`record_snapshot`), so that a fetch cut short is
    seen offline (`check_complete`)."""
    found = [HF_URL.fullmatch(str(f)) for files in (builder.config.data_files or {}).values() for f in files]
    commits = {m["rev"] for m in found if m}
    if len(commits) != 1 or not all(found):
        return None
    commit, paths = commits.pop(), sorted({m["path"] for m in found})
    record_snapshot(source, commit, kwargs, paths)
    with quiet_hub():
        try:
            for name in CARD_FILES:
                _fetch_card_file(source.repo, commit, name)
            fetched = [_fetch_file(source.repo, commit, path) for path in paths]
        except transport_errors() as exc:  # the hub gone mid-way: `load_hub`'s line, not a traceback
            raise unanswered(exc) from exc
    return str(Path(fetched[0]).parents[len(Path(paths[0]).parts) - 1])


def _fetch_file(repo: str, commit: str, path: str) -> str:
    from huggingface_hub import hf_hub_download

    return hf_hub_download(repo, path, repo_type="dataset", revision=commit)


def _fetch_card_file(repo: str, commit: str, name: str) -> None:
    """`name` (README.md, .huggingface.yaml) into the snapshot if the repo has it at `commit`: the
    cache holds it (`datasets` fetched the card), records it absent there, or the hub is asked."""
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    if try_to_load_from_cache(repo, name, revision=commit, repo_type="dataset") is not None:
        return  # a path (cached) or the cache's "no such file at this commit"
    try:
        _fetch_file(repo, commit, name)
    except EntryNotFoundError as exc:  # not a file of the repo: nothing to fetch
        if isinstance(exc, LocalEntryNotFoundError):  # the hub unreachable: not an answer about the file
            raise


def _cached_snapshot(datasets, source: HubSource, kwargs: dict) -> str | Unread | None:
    """The snapshot of `source`'s repo the hub cache already holds, if `datasets` reads it as CSV, or
    as another kind of `SNAPSHOT_KINDS` and it is checked complete (`datasets`' offline path only read
    the copy it had prepared: a dataset fetched whole with `hf download` was "check your connection");
    refused when it lacks a file that the fetch of this config recorded (`check_complete`) or, where
    huggingface_hub cached the repo's file list at that commit, a data file of this config of any kind
    that the list names (`check_tree`: its missing files are not fetched offline) or a card file
    (`CARD_FILES`) that the list names: huggingface_hub's `snapshot_download` refuses such a snapshot
    as `IncompleteSnapshotError`, a LocalEntryNotFoundError that was taken for "no snapshot". `Unread`
    for a snapshot not read (another kind, or not CSV and unchecked); None for none."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    cards = []  # the card files that the repo's file list names and the snapshot lacks
    try:
        with quiet_hub():
            try:
                folder = snapshot_download(
                    source.repo,
                    repo_type="dataset",
                    revision=source.revision,
                    allow_patterns=list(CARD_FILES),
                    local_files_only=True,
                )
            except incomplete_snapshot_error() as exc:  # a LocalEntryNotFoundError: not "no snapshot"
                folder, cards = exc.snapshot_path, _missing_cards(source, Path(exc.snapshot_path))
        files = {"data_files": kwargs.get("data_files")}  # no card: its configs' names are not known
        if cards and (kind := listing_builder(datasets, folder, **files).name) in SNAPSHOT_KINDS:
            which = f"the dataset card files the repo's file list ({tree_file(Path(folder))}) names"
            refuse_missing(source, Path(folder), cards, which, CARD_HARM)
        if cards:  # another kind: not read from the snapshot (`datasets`' offline path, as before)
            return Unread(_unread_kind(source, Path(folder), kind))
        checked = check_complete(source, kwargs, Path(folder))
        listed = check_tree(source, kwargs, Path(folder))
        kind = listing_builder(datasets, folder, **kwargs).name  # its kind alone: no lock left in the cache
    except (LocalEntryNotFoundError, FileNotFoundError, ValueError) as exc:  # no snapshot, or no files
        if (configs := config_problem(exc, source)) is not None:  # was "Couldn't reach the Hub", offline
            raise UserError(f"cannot load {source.describe()} from {folder}: {configs}") from None
        return None
    if listed is not None and listed.kind not in (None, kind, *SNAPSHOT_KINDS):  # `datasets`' kind online
        return Unread(_unread_kind(source, Path(folder), listed.kind, listed=True))
    if kind not in SNAPSHOT_KINDS:
        return Unread(_unread_kind(source, Path(folder), kind))
    checked = checked or listed is not None
    if kind == "csv" and not checked:
        raise UserError(unchecked(source, Path(folder)))
    return folder if checked else Unread(unchecked(source, Path(folder)))


CARD_HARM = "`datasets` cannot resolve its configs and splits"
"""What reading a snapshot without its card (`CARD_FILES`) would do: its `configs` name the data files."""


def _missing_cards(source: HubSource, folder: Path) -> list[str]:
    """The card files (`CARD_FILES`) that the repo's cached file list at the commit of the snapshot
    `folder` names and `folder` lacks (those `IncompleteSnapshotError` was raised for)."""
    from huggingface_hub import get_cached_repo_tree

    listed = {f.path for f in get_cached_repo_tree(source.repo, repo_type="dataset", revision=folder.name)}
    return [name for name in CARD_FILES if name in listed and not (folder / name).is_file()]


def _unread_kind(source: HubSource, folder: Path, kind: str, listed: bool = False) -> str:
    """The line for a snapshot of files of a kind encoderlab does not read from the hub cache (not in
    `SNAPSHOT_KINDS`: images, audio, ...), when `datasets` has no copy it prepared of them either;
    `listed`: the kind `datasets` infers from the repo's file list (`hubtree.Listed.kind`), the snapshot
    maybe of some files only (`hf download --include "*.csv"` of a repo mostly of images)."""
    found = (
        f"the repo's file list ({tree_file(folder)}) names files of `datasets`' {kind} builder for it (the "
        f"extension most of its files have; its snapshot is {folder})"
        if listed
        else f"its snapshot {folder} holds files of `datasets`' {kind} builder"
    )
    return (
        f"cannot load {source.describe()} from the hub cache: {found}, which encoderlab does not read "
        f"there (it reads {', '.join(SNAPSHOT_KINDS)} files), and `datasets` holds no copy of it prepared with the hub "
        "reachable; run once with the hub reachable (HF_HUB_OFFLINE unset), which prepares that copy, or "
        f"set {HUB_DATA_ENV}=DIR to read a local mirror"
    )
