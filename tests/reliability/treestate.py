"""What a refused command may not change, as one comparable value: every entry under some folders.

"A refused command leaves nothing behind and changes nothing" is checked by comparing `world_state` before and
after it. The catalogue's older `snapshot` compares file contents only, so a command that rewrote a file with the
same bytes, or merely touched it, passed; that matters for a lock that is a lease (`locks.Lease`): its mtime is
its holder's heartbeat, and a refused command that touched it would keep a dead holder's lease alive.

Design and trade-offs
  * A file is (size, mtime in ns, sha256 of its bytes); a file over `HASHED_UP_TO` bytes is (size, mtime) alone:
    a weight file rewritten in place moves its mtime, and hashing gigabytes per case would cost more than the
    case. A symlink is its target (never followed: a link to nothing or to itself is a case of the catalogue).
  * A folder is recorded as present, not by its mtime: taking a lock writes a temporary file beside it and
    removes it (`locks.folder_lock`), which moves the folder's mtime while leaving nothing; what is left is
    seen as the entries themselves.
  * `world_state` covers the folders a command can reach without being told: the working folder,
    $ENCODERLAB_HOME (assets and their locks) and the Hugging Face caches ($HF_HOME, $HF_HUB_CACHE,
    $HF_DATASETS_CACHE), besides the folders a test names (an --out's parent holds the --out itself).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

HASHED_UP_TO = 16 * 2**20
"""Files up to this size (bytes) are compared by content as well as by size and mtime."""

ENVIRONMENT_FOLDERS = ("ENCODERLAB_HOME", "HF_HOME", "HF_HUB_CACHE", "HF_DATASETS_CACHE")
"""The variables naming folders a command writes without being told (caches, asset locks)."""


def _entry(path: Path) -> tuple:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISDIR(info.st_mode):
        return ("folder",)
    if not stat.S_ISREG(info.st_mode):
        return ("other", stat.S_IFMT(info.st_mode))
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if info.st_size <= HASHED_UP_TO else None
    return ("file", info.st_size, info.st_mtime_ns, digest)


def tree_state(root: Path) -> dict[str, tuple]:
    """Every entry under `root` (relative path -> `_entry`), not following symlinks; {} when `root` is absent."""
    if not os.path.lexists(root):
        return {}
    found = {".": _entry(root)}
    for folder, folders, files in os.walk(root):  # os.walk does not descend into symlinked folders
        for name in folders + files:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = _entry(path)
    return found


def world_state(*folders: Path) -> dict[str, dict[str, tuple]]:
    """`tree_state` of each of `folders`, of the working folder and of the folders `ENVIRONMENT_FOLDERS` name.
    A test changes into a folder of its own first: the working folder of a test run may be one others write."""
    named = [os.environ.get(name) for name in ENVIRONMENT_FOLDERS]
    roots = {str(Path(p).absolute()) for p in [*folders, Path.cwd(), *filter(None, named)]}
    return {root: tree_state(Path(root)) for root in sorted(roots)}


def changes(before: dict[str, dict[str, tuple]], after: dict[str, dict[str, tuple]]) -> list[str]:
    """What differs between two `world_state`s, one line per path (made, gone or changed), for a message."""
    said = []
    for root in sorted(set(before) | set(after)):
        was, now = before.get(root, {}), after.get(root, {})
        for name in sorted(set(was) | set(now)):
            if was.get(name) != now.get(name):
                how = "made" if name not in was else "gone" if name not in now else "changed"
                said.append(f"{how}: {Path(root) / name}")
    return said
