"""What meta.json records of each local file read (`files`: path, bytes, sha256, complete, mtime_ns), and
whether the file still holds what was read (`file_change`). `filereaders._open_hashed` fills an entry as
a file is read; `file_record` makes one for a file another reader reads whole (pyarrow, `datasets`).
Out of `filereaders.py` (at the size limit): checking a record reads no corpus format.

Trade-off (`file_change`): size and mtime as recorded are trusted without hashing, so a check of an
untouched corpus is a stat per file; a file rewritten to its old size with its old mtime put back passes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_record(path: Path) -> dict:
    """What `file_change` checks of a file read whole by another reader (pyarrow, `datasets`): its size,
    sha256 and mtime, the mtime taken before it is hashed (a write meanwhile moves it); OSError as open."""
    st = path.stat()
    sha = sha256_of(path)
    return {
        "path": str(path),
        "bytes": st.st_size,
        "sha256": sha,
        "complete": True,
        "mtime_ns": st.st_mtime_ns,
    }


def sha256_of(path: Path, limit: int | None = None) -> str:
    """sha256 of `path`'s first `limit` bytes (all of them: None), read in 1 MiB blocks: the one file hasher
    (a fetched asset's pin, a start model's identity, a corpus file's record)."""
    sha, left = hashlib.sha256(), limit
    with open(path, "rb") as f:
        while left is None or left > 0:
            block = f.read(1 << 20 if left is None else min(1 << 20, left))
            if not block:
                break
            sha.update(block)
            left = None if left is None else left - len(block)
    return sha.hexdigest()


def file_change(entry: dict) -> str | None:
    """How the file a meta.json `files` entry records having read differs now, in words, or None when
    it still starts with the bytes read (`bytes`, `sha256`; all of it when `complete`). Cheap when the
    size fits and the modification time is the one recorded at read (`mtime_ns`): nothing is hashed.
    Otherwise (another mtime, or an entry from before mtimes were recorded) the bytes read are hashed
    again, so a file copied or touched but unchanged still matches. Trade-off: a file rewritten to the
    same size with its old mtime put back (`cp -p`, `rsync -t`, `touch -d`) passes the cheap test;
    delete the prepared folder to prepare it again. A file that could not be opened then (`sha256`
    null: skipped by `--on-error skip`) is a change once it can be: the prepared data lacks it."""
    path, read = Path(entry["path"]), entry.get("bytes")
    if entry.get("sha256") is None:  # it could not be opened then: a symlink to nothing then and now is
        return _opens_now(path)  # no change (was: "is gone", its stat failing as its open had)
    try:
        st = path.stat()
    except OSError:
        return f"{path} is gone"
    if not isinstance(read, int):
        return None
    if st.st_size < read or (entry.get("complete") and st.st_size != read):
        return f"{path} now holds {st.st_size:,} bytes, {read:,} were read"
    if entry.get("mtime_ns") == st.st_mtime_ns:
        return None
    return None if sha256_of(path, read) == entry["sha256"] else f"{path} now holds other bytes"


def _opens_now(path: Path) -> str | None:
    """Words for a file skipped because it could not be opened that opens now (its permissions fixed)."""
    try:
        with open(path, "rb"):
            pass
    except OSError:
        return None
    return f"{path} could not be read then (skipped by --on-error skip) and can be now"
