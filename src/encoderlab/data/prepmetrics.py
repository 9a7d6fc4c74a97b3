"""`data prepare`'s progress as JSON lines: `OUT/metrics.jsonl`, as a pretraining run's `metrics.jsonl`.

Design. One line each time a checkpoint is written (every `checkpoint_every` chunks of `chunk_docs`
documents: the "every N documents" of one huge file, and the files finished in that span for a corpus of
many shards), and one for the chunks after the last checkpoint, at the end. A line holds what that span
read and wrote (`documents`, `tokens`, `skipped` and `removed` by reason, `files_done`: the files read to
their end since the line before), the file being read (`reading`), the seconds since this process started,
and the running totals (`total`), with where the first document of each skip reason is (`first_skipped`) and
each evaluation set's first removed document (`first_removed`, meta.json's).
`step` is the chunks tokenized so far, progress.json's `chunks`.

Writer: the trainer's `JsonlSink` (`jsonlines.py`, core) (one JSON object per line, flushed, a torn last line skipped on read),
with `step` as its key. The file is written in OUT.tmp with the rest, so a finished folder holds it. A
line is written before its checkpoint's progress.json: a resumed prepare cuts the file back to the lines of
steps up to its checkpoint (`keep_until_step`, as a resumed run's), so a line written after the checkpoint
by a killed process is dropped and written again, and none is lost or doubled. (A checkpoint from before
this file has no lines to continue: the first line after it spans everything from the start.) Trade-offs: `seconds`
differ between two runs of one recipe, so the file is no part of what is compared or keyed (a prepared
folder's identity is its meta.json's: `packed.identity`); and `skipped` counts what the reader has read,
which runs up to 2 x workers chunks ahead of the tokens (the same for the same --workers, resumed or not).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from encoderlab.data.packed import SPLITS
from encoderlab.jsonlines import JsonlSink, read_records

METRICS = "metrics.jsonl"
SKIP_REASONS = ("empty", "bad_records", "bad_files")
"""The `SourceStats` counts of documents a reader skipped (meta.json's `sources[i]`)."""


def _totals(kept: int, tally, stats: list) -> dict:
    """Running totals: documents read into chunks, tokens written, skips and removals by reason."""
    removed = {
        "by_id": tally.removed["id"],
        "by_ngram": tally.removed["ngram"],
        "empty_after_tokenization": tally.removed["empty"],
    }
    return {
        "documents": kept + sum(tally.removed.values()),
        "tokens": sum(sum(tally.tokens[s]) for s in SPLITS),
        "skipped": {r: sum(getattr(s, r) for s in stats) for r in SKIP_REASONS},
        "removed": removed,
    }


def first_skipped(sources: list) -> dict[str, str]:
    """Per skip reason, where its first document is (the first source's that has one); `sources`: their
    `SourceStats`, or meta.json's records of them (a folder from before has none: {})."""
    first: dict[str, str] = {}
    for s in sources:
        held = s.get("first_skipped") if isinstance(s, dict) else s.first_skipped
        for reason, where in held.items() if isinstance(held, dict) else ():
            if reason in SKIP_REASONS and isinstance(where, str):
                first.setdefault(reason, where)
    return first


def first_removed(records: list[dict]) -> dict[str, dict]:
    """Per evaluation set, the first document decontamination removed, over meta.json `decontamination`
    records in corpus order (a sharded prepare's parts, for `data merge`); a part from before names none."""
    first: dict[str, dict] = {}
    for record in records:
        held = record.get("first_removed")
        for name, where in held.items() if isinstance(held, dict) else ():
            if isinstance(where, dict):
                first.setdefault(name, where)
    return first


def _delta(now: dict, before: dict) -> dict:
    return {
        k: _delta(v, before.get(k, {})) if isinstance(v, dict) else v - before.get(k, 0)
        for k, v in now.items()
    }


@dataclass
class PrepareLog:
    """The metrics.jsonl of one prepare into `tmp` (module docstring); `resumed_at`: the checkpoint's chunks."""

    tmp: Path
    resumed_at: int | None = None
    against: list[str] = field(default_factory=list)
    """The evaluation sets' names, for `first_removed` (`Tally.named`)."""
    _sink: JsonlSink = field(init=False)
    _before: dict = field(init=False)
    _done: set = field(init=False)
    _start: float = field(init=False, default_factory=time.perf_counter)

    def __post_init__(self):
        path = self.tmp / METRICS
        self._sink = JsonlSink(path, keep_until_step=self.resumed_at)
        kept = read_records(path) if path.exists() else []
        self._before = kept[-1]["total"] if kept and isinstance(kept[-1].get("total"), dict) else {}
        self._done = {f for r in kept for f in r.get("files_done", ()) if isinstance(f, str)}

    def line(self, step: int, kept: int, tally, stats: list) -> None:
        """Log the span up to `step` chunks (`kept` documents and `tally`: what was written, `stats`: what the
        reader read)."""
        now = _totals(kept, tally, stats)
        files = [f for s in stats for f in s.files]
        done = [f["path"] for f in files if f.get("complete") and f["path"] not in self._done]
        reading = [f["path"] for f in files if not f.get("complete")]
        record = {"step": step, **_delta(now, self._before), "files_done": done}
        record.update(
            reading=reading[-1] if reading else None, seconds=round(time.perf_counter() - self._start, 3)
        )
        record["total"] = {
            **now,
            "files_done": len(self._done) + len(done),
            "first_skipped": first_skipped(stats),
            "first_removed": tally.named(self.against),  # as in meta.json: a resume keeps it (the tally)
        }
        self._sink.log(record)
        self._before, self._done = now, self._done | set(done)

    def close(self) -> None:
        self._sink.close()
