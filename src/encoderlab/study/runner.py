"""Execute a study graph: cached, resumable, locked, with compute recorded per node.

Layout of a study folder:
```
OUT/
  study.json            the resolved StudySpec (what was asked)
  graph.json            every node: name, kind, key, config, deps
  compute.jsonl         one line per finished node: tokens, FLOPs, wall time (rewritten atomically)
  .study.lock           present while a process runs the study: holder pid, host, start time
  nodes/<kind>/<slug>-<key12>/
      ...               the node's outputs
      node.json         the marker: written atomically after the outputs; its presence = finished
  report/               report.html, report.md, figures/*.png + their numbers
```

Trade-offs:
- **The marker is the only truth.** A node folder without `node.json` is an attempt that died
  (SIGKILL, full disk, a bug); it is run again, and the node function either resumes what it
  finds (pretraining continues from its last checkpoint) or overwrites it. Nothing else is ever
  deleted but the markers of the nodes downstream of one that runs again (their outputs read the old
  ones), before anything runs, so a crash loses at most the node in flight and never leaves an old
  output that looks current.
- **Nodes run in graph order, `jobs` at a time.** With `jobs=1` (the default) each node runs in
  this process. With `jobs=N` a node starts, in one of N spawned worker processes, as soon as its
  dependencies have finished; what each worker gets (its share of the CPU threads, its own GPU) and
  how workers end with the study are `study/workers.py`'s. The parent only schedules, writes
  compute.jsonl and holds the lock; markers are written by the workers, so a crash of either loses
  at most the nodes in flight. compute.jsonl, rewritten after each node, is flushed to disk at the end only
  (`write_text_atomic(durable=False)` before then): every run rebuilds it from the markers, and a flush per
  node was half a study's fsyncs.
- **A lock, not a database.** `.study.lock` is created atomically (hard link of a complete temp
  file) so it is never half-written; a lock whose pid is dead on this host is stale and taken
  over; a live holder is named in the error.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from encoderlab import jsonlines
from encoderlab.atomic import json_text, write_json_atomic, write_text_atomic
from encoderlab.config import to_dict
from encoderlab.errors import NO_ROOM, DiskFull, UserError, no_room
from encoderlab.locks import folder_lock, is_lock_file
from encoderlab.outdir import (
    STUDY_RECORD,
    check_output,
    create_output,
    missing_folders,
    study_node,
    undo_output,
)
from encoderlab.paths import typed
from encoderlab.study.absent import resumed_graph
from encoderlab.study.checks import check_prepared_sources
from encoderlab.study.fetching import fetch_assets, missing_assets
from encoderlab.study.graph import Backend, Graph, Node
from encoderlab.study.hubids import pin_local_starts
from encoderlab.study.marker import MARKER, NodeMarker, markers_read_once
from encoderlab.study.spec import StudySpec
from encoderlab.study.workers import node_pool, worker_slot
from encoderlab.words import count, noun

LOCK = ".study.lock"
GRAPH = "graph.json"
STUDY_KIND = "study"
"""The ownership-marker kind of a study folder (`encoderlab.outdir`)."""


@dataclass(frozen=True)
class NodeOutput:
    """A finished dependency: its folder and the result its function returned."""

    path: Path
    result: dict[str, Any]
    node: Node


@dataclass(frozen=True)
class NodeContext:
    """What a node function receives."""

    node: Node
    out_dir: Path
    inputs: dict[str, NodeOutput]
    """Finished dependencies by node name."""
    study_dir: Path
    spec: StudySpec


def node_dir(study_dir: Path, node: Node) -> Path:
    """Folder of a node's outputs: readable name plus the key prefix."""
    slug = re.sub(r"[^A-Za-z0-9_.@+-]+", "_", node.name.split("/", 1)[-1]).strip("_") or node.kind
    return study_dir / "nodes" / node.kind / f"{slug[:80]}-{node.key[:12]}"


def read_marker(study_dir: Path, node: Node) -> NodeMarker | None:
    """The marker of `node`, or None if it has not finished."""
    marker = NodeMarker.load(node_dir(study_dir, node) / MARKER)
    return marker if marker is not None and marker.key == node.key else None


def stale_folders(study_dir: Path, graph: Iterable[Node]) -> list[Path]:
    """The node folders of `study_dir` that no node of `graph` owns: an earlier version's nodes, whose
    keys changed with its config. Never deleted here: they are the user's results, and a study changed
    back finds them again."""
    root, owned = study_dir / "nodes", {node_dir(study_dir, n) for n in graph}
    kinds = sorted(k for k in root.iterdir() if k.is_dir()) if root.is_dir() else []
    return [f for k in kinds for f in sorted(k.iterdir()) if f.is_dir() and f not in owned]


