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
  deleted, so a crash loses at most the node in flight.
- **Nodes run one at a time, in a topological order.** On 2 CPU cores parallel nodes would only
  fight for the cores; on a GPU box each pretraining node uses every device itself.
- **A lock, not a database.** `.study.lock` is created atomically (hard link of a complete temp
  file) so it is never half-written; a lock whose pid is dead on this host is stale and taken
  over; a live holder is named in the error.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from encoderlab.config import to_dict
from encoderlab.errors import UserError
from encoderlab.locks import folder_lock
from encoderlab.study.graph import Backend, Graph, Node, build_graph
from encoderlab.study.spec import StudySpec

MARKER = "node.json"
LOCK = ".study.lock"


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


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temporary name, flush it to disk, then rename over `path`."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def node_dir(study_dir: Path, node: Node) -> Path:
    """Folder of a node's outputs: readable name plus the key prefix."""
    slug = re.sub(r"[^A-Za-z0-9_.@+-]+", "_", node.name.split("/", 1)[-1]).strip("_") or node.kind
    return study_dir / "nodes" / node.kind / f"{slug[:80]}-{node.key[:12]}"


def read_marker(study_dir: Path, node: Node) -> dict | None:
    """The finished record of `node`, or None if it has not finished."""
    path = node_dir(study_dir, node) / MARKER
    try:
        record = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return record if record.get("key") == node.key else None


# --------------------------------------------------------------------------- running


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_same_study(study_dir: Path, spec: StudySpec) -> None:
    """A folder holds one study: another study's folder is refused rather than mixed."""
    path = study_dir / "study.json"
    if not path.exists():
        return
    try:
        old = json.loads(path.read_text())
    except json.JSONDecodeError:
        return  # a study.json is written atomically; an unreadable one is not ours to judge
    if old.get("name") != spec.name:
        raise UserError(
            f"{study_dir} holds study {old.get('name')} (scale {old.get('scale')}); run {spec.name} in another --out folder"
        )


def compute_record(node: Node, marker: dict) -> dict:
    """The compute.jsonl line of a finished node."""
    return {"node": node.name, "kind": node.kind, "key": node.key[:12], **marker.get("compute", {})}


def compute_records(study_dir: Path, graph: Iterable[Node]) -> list[dict]:
    """One record per finished node, in graph order."""
    return [compute_record(n, m) for n in graph if (m := read_marker(study_dir, n)) is not None]


def _write_compute(study_dir: Path, records: list[dict]) -> None:
    tmp = study_dir / ".compute.jsonl.tmp"
    tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    os.replace(tmp, study_dir / "compute.jsonl")


def run_graph(
    spec: StudySpec, graph: Graph, backend: Backend, study_dir: Path, progress: bool = True
) -> dict:
    """Run every unfinished node of `graph` in order; returns {node name: result}."""
    study_dir = Path(study_dir)
    markers = {n.name: read_marker(study_dir, n) for n in graph}
    todo = sum(m is None for m in markers.values())
    bar = tqdm(total=len(graph), initial=len(graph) - todo, desc=spec.name, unit="node", disable=not progress)
    results: dict[str, NodeOutput] = {}
    try:
        for node in graph:
            if markers[node.name] is None:
                bar.set_postfix_str(node.name[-60:])
                markers[node.name] = _run_node(spec, node, backend, study_dir, results)
                _write_compute(study_dir, [compute_record(n, m) for n in graph if (m := markers[n.name])])
                bar.update(1)
            results[node.name] = NodeOutput(node_dir(study_dir, node), markers[node.name]["result"], node)
    finally:
        bar.close()  # ends the bar's line, so an error message starts on its own
    _write_compute(study_dir, [compute_record(n, markers[n.name]) for n in graph])
    return {name: out.result for name, out in results.items()}


def _run_node(spec: StudySpec, node: Node, backend: Backend, study_dir: Path, done: dict) -> dict:
    out = node_dir(study_dir, node)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(f".{MARKER}.*.tmp"):  # a marker write cut short by a crash
        stale.unlink()
    ctx = NodeContext(
        node=node, out_dir=out, inputs={d: done[d] for d in node.deps}, study_dir=study_dir, spec=spec
    )
    started, t0, c0 = _now(), time.perf_counter(), _cpu_seconds()
    result = backend.kinds[node.kind].run(ctx) or {}
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    compute = {
        "tokens": None,
        "flops": None,
        **result.pop("compute", {}),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
    }
    marker = {
        "name": node.name,
        "kind": node.kind,
        "key": node.key,
        "config": node.config,
        "deps": list(node.deps),
        "result": result,
        "compute": {**compute, "started": started, "finished": _now()},
    }
    write_json_atomic(out / MARKER, marker)
    return marker


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
) -> Path:
    """Run `spec` into `study_dir` (resuming whatever finished before); returns the report's path."""
    study_dir = Path(study_dir)
    try:
        study_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"cannot create study folder {study_dir} ({exc.strerror}); choose a writable --out"
        ) from None
    if not os.access(study_dir, os.W_OK):
        raise UserError(f"study folder {study_dir} is not writable; choose a writable --out")
    with folder_lock(study_dir / LOCK, f"study {spec.name}"):
        _check_same_study(study_dir, spec)
        graph = build_graph(spec, backend)  # resolves configs and checks controlled variables first
        ensure_assets(backend.required_assets(spec), fetch=fetch)
        write_json_atomic(study_dir / "study.json", to_dict(spec))
        write_json_atomic(
            study_dir / "graph.json",
            [
                {"name": n.name, "kind": n.kind, "key": n.key, "config": n.config, "deps": list(n.deps)}
                for n in graph
            ],
        )
        results = run_graph(spec, graph, backend, study_dir, progress=progress)
    return study_dir / results["report"]["path"]


def ensure_assets(names: list[str], fetch: bool) -> None:
    """Make sure every asset in `names` is fetched: fetch the missing ones, or name the command."""
    if not names:
        return
    from encoderlab.data import assets

    missing = [n for n in dict.fromkeys(names) if not assets.is_fetched(n)]
    if not missing:
        return
    command = f"encoderlab assets fetch {' '.join(missing)}"
    if not fetch:
        raise UserError(
            f"this study needs asset(s) {', '.join(missing)} that are not fetched; run: {command}"
        )
    try:
        assets.fetch(missing)
    except UserError as exc:
        raise UserError(
            f"this study needs asset(s) {', '.join(missing)} and fetching failed ({exc}); when a registry is reachable run: {command}"
        ) from None
