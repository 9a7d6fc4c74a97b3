"""The JSON-lines logs encoderlab appends to (a run's `metrics.jsonl`), read back.

A writer flushes one JSON object per line, so a process killed mid-write leaves at most a torn last
line. Readers of these logs (the trainer cutting its file back on resume, a study branching from a
base run, the model card, `advise` reading a study) all skip that line, here, instead of each parsing
the file its own way. It imports nothing heavy, so `advise` and the model card can use it without
torch. Files a user hands in (ladders, texts, task data) are checked line by line by their own
readers, which name the bad line instead of skipping it.
"""

from __future__ import annotations

import json
from pathlib import Path


def _record(line: str) -> dict | None:
    try:
        record = json.loads(line)
    except ValueError:  # a torn last line, or a blank one
        return None
    return record if isinstance(record, dict) else None


def read_records(path: Path) -> list[dict]:
    """The JSON objects of `path` in order, without a torn last line (raises OSError if unreadable)."""
    return [r for r in map(_record, Path(path).read_text(encoding="utf-8").splitlines()) if r is not None]


def lines_until_step(path: Path, step: int) -> list[str]:
    """The lines of a metrics log whose record's `step` is at most `step`, as written (a resumed run's
    file, or what a branch shares with its base); a torn or step-less line is left out."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [
        line for line in lines if (r := _record(line)) is not None and r.get("step", float("inf")) <= step
    ]
