"""What a refused command may not change, as one comparable value: every entry under some folders.

"A refused command leaves nothing behind and changes nothing" is checked by taking `world_state` before it and
`assert_unchanged` after it. The catalogue once compared file contents only (a `snapshot` of sha256s), so a
command that rewrote a file with the same bytes, or merely touched it, passed; that matters for a lock that is a
lease (`locks.Lease`): its mtime is its holder's heartbeat, and a refused command that touched it would keep a
dead holder's lease alive. It also never looked at the caches or $ENCODERLAB_HOME, where a leftover is as real.

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
  * The working folder must be one of the named folders or inside one (`monkeypatch.chdir(tmp_path)` first):
    the working folder of a test run is /tmp or the checkout, which others write and which would cost a hash
    of every file in it; `world_state` refuses rather than compare a folder it cannot own.
  * `assert_unchanged` re-reads the roots the `before` value holds, not the environment's at that moment: a
    test that changes a variable after taking `before` still compares the same folders.
  * One thing a refused command may add: an entry of the memory of .txt scans ($ENCODERLAB_HOME/cache/
    txt-scans, `data/txtscans.py`). A check of an older prepared folder scans its .txt files and remembers each
    verdict, a function of the file's bytes, for later commands, by design (docs/data.md), refused or not; so
    a memo made there (and the folders holding it) is not a leftover. One changed or gone still is.
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
    A test changes into one of `folders` (or a folder inside one) first: the working folder of a test run may be
    one others write."""
    cwd = Path.cwd().resolve()
    if not any(cwd.is_relative_to(Path(f).resolve()) for f in folders):
        raise AssertionError(
            f"world_state: the working folder {cwd} is none of {[str(f) for f in folders]} nor inside one; "
            "change into the test's own folder first (monkeypatch.chdir(tmp_path))"
        )
    named = [os.environ.get(name) for name in ENVIRONMENT_FOLDERS]
    roots = {Path(p).absolute() for p in [*folders, cwd, *filter(None, named)]}
    # a root inside another is read once, as part of the outer one (a run folder and the test's folder)
    outer = [r for r in roots if not any(r != o and r.is_relative_to(o) for o in roots)]
    return {str(root): tree_state(root) for root in sorted(outer)}


def assert_unchanged(before: dict[str, dict[str, tuple]]) -> None:
    """Fail naming every path made, gone or changed under the roots of `before` (a `world_state`) since then."""
    left = changes(before, {root: tree_state(Path(root)) for root in before})
    assert not left, "a refused command left or changed:\n" + "\n".join(left)


def _a_memo(path: Path) -> bool:
    """Whether `path` is in the memory of .txt scans, or a folder made to hold it (module docstring)."""
    from encoderlab.data.txtscans import FOLDER
    from encoderlab.paths import encoderlab_home

    home = encoderlab_home(create=False).absolute()
    memos = home.joinpath(*FOLDER)
    return path.is_relative_to(memos) or (
        path != home and path.is_relative_to(home) and memos.is_relative_to(path)
    )


def changes(before: dict[str, dict[str, tuple]], after: dict[str, dict[str, tuple]]) -> list[str]:
    """What differs between two `world_state`s, one line per path (made, gone or changed), for a message."""
    said = []
    for root in sorted(set(before) | set(after)):
        was, now = before.get(root, {}), after.get(root, {})
        for name in sorted(set(was) | set(now)):
            if was.get(name) != now.get(name):
                how = "made" if name not in was else "gone" if name not in now else "changed"
                if how != "made" or not _a_memo((Path(root) / name).absolute()):
                    said.append(f"{how}: {Path(root) / name}")
    return said
