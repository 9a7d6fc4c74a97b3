"""What a study spent, as the report states it: totals per node kind and a row per pretraining run.

`compute.jsonl` (written by `runner.py`, one line per finished node) is read once, at the file's
boundary, into typed `NodeCompute` records; the report's compute section and `results.json`'s
`compute` entry are built from them as typed `Totals` and `RunCompute` rows (`ComputeSummary`), so
the renderers read fields, not keys.

Trade-offs
  * The file stays an open JSON-lines record (a backend's node kind may log more than the report
    reads); `NodeCompute.of` takes the fields the report uses and ignores the rest.
  * Unknown tokens or FLOPs (a node that did not count them) stay unknown in a total rather than
    counting as 0: a total of only unknowns is None, shown as "–".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from encoderlab.config import to_dict
from encoderlab.errors import UserError, problem_of
from encoderlab.study.data import StudyData, non_finite
from encoderlab.study.nodeconfig import PretrainNode
from encoderlab.study.runner import compute_records

if TYPE_CHECKING:
    from encoderlab.study.plan import CorpusSize


@dataclass(frozen=True, kw_only=True)
class NodeCompute:
    """One finished node's line of compute.jsonl, as the report reads it."""

    node: str
    """The node's name."""
    kind: str
    """Its kind (prepare, pretrain, eval, cka, report...)."""
    tokens: int | None = None
    """Tokens it trained on (None: not counted)."""
    flops: float | None = None
    """FLOPs it spent (None: not counted)."""
    wall_s: float = 0.0
    """Wall-clock seconds."""
    cpu_s: float = 0.0
    """CPU seconds of its process."""
    flops_method: str | None = None
    """How `flops` was counted."""
    branched_from: str | None = None
    """The pretraining node whose checkpoint a branched run started from."""
    shared_steps: int = 0
    """Steps of a branched run trained in its base (not counted here)."""
    shared_tokens: int = 0
    """Tokens of those steps."""

    @classmethod
    def of(cls, record: dict[str, Any]) -> NodeCompute:
        """The record's fields the report uses (a missing or null time counts as 0 s), type-checked: a
        value edited by hand (`wall_s: "slow"`) is a UserError naming the field (it was a TypeError)."""
        from encoderlab.config import from_dict

        values = {
            "node": record["node"],
            "kind": record["kind"],
            "tokens": record.get("tokens"),
            "flops": record.get("flops"),
            "wall_s": record.get("wall_s") or 0.0,
            "cpu_s": record.get("cpu_s") or 0.0,
            "flops_method": record.get("flops_method"),
            "branched_from": record.get("branched_from"),
            "shared_steps": record.get("shared_steps") or 0,
            "shared_tokens": record.get("shared_tokens") or 0,
        }
        return from_dict(cls, values, where="compute")


@dataclass(kw_only=True)
class Totals:
    """Compute summed over nodes; unknown tokens and FLOPs stay unknown."""

    tokens: int | None = None
    """Tokens, summed over the nodes that counted them (None: none did)."""
    flops: float | None = None
    """FLOPs, likewise."""
    wall_s: float = 0.0
    """Wall-clock seconds."""
    cpu_s: float = 0.0
    """CPU seconds."""
    nodes: int = 0
    """Nodes counted."""

    def add(self, tokens: int | None, flops: float | None, wall_s: float, cpu_s: float, nodes: int) -> None:
        if tokens is not None:
            self.tokens = (self.tokens or 0) + tokens
        if flops is not None:
            self.flops = (self.flops or 0) + flops
        self.wall_s += wall_s
        self.cpu_s += cpu_s
        self.nodes += nodes


@dataclass(frozen=True, kw_only=True)
class RunCompute:
    """One pretraining run's row: tokens against its budget, and where a branch started."""

    run: str
    """The model id."""
    tokens: int | None
    """Tokens it trained on itself (a branch's shared steps are its base's: the report's "tokens trained")."""
    budget: int
    """The token budget of its resolved RunConfig."""
    flops: float | None
    """FLOPs it spent itself."""
    wall_s: float
    """Wall-clock seconds."""
    note: str
    """Where a branch started; a mismatch of tokens seen against the budget."""
    passes: float | None = None
    """Passes over its dataset's unique tokens (None: not known)."""


