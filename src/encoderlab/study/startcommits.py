"""A resumed study whose unpinned hub start model moved to another commit is refused, not mixed.

A start model named by an unpinned hub id (`OWNER/NAME`, no `@SHA`) is whatever the repo's default branch
holds when a node reads it, but the study keys its nodes by the name. Resumed after a push to the repo,
the finished nodes keep what they read and the nodes still to run read the new weights: runs continued
from two models, or a start model evaluated as is that is not the one the runs continued, under one name
in one report. Each pretraining run records the commit it started from (`env.json`'s `start_model`:
`model.runlayout.start_model_record`), and each evaluation of a hub id the commit it evaluated (its
`EvalRecord.start_model`, the same record), so `study run` compares, before anything runs, the commits
the finished runs and evaluations as is read of each such id with the one it resolves to now
(`hubmodels.resolved_commit`: the local hub cache or the mirror, after `runchecks.check_runs` downloaded its
configs; no network here).

Trade-offs: an evaluation's commit is read from its node.json, so a study of many finished evaluations as
is reads as many small files on each resume (only when a start model is read unpinned); runs and
evaluations from before their record, or a commit nothing can tell (a mirror without download records),
are not compared. A pinned commit (`OWNER/NAME@SHA`) is one set of weights and never checked; a pinned
branch or tag can move as the default branch does, and is.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.model.runlayout import recorded_start, start_of
from encoderlab.study.graph import Node
from encoderlab.study.spec import StudySpec


def check_start_commits(spec: StudySpec, study_dir: Path | None, nodes: Iterable[Node]) -> None:
    """Refuse (module docstring) a hub start model that nodes still to run read unpinned at another commit
    than the finished pretraining runs of `study_dir` recorded."""
    from encoderlab.data.hub import is_commit
    from encoderlab.data.hubmodels import is_hub_id, resolved_commit, split_revision
    from encoderlab.study.reads import config_strings
    from encoderlab.study.runner import pending_nodes

    nodes = list(nodes)
    names = {r.name for r in spec.runs}
    moving = {
        r.init
        for r in spec.runs
        if r.init
        and r.init not in names
        and is_hub_id(r.init)
        and not is_commit(split_revision(r.init)[1] or "")
    }
    if study_dir is None or not nodes or not moving:  # most studies: nothing to compare, no markers read
        return
    pending = pending_nodes(Path(study_dir), nodes)
    waiting = {n.key for n in pending}
    read_later: set[str] = set()
    for node in pending:
        config_strings(node.config, read_later)
    recorded = recorded_commits(Path(study_dir), [n for n in nodes if n.key not in waiting])
    for hub_id, commits in sorted(recorded.items()):
        if hub_id not in moving or hub_id not in read_later:
            continue
        now = resolved_commit(hub_id)
        if now is None or set(commits) == {now}:
            continue
        _refuse(spec, hub_id, commits, now)


def recorded_commits(study_dir: Path, finished: Iterable[Node]) -> dict[str, dict[str, str]]:
    """Hub id -> {commit: the first run that read it} of the hub start models the `finished` nodes of
    `study_dir` recorded: pretraining runs in their env.json's `start_model`, evaluations as is in their
    record's (`EvalRecord.start_model`); the report names them too."""
    from encoderlab.study.nodeconfig import EvalNode
    from encoderlab.study.runner import node_dir, read_marker

    recorded: dict[str, dict[str, str]] = {}
    for node in finished:
        start, reader = None, node.name.split("/", 1)[-1]
        if node.kind == "pretrain":
            start = recorded_start(node_dir(study_dir, node) / "run")
        elif node.kind == "eval" and not node.deps:  # as is: its own run (a run it shares records the same)
            marker = read_marker(study_dir, node)
            start = start_of(marker.result.get("start_model")) if marker is not None else None
            reader = f"{EvalNode.of(node).model} (evaluated as is)"
        if start is not None:
            recorded.setdefault(start[0], {}).setdefault(start[1], reader)
    return recorded


def _refuse(spec: StudySpec, hub_id: str, commits: dict[str, str], now: str) -> None:
    from encoderlab.data.hubmodels import split_revision

    repo = split_revision(hub_id)[0]
    read = "; ".join(f"{name} read commit {sha}" for sha, name in sorted(commits.items()))
    first = sorted(commits)[0]
    raise UserError(
        f"study {spec.name}: start model '{hub_id}' is read unpinned, and it has moved: its finished nodes read "
        f"other weights than its nodes still to run would ({read}; it resolves to commit {now} now); to finish "
        f"the study with the weights they read, mirror that commit (hf download --revision {first} {repo} "
        f"--local-dir DIR/{repo}, then set ENCODERLAB_HUB_MODELS=DIR), or name {repo}@{now} in the study to "
        "run every node reading it again at the new one"
    )