STALE_WHY = (
    "left by an earlier version whose config changed their keys, they are not used, resumed or reported; "
    "they are kept (changed back, the study reuses them): delete them if you no longer need them"
)
"""What `study run`'s note and `study status` say of `stale_folders`."""


def stale_note(study_dir: Path, stale: list[Path], name: str) -> str:
    """The line `study run` prints about `stale_folders` (`study status` lists them all)."""
    shown = ", ".join(str(f.relative_to(study_dir)) for f in stale[:3])
    more = f" and {len(stale) - 3} more" if len(stale) > 3 else ""
    return (
        f"encoderlab: note: {count(len(stale), 'node folder')} in {study_dir} {noun(len(stale), 'belongs', 'belong')} to no node of study {name} as "
        f"it is now ({shown}{more}): {STALE_WHY} (listed by: encoderlab study status {typed(study_dir)})"
    )


# --------------------------------------------------------------------------- running


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_same_study(study_dir: Path, spec: StudySpec) -> None:
    """A folder holds one study: another study's folder is refused rather than mixed."""
    path = study_dir / STUDY_RECORD
    if not path.exists():
        return
    try:
        old = jsonlines.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        old = exc
    if not isinstance(old, dict):  # ours are written atomically: someone else's, or damaged by hand
        raise UserError(
            f"{path} is not a study's record (damaged or someone else's); nothing was changed: restore it, "
            f"or run {spec.name} (scale {spec.scale}) in another --out folder"
        )
    if (old.get("name"), old.get("scale")) != (spec.name, spec.scale):
        raise UserError(
            f"{study_dir} holds study {old.get('name')} (scale {old.get('scale')}); run {spec.name} "
            f"(scale {spec.scale}) in another --out folder"
        )


def compute_record(node: Node, marker: NodeMarker) -> dict:
    """The compute.jsonl line of a finished node."""
    return {"node": node.name, "kind": node.kind, "key": node.key[:12], **marker.compute}


def compute_records(study_dir: Path, graph: Iterable[Node]) -> list[dict]:
    """One record per finished node, in graph order."""
    return [compute_record(n, m) for n in graph if (m := read_marker(study_dir, n)) is not None]


def _write_compute(study_dir: Path, records: list[dict]) -> None:
    write_text_atomic(
        study_dir / "compute.jsonl", "".join(json_text(r, sort_keys=True) + "\n" for r in records)
    )


def _compute_line(node: Node, marker: NodeMarker, lines: dict[str, tuple[NodeMarker, str]]) -> str:
    """`node`'s compute.jsonl line for `marker`, encoded once per marker: `run_graph` rewrites the whole file
    after every node, and encoding every finished node's record each time made a study of n nodes cost
    n^2 / 2 encodings (a third of a 450-node fake study's CPU time)."""
    hit = lines.get(node.name)
    if hit is None or hit[0] is not marker:
        hit = lines[node.name] = (marker, json_text(compute_record(node, marker), sort_keys=True) + "\n")
    return hit[1]


def run_graph(
    spec: StudySpec, graph: Graph, backend: Backend, study_dir: Path, progress: bool = True, jobs: int = 1
) -> dict:
    """Run every unfinished node of `graph`, `jobs` at a time; returns {node name: result}."""
    study_dir = Path(study_dir)
    markers, pending = _start(graph, study_dir)
    bar = tqdm(
        total=len(graph),
        initial=len(graph) - len(pending),
        desc=spec.name,
        unit="node",
        disable=not progress or not pending,
    )
    running: dict[Future, Node] = {}
    # compute.jsonl's line of each finished node (_compute_line)
    lines: dict[str, tuple[NodeMarker, str]] = {}
    try:
        with markers_read_once(False), node_pool(jobs) as pool:  # nodes write markers: each load reads
            while pending or running:
                for node in _ready(pending, markers, jobs - len(running)):
                    pending.remove(node)
                    # named before it is submitted: at --jobs 1 submit runs the node, and the bar named the
                    # node before it (finished) for the minutes this one ran
                    bar.set_postfix_str(", ".join([*(n.name for n in running.values()), node.name])[-60:])
                    inputs = {d: _output(study_dir, graph.nodes[d], markers[d]) for d in node.deps}
                    ctx = NodeContext(
                        node=node,
                        out_dir=node_dir(study_dir, node),
                        inputs=inputs,
                        study_dir=study_dir,
                        spec=spec,
                    )
                    running[pool.submit(_run_node, ctx, backend.kinds[node.kind].run)] = node
                bar.set_postfix_str(", ".join(n.name for n in running.values())[-60:])
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    node = running.pop(future)
                    if future.exception() is not None and running:
                        print(_waiting_note(node, list(running.values())), file=sys.stderr, flush=True)
                    markers[node.name] = _marker(future, node)  # a node's error stops the study here
                    text = "".join(_compute_line(n, m, lines) for n in graph if (m := markers[n.name]))
                    # not flushed: rebuilt from the flushed markers on every run
                    write_text_atomic(study_dir / "compute.jsonl", text, durable=False)
                    bar.update(1)
    finally:
        bar.close()  # ends the bar's line, so an error message starts on its own
    write_text_atomic(
        study_dir / "compute.jsonl", "".join(_compute_line(n, markers[n.name], lines) for n in graph)
    )
    return {n.name: markers[n.name].result for n in graph}


