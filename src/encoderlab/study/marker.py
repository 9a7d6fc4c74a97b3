"""A finished node's marker, `node.json`: the one record that says a study node has finished.

The runner writes it atomically after the node's outputs (`study/runner.py`), so its presence is the
only truth about a node; the study's report (`study/data.py`) and `encoderlab advise`
(`advise/studyread.py`, which reads study folders without the rest of the study package) read it
through `NodeMarker.load`. A marker that cannot be read whole counts as no marker: the node runs again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from encoderlab import jsonlines

MARKER = "node.json"


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
        counts as unfinished and runs again)."""
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
