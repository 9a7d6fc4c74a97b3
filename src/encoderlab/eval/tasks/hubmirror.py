"""The options a hub dataset's local folder is loaded with, a mirror's or a hub cache snapshot's: the
state of its data files (`mirror_state`), which keys `datasets`' prepared copy, and for CSV or TSV files
the options and checks a task file's are read with (`localfiles.csv_options`).

`hub.load_hub` passes these to `load_dataset` for any folder it reads (`ENCODERLAB_HUB_DATA`'s mirror, or
the snapshot `hubsnapshot.hub_snapshot` found); the hub id itself is read with `datasets`' defaults.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from encoderlab.data.hub import listing_builder
from encoderlab.eval.tasks.hubsource import HubSource
from encoderlab.eval.tasks.localfiles import csv_options


def mirror_options(
    datasets, path: str, kwargs: dict, source: HubSource, fix: str | None = None
) -> tuple[dict, dict[str, list[Path]]]:
    """The config options a mirror is loaded with, and its data files by split. The options: the state
    of its data files (`mirror_state`), and,
    for a mirror whose files `datasets` reads as CSV or TSV, the options a task's files are read with
    (`localfiles.csv_options`), their headers checked first: a mirror was read with pandas' defaults,
    so a column named twice, `00123` read as 123, a class named N/A and a TSV text opening a quote
    passed there unsaid. `fix`: what a refusal says to do (`SNAPSHOT_FIX` for the hub cache's snapshot)."""
    builder = listing_builder(datasets, path, **kwargs)  # its config alone: no lock left in the cache
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