def _start(graph: Graph, study_dir: Path) -> tuple[dict[str, NodeMarker | None], list[Node]]:
    """Each node's marker (None for unfinished, and for a report whose files were rewritten since) and the nodes to
    run; the markers of finished nodes downstream of one run again are removed, their outputs no longer current."""
    markers = {n.name: read_marker(study_dir, n) for n in graph}
    for n in graph:
        if (
            n.kind == "report"
            and markers[n.name] is not None
            and report_rewritten(study_dir, n, markers[n.name])
        ):
            markers[n.name] = None
    finished = {name for name, m in markers.items() if m is not None}
    pending = _to_run(graph, markers)
    if not pending:  # a bar at 100% was all a rerun of a finished study said: say it ran nothing
        print(nothing_to_run(study_dir, len(graph)), file=sys.stderr)
    for node in pending:
        if node.name in finished:
            (node_dir(study_dir, node) / MARKER).unlink(missing_ok=True)
    return markers, pending


def nothing_to_run(study_dir: Path, nodes: int) -> str:
    """The line `study run` prints when every node of the study folder is finished and current (the words of
    `study plan`'s line on such a folder): it runs nothing, writes no node, and hands back the report as it is."""
    return f"study folder {study_dir}: all {nodes} nodes finished, reused as they are; nothing to run"


def report_rewritten(study_dir: Path, node: Node, marker: NodeMarker) -> bool:
    """Whether the report node's report (OUT/report/, one for every version of the study) is gone or was
    written again after its marker: by the report node of another version (a study file changed, run,
    then changed back, whose report node is found finished) or by `study report`. The node then runs
    again, so `study run` never hands back a missing report or another version's."""
    try:
        written = (study_dir / marker.result["path"]).stat().st_mtime_ns
        return written > (node_dir(study_dir, node) / MARKER).stat().st_mtime_ns
    except (OSError, KeyError, TypeError):
        return True


def pending_nodes(study_dir: Path, graph: Iterable[Node]) -> list[Node]:
    """The nodes of `graph` that running the study in `study_dir` now would run (`_to_run`), but a finished
    report node whose report was rewritten since (`run_graph` runs it again): it reads no task file,
    model or `--prepared` folder's tokens, and `absent.to_run` adds it."""
    graph = list(graph)
    return _to_run(graph, {n.name: read_marker(study_dir, n) for n in graph})


def _to_run(graph: Iterable[Node], markers: dict[str, NodeMarker | None]) -> list[Node]:
    """Nodes without a marker and every node downstream of one (their markers are dropped).

    A node run again (its folder lost or removed) keeps its key but may produce other outputs, so
    whatever read the old ones (evaluations of a model, the report) runs again too. `run_graph` deletes
    those nodes' marker files before anything runs (outputs stay, for the node to resume or overwrite):
    a study stopped before they ran again would otherwise take their old outputs for current ones. So
    after a crash nothing downstream of an unfinished node has a marker, and resuming costs nothing extra."""
    pending, names = [], set()
    for node in graph:  # graph order is topological
        if markers[node.name] is None or names.intersection(node.deps):
            markers[node.name] = None
            pending.append(node)
            names.add(node.name)
    return pending