@dataclass(frozen=True, kw_only=True)
class ComputeSummary:
    """The report's compute section."""

    by_kind: dict[str, Totals]
    """Totals per node kind, in the order kinds first finished."""
    total: Totals
    """The study's total."""
    runs: list[RunCompute]
    """A row per pretraining run."""
    corpora: dict[str, CorpusSize]
    """Dataset -> its unique tokens and how they were counted (`plan.py`)."""
    flops_method: str
    """How the FLOPs were counted, every method used joined by '; '."""

    def to_json(self) -> dict[str, Any]:
        """As results.json holds it (of a corpus, its unique tokens and how they are known)."""
        return {
            "by_kind": to_dict(self.by_kind),
            "total": to_dict(self.total),
            "runs": to_dict(self.runs),
            "corpora": {n: {"unique_tokens": c.unique_tokens, "how": c.how} for n, c in self.corpora.items()},
            "flops_method": self.flops_method,
        }


def compute_summary(data: StudyData, study_dir: Path) -> ComputeSummary:
    """Totals per node kind and per pretraining run, from the study's compute records (its report's aside)."""
    from encoderlab.study.plan import plan_study

    # A report node is the report, not the study's work: counting an earlier report made `study report` on a
    # finished folder differ from the report the study wrote (which cannot count itself).
    records = [_typed(data, r) for r in compute_records(study_dir, data.nodes) if r["kind"] != "report"]
    by_kind: dict[str, Totals] = {}
    for r in records:
        by_kind.setdefault(r.kind, Totals()).add(r.tokens, r.flops, r.wall_s, r.cpu_s, 1)
    total = Totals()
    for k in by_kind.values():
        total.add(k.tokens, k.flops, k.wall_s, k.cpu_s, k.nodes)
    plan = plan_study(data.spec, study_dir, data.nodes)
    passes = {p.model: p.passes for p in plan.runs}
    runs = [_run_compute(data, r, passes) for r in records if r.kind == "pretrain"]
    methods = sorted({r.flops_method for r in records if r.flops_method})
    return ComputeSummary(
        by_kind=by_kind,
        total=total,
        runs=runs,
        corpora=dict(plan.corpora),
        flops_method="; ".join(methods) or "not recorded",
    )


def _typed(data: StudyData, record: dict[str, Any]) -> NodeCompute:
    """A finished node's compute record (its node.json's `compute`, which compute.jsonl copies), typed; a
    value of another type, or a count that is not finite (printed "nan" in the report), names its node.json."""
    node = next(n for n in data.nodes if n.name == record["node"])
    counts = {k: record.get(k) for k in ("tokens", "flops", "wall_s", "cpu_s", "shared_tokens")}
    if (bad := non_finite(counts, "compute")) is not None:
        raise data.damaged(node, f"a number that is not finite, {bad}, which a finished node never records")
    try:
        return NodeCompute.of(record)
    except UserError as exc:
        raise data.damaged(node, problem_of(exc)) from None


def _run_compute(data: StudyData, r: NodeCompute, passes: dict[str, float | None]) -> RunCompute:
    node = next(n for n in data.nodes if n.name == r.node)
    budget = PretrainNode.of(node).tokens
    seen = (r.tokens or 0) + r.shared_tokens  # a branch's first steps ran in its base
    base = r.branched_from.split("/", 1)[1] if r.branched_from else None
    # the tokens column is the run's own (a total must not count the base's steps twice): say where the
    # rest are, or 307,200 beside a budget of 409,600 read as a run cut short
    notes = (
        [f"from {base} at step {r.shared_steps:,} ({r.shared_tokens:,} tokens, in {base}'s row)"]
        if base
        else []
    )
    notes += ["tokens seen differ from the budget"] if r.tokens is not None and seen != budget else []
    run = r.node.split("/", 1)[1]
    return RunCompute(
        run=run,
        tokens=r.tokens,
        budget=budget,
        flops=r.flops,
        wall_s=r.wall_s,
        note="; ".join(notes),
        passes=passes.get(run),
    )
