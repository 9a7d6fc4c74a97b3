"""Whether a hub cache snapshot holds every data file of a config, before `hub.load_hub` reads it
offline as a mirror (`hubsnapshot._cached_snapshot`): hubsnapshot.py fetches and finds, this module keeps the records
and says whether what was fetched is whole.

A snapshot folder cannot tell by itself: it holds the files fetched so far. Two records can: encoderlab's
own, of the files each config's fetch needs, written before fetching (`record_snapshot`, read by
`check_complete`), and huggingface_hub's cached file list of the repo (`hubtree.listed_files`, read by
`check_tree`), which `snapshot_download` (`hf download`) writes. A snapshot with neither is refused or
left unread (`unchecked`); one lacking a file either names is refused (`refuse_missing`). Trade-off: the
record lives in $ENCODERLAB_HOME (the hub cache is huggingface_hub's, not ours to write), so a snapshot
filled by another tool is checked only where huggingface_hub listed the repo."""

from __future__ import annotations

import json
from pathlib import Path

from encoderlab.atomic import write_json_atomic
from encoderlab.data.hub import refetch_fix
from encoderlab.errors import UserError
from encoderlab.eval.tasks.hubsource import HubSource
from encoderlab.eval.tasks.hubtree import BUILDER_EXTENSIONS, Listed, listed_files, tree_file
from encoderlab.locks import one_at_a_time
from encoderlab.paths import home_folder

SNAPSHOT_KINDS = tuple(BUILDER_EXTENSIONS)
"""The `datasets` builders whose hub cache snapshot `load_hub` reads offline, as a mirror, once checked
complete (those whose files `hubtree.BUILDER_EXTENSIONS` names, so those the check looks for): CSV or
TSV (refused unchecked: `datasets` read its own fetch with pandas' defaults), parquet, JSON, Arrow and
text (left unchecked to `datasets`' offline path, which reads the copy it prepared, if any). A parquet
or Arrow file's features come from its schema, as online; other kinds (folders of images or audio,
...) are left to `datasets`' offline path."""


SNAPSHOT_RECORDS = ("cache", "hub-snapshots")
"""Where, under $ENCODERLAB_HOME, the files of each config fetched into the hub cache are recorded."""


def _record_path(repo: str, commit: str, create: bool) -> Path:
    return home_folder(*SNAPSHOT_RECORDS, create=create) / f"{repo.replace('/', '--')}@{commit}.json"


def _read_record(path: Path, source: HubSource) -> dict:
    """The configs (`kwargs` as JSON -> their files) a record holds; {} for none (no record yet). A
    damaged one is refused: deleted, the snapshot is one encoderlab did not fetch (refused offline
    unless huggingface_hub listed the repo beside it) until each config is loaded with the hub reachable."""
    if not path.exists():
        return {}
    try:
        configs = json.loads(path.read_text(encoding="utf-8"))["configs"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, IsADirectoryError):
        configs = None
    files = configs.values() if isinstance(configs, dict) else [None]
    if not all(isinstance(f, list) and all(isinstance(n, str) for n in f) for f in files):
        raise UserError(
            f"cannot load {source.describe()}: {path} is damaged (not the JSON encoderlab writes there); "
            "delete it, then fetch the dataset again, which records which files are in the hub cache's "
            "snapshot (offline, a snapshot without encoderlab's record or huggingface_hub's file list of the "
            f"repo is refused: it may be cut short): {refetch_fix(source.repo, 'dataset', source.revision)}"
        )
    return configs


def record_snapshot(source: HubSource, commit: str, kwargs: dict, paths: list[str]) -> None:
    """Record, before fetching them, the repo files of the config `kwargs` at `commit`. The hub cache
    cannot tell: a snapshot folder holds the files fetched so far (a download cut short leaves a
    `blobs/*.incomplete` that no file name points to), `.no_exist/` the files asked for and absent,
    and the tree listing (`trees/COMMIT.json`, written by `snapshot_download` only, since
    huggingface/huggingface_hub#4394; its offline check covers the files asked for, and nothing for a
    cache filled by `hf_hub_download`: huggingface/huggingface_hub#4624) all of the repo's files, not
    which of them a config reads. Kept in $ENCODERLAB_HOME: the hub cache is
    huggingface_hub's, not ours to write. One load at a time reads and rewrites the records
    (`one_at_a_time`): two at once, of two configs, each wrote its own and lost the other's."""
    path = _record_path(source.repo, commit, create=True)
    key = json.dumps(kwargs, sort_keys=True)
    with one_at_a_time(path.parent):
        configs = _read_record(path, source)
        if configs.get(key) != paths:
            write_json_atomic(
                path, {"repo": source.repo, "commit": commit, "configs": configs | {key: paths}}
            )


