"""Hub datasets for the paper suites, read from the hub or from a local mirror by the same call.

`load_hub` turns a `hubsource.HubSource` into `datasets.load_dataset(path, name=config, data_files=...,
revision=...)` where `path` is the hub id, or, when `ENCODERLAB_HUB_DATA=DIR` is set, `DIR/<owner>/<name>`:
a folder holding the repository's files at that revision (what `hf download --repo-type dataset REPO
--local-dir DIR/REPO` writes). Hub and mirror go through the same `datasets` code, so a test fixture
written in the hub's layout (file names, README configs, parquet features) exercises exactly what a real
run does. A hub dataset of CSV or TSV files, a parquet export's config, and offline a snapshot checked
complete are read from the local hub cache's snapshot as from a mirror (`hubsnapshot.hub_snapshot`), with
a mirror's options (`hubmirror.mirror_options`). What goes wrong is turned here into one line naming the
source and the fix.

The concerns live apart: the source and its config (`hubsource`), the hub cache's snapshot
(`hubsnapshot`, its completeness records in `hubcomplete` and `hubtree`), a folder's load options
(`hubmirror`), a parquet export's configs (`hubexport`), what an offline cache lacks (`huboffline`), the
commit read (`hubcommits`), and the checks of a loaded dataset's splits and columns (`hublayout`).
"""

from __future__ import annotations

from encoderlab.data.hub import HUB_DATA_ENV, hub_refusal, import_datasets, quiet_hub, transport_errors
from encoderlab.data.hubdown import HubUnanswered, libraries_offline, unanswered
from encoderlab.errors import UserError, first_line
from encoderlab.eval.tasks.hubcommits import note_read
from encoderlab.eval.tasks.hubexport import export_problem
from encoderlab.eval.tasks.hubmirror import mirror_options
from encoderlab.eval.tasks.huboffline import offline_uncached
from encoderlab.eval.tasks.hubsnapshot import Unread, hub_snapshot
from encoderlab.eval.tasks.hubsource import HubSource, config_problem, hub_path
from encoderlab.eval.tasks.localfiles import cause, check_unquoted
from encoderlab.eval.tasks.rowplaces import file_places, hub_places

PUBLISHED_FIX = (
    f"report it to the dataset's owner, or set {HUB_DATA_ENV}=DIR to read a corrected local mirror"
)
"""What to do about a hub dataset's file that is malformed as published: not the user's to edit."""
SNAPSHOT_FIX = f"the dataset's file in that hub cache snapshot is malformed as published; {PUBLISHED_FIX}"
"""The fix of every refusal of a file in the hub cache's snapshot (`hubsnapshot.hub_snapshot`): the task
files' checks (`localfiles.csv_options`, `check_unquoted`) say to edit the file, which fits a mirror only."""


def load_hub(source: HubSource):
    """The `datasets.DatasetDict` of `source`, from the hub or its local mirror; one-line errors."""
    datasets = import_datasets()
    path, kwargs = hub_path(source), _load_kwargs(source)
    mirror, snapshot = path != source.repo, None
    malformed = datasets.exceptions.DatasetGenerationError  # a CSV with an unclosed quote
    try:
        found = None if mirror else hub_snapshot(datasets, source, kwargs)
        snapshot = found if isinstance(found, str) else None
        path = snapshot or path
        if path == source.repo and source.revision:
            kwargs["revision"] = source.revision
        published = SNAPSHOT_FIX if snapshot else None  # the task files' fixes edit the file: a mirror's
        csv, files = (
            mirror_options(datasets, path, kwargs, source, published) if path != source.repo else ({}, {})
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
        if (configs := config_problem(exc, source)) is not None:
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
    return export_problem(source, exc if isinstance(exc, HubUnanswered) else None)


def _read(datasets, found, path: str, kwargs: dict):
    """`load_dataset(path, **kwargs)`, or what it does with `found`, a builder `hubsnapshot.hub_snapshot`
    resolved on the hub (`load_dataset` would resolve the repo's metadata again: each load asked the hub
    twice); `found` `Unread`: its line when `datasets` has no copy it prepared."""
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
