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
            raw = jsonlines.loads(Path(path).read_text(encoding="utf-8"))
            marker = cls(
                name=raw["name"],
                kind=raw["kind"],
                key=raw["key"],
                config=raw["config"],
                deps=tuple(raw["deps"]),
                result=raw["result"],
                compute=raw.get("compute", {}),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        # every reader takes these as mappings: a list there was a TypeError in `study run` and the report
        mappings = (marker.config, marker.result, marker.compute)
        return marker if all(isinstance(m, dict) for m in mappings) else None
