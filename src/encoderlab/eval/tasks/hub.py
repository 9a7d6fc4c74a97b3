"""Hub datasets for the paper suites, read from the hub or from a local mirror by the same call.

A `HubSource` names a dataset repository, its config, and, for repositories that are dataset
scripts (which `datasets` >= 4 refuses to run, and which we would not run unasked anyway), the
revision and file globs of the repository's parquet export. `load_hub` turns it into
`datasets.load_dataset(path, name=config, data_files=..., revision=...)` where `path` is the hub id,
or, when `ENCODERLAB_HUB_DATA=DIR` is set, `DIR/<owner>/<name>`: a folder holding the repository's
files at that revision (what `hf download --repo-type dataset REPO --local-dir DIR/REPO` writes).
Hub and mirror go through the same `datasets` code, so a test fixture written in the hub's layout
(file names, README configs, parquet features) exercises exactly what a real run does. CSV or TSV
files are read with a task file's options and checks (`localfiles.csv_options`), which need their
headers first: a hub dataset of them is read from the local hub cache's snapshot of its files as from
a mirror (`_hub_snapshot`), and the hub only resolves and fetches them (docs/evaluation.md, "Sources").
Offline, so is a parquet, JSON, Arrow or text dataset whose snapshot is checked complete (`SNAPSHOT_KINDS`;
the checks and their records are `hubcomplete`'s). A parquet export's config (`parquet_export`) is fetched
into that snapshot and read from it as CSV files are, online too, so that the one read works offline.

EncodEval's `LOCAL_DATASET_DIR` does the same with `DIR/<name>`; we keep the owner in the path,
since two sources here share a name (`hgissbkh/msmarco-pairs` would not, but `BeIR/nq` and a
future `*/nq` would).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from encoderlab.data.hub import (
    HF_URL,
    HUB_DATA_ENV,
    dataset_location,
    hub_refusal,
    import_datasets,
    incomplete_snapshot_error,
    quiet_hub,
    transport_errors,
)
from encoderlab.data.hubdown import HubUnanswered, hub_down, libraries_offline, note_cached_read, unanswered
from encoderlab.errors import UserError, first_line
from encoderlab.eval.tasks.hubcommits import note_read
from encoderlab.eval.tasks.hubcomplete import (
    SNAPSHOT_KINDS,
    check_complete,
    check_tree,
    record_snapshot,
    refuse_missing,
    unchecked,
)
from encoderlab.eval.tasks.huboffline import offline_uncached
from encoderlab.eval.tasks.hubtree import tree_file
from encoderlab.eval.tasks.localfiles import cause, check_unquoted, csv_options
from encoderlab.eval.tasks.rowplaces import file_places, hub_places
from encoderlab.words import noun

PARQUET_EXPORT = "refs/convert/parquet"
CARD_FILES = ("README.md", ".huggingface.yaml")
"""A dataset repo's files that `datasets` reads, besides its data files, to resolve its configs."""
PUBLISHED_FIX = (
    f"report it to the dataset's owner, or set {HUB_DATA_ENV}=DIR to read a corrected local mirror"
)
"""What to do about a hub dataset's file that is malformed as published: not the user's to edit."""
SNAPSHOT_FIX = f"the dataset's file in that hub cache snapshot is malformed as published; {PUBLISHED_FIX}"
"""The fix of every refusal of a file in the hub cache's snapshot (`_hub_snapshot`): the task files'
checks (`localfiles.csv_options`, `check_unquoted`) say to edit the file, which fits a mirror only."""


