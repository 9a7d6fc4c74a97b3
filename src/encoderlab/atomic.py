"""Atomic file writes: a reader sees the old file or the new one, never half of either.

The text goes to a temporary name in the same folder (with the writer's pid, so two processes never
share one), is flushed to disk, then renamed over the target. Markers, summaries, progress records
and compute logs all go through here; large binary outputs use the same pattern on whole folders.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8) in one rename, after the bytes are on disk."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_json_atomic(path: Path, data: Any) -> None:
    """`write_text_atomic` of `data` as indented JSON with sorted keys."""
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True))


def print_json(result: Any, out: Path | None = None) -> None:
    """Print `result` as indented JSON and, with `out`, also write it there (its folder created)."""
    text = json.dumps(result, indent=2)
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(Path(out), text + "\n")
    print(text)
