"""The asset record format on disk: one `{"id", "text", "meta"}` JSON object per line, UTF-8.

`write_jsonl` checks every record (string id, unique; non-empty string text; dict meta) so a normaliser
bug fails the fetch instead of producing a dataset that breaks a training run later. A records
generator may `return` a dict of extra manifest fields (e.g. how many files it skipped); the writer
hands it back merged with the counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from encoderlab.atomic import json_text


def write_jsonl(records: Iterable[dict], path: Path, *, desc: str = "") -> dict[str, Any]:
    """Write records to `path`; returns {"documents", "chars", **whatever the generator returned}."""
    ids: set[str] = set()
    chars = 0
    iterator = iter(records)
    extra: dict[str, Any] = {}
    with open(path, "w", encoding="utf-8") as f, tqdm(desc=desc, unit=" docs", leave=False) as bar:
        while True:
            try:
                rec = next(iterator)
            except StopIteration as stop:
                extra = stop.value or {}
                break
            _check(rec, ids)
            f.write(json_text(rec, ensure_ascii=False) + "\n")
            chars += len(rec["text"])
            bar.update()
    return {"documents": len(ids), "chars": chars, **extra}


def _check(rec: dict, ids: set[str]) -> None:
    if set(rec) != {"id", "text", "meta"} or not isinstance(rec["meta"], dict):
        raise ValueError(f"record keys must be id, text, meta (a dict); got {sorted(rec)}")
    if not isinstance(rec["id"], str) or rec["id"] in ids:
        raise ValueError(f"record id {rec['id']!r} is not a string or is repeated")
    if not isinstance(rec["text"], str) or not rec["text"].strip():
        raise ValueError(f"record {rec['id']} has an empty text")
    ids.add(rec["id"])


def read_jsonl(path: Path) -> Iterator[dict]:
    """The records of a data.jsonl, streamed."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)