def export_files(config: str, splits: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Globs of a parquet export's files of `config` (`*`: the repository's only config), in either
    layout the converter has written: `<config>/<split>/0000.parquet` (current) and
    `<config>/<name>-<split>[-00000-of-0000N].parquet` (2023)."""
    layouts = ("{c}/{s}/*.parquet", "{c}/*-{s}.parquet", "{c}/*-{s}-[0-9]*.parquet")
    return tuple((s, layout.format(c=config, s=s)) for s in splits for layout in layouts)


@dataclass(frozen=True)
class HubSource:
    """Where one hub dataset (config) is read from."""

    repo: str
    """`owner/name` on the hub."""
    config: str | None = None
    """The config (`name=` of `load_dataset`); None for a repository's only one, and when
    `data_files` pick the files (a parquet export's config is then a folder in the globs)."""
    revision: str | None = None
    """A branch or commit; `refs/convert/parquet` for a script repository's parquet export."""
    data_files: tuple[tuple[str, str], ...] = ()
    """(split, glob) pairs relative to the repository root (a split may repeat, for several
    globs); empty to let the repository's card (README `configs`) or its file names decide."""
    export_config: str | None = None
    """The config of a parquet export whose files `data_files` are (`parquet_export`; `*`: the export's
    only one), which a refusal names: the globs are ours, not what a task file passes."""

    def describe(self) -> str:
        if self.export_config is not None:
            of = "" if self.export_config == "*" else f"config {self.export_config} of "
            where = f"{self.repo} ({of}its parquet export)"
        else:
            picked = f" (files {self.data_files[0][1]}, ...)" if self.data_files else ""
            where = self.repo + (f" (config {self.config})" if self.config else picked)
        return where + (f" at {self.revision}" if self.revision else "")


def parquet_export(
    repo: str, config: str, splits: tuple[str, ...], revision: str = PARQUET_EXPORT
) -> HubSource:
    """The splits `splits` of `config` (`*`: the only one) of `repo`'s parquet export, at its branch or
    one of its commits (`revision`): the built-in tasks' exports and a task file's (`hubexport.export_source`)."""
    return HubSource(repo, revision=revision, data_files=export_files(config, splits), export_config=config)


def hub_path(source: HubSource) -> str:
    """The hub id, or the mirror folder under $ENCODERLAB_HUB_DATA (checked to exist; the one
    resolver of hub ids, `encoderlab.data.hub`, shared with `data prepare`)."""
    return dataset_location(source.repo, source.revision)


def load_hub(source: HubSource):
    """The `datasets.DatasetDict` of `source`, from the hub or its local mirror; one-line errors."""
    datasets = import_datasets()
    path, kwargs = hub_path(source), _load_kwargs(source)
    mirror, snapshot = path != source.repo, None
    malformed = datasets.exceptions.DatasetGenerationError  # a CSV with an unclosed quote
    try:
        found = None if mirror else _hub_snapshot(datasets, source, kwargs)
        snapshot = found if isinstance(found, str) else None
        path = snapshot or path
        if path == source.repo and source.revision:
            kwargs["revision"] = source.revision
        published = SNAPSHOT_FIX if snapshot else None  # the task files' fixes edit the file: a mirror's
        csv, files = (
            _mirror_options(datasets, path, kwargs, source, published) if path != source.repo else ({}, {})
        )
        ds = _read(datasets, found, path, kwargs | csv)
        note_read(source, path, snapshot, found)  # the commit read, for the results (`hubcommits`)
    except StopIteration:  # `datasets`' JSON reader on an empty file: a bare StopIteration
        empty = (
            "a data file of it is empty; put the split's records in it, or re-download the mirror"
            if mirror
            else f"a data file of it is empty as published; {PUBLISHED_FIX}"  # no mirror to re-download
        )
        raise UserError(f"cannot load {source.describe()} from {path}: {empty}") from None
    except (
        *READ_ERRORS,
        malformed,
        *transport_errors(),
    ) as exc:  # httpx2's: `datasets`' download let it through
        exc = unanswered(exc) if isinstance(exc, transport_errors()) else exc
        first = first_line(cause(exc))
        if (configs := _config_problem(exc, source)) is not None:
            raise UserError(f"cannot load {source.describe()} from {path}: {configs}") from None
        if not (mirror or snapshot) and (revision := offline_uncached(datasets, source)) is not None:
            raise UserError(f"cannot load {source.describe()}: {revision}") from None
        asked = isinstance(exc, HubUnanswered)  # the hub did not answer: not asked again why
        if source.export_config is not None and (missing := _export_problem(source, exc)) is not None:
            raise UserError(f"cannot load {source.describe()}: {missing}") from None
        if not (mirror or snapshot or asked) and (hub := _hub_line(source)) is not None:
            raise hub from None
        if mirror:
            fix = "check the mirror's files against docs/evaluation.md"
        elif snapshot:  # fetched fine: the dataset's own file is malformed
            fix = SNAPSHOT_FIX
        else:
            fix = f"check the name and your connection, or set {HUB_DATA_ENV}=DIR to read a local mirror"
        raise UserError(f"cannot load {source.describe()} from {path}: {first}; {fix}") from None
    if csv.get("sep") == "\t":
        for split, part in ds.items():
            one = files.get(split, [])  # a split of one file names its line; of several, its row
            n, where = part.num_rows, f"cannot load {source.describe()}"
            places = file_places(str(one[0]), one[0], n, where) if len(one) == 1 else hub_places(split, n)
            check_unquoted(part, split, places, where, published)
    return ds


READ_ERRORS = (ConnectionError, FileNotFoundError, ValueError, RuntimeError, OSError)
"""What `datasets` raises of a hub dataset it cannot read (`load_hub` gives each one line)."""


def _load_kwargs(source: HubSource) -> dict:
    """`load_dataset`'s arguments for `source`: its config, and its `data_files` as {split: [globs]}."""
    kwargs: dict = {"name": source.config}
    if source.data_files:
        files: dict[str, list[str]] = {}
        for split, pattern in source.data_files:
            files.setdefault(split, []).append(pattern)
        kwargs["data_files"] = files
    return kwargs


def _hub_line(source: HubSource) -> UserError | None:
    """The hub's refusal of the repo or its revision (a typo'd id, a gated repo, a pin the repo lacks),
    with its fix, where `datasets`' words said only "doesn't exist ... or cannot be accessed"."""
    return hub_refusal(source.repo, "dataset", "dataset", source.revision, "the task file's data.revision")


def _export_problem(source: HubSource, exc: BaseException) -> str | None:
    """The config or splits a parquet export lacks of those `source` reads, as the line's clause naming
    those it has (`hubexport.export_problem`); before, `datasets`' own words of the globs matching nothing
    ("No (supported) data files found", "Couldn't infer the same data file format for all splits").
    `exc`, the read's error, a `HubUnanswered`: the hub is not asked again (it was, a second wait)."""
    from encoderlab.eval.tasks.hubexport import export_problem  # hubexport imports this module

    return export_problem(source, exc if isinstance(exc, HubUnanswered) else None)


CONFIGS = re.compile(
    r"^(?:Config name is missing|BuilderConfig .* not found)\b.*?(?:configs|Available): \[(.*?)\]", re.S
)
"""`datasets`' refusal of a missing or unknown config, and the configs it lists (on a later line)."""


def _config_problem(exc: BaseException, source: HubSource) -> str | None:
    """A config left out or not the dataset's, as the configs it has and the field naming one: it was
    "Config name is missing.; check the mirror's files" (the mirror was fine; the list was on the lines cut)."""
    listed = CONFIGS.match(str(exc)) if isinstance(exc, ValueError) else None
    if listed is None:
        return None
    return configs_named([n.strip(" '\"") for n in listed.group(1).split(",")], source.config)


def configs_named(configs: list[str], config: str | None) -> str:
    """The refusal's clause of a config left out (`config` None) or not among a dataset's `configs`: a
    `datasets` config (`_config_problem`) or a parquet export's folder (`hubexport.export_source`)."""
    which = f"no config {config!r}" if config else "none was named"
    return f"it has configs {', '.join(configs)}, and {which}; name one (a task file's data.config)"


@dataclass(frozen=True)
class Unread:
    """A hub cache snapshot that `_cached_snapshot` does not read (not checked complete, or of a kind
    not in `SNAPSHOT_KINDS`), left to `datasets`' offline path: the copy it prepared when the dataset was
    loaded with the hub reachable. `line`: the refusal when it has none (it said "check the name and your
    connection", the files on disk)."""

    line: str


def _read(datasets, found, path: str, kwargs: dict):
    """`load_dataset(path, **kwargs)`, or what it does with `found`, a builder `_hub_snapshot` resolved
    on the hub (`load_dataset` would resolve the repo's metadata again: each load asked the hub twice);
    `found` `Unread`: its line when `datasets` has no copy it prepared."""
    from datasets.utils.info_utils import is_small_dataset

    if isinstance(found, Unread):  # offline, or the hub not answering: `datasets`' offline path at once
        try:
            with libraries_offline(), quiet_hub():  # its warning names offline mode, unset here
                return datasets.load_dataset(path, **kwargs)
        except ConnectionError:  # offline, and no copy `datasets` prepared before
            raise UserError(found.line) from None
    if found is None or isinstance(found, str):
        return datasets.load_dataset(path, **kwargs)
    found.download_and_prepare()
    return found.as_dataset(in_memory=is_small_dataset(found.info.dataset_size))


def _hub_snapshot(datasets, source: HubSource, kwargs: dict):
    """The local hub cache's snapshot folder of `source`'s repo holding the CSV or TSV files of its
    config, which `load_hub` then reads as a mirror (with `csv_options`), or a parquet export's files
    (`_export_parquet`); for a dataset of other files
    (or CSV files not of one commit), the builder `datasets` resolved on the hub, which `load_hub` reads
    with as `load_dataset` would (`_read`); None when the hub is not asked (offline) and the cache has
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
                builder = datasets.load_dataset_builder(source.repo, **kwargs, revision=source.revision)
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


def _export_parquet(source: HubSource, builder) -> bool:
    """Whether `builder` reads the parquet files of a parquet export's config (`parquet_export`), which
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
        if cards and (kind := datasets.load_dataset_builder(folder, **files).name) in SNAPSHOT_KINDS:
            which = f"the dataset card files the repo's file list ({tree_file(Path(folder))}) names"
            refuse_missing(source, Path(folder), cards, which, CARD_HARM)
        if cards:  # another kind: not read from the snapshot (`datasets`' offline path, as before)
            return Unread(_unread_kind(source, Path(folder), kind))
        checked = check_complete(source, kwargs, Path(folder))
        listed = check_tree(source, kwargs, Path(folder))
        kind = datasets.load_dataset_builder(folder, **kwargs).name
    except (LocalEntryNotFoundError, FileNotFoundError, ValueError) as exc:  # no snapshot, or no files
        if (configs := _config_problem(exc, source)) is not None:  # was "Couldn't reach the Hub", offline
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


def _mirror_options(
    datasets, path: str, kwargs: dict, source: HubSource, fix: str | None = None
) -> tuple[dict, dict[str, list[Path]]]:
    """The config options a mirror is loaded with, and its data files by split. The options: the state
    of its data files (`mirror_state`), and,
    for a mirror whose files `datasets` reads as CSV or TSV, the options a task's files are read with
    (`localfiles.csv_options`), their headers checked first: a mirror was read with pandas' defaults,
    so a column named twice, `00123` read as 123, a class named N/A and a TSV text opening a quote
    passed there unsaid. `fix`: what a refusal says to do (`SNAPSHOT_FIX` for the hub cache's snapshot)."""
    builder = datasets.load_dataset_builder(path, **kwargs)
    by_split = {str(s): [Path(f) for f in fs] for s, fs in builder.config.data_files.items()}
    files = [f for split_files in by_split.values() for f in split_files]
    state = {"description": mirror_state(files)}
    if builder.name != "csv":
        return state, by_split
    tsv = builder.config.sep == "\t"
    return state | csv_options(files, tsv, f"cannot load {source.describe()}", fix), by_split


def mirror_state(files: list[Path]) -> str:
    """A digest of the size and mtime_ns of each of a mirror's data files, passed to `datasets` as the
    builder config's `description`, a field that every builder config has and no builder reads, so
    that it enters the config id and thus the folder of the prepared Arrow cache.

    Why: a folder whose README declares `configs` (as hub cards do) gets builder configs holding the
    card's file patterns, unresolved, and `datasets` keys its cache on those (the module hash and the
    config id), not on the files' mtimes as it does for a folder without a card; an edited file was
    then read from the old cache, silently. Cost: a stat per file per load, and one preparation after
    a change (the old cache stays, as `datasets` leaves it); re-preparing on every load
    (`download_mode="force_redownload"`) would instead re-read a whole corpus (MS MARCO's 8.8M
    passages) each time, and hashing the files' bytes would read them each time. Not seen: a rewrite
    that keeps both a file's size and its mtime (`cp -p` of other bytes of the same length)."""
    stats = sorted((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    return "encoderlab mirror files " + hashlib.sha256(repr(stats).encode()).hexdigest()[:16]


def require_columns(task: str, split, columns: tuple[str, ...], source: HubSource) -> None:
    """One error naming the columns a split lacks and the ones it has."""
    missing = [c for c in columns if c not in split.column_names]
    if missing:
        raise UserError(
            f"task {task}: {source.describe()} has no {noun(len(missing), 'column')} {', '.join(missing)} "
            f"(it has {', '.join(split.column_names)}); the dataset's layout changed, see docs/evaluation.md"
        )


def require_splits(task: str, ds, splits: tuple[str, ...], source: HubSource) -> None:
    missing = [s for s in splits if s not in ds]
    if missing:
        raise UserError(
            f"task {task}: {source.describe()} has no {noun(len(missing), 'split')} {', '.join(missing)} "
            f"(it has {', '.join(ds)}); the dataset's layout changed, see docs/evaluation.md"
        )


def class_names(split, column: str) -> tuple[str, ...] | None:
    """ClassLabel names of a column (or of a sequence column's items), if it has them."""
    feature = split.features[column]
    inner = getattr(feature, "feature", feature)
    names = getattr(inner, "names", None)
    return tuple(names) if names else None
