"""The study report's `hub inputs` row: each input read from the Hugging Face hub, pinned or not, and the
commit its finished nodes read.

The built-in studies name their hub tokenizer, start models, corpora and evaluation datasets unpinned (no
full commit sha of them was verified to pin), so the report says which commit each was read at: the one a
rerun pins (`OWNER/NAME@SHA`, `#hf_revision=SHA`) to read the same. Tokenizers, corpora and start models
record theirs (a prepared folder's meta.json, the runs' and evaluations' records), and so does an
evaluation for the hub datasets its task read (`EvalRecord.hub_datasets`, since 2026-12-06): the row lists
the datasets each finished evaluation recorded reading, at the commit recorded, not those its task (a task
file as it stands now) names at report time; a task file that names other hub datasets now is said so. A
record from before names none, so its task's datasets are taken from the registry or its task file as now,
with "the commit read not recorded": a reader sees that the scores rest on a hub dataset whose commit the
study cannot name. Split from `data.py` (its size limit).

`study plan` prints the same of the start models and tokenizers before anything runs (`plan_hub_inputs`):
pinned or not, and the commit a load reads as told without the network (a mirror's download records, the
local hub cache's snapshot of the branch). Trade-off: unpinned and online, a run reads what the branch
holds when it downloads, which only asking the hub could tell; the plan asks none and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from encoderlab.words import noun

if TYPE_CHECKING:
    from encoderlab.eval.spec import HubRepo
    from encoderlab.study.data import StudyData
    from encoderlab.study.spec import StudySpec


def hub_inputs_text(data: StudyData) -> str:
    """Each hub input of the study `data` holds (a tokenizer, a hub corpus of a prepared dataset, a start
    model, a dataset a finished evaluation's task reads), pinned or not, with the commit its finished
    nodes read; "" when it has none."""
    from encoderlab.data.hubmodels import split_revision
    from encoderlab.study.hubids import reads_hub

    spec = data.spec
    items = [
        hub_input(f"tokenizer {d.tokenizer} (data {d.name})", split_revision(d.tokenizer)[1], commit)
        for d in spec.data
        if (commit := data.tokenizer_commits.get(d.name)) or reads_hub(spec, d.tokenizer)
    ]
    items += [
        hub_input(f"corpus {hub_id} (data {name})", pinned, commit)
        for name, read in data.corpus_commits.items()
        for hub_id, pinned, commit in read
    ]
    starts = sorted(
        {r.init for r in spec.runs if r.init and (r.init in data.start_commits or reads_hub(spec, r.init))}
    )
    items += [
        hub_input(f"start model {init}", split_revision(init)[1], *data.start_commits.get(init, ()))
        for init in starts
    ]
    reads, changed = eval_reads(data)
    items += [_dataset_item(repo, read) for repo, read in reads.items()]
    items += [
        f"task file of eval {task}: names other hub datasets now ({now or 'none'})"
        for task, now in changed.items()
    ]
    return "; ".join(items)


def _dataset_item(repo: HubRepo, read: EvalRead) -> str:
    """`hub_input` of a hub dataset the evaluations read, each commit named once, saying so when only some
    of them recorded one (a study resumed from records of before): the others may have read another."""
    from encoderlab.data.hub import is_commit

    item = hub_input(
        f"dataset {repo.repo} (eval {', '.join(read.tasks)})", repo.revision, *dict.fromkeys(read.commits)
    )
    partial = any(read.commits) and not all(read.commits) and not is_commit(str(repo.revision))
    return item + (", by some of its evaluations (the others recorded none)" if partial else "")


@dataclass
class EvalRead:
    """A hub dataset the study's finished evaluations read: their tasks, and the commit each evaluation
    recorded reading (None: none recorded)."""

    tasks: list[str] = field(default_factory=list)
    commits: list[str | None] = field(default_factory=list)


def eval_reads(data: StudyData) -> tuple[dict[HubRepo, EvalRead], dict[str, str]]:
    """`HubRepo` -> what the study's finished evaluations (`StudyData.evals`) read of it, in graph order;
    and each task whose task file names other hub datasets now than its evaluation recorded reading ->
    those it names now. A record names the datasets read (`EvalRecord.hub_datasets`); one from before
    (None there), its task's now (`current_repos`)."""
    from encoderlab.eval.spec import HubRepo

    reads: dict[HubRepo, EvalRead] = {}
    files: dict = {}  # task files -> their tasks' hub datasets, each set read once
    changed: dict[str, str] = {}
    for ev in data.evals:
        name, recorded = ev.record.task, ev.record.hub_datasets
        now = current_repos(name, ev.task_files, files)
        pairs = (
            [(HubRepo(r.hub_id, r.revision), r.commit) for r in recorded]
            if recorded is not None
            else [(r, None) for r in now]
        )
        if recorded is not None and ev.task_files and set(now) != {r for r, _ in pairs}:
            changed[name] = ", ".join(r.repo + (f" at {r.revision}" if r.revision else "") for r in now)
        for repo, commit in pairs:
            read = reads.setdefault(repo, EvalRead())
            read.commits.append(commit)
            if name not in read.tasks:
                read.tasks.append(name)
    return reads, changed


def current_repos(task: str, task_files: tuple[str, ...], files: dict) -> tuple[HubRepo, ...]:
    """The hub datasets `task` reads now (`Task.hub_repos`). A task of `task_files` not registered in this
    process (`study report` alone, or a report node in a worker) is taken from its file's spec, so one whose
    data names a hub dataset is listed as a built-in task is; a task file gone since reads none here.
    `files` keeps each set of task files read once."""
    from encoderlab.eval.tasks import TASKS
    from encoderlab.eval.tasks.custom import file_hub_repos

    if (found := TASKS.get(task)) is not None:
        return found.hub_repos
    if task_files not in files:
        files[task_files] = file_hub_repos(task_files)
    return files[task_files].get(task, ())


def hub_input(what: str, pinned: str | None, *commits: str | None) -> str:
    """One hub input for the report: `what`, whether it is pinned, and the commits read (none known: said,
    also under a pin that is no commit, a branch or tag, which says nothing of the commit read)."""
    from encoderlab.data.hub import is_commit

    known = [c for c in commits if c]
    read = f"read at commit {', '.join(c[:12] for c in known)}" if known else "the commit read not recorded"
    if pinned is None:
        return f"{what}: unpinned, {read}"
    return f"{what}: pinned at {pinned}" + ("" if is_commit(str(pinned)) else f", {read}")


def plan_hub_inputs(spec: StudySpec, unread: frozenset[str] = frozenset()) -> list[str]:
    """`study plan`'s `hub inputs` lines: each start model and tokenizer of `spec` read from the hub
    (`hubids.reads_hub`) that a node still to run reads (not in `unread`: `reads.unread_inputs`), pinned
    or not, and the commit it would be read at, told without the network (`plan_pin_state`); a tokenizer
    of a `prepared` folder, the commit that folder records reading it at. [] when there is none. The
    report says the same of what the finished nodes read (`hub_inputs_text`); the plan said nothing, so
    a built-in's unpinned start model (none is pinned: no commit sha of theirs was verified) was seen
    unpinned only in the report, after the runs."""
    from encoderlab.study.hubids import reads_hub

    def hub(location: str) -> bool:
        return location not in unread and reads_hub(spec, location)

    tokenizers: dict[str, list[str]] = {}
    for d in spec.data:
        if hub(d.tokenizer):
            tokenizers.setdefault(d.tokenizer, []).append(d.name)
    starts: dict[str, list[str]] = {}
    for r in spec.runs:
        if r.init and hub(r.init):
            starts.setdefault(r.init, []).append(r.name)
    if not tokenizers and not starts:
        return []
    prepared = {d.name: d.prepared for d in spec.data if d.prepared}
    lines = [
        f"  tokenizer {t} (data {', '.join(names)}): {_tokenizer_state(t, names, prepared)}"
        for t, names in tokenizers.items()
    ]
    lines += [
        f"  start model {init} ({noun(len(runs), 'run')} {', '.join(runs)}): {plan_pin_state(init)}"
        for init, runs in starts.items()
    ]
    return [PLAN_HEAD, *lines]


PLAN_HEAD = (
    "hub inputs (models and tokenizers read from the Hugging Face hub; OWNER/NAME@SHA pins one to a commit, "
    "docs/models.md; `study report` names the commit each was read at):"
)
"""The first of `plan_hub_inputs`' lines."""


def _tokenizer_state(tokenizer: str, datasets: list[str], prepared: dict[str, str]) -> str:
    """`plan_pin_state` of a hub tokenizer, or, when every dataset naming it reads a `prepared` folder
    (no node reads the tokenizer from the hub), the commit each folder records reading it at."""
    from encoderlab.data.packed import read_meta
    from encoderlab.errors import UserError
    from encoderlab.study.outputs import tokenizer_commit

    if not all(name in prepared for name in datasets):
        return plan_pin_state(tokenizer)
    told = []
    for name in datasets:
        try:
            commit = tokenizer_commit(read_meta(Path(prepared[name])))
        except (UserError, OSError):  # refused by the plan's own checks first; here it records nothing
            commit = None
        read = (
            f"at commit {commit}" if commit else "the commit read not recorded (prepared before 2026-12-06)"
        )
        told.append(f"read in the prepared folder {prepared[name]}, {read}")
    return "; ".join(told)


def plan_pin_state(hub_id: str) -> str:
    """Whether `hub_id` (a start model or tokenizer) is pinned, and the commit a load of it reads as told
    now without the network (`hubmodels.resolved_commit`: its mirror's download records, or the local hub
    cache's snapshot of its branch), with the pin that reads that commit again. Unpinned or pinned to a
    branch or tag, an online `study run` reads what the branch holds when it downloads, which the plan
    cannot know (it asks no hub): said, not guessed."""
    from encoderlab.data.hub import hub_offline, is_commit
    from encoderlab.data.hubmodels import mirror_folder, resolved_commit, split_revision

    repo, revision = split_revision(hub_id)
    if revision is not None and is_commit(revision):
        return f"pinned at commit {revision}"
    state = "unpinned" if revision is None else f"pinned at {revision}, a branch or tag (it can move)"
    branch = "its default branch" if revision is None else revision
    mirror, commit = mirror_folder(hub_id), resolved_commit(hub_id)
    if commit is None and mirror is not None:
        return f"{state}: its mirror {mirror} records no one commit (its download records), so none is told"
    if commit is None:
        return (
            f"{state}: not in the local hub cache, so the commit `study run` reads ({branch} when it "
            "downloads) is not known yet"
        )
    where = f"its mirror {mirror}'s download records" if mirror else "the local hub cache"
    online = "" if mirror or hub_offline() else f"; online, `study run` reads what {branch} holds then"
    return f"{state}: read at commit {commit} ({where}{online}); {repo}@{commit} pins it"