def check_complete(source: HubSource, kwargs: dict, folder: Path) -> bool:
    """One line when the hub cache's snapshot `folder` lacks a file its fetch recorded for this config
    (`record_snapshot`): read as it is, the split had fewer rows, silently. Whether there was a record
    of this config: a snapshot encoderlab did not fetch it into (`hf download`, `datasets`' own fetch,
    or an encoderlab before the record) has none, and is checked against the repo's file list
    (`check_tree`) or refused (`unchecked`)."""
    files = _read_record(_record_path(source.repo, folder.name, create=False), source).get(
        json.dumps(kwargs, sort_keys=True)
    )
    refuse_missing(source, folder, files or [], "the files the dataset was fetched with")
    return files is not None


def _refetch(source: HubSource, folder: Path) -> str:
    """The fix of a hub cache snapshot that is, or may be, incomplete: what fetches its files and records
    them (encoderlab's record, or huggingface_hub's file list: `hf download` of the repo, not of one file,
    goes through `snapshot_download`, which writes trees/COMMIT.json before fetching)."""
    return refetch_fix(source.repo, "dataset", folder.name)


def refuse_missing(
    source: HubSource, folder: Path, files: list[str], which: str, harm: str = "its splits would miss rows"
) -> None:
    """One line naming the files of `files` (repo paths) that the snapshot `folder` lacks, if any, and
    the `harm` of reading it as it is."""
    missing = [f for f in files if not (folder / f).is_file()]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise UserError(
            f"cannot load {source.describe()} from the hub cache: its snapshot {folder} lacks "
            f"{', '.join(missing[:3])}{more} of {which} (a download cut short, or one of some files "
            f"only), so {harm}; {_refetch(source, folder)}"
        )


def unchecked(source: HubSource, folder: Path) -> str:
    """The line for a snapshot that nothing tells complete: encoderlab did not fetch this config into it
    (no record) and huggingface_hub cached no file list of the repo at its commit (`hf_hub_download`, as
    `datasets` fetches files, writes none). Read as it was, a download cut short gave a split the rows
    of the files fetched so far, silently: one of CSV or TSV files is refused; one of other files is not
    read (`Unread`): `datasets`' offline path reads the copy it prepared, of the files it fetched whole,
    and this line is said when it has none."""
    return (
        f"cannot load {source.describe()} from the hub cache: nothing tells its snapshot {folder} complete "
        "(encoderlab did not fetch this config into it, and huggingface_hub holds no readable file list "
        f"of the repo at that commit, {tree_file(folder)}), so a download cut short would give splits "
        f"missing rows, unseen; {_refetch(source, folder)}"
    )


def check_tree(source: HubSource, kwargs: dict, folder: Path) -> Listed | None:
    """One line when the snapshot `folder` lacks a data file of this config (of any kind: parquet, JSON,
    CSV, ..., mixed or not) that the repo's file list at its commit names (`hubtree.listed_files`);
    that list is there when the snapshot was filled by `snapshot_download` (`hf download` too), which
    `record_snapshot` (and so `check_complete`) knows nothing of: `hf download --include ...` of some
    files, or a config never fetched beside one that was. What the list names (None: no list to check
    against); nothing is refused where `datasets` infers from it a kind not of `SNAPSHOT_KINDS`, which
    is not read from the snapshot."""
    listed = listed_files(source.repo, kwargs, folder)
    if listed is not None and listed.kind in (None, *SNAPSHOT_KINDS):
        which = f"the files the repo's file list ({tree_file(folder)}) names for it"
        refuse_missing(source, folder, listed.files, which)
    return listed
