"""Reading a resolved hub dataset's records (`hub.HubDataset`): the `datasets` stream cut into one shard per
data file, the documents `data prepare` and tokenizer training take from it, and the text field of each record.

Split from `hub.py` along its seam: that module says where a hub id is and which files a split is (resolution,
mirrors, pins, nothing read); this one reads them. The text field is a dotted path (`data/fieldpath.py`),
refused as JSON lines and parquet are where it stops or meets no text: a list on the way, or named whole,
gets the index path to the text in its element (`fieldpath.list_guess`, the one rule for all three), where
a hub record said only "fix #text_field". Trade-off: a refusal reads the one record it stopped at (as JSON
lines do), not the dataset's features, so the suggestion is what that record holds.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

from encoderlab.data.fieldpath import FieldMissing, list_guess, lookup
from encoderlab.data.filerecords import file_record
from encoderlab.data.hub import HubDataset, import_datasets, is_commit
from encoderlab.errors import UserError, first_line


def stream_files(ds: HubDataset, indices: range, columns: list[str]) -> Iterator[tuple[int, dict]]:
    """(file index, record) for the files `indices` of `ds`, in order, streamed by `datasets`.

    The stream is `datasets.load_dataset(location, config, split=..., streaming=True)` cut into one
    shard per data file, so a worker reads only its own files and the concatenation over workers
    is the one-worker stream."""
    datasets = import_datasets()

    if not indices:
        return
    # a stream prepares nothing, but its builder takes a lock file in its cache folder and leaves it there:
    # a scratch one, gone with the stream, so a refusal (a field the records lack) leaves none in HF_HOME
    with tempfile.TemporaryDirectory(prefix="encoderlab-stream-") as scratch:
        yield from _stream(datasets, ds, indices, columns, scratch)


def _stream(
    datasets, ds: HubDataset, indices: range, columns: list[str], cache_dir: str
) -> Iterator[tuple[int, dict]]:
    """`stream_files`' records, its builder's cache `cache_dir`."""
    # pinned: the commit the files were listed at (a pinned branch may move meanwhile), else as before
    at = {"revision": ds.revision if is_commit(ds.revision) else ds.pinned} if ds.pinned else {}
    try:
        stream = datasets.load_dataset(
            ds.location,
            ds.config,
            split=ds.split,
            data_dir=ds.data_dir,
            streaming=True,
            cache_dir=cache_dir,
            **at,
        )
    except Exception as exc:
        raise UserError(f"cannot stream hub dataset '{ds.hub_id}' ({first_line(exc)})") from None
    if stream.n_shards != len(ds.files):
        raise UserError(
            f"hub dataset '{ds.hub_id}' streams as {stream.n_shards} shards but lists {len(ds.files)} files; "
            "encoderlab cannot split it by file"
        )
    names = list(stream.features) if stream.features is not None else None
    if names is not None:
        # a dotted text field (`meta.text`, `data/fieldpath.py`) reads the column it starts in
        wanted = [c if c in names else c.split(".")[0] for c in columns]
        if wanted[0] not in names:
            raise UserError(
                f"hub dataset '{ds.hub_id}' has no column '{columns[0]}' (columns: {', '.join(names)}); "
                "fix #text_field"
            )
        stream = stream.select_columns(list(dict.fromkeys(c for c in wanted if c in names)))
    for k in indices:
        for record in stream.shard(num_shards=len(ds.files), index=k, contiguous=True):
            yield k, record


def read_hub_documents(ds: HubDataset, files: range, text_field: str, id_field: str, stats) -> Iterator:
    """`Document`s of `ds`'s files `files`, one file after the other, ids `HUB_ID#ID` (or the file
    and row when a record has no id); per-file counts go into `stats.files` (a `SourceStats`)."""
    from encoderlab.data.sources import Document  # sources imports this module: import at call time

    entries = {k: {"path": ds.repo_path(k), "docs": 0, "complete": False} for k in files}
    stats.files.extend(entries.values())
    row, current = 0, None
    for k, record in stream_files(ds, files, [text_field, id_field]):
        if k != current:
            if current is not None:
                entries[current]["complete"] = True
            row, current = 0, k
            _record_mirror_file(ds, k, entries[k])
        text = _text(ds, record, text_field)
        rid = record.get(id_field)
        entries[k]["docs"] += 1
        where = rid if rid is not None else f"{entries[k]['path']}:{row}"
        yield Document(f"{ds.hub_id}#{where}", text)
        row += 1
    for k in files:  # every file of the slice was streamed to its end (empty ones included)
        if "sha256" not in entries[k]:
            _record_mirror_file(ds, k, entries[k])
        entries[k]["complete"] = True


def _text(ds: HubDataset, record: dict, text_field: str) -> str:
    """The text `text_field` names in a hub `record`, a dotted path into its structs too (`data/fieldpath.py`);
    a null is an empty document, as in parquet files."""
    try:
        text = lookup(record, text_field)
    except FieldMissing as miss:
        problem = f"has no field '{text_field}' ({miss.why()}"
        raise _no_text(ds, problem, miss.at, text_field, miss.found) from None
    if isinstance(text, list):  # named whole: its element's text, entered by index
        why = FieldMissing(text_field, text).why()
        raise _no_text(ds, f"field '{text_field}' holds list, not text ({why}", text_field, text_field, text)
    if text is not None and not isinstance(text, str):
        raise UserError(
            f"hub dataset '{ds.hub_id}' field '{text_field}' holds {type(text).__name__}, not text; fix #text_field"
        )
    return "" if text is None else text


def _no_text(ds: HubDataset, problem: str, at: str, key: str, found) -> UserError:
    """The refusal of text field `key` where `problem` (its bracket left open) is what stopped it at `at`,
    whose value is `found`: a list names the index path to the text in its element, as JSON lines and parquet
    do (`fieldpath.list_guess`); anything else, only the option to fix."""
    guesses, choices = (
        list_guess(at, key, FieldMissing(at, found).strings()) if isinstance(found, list) else ([], "")
    )
    fix = f"fix #text_field, e.g. #text_field={guesses[0]}" if guesses else "fix #text_field"
    return UserError(f"hub dataset '{ds.hub_id}' {problem}{choices}); {fix}")


def _record_mirror_file(ds: HubDataset, k: int, entry: dict) -> None:
    """For a mirror's file `k` (read as `datasets` streams it): its size, sha256 and mtime, as a local
    file's are recorded (`filerecords.file_record`), so an edit in place is found as one of a local
    corpus is (`data/freshness.py`); the entry keeps its repo path (the mirror is in the identity).
    Nothing for a file of the hub, which its revision pins. Costs one more read of each mirror file."""
    if ds.location != ds.hub_id:
        entry.update({key: v for key, v in file_record(Path(ds.files[k])).items() if key in _RECORDED})


_RECORDED = ("bytes", "sha256", "mtime_ns")
"""What a mirror file's entry takes of `file_record` (its `path` stays the repo path; `complete` says
whether it was streamed to its end)."""
