"""Whether a prepared folder, or a `--shard` part of one, still holds what its sources hold now.

The recipe names the sources, not their contents, so `data prepare` into a folder of the same recipe
said "nothing to do", and a leftover part `OUT.shards/I-of-N` was reused and merged, after the source
files had changed. meta.json records what was read of each local file (`files`: path, bytes, sha256,
complete, mtime_ns; `data/filerecords.py`), the record `packed.identity` digests; `source_change`
compares it with the files the recipe's sources name now:

  * the file list: a file read then that the source no longer names, or one it names now among those
    read (or after them, when the source was read to its end: `exhausted`, also the source a
    `first_exhausted` mixture stopped on), is a change;
  * each file read: `filerecords.file_change` (a stat when size and mtime are as recorded, else the
    bytes read are hashed again, so a file touched or copied but unchanged still matches); a file
    `--on-error skip` skipped because it could not be opened is recorded so (`sha256` null) and is a
    change once it opens (one open per such file), while still unreadable it is none.

Cost and trade-off: on the usual path (files untouched since prepare) one stat per file, whatever
the corpus's size; a file whose mtime moved is hashed once per check (about a second per GB). Trusting
size and mtime misses a file rewritten to its old size with its old mtime put back (as git's index
does); hashing every file on every rerun would read the whole corpus to say "nothing to do". Folders
from before mtimes were recorded are hashed. Hub data (`hf:`, named corpora) is pinned by the
revision in its source identity and not listed again here (that may need the network); the files of a
hub mirror (`ENCODERLAB_HUB_DATA`, the identity's `mirror`), which can be edited in place, are recorded and
checked as local files are, at the mirror folder the identity names, whose split is listed again from its
card (no network), so a file added there is new as in a local folder (a folder from before they were
recorded is not checked).

The reading is checked too: meta.json and a tokenizer's SOURCES record `txt_reading` (`TXT_READING`), the
way .txt files were cut into lines. A folder made by older reading code (no `txt_reading`) whose .txt files,
unchanged, hold a lone `\r` would read as other documents now (`reading_change`), and is a change; one whose
.txt files hold none (LF, CRLF: the older reading ended lines at `\r\n` too) reads the same and stays up to
date. Cost: each such file is read once, up to its first lone `\r`: its verdict is remembered by its stat
(device, inode, size, mtime, ctime) for the process and, under $ENCODERLAB_HOME/cache/txt-scans/, for later
commands (`data/txtscans.py`), since nothing is written into the folder by a check: a folder that stays
old was read in full by every command. Recording the version outside the recipe keeps every folder's
identity and study node key.

A change is refused, never prepared over: the folder may be what a run's checkpoints were trained on
(a resume on data prepared again is refused too, `train/trainer.py`), so the fix is another --out or
deleting the folder. A source that is not on this machine at all (a merge away from the workers'
files) cannot be checked: a warning says so.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

from encoderlab.config import from_dict
from encoderlab.data.filekinds import DECOMPRESS_ERRORS, decompressed, file_kind, misnamed
from encoderlab.data.filerecords import file_change
from encoderlab.data.hub import is_commit, list_mirror
from encoderlab.data.mirrorpin import read_unpinned, verified_commit
from encoderlab.data.shard import Shard
from encoderlab.data.sources import SourceConfig, describe, expand
from encoderlab.data.txtscans import recalled, remember, scan_key
from encoderlab.errors import UserError

log = logging.getLogger(__name__)


def source_change(meta: dict) -> str | None:
    """The first difference, in words, between the local files `meta` records having read and those its
    recipe's sources (its `shard`'s slice of them) name now (`files_change`), or, the files the same, how
    this code would read them otherwise (`reading_change`); None when there is none."""
    return files_change(meta) or reading_change(meta)


def files_change(meta: dict) -> str | None:
    """The first difference, in words, between the local files `meta` records having read and those its
    recipe's sources name now, the reading aside: restoring the files undoes it, which it does not undo
    for a `reading_change`."""
    recipe = meta.get("recipe") if isinstance(meta.get("recipe"), dict) else {}
    shard = Shard(*recipe["shard"]) if isinstance(recipe.get("shard"), list) else None
    configs, sources = _list(recipe.get("sources")), _list(meta.get("sources"))
    # a folder from before `exhausted` was recorded: the sources a recipe reads whole
    whole = recipe.get("max_docs") is None and (len(configs) == 1 or recipe.get("stop") == "all_exhausted")
    skip = recipe.get("on_error") == "skip"  # a misnamed file was skipped and is not recorded
    for config, source in zip(configs, sources):
        if not (isinstance(config, dict) and isinstance(source, dict)):
            continue
        to_end = source["exhausted"] if isinstance(source.get("exhausted"), bool) else whole
        if change := _change(config, source, shard, to_end=to_end, skip=skip):
            return _elsewhere(config, source) or change
    return None


TXT_READING = 2
"""How `filereaders._lines` cuts .txt files into lines, recorded as `txt_reading`: 2, at `\n`, `\r\n` and a
lone `\r` (classic Mac files). Before (no `txt_reading`): at `\n` alone, a lone `\r` kept in a line, a
`\r\n` ended one as now (`line.rstrip("\r\n")`; file unit: `\r\n` replaced by `\n`), but the first
versions also kept `\r\n` in paragraphs and in a file's document; they recorded files without `mtime_ns`,
as versions just after them did. Raise it when the reading of .txt files changes again."""


def reading_change(meta: dict) -> str | None:
    """The first .txt file `meta` (a prepared folder's meta.json, a tokenizer's SOURCES) records having read
    that would read as other documents now, in words, where `meta` was made by an older reading than
    `TXT_READING`: one holding a lone `\r` (one no `\n` follows); one holding any `\r` (`\r\n` too) where
    its record has no `mtime_ns`, so may be the first versions' (`TXT_READING`). None otherwise (a file
    that cannot be opened is left to `_change`): a CRLF file recorded since reads as now, no change."""
    reading = meta.get("txt_reading")
    if isinstance(reading, int) and reading >= TXT_READING:
        return None
    entries = [e for s in _list(meta.get("sources")) if isinstance(s, dict) for e in _list(s.get("files"))]
    # a file read more than once (a source restarted by an `all_exhausted` mixture) is scanned once, as
    # one the first versions may have read if any of its records has no mtime
    paths: dict[Path, bool] = {}
    for e in entries:
        if isinstance(e, dict) and isinstance(e.get("path"), str):
            path = Path(e["path"])
            paths[path] = paths.get(path, False) or "mtime_ns" not in e
    for path, first_versions in paths.items():
        if file_kind(path) == "txt" and (found := _carriage_returns(path)) is not None:
            lone, any_cr = found
            if lone:
                return (
                    f"{path} holds a lone \\r (no \\n after it), which ends a line since an older encoderlab "
                    "read it: it reads as other documents now"
                )
            if any_cr and first_versions:
                return (
                    f"{path} holds \\r\\n line ends, which an encoderlab from before file mtimes were recorded "
                    "may have kept in its documents: it may read as other documents now"
                )
    return None


def _carriage_returns(path: Path) -> tuple[bool, bool] | None:
    """(whether `path`'s text holds a lone `\r`, whether it holds any `\r`); None when it cannot be read
    now (no reading to compare). Remembered by the file's stat (`txtscans.scan_key`): for the process
    (`_scanned`: a study checks its data's record and its tokenizer's, over the same corpus, and a merge
    each part's) and across commands (`txtscans`: a folder that stays old was read in full by each
    command). The ctime is in the key because a chmod changes it and not size or mtime: an unreadable
    file made readable was still None for the rest of the process."""
    try:
        st = path.stat()
    except OSError:
        return None
    return _scanned(str(path), tuple(scan_key(str(path), st)))


@functools.lru_cache(maxsize=4096)
def _scanned(path: str, key: tuple) -> tuple[bool, bool] | None:
    """`_carriage_returns`, recalled from an earlier command or read; the stat in `key` makes a file
    changed since read again. Unreadable (None) is never remembered beyond the process."""
    if (verdict := recalled(list(key))) is not None:
        return verdict
    try:
        with open(path, "rb") as raw, decompressed(Path(path), raw) as f:
            verdict = lone_cr(f)
        after = scan_key(path, os.stat(path))
    except (OSError, ValueError, *DECOMPRESS_ERRORS):  # unreadable now: no reading to compare
        return None
    if after == list(key):  # not written while read: the verdict is that of the bytes `key` names
        remember(after, verdict)
    return verdict


def lone_cr(f, size: int = 1 << 20) -> tuple[bool, bool]:
    """(whether the binary stream `f` holds a `\r` no `\n` follows, at its end too; whether it holds any
    `\r`), read in `size` chunks up to the first lone one: a file holding one is a change whatever
    follows, while one without (LF, CRLF) is read to its end. A chunk's last `\r` waits for the next."""
    any_cr = pending = False
    while chunk := f.read(size):
        if pending and not chunk.startswith(b"\n"):
            return True, True
        pending = chunk.endswith(b"\r")
        body = chunk[:-1] if pending else chunk
        if b"\r" in body.replace(b"\r\n", b""):
            return True, True
        any_cr = any_cr or pending or b"\r" in body
    return pending, any_cr


def _elsewhere(config: dict, source: dict) -> str | None:
    """A source path that resolves here to other files than those it was prepared from (`resolved`): a
    relative --source run from another working folder. Said instead of the change it shows, which named
    the files found here as if those read had changed ("c.jsonl now holds other bytes")."""
    location, then = config.get("location"), source.get("resolved")
    if not (isinstance(location, str) and isinstance(then, str) and then):
        return None  # not local files, or a folder from before `resolved` was recorded
    here = os.path.realpath(location)
    if here == then:
        return None
    return (
        f"{location} is {here} here, not {then}, what it was prepared from (a relative path is read from the "
        "working folder)"
    )


def as_asked(meta: dict, recipe: dict | None) -> dict:
    """`meta` as if prepared with `recipe`'s source locations where these differ only by the path that
    reaches the same files (`--source a/c.jsonl` in the parent, then `--source c.jsonl` in a/: their
    resolved absolute paths match), its recorded files named as the location names them now; `meta`
    itself otherwise. Only for comparing: meta.json keeps the location first given, the folder its keys."""
    old = meta.get("recipe")
    if not (isinstance(old, dict) and isinstance(recipe, dict)) or old == recipe:
        return meta
    was, now, read = _list(old.get("sources")), _list(recipe.get("sources")), _list(meta.get("sources"))
    if {**old, "sources": now} != recipe or not len(was) == len(now) == len(read):
        return meta
    sources = []
    for a, b, source in zip(was, now, read):
        moved = source if a == b else _moved(a, b, source)
        if moved is None:
            return meta
        sources.append(moved)
    return {**meta, "recipe": recipe, "sources": sources}


def _moved(was, now: dict, source) -> dict | None:
    """`source` (read as `was`) with its files named as `now` names them here, when `now` differs from
    `was` only by a location that resolves here to the path `was` resolved to then; else None."""
    then = source.get("resolved") if isinstance(source, dict) else None
    if not _relocated(was, now, then):
        return None
    if (base := _read_in(was["location"], then)) is None:
        return None
    try:
        listed = describe(expand(from_dict(SourceConfig, now)))["files"]
    except UserError:
        return None
    names = {os.path.realpath(p): str(p) for p in listed}
    files = []
    for entry in _list(source.get("files")):
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            real = os.path.realpath(base / entry["path"])
            entry = {**entry, "path": names.get(real, real)}
        files.append(entry)
    return {**source, "files": files}


def _relocated(was, now, then) -> bool:
    """True when source config `now` is `was` but for a location that resolves here to `then`, the path
    `was` resolved to when read (meta.json's or progress.json's `resolved`)."""
    return (
        isinstance(was, dict)
        and isinstance(now, dict)
        and isinstance(now.get("location"), str)
        and {**was, "location": now["location"]} == now
        and isinstance(then, str)
        and bool(then)
        and os.path.realpath(now["location"]) == then
    )


def same_files(old: dict, recipe: dict, resolved: list) -> bool:
    """True when `recipe` is `old`, or differs from it only by source locations that reach the files `old`'s
    did (`resolved`: per source, its path made absolute then); for an interrupted prepare's checkpoint
    (`data/resume.py`), as `as_asked` for a finished folder."""
    was, now = _list(old.get("sources")), _list(recipe.get("sources"))
    if old == recipe:
        return True
    if {**old, "sources": now} != recipe or not len(was) == len(now) == len(resolved):
        return False
    return all(a == b or _relocated(a, b, then) for a, b, then in zip(was, now, resolved))


def _read_in(location, then: str) -> Path | None:
    """The working folder a source `location` that resolved to `then` was read in (its relative files
    were recorded from there); None where that cannot be told (a symlink or `..` in the location)."""
    if not isinstance(location, str):
        return None
    base = Path(then)
    for _ in () if os.path.isabs(location) else Path(location).parts:
        base = base.parent
    return base if os.path.realpath(base / location) == then else None


def refuse_changed(folder: Path, meta: dict, *, other_out: bool = True) -> None:
    """One line when `folder` (holding `meta`) was prepared from sources that changed since. `other_out`:
    the command can write elsewhere (`data prepare`; `data merge --out` names where its parts are)."""
    if (change := source_change(meta)) is not None:
        raise UserError(
            f"{folder} was prepared from sources that changed since ({change}); nothing was changed: "
            f"{redo_fix(folder, other_out=other_out)} and run the command again"
        )


def redo_fix(folder: Path, *, other_out: bool) -> str:
    """The fix for an output `folder` that holds what this command cannot keep: another --out, or, for
    `data merge` (`other_out` False), whose --out also names where its parts are (OUT.shards, so
    another --out finds none), only clearing the way."""
    return f"choose another --out, or delete {folder}" if other_out else f"delete {folder} (or move it away)"


def merge_elsewhere(out: Path) -> str:
    """How `data merge --out OUT` writes somewhere else: its parts are found by OUT (OUT.shards), so
    "choose another --out" finds none; the parts move with it."""
    shards = Path(out).with_name(Path(out).name + ".shards")
    return f"move {shards} to NEW.shards and run `encoderlab data merge --out NEW`"


def _change(config: dict, source: dict, shard: Shard | None, *, to_end: bool, skip: bool) -> str | None:
    read = _read(source)
    try:
        cfg = expand(from_dict(SourceConfig, config))
        if not cfg.location.startswith("hf:"):
            desc = describe(cfg)
        elif (listed := _mirror_listing(cfg, source.get("identity"), read)) is None:
            return None  # the hub's own files: pinned by its revision; listing them may need the network
        else:
            (read, desc), skip = listed, False
    except UserError as exc:  # a merge on a machine without the workers' files
        log.warning("what was read of %s is not checked: %s", config.get("location"), exc)
        return None
    span = (shard or Shard(0, 1)).select_in(desc["span"])
    now = [str(p) for p in desc["files"][span.start : span.stop] if not (skip and misnamed(p))]
    paths = list(read)
    at = next((i for i, (a, b) in enumerate(zip(paths, now)) if a != b), min(len(paths), len(now)))
    if at < len(now) and (at < len(paths) or to_end) and now[at] not in read:
        return f"{now[at]} is new in {cfg.location}"
    if at < len(paths):
        return f"{paths[at]} is no longer in {cfg.location}"
    return next(filter(None, map(file_change, read.values())), None)


def _mirror_listing(cfg: SourceConfig, identity, read: dict[str, dict]) -> tuple[dict, dict] | None:
    """For a source read from a hub mirror (`ENCODERLAB_HUB_DATA`): what was read, keyed by its path in the
    mirror folder the identity records, and the split's files there now (`hub.list_mirror`: no cache, no
    network), so a file added to the mirror, or gone from it, is a change as in a local folder, and one
    edited in place is found by `file_change`. None for the hub's own files and for a folder from before
    mirror files were recorded (nothing to compare)."""
    mirror = identity.get("mirror") if isinstance(identity, dict) else None
    if not (isinstance(mirror, str) and read):
        return None
    if not Path(mirror).is_dir():  # a merge on a machine without the workers' mirror
        log.warning(
            "what was read of %s is not checked: its mirror %s is not on this machine", cfg.location, mirror
        )
        return None
    try:
        ds = list_mirror(cfg.location[3:], cfg.hf_config, cfg.hf_split, cfg.hf_data_dir, mirror)
        listed = [ds.repo_path(k) for k in range(len(ds.files))]
    except UserError as exc:  # no `datasets` here, or a card it cannot read: the files read are still checked
        log.warning("the files %s lists now are not checked: %s", cfg.location, exc)
        listed = [p for p in _list(identity.get("files")) if isinstance(p, str)]
    files = [str(Path(mirror) / p) for p in listed]
    recorded = identity.get("file_span")  # the `hf_files` slice, clipped: files gone are "no longer in"
    a, b = recorded if isinstance(recorded, list) and len(recorded) == 2 else (0, len(files))
    span = range(min(a, len(files)), min(b, len(files)))
    return {str(Path(mirror) / p): {**e, "path": str(Path(mirror) / p)} for p, e in read.items()}, {
        "files": files,
        "span": span,
    }


def held_revisions(meta: dict) -> str:
    """What hub data a prepared folder holds, for its "nothing to do" line (read from `meta`, no network):
    ` (hf:ID at revision SHA, ...)`, or from a mirror; "" for a folder of local files only."""
    held = []
    for source in _list(meta.get("sources")):
        ident = source.get("identity") if isinstance(source, dict) else None
        if isinstance(ident, dict) and ident.get("kind") == "hf":
            at = (
                f"from its mirror {ident['mirror']}"
                if ident.get("mirror")
                else f"at revision {ident.get('revision')}"
            )
            held.append(f"hf:{ident.get('hub_id')} {at}")
    if not held:
        return ""
    return f" ({', '.join(held)}, kept whatever the hub holds now; to read another, pin #hf_revision into another --out)"


def pins_held(meta: dict, recipe: dict) -> bool:
    """True when `recipe` differs from the one a prepared folder (`meta`) records only in hub sources now
    pinned (`hf_revision`) to the full commit sha that folder records having read (unpinned then, or pinned
    to a branch or tag that resolved to it; or read unpinned from a mirror whose download records name that
    sha: `held_commit`): the same data, so a rerun finds nothing to do (it was refused as prepared
    differently). The folder keeps its recipe, so its identity and study keys do not move."""
    old = meta.get("recipe")
    if not isinstance(old, dict) or {**old, "sources": None} != {**recipe, "sources": None}:
        return False
    olds, news, read = _list(old.get("sources")), _list(recipe.get("sources")), _list(meta.get("sources"))
    if not len(olds) == len(news) == len(read):
        return False
    return all(was == now or _pinned_as_read(was, now, source) for was, now, source in zip(olds, news, read))


def _pinned_as_read(was, now, source) -> bool:
    if not (isinstance(was, dict) and isinstance(now, dict)):
        return False
    unpin = {k: v for k, v in now.items() if k != "hf_revision"}
    pin = now.get("hf_revision")
    return (
        {k: v for k, v in was.items() if k != "hf_revision"} == unpin
        and isinstance(pin, str)
        and pin == held_commit(source)
    )


def as_read(meta: dict, recipe: dict) -> dict:
    """`recipe` (that of the folder or part `meta`) with each hub source pinned (`hf_revision`) to the full
    commit sha `meta` records having read it at (`held_commit`), however it was asked (unpinned, a branch or
    tag, that sha: an unpinned recipe names no `hf_revision`; a mirror read unpinned, the commit its download
    records verify); other sources, and one without such a record, as they are. Two parts equal so read the
    same files whatever pin spelled them (`data merge`), as does an interrupted prepare (`data/resume.py`)."""
    configs, read = _list(recipe.get("sources")), _list(meta.get("sources"))
    if len(configs) != len(read):
        return recipe
    sources = [
        {**config, "hf_revision": commit}
        if isinstance(config, dict) and (commit := held_commit(source))
        else config
        for config, source in zip(configs, read)
    ]
    return {**recipe, "sources": sources}


def held_commit(source) -> str | None:
    """The full commit sha a hub source of a prepared folder (an entry of meta.json's `sources`) was read
    at: the revision it records (read unpinned, or pinned to a branch, tag or sha), or for a mirror read
    unpinned (`local`) the commit its download records verified when it was read (`mirror_commit`, recorded
    since encoderlab keeps it: no mirror needed, whatever it holds now); for a folder from before, the
    commit they verify now (`mirrorpin.verified_commit`: the mirror must be on this machine). None for
    local files, a mirror without such records or a record without one. A pin of exactly this sha reads
    the same files (`pins_held`)."""
    ident = source.get("identity") if isinstance(source, dict) else None
    revision = ident.get("revision") if isinstance(ident, dict) else None
    if isinstance(revision, str) and is_commit(revision):
        return revision
    if not read_unpinned(ident):
        return None
    if "mirror_commit" in source:  # verified when read; null: its records named no one commit then
        commit = source["mirror_commit"]
        return commit if isinstance(commit, str) and is_commit(commit) else None
    return verified_commit(ident)


def identity_as_read(source):
    """A source's recorded identity with its revision as the commit it was read at (`held_commit`): for a
    mirror read unpinned whose records verify commit X, the identity a prepare pinned to X records (they
    differ in nothing else: `hub.resolve_dataset`); otherwise as recorded. Two parts equal so read the same
    files (`data merge`)."""
    ident = source.get("identity") if isinstance(source, dict) else None
    if not isinstance(ident, dict) or ident.get("revision") != "local":
        return ident
    commit = held_commit(source)
    return {**ident, "revision": commit} if commit else ident


def recipe_differences(meta: dict, recipe: dict) -> str:
    """The recipe keys in which a prepared folder (`meta`) differs from `recipe`, in words; for a hub
    source asked at another revision (`hf_revision`), which revision the folder holds and which is asked."""
    old = meta.get("recipe") if isinstance(meta.get("recipe"), dict) else {}
    differs = ", ".join(sorted(k for k in recipe if old.get(k) != recipe[k])) or "recipe"
    pairs = zip(_list(old.get("sources")), _list(recipe.get("sources")), _list(meta.get("sources")))
    for was, now, source in pairs:
        if (
            isinstance(was, dict)
            and isinstance(source, dict)
            and was.get("hf_revision") != now.get("hf_revision")
        ):
            ident = source.get("identity") if isinstance(source.get("identity"), dict) else {}
            pinned = (
                f"pinned as {was['hf_revision']}" if was.get("hf_revision") else "the default branch then"
            )
            asked = f"revision {now['hf_revision']}" if now.get("hf_revision") else "the default branch"
            return (
                f"{differs} differ: it holds {was.get('location')} at revision {ident.get('revision')} ({pinned}), "
                f"this asks for {asked}"
            )
    return f"{differs} differ"


def _read(source: dict) -> dict[str, dict]:
    """A source's `files` entries by path, in the order read; of a file read more than once (a source
    restarted by an `all_exhausted` mixture), the entry that read most of it."""
    best: dict[str, dict] = {}
    for entry in _list(source.get("files")):
        if isinstance(entry, dict) and isinstance(entry.get("path"), str) and "sha256" in entry:
            old = best.get(entry["path"])
            if old is None or _extent(entry) > _extent(old):
                best[entry["path"]] = entry
    return best


def _extent(entry: dict) -> tuple[bool, int]:
    read = entry.get("bytes")
    return bool(entry.get("complete")), read if isinstance(read, int) else 0


def _list(value) -> list:
    return value if isinstance(value, list) else []