def _marker(future: Future, node: Node) -> NodeMarker:
    try:
        return future.result()
    except BrokenProcessPool:
        raise UserError(
            f"the worker process running {node.name} died (killed, or out of memory); finished nodes are "
            "kept: rerun the same command to resume, with fewer --jobs if memory ran out"
        ) from None
    except UserError as exc:
        in_node(exc, node)
        raise
    except Exception as exc:  # an OSError, or a Rust library's own exception for one (`errors.no_room`)
        failure = exc if isinstance(exc, OSError) and exc.errno == errno.EROFS else no_room(exc)
        if failure is None:
            raise
        refusal = unwritable(failure)
        in_node(refusal, node)
        raise refusal from None


_UNWRITABLE = {**NO_ROOM, errno.EROFS: ("read-only file system", "make it writable again")}
"""The write failures of a node that are the disk's, not the node's: what `unwritable` says, and its fix:
`errors.NO_ROOM`'s (a full disk, a spent quota, a file past the size limit), and a file system gone
read-only under a study that checked its folder writable."""


def unwritable(exc: OSError) -> UserError:
    """The one line of a write a full disk, a spent quota or a file system gone read-only refused while a node
    ran (`in_node` leads it with the node): the CLI's own line for an `OSError` says the file alone (one of a
    study's many node folders). No room (`NO_ROOM`) is `DiskFull` (exit 3, as everywhere); a file
    system gone read-only under a study that checked its folder writable is exit 2. No marker was written,
    so the node is not taken for finished: it runs again on the rerun, from what it left."""
    where = f" while writing {exc.filename}" if exc.filename else ""
    said, fix = _UNWRITABLE[exc.errno]
    line = (
        f"{said}{where}; {fix} and rerun the same command (finished nodes are kept and "
        "this one resumes), or run the study again with --out on another disk"
    )
    return UserError(line) if exc.errno == errno.EROFS else DiskFull(line)


def in_node(exc: UserError, node: Node) -> None:
    """Lead the line of `exc`, raised while `node` ran (here or in a worker), with the node as `study status`
    and `study plan` name it: a file named alone (a truncated model) does not say which of a study's many
    nodes broke. The same exception, so its class and exit code stay; a line that already starts with the
    node is left as it is. Refusals before any node runs never come through here."""
    line = str(exc)
    if not line.startswith((f"{node.name}:", f"node {node.name}:", f"study node {node.name}:")):
        exc.args = (f"study node {node.name}: {line}",)


def _waiting_note(failed: Node, running: list[Node]) -> str:
    """Said the moment a node fails while others run: the study stops only once they end (leaving the
    pool waits for them, so their work is kept), which may be hours of pretraining with nothing said."""
    names = ", ".join(n.name for n in running)
    return (
        f"note: node {failed.name} failed; the study stops after the {count(len(running), 'node')} still running "
        f"({names}) {noun(len(running), 'finishes', 'finish')}, and then says why; Ctrl-C stops them now (they resume on the next run)"
    )


def _ready(pending: list[Node], markers: dict[str, NodeMarker | None], slots: int) -> list[Node]:
    """Up to `slots` pending nodes whose dependencies have all finished, in graph order."""
    ready = [n for n in pending if all(markers[d] is not None for d in n.deps)]
    return ready[: max(slots, 0)]


def _output(study_dir: Path, node: Node, marker: NodeMarker) -> NodeOutput:
    return NodeOutput(node_dir(study_dir, node), marker.result, node)


def _run_node(ctx: NodeContext, run: Callable[[NodeContext], dict]) -> NodeMarker:
    """Run one node (here or in a worker) and write its marker; returns the marker."""
    node, out = ctx.node, ctx.out_dir
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(f".{MARKER}.*.tmp"):  # a marker write cut short by a crash
        stale.unlink()
    started, t0, c0 = _now(), time.perf_counter(), _cpu_seconds()
    with study_node(out):  # the node's own folder, inside the study's: not refused as another's
        result = run(ctx) or {}
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    compute = {
        "tokens": None,
        "flops": None,
        **result.pop("compute", {}),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        **({"worker": slot} if (slot := worker_slot()) is not None else {}),
    }
    marker = NodeMarker(
        name=node.name,
        kind=node.kind,
        key=node.key,
        config=node.config,
        deps=tuple(node.deps),
        result=result,
        compute={**compute, "started": started, "finished": _now()},
    )
    record = dataclasses.asdict(marker)
    write_json_atomic(out / MARKER, record)
    # handed on as a later run reads it back (NaN as None, a tuple as a list), never as it was returned
    # here: a downstream node, the report included, sees the same result in the first run and on resume
    return NodeMarker.from_data(jsonlines.loads(json_text(record)))


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (all threads): on a shared machine this,
    not the wall time, says how long a node would take alone."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_study(
    spec: StudySpec,
    study_dir: Path,
    backend: Backend,
    *,
    fetch: bool = True,
    progress: bool = True,
    jobs: int = 1,
) -> Path:
    """Run `spec` into `study_dir` (resuming whatever finished before), `jobs` nodes at a time;
    returns the report's path."""
    if jobs < 1:
        raise UserError(f"jobs must be >= 1, got {jobs}; use --jobs 1 to run nodes one after the other")
    spec = pin_local_starts(spec)  # a study built in Python: its OWNER/NAME folders, as they are loaded
    study_dir = check_study_out(spec, study_dir)
    made = missing_folders(study_dir)  # the folder and its parents, removed again if the study is refused
    try:
        _make_study_dir(study_dir)
        return _run_locked(spec, study_dir, backend, fetch=fetch, progress=progress, jobs=jobs)
    except BaseException:
        # refused or interrupted (Ctrl-C during a fetch) before a node started: a folder this run made goes,
        # with its parents; one holding a node's work, or made by the user, stays (`outdir.undo_output`)
        undo_output(study_dir, made, (STUDY_RECORD, GRAPH))
        raise


