"""A finished node's marker, `node.json`: the one record that says a study node has finished.

The runner writes it atomically after the node's outputs (`study/runner.py`), so its presence is the
only truth about a node; the study's report (`study/data.py`) and `encoderlab advise`
(`advise/studyread.py`, which reads study folders without the rest of the study package) read it
through `NodeMarker.load`. A marker that cannot be read whole counts as no marker: the node runs again.
A marker read whole whose result evaluation cannot have written (`eval_damage`) is refused by both readers
in the one line `damaged_node` words, so the report and advise say the same of the same file: the check lives
here, beside the reader they share, rather than in `study/data.py`, which advise does not import.

Within `markers_read_once` (`study run`'s checks and resume, under the study's lock, before any node
runs) each marker is read once: the checks, the plan and the resume each asked for every node's marker,
three to five reads of each file per run. Outside it (while nodes run, whose markers the report must
see; in workers; in advise) every load reads the file.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from encoderlab import jsonlines
from encoderlab.errors import UserError

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from encoderlab.eval.summary import EvalRecord

MARKER = "node.json"

_READ_ONCE: ContextVar[dict[Path, NodeMarker | None] | None] = ContextVar("markers read once", default=None)
"""The markers loaded within `markers_read_once`, by path; None outside it (every load reads the file)."""


@contextmanager
def markers_read_once(once: bool = True) -> Iterator[None]:
    """Within it, `NodeMarker.load` reads each marker file once and hands back that read after; for a phase
    in which no marker is written or removed. `once=False` ends that within it: every load reads the file
    (the nodes of a run write their markers, which the report reads)."""
    token = _READ_ONCE.set({} if once else None)
    try:
        yield
    finally:
        _READ_ONCE.reset(token)


@dataclass(frozen=True)
class NodeMarker:
    """A finished node's `node.json`, written atomically after its outputs: its presence means finished."""

    name: str
    kind: str
    key: str
    """The node's key when it ran: a marker of another key is another node's (the config changed)."""
    config: dict[str, Any]
    deps: tuple[str, ...]
    result: dict[str, Any]
    """What the node's function returned (an eval node: its `EvalRecord` as data)."""
    compute: dict[str, Any]
    """Tokens, FLOPs, wall and CPU seconds, start and end (`study/compute.py` reads it typed)."""

    @classmethod
    def load(cls, path: Path) -> NodeMarker | None:
        """The marker at `path`; None when there is none, or one cut short or damaged (the node then
        counts as unfinished and runs again). Read once within `markers_read_once`."""
        read = _READ_ONCE.get()
        if read is None:
            return cls._read(path)
        if (path := Path(path)) not in read:
            read[path] = cls._read(path)
        return read[path]

    @classmethod
    def _read(cls, path: Path) -> NodeMarker | None:
        try:
            return cls.from_data(jsonlines.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return None

    @classmethod
    def from_data(cls, raw: Any) -> NodeMarker:
        """The marker `raw` (parsed node.json) records; ValueError when it is not one. The runner hands a
        node it has just finished on as this reads it back (`runner._run_node`), so a result's NaN is None
        and its tuple a list in the run that produced it too, as in every later run that reads it."""
        try:
            marker = cls(
                name=raw["name"],
                kind=raw["kind"],
                key=raw["key"],
                config=raw["config"],
                deps=tuple(raw["deps"]),
                result=raw["result"],
                compute=raw.get("compute", {}),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a node marker ({exc!r})") from None
        # every reader takes these as mappings: a list there was a TypeError in `study run` and the report
        if not all(isinstance(m, dict) for m in (marker.config, marker.result, marker.compute)):
            raise ValueError("not a node marker (config, result or compute is not a mapping)")
        return marker


def damaged_node(folder: Path, name: str, problem: str) -> UserError:
    """The refusal of finished node `name` (its folder `folder`) whose node.json holds `problem`: the file, and
    the rerun that redoes the node."""
    return UserError(
        f"{folder / MARKER} is damaged ({problem}); delete {folder} and run the study again, which redoes {name}"
    )


def eval_damage(records: Sequence[EvalRecord]) -> tuple[int, str] | None:
    """The first of finished eval nodes' records (its index in `records`) holding what evaluation never writes,
    with what, as `damaged_node` words it; None when none does: a score that is not a number (NaN, null or missing:
    `EvalRecord.non_finite`), then a test split the other runs of its task have (`missing_split`). Read, either
    was a KeyError or TypeError traceback from `select_lr`, or a NaN that made the paired tests depend on the
    order of the seeds."""
    from encoderlab.eval.summary import missing_split

    for i, record in enumerate(records):
        if (bad := record.non_finite()) is not None:
            return i, f"a score that is not a number, {bad}, which evaluation never writes"
    if (gap := missing_split(records)) is not None:
        return gap[0], (
            f"no test split {gap[1]}, which the other runs of task {records[gap[0]].task} have and evaluation "
            "always writes"
        )
    return None
