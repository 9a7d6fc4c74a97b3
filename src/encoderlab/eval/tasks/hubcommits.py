"""The commit of each hub dataset an evaluation read, recorded with its results (`EvalRecord.hub_datasets`),
as a pretraining run's prepared folder records its corpus's (`data.freshness.held_commit`) and an
evaluation as is its start model's (`EvalRecord.start_model`): an unpinned hub dataset is whatever its
default branch held, which a later push changes under the same name, and the study report's `hub inputs`
row names the commit so a rerun can pin it.

`load_hub` tells `note_read` how it read each source (and `beir.beir_folder` how it read a BEIR hub id: its
mirror or its hub cache snapshot); the commit is what that read shows, never a guess:
  * the local hub cache's snapshot (`snapshots/COMMIT/`): its folder's name;
  * a config `datasets` resolved on the hub: the one commit its data files' URLs name
    (`hf://datasets/OWNER/NAME@COMMIT/...`);
  * a mirror (`ENCODERLAB_HUB_DATA`): the one commit its `hf download` records name for every file, none
    edited since (`data.mirrorpin.mirror_commit`, what a pin of it would check);
  * a pin that is a full commit sha: that commit;
  * anything else (a copy `datasets` prepared before, read offline; records naming several commits): None,
    which the report says is not recorded.

Trade-off: the reads are kept per process (`_READ`, keyed by repo and pinned revision) rather than passed
through every loader's `TaskData`, which would touch each loader of the registry; a task's record lists
its `Task.hub_repos` with the commit read of each (`commits_read`). A repo read twice at different commits in one
process (a push between two configs' reads) is recorded as None: no one commit was read.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from encoderlab.eval.spec import HubRepo
    from encoderlab.eval.summary import HubRead
    from encoderlab.eval.tasks.hubsource import HubSource

_READ: dict[tuple[str, str | None], str | None] = {}
"""(repo, pinned revision) -> the commit read in this process (None: not known, or not one)."""


def note_read(source: HubSource, path: str, snapshot: str | None, found) -> None:
    """Record the commit `load_hub` read `source` at: from `path` (the hub id, or its mirror folder),
    `snapshot` (the hub cache's snapshot folder read, if any) or `found` (the builder `datasets` resolved
    on the hub, if any)."""
    key = (source.repo, source.revision)
    commit = _commit(source, path, snapshot, found)
    _READ[key] = commit if key not in _READ or _READ[key] == commit else None


def _commit(source: HubSource, path: str, snapshot: str | None, found) -> str | None:
    from encoderlab.data.hub import HF_URL, HUB_DATA_ENV, is_commit
    from encoderlab.data.mirrorpin import mirror_commit, mirror_files

    if source.revision and is_commit(source.revision):
        return source.revision
    if snapshot is not None:
        return Path(snapshot).name if is_commit(Path(snapshot).name) else None
    if path != source.repo:  # a mirror: every file of it, as downloaded
        return mirror_commit(source.repo, Path(path), mirror_files(Path(path)), HUB_DATA_ENV)
    config = getattr(found, "config", None)
    urls = [str(f) for files in (getattr(config, "data_files", None) or {}).values() for f in files]
    commits = {m["rev"] for url in urls if (m := HF_URL.fullmatch(url))}
    commit = commits.pop() if len(commits) == 1 else None
    return commit if commit and is_commit(commit) else None


def commits_read(repos: Iterable[HubRepo]) -> tuple[HubRead, ...]:
    """A `HubRead` of each of `repos` (a task's `Task.hub_repos`), in their order, the commit None for one
    not read in this process: what `EvalRecord.hub_datasets` records, so the record names the task's hub
    datasets as they were when it ran."""
    from encoderlab.eval.summary import HubRead

    return tuple(HubRead(r.repo, r.revision, _READ.get((r.repo, r.revision))) for r in repos)
