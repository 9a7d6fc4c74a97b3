"""JSON-lines files read back: the logs encoderlab appends to, and the files a user hands in.

Logs (a run's `metrics.jsonl`): a writer flushes one JSON object per line, so a process killed
mid-write leaves at most a torn last line. Their readers (the trainer cutting its file back on resume,
a study branching from a base run, the model card, `advise` reading a study) all skip that line, here,
instead of each parsing the file its own way.

A user's file (an `advise` ladder, `analyze` texts) is different: a bad line is the user's to fix, so
`json_objects` names it (file and line) instead of skipping it (`data.filekinds.user_text` reads
such a file whole, compressed or not). It imports nothing heavy, so `advise` and the model card use it without torch.

The writer of such a log is `JsonlSink` (one object per line, flushed; cut back to a step on resume), in core
because a pretraining run's `metrics.jsonl` (`train/metrics.py`) and `data prepare`'s (`data/prepmetrics.py`)
are both written by it.

`loads` is also how every JSON file encoderlab reads back is parsed (markers, state, meta, results):
one nested past Python's stack is a JSONDecodeError there, so each reader's "damaged" line covers it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from encoderlab.atomic import json_text, write_text_atomic
from encoderlab.errors import UserError


def finite_number(value: object) -> bool:
    """`value`, read back from JSON, is a finite number: not a bool (JSON's true is Python's 1), not text a
    hand edit left, not NaN or infinity (Python's json reads and writes those)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def loads(text: str) -> object:
    """`json.loads`, where JSON nested past Python's recursion limit (`[[[...` thousands deep) is a
    `JSONDecodeError` like any other bad line, not a RecursionError traceback."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested thousands deep", text, 0) from None


def _record(line: str) -> dict | None:
    try:
        record = loads(line)
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


def why_not_json(exc: json.JSONDecodeError) -> str:
    """What is wrong with a JSON line, in a refusal's brackets: the decoder's words, with the column where
    they point at one. Was `exc.msg` alone, which for a line cut short inside a string (a shard truncated,
    a record split by a raw newline) read "(Invalid control character at)", pointing at nothing."""
    return f"{exc.msg} column {exc.colno}" if exc.msg.endswith(" at") else exc.msg


def json_objects(path: Path, text: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) of the JSON-lines `text` of a user's file `path`, blank lines skipped; a line
    that is not one JSON object is a UserError naming the file and line."""
    # newlines only: str.splitlines also cuts at U+2028 and other separators a JSON string may hold raw
    for i, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(
                f"{path}:{i}: not valid JSON ({why_not_json(exc)}); one JSON object per line"
            ) from None
        if not isinstance(record, dict):
            raise UserError(f"{path}:{i}: expected a JSON object per line, got {type(record).__name__}")
        yield i, record


class JsonlSink:
    """One JSON object per line, flushed every line so a crash loses nothing logged."""

    def __init__(self, path: Path, keep_until_step: int | None = None):
        self._path = path
        if keep_until_step is not None:
            self._cut(keep_until_step)
        self._file = path.open("a")

    def _cut(self, step: int) -> None:
        if self._path.exists():
            kept = lines_until_step(self._path, step)
            write_text_atomic(self._path, "".join(ln + "\n" for ln in kept))

    def log(self, record: dict[str, Any]) -> None:
        self._file.write(json_text(record) + "\n")
        self._file.flush()

    def rewind(self, step: int) -> None:
        self._file.close()
        self._cut(step)
        self._file = self._path.open("a")

    def close(self) -> None:
        self._file.close()