def _make_study_dir(study_dir: Path) -> None:
    try:
        study_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"cannot create study folder {study_dir} ({exc.strerror}); choose a writable --out"
        ) from None
    if not os.access(study_dir, os.W_OK):
        raise UserError(f"study folder {study_dir} is not writable; choose a writable --out")


def check_study_out(spec: StudySpec, study_dir: Path) -> Path:
    """Refuse, touching nothing, what `outdir.check_output` refuses, for the Python API too. A folder holding
    only the lock (or its temporary file) is a study in (or killed in) its checks, before its marker."""
    from encoderlab.data.sources import mirror_folders
    from encoderlab.study.needs import corpus_locations, corpus_sources

    read = [c for d in spec.data for c in corpus_locations(d.corpus)]
    read += [m for d in spec.data for m in mirror_folders(corpus_sources(d.corpus))]  # "hf:..." is no path
    read += [d.prepared for d in spec.data if d.prepared]

    def ours(folder: Path) -> bool:  # also study folders from before the ownership marker
        return (folder / STUDY_RECORD).is_file() or all(is_lock_file(p.name, LOCK) for p in folder.iterdir())

    return check_output(study_dir, STUDY_KIND, sources=read, legacy=ours)


def _run_locked(
    spec: StudySpec, study_dir: Path, backend: Backend, *, fetch: bool, progress: bool, jobs: int
) -> Path:
    """`run_study` under the study folder's lock: every check, then the graph."""
    with folder_lock(study_dir / LOCK, f"study {spec.name}"), markers_read_once():  # until nodes run
        check_same_study(study_dir, spec)
        # resolves configs and checks controlled variables first; a task file or --prepared folder gone
        # since the nodes reading it finished: as the folder's graph.json recorded it (`study/absent.py`)
        graph, gone, idle = resumed_graph(spec, study_dir, backend)
        # the data of this graph's prepare nodes is still its corpus's, as `study plan` checks it first
        check_prepared_sources(spec, study_dir, graph, gone)
        if spec.max_passes is not None and not idle:  # a corpus the runs would repeat: refused here
            from encoderlab.study.plan import check_passes, plan_study

            check_passes(plan_study(spec, study_dir, graph))  # counted from that data (or its record)
        missing: list = []
        if not idle:  # a --prepared folder gone and no node to run: nothing to fetch or check
            missing = missing_assets(backend.required_assets(spec), fetch=fetch)
            backend.check_start(spec, study_dir, graph)  # every node's inputs not in an asset still to fetch
        if missing:  # validated first: a refused study fetched nothing into ENCODERLAB_HOME
            fetch_assets(missing)
            backend.check_fetched(spec, study_dir, graph, frozenset(missing))  # only what these hold
        create_output(study_dir, STUDY_KIND)  # marked ours once every check passed
        write_json_atomic(study_dir / STUDY_RECORD, to_dict(spec))
        write_json_atomic(
            study_dir / GRAPH,
            [
                {"name": n.name, "kind": n.kind, "key": n.key, "config": n.config, "deps": list(n.deps)}
                for n in graph
            ],
        )
        stale = stale_folders(study_dir, graph)
        if stale:
            print(stale_note(study_dir, stale, spec.name), file=sys.stderr)
        results = run_graph(spec, graph, backend, study_dir, progress=progress, jobs=jobs)
    return study_dir / results["report"]["path"]
