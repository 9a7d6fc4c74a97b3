"""The verdicts of `freshness.reading_change`'s scan of a .txt file for a `\r`, remembered across commands.

A prepared folder or a tokenizer made before `txt_reading` was recorded is checked by reading each .txt file
it read, in full where it holds no lone `\r` (`freshness.lone_cr`): nothing is written into such a folder by a
check (it may be a user's, or what a run's checkpoints were trained on), so without a memory every command
over it (`data prepare`'s "nothing to do", each `study run` or `study plan`) read the whole corpus again.
The verdict, (lone `\r`, any `\r`), is a function of the file's bytes alone, so it is kept under
$ENCODERLAB_HOME/cache/txt-scans/, a folder encoderlab owns, one small JSON file per scanned file version.

Why the key is safe: it is the file's real path and its whole stat identity, device, inode, size, mtime and
ctime (ns). Any write to a file moves its mtime and its ctime; putting the mtime back (`touch -d`, `rsync -t`,
`os.utime`) moves the ctime again, and no call sets a ctime: so a file whose key matches holds the bytes it
was scanned with (`tests/data/test_txt_reading.py` rewrites one to its old size and puts its mtime back).
The trade-off is the one `filerecords.file_change` already makes with size and mtime, narrowed by the ctime:
on a filesystem whose ctime is not a change time (FAT records a creation time), a same-size rewrite whose
mtime was put back could be served its old verdict. A file replaced by another
(rename, restore from a copy) has another inode or ctime, so it is scanned again.

A memory that cannot be read (gone, cut short, another key) is no memory: the file is scanned. One that
cannot be written (a read-only or full disk, $ENCODERLAB_HOME not a folder) costs the next command a scan,
never a refusal: the verdict never depends on it, and the command does not need $ENCODERLAB_HOME otherwise.
Old entries are not pruned (about 100 bytes per file version scanned; `rm -r` the folder at will).

`tree_stats`, the same key for every file under a folder, is what the in-process memories of a folder's read
compare (a model folder's identity, a tokenizer's load and hash): nothing of them is written to disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os

from encoderlab.atomic import write_json_atomic
from encoderlab.errors import UserError
from encoderlab.paths import home_folder

log = logging.getLogger(__name__)

FOLDER = ("cache", "txt-scans")
"""Where under $ENCODERLAB_HOME the verdicts are kept."""

VERSION = 1
"""In every key: raise it when what a verdict means changes, so older entries are never read."""

Verdict = tuple[bool, bool]
"""(whether the file holds a lone `\r`, whether it holds any `\r`): `freshness.lone_cr`'s answer."""


def scan_key(path: str, st: os.stat_result) -> list:
    """The identity of the bytes at `path` as `st` (its stat) says them: the memory's key."""
    real = os.path.realpath(path)
    return [VERSION, real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def tree_stats(folder: str | os.PathLike) -> tuple:
    """`scan_key` of every file under `folder` (symlinks followed, as the load follows them: a hub
    cache snapshot's files are links to its blobs, and a linked subfolder such as `1_Pooling/` is read through
    the link), in a fixed order; a dangling one as its name alone. A linked subfolder was not walked, so a file
    edited inside it left the stats as they were and the stale read stood; a folder reached twice (a link
    to an ancestor) is walked once. What an in-process memory of a folder's read is kept under, taken before
    the read: a model folder's (`study/localmodels.py`) and a tokenizer's (`tokenizer.held_tokenizer`)."""
    keys, walked = [], set()
    for root, dirs, files in os.walk(folder, followlinks=True):
        if (real := os.path.realpath(root)) in walked:  # a cycle of links: its files were seen
            dirs.clear()
            continue
        walked.add(real)
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                keys.append(tuple(scan_key(path, os.stat(path))))
            except OSError:  # a link to nothing: its presence, so one appearing or going moves the stats
                keys.append((path,))
    return tuple(keys)


SETTLE_NS = 2_000_000_000
"""How long before a read every file's last change must lie for the read to be remembered under `tree_stats`
(`settled`): the coarsest file times in use (FAT's 2 s)."""


def settled(stats: tuple, taken_ns: int) -> bool:
    """Whether every file of `stats` (`tree_stats`, taken at `taken_ns`, before a read) last changed at least
    `SETTLE_NS` earlier, so a memory of the read may be kept under them. On a filesystem of coarse times (1 s,
    FAT's 2 s) a same-size save within the tick of the read moves no stat, and the old read would be served for
    the new bytes (git's "racily clean" index entries, the same fault); a folder saved moments ago is read
    again next time instead."""
    return all(
        len(k) < 7 or max(k[5], k[6]) <= taken_ns - SETTLE_NS for k in stats
    )  # a dangling link: its name


def recalled(key: list) -> Verdict | None:
    """The verdict remembered under `key`, or None (never scanned as it is now, or unreadable memory)."""
    try:
        file = home_folder(*FOLDER, create=False) / _name(key)
        entry = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError, UserError):  # no memory: the file is scanned
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    lone, any_cr = entry.get("lone"), entry.get("any_cr")
    return (lone, any_cr) if isinstance(lone, bool) and isinstance(any_cr, bool) else None


def remember(key: list, verdict: Verdict) -> None:
    """Keep `verdict` under `key` for later commands; a failure only costs them a scan (logged)."""
    try:
        folder = home_folder(*FOLDER)
        write_json_atomic(folder / _name(key), {"key": key, "lone": verdict[0], "any_cr": verdict[1]})
    except (OSError, UserError) as exc:  # the verdict stands; the next command scans the file again
        log.debug("a .txt scan's verdict is not remembered: %s", exc)


def _name(key: list) -> str:
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:32] + ".json"
