"""The study report's `hub inputs` row: each input read from the Hugging Face hub, pinned or not, and the
commit its finished nodes read.

The built-in studies name their hub tokenizer, start models, corpora and evaluation datasets unpinned (no
full commit sha of them was verified to pin), so the report says which commit each was read at: the one a
rerun pins (`OWNER/NAME@SHA`, `#hf_revision=SHA`) to read the same. Tokenizers, corpora and start models
record theirs (a prepared folder's meta.json, the runs' and evaluations' records); an evaluation records
none of the datasets its task reads (`eval.summary.EvalRecord` has no such field), so those are listed
with "the commit read not recorded" rather than left out: a reader sees that the scores rest on a hub
dataset whose commit the study cannot name. Split from `data.py` (its size limit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from encoderlab.study.data import StudyData


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
    items += [
        hub_input(f"dataset {repo.repo} (eval {', '.join(tasks)})", repo.revision)
        for repo, tasks in eval_datasets(data).items()
    ]
    return "; ".join(items)


def eval_datasets(data: StudyData) -> dict:
    """`HubRepo` -> the tasks of the study's finished eval nodes that read it (`Task.hub_repos`), in graph
    order. A task file's task not registered in this process (`study report` alone, or a report node in
    a worker) is taken from its file's spec, so one whose data names a hub dataset is listed as a
    built-in task is (it was left out); a task file gone since reads none here."""
    from encoderlab.eval.tasks import TASKS
    from encoderlab.eval.tasks.custom import file_hub_repos

    read: dict = {}
    files: dict = {}  # task files -> their tasks' hub datasets, each set read once
    for node in data.nodes:
        if node.kind != "eval" or node.name not in data.markers:
            continue
        name, paths = node.config["task"], tuple(node.config.get("task_files") or ())
        if (task := TASKS.get(name)) is not None:
            repos = task.hub_repos
        else:
            if paths not in files:
                files[paths] = file_hub_repos(paths)
            repos = files[paths].get(name, ())
        for repo in repos:
            if name not in (names := read.setdefault(repo, [])):
                names.append(name)
    return read


def hub_input(what: str, pinned: str | None, *commits: str | None) -> str:
    """One hub input for the report: `what`, whether it is pinned, and the commits read (none known: said,
    also under a pin that is no commit, a branch or tag, which says nothing of the commit read)."""
    from encoderlab.data.hub import is_commit

    known = [c for c in commits if c]
    read = f"read at commit {', '.join(c[:12] for c in known)}" if known else "the commit read not recorded"
    if pinned is None:
        return f"{what}: unpinned, {read}"
    return f"{what}: pinned at {pinned}" + ("" if is_commit(str(pinned)) else f", {read}")
