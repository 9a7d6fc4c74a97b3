"""Folder locks: one writer per study, prepared-data, run or eval folder, with the holder named.

A lock is a small JSON file (pid, host, since, what) created by hard-linking a fully written
temporary file to the lock's name, so taking it is atomic and the file is never half-written. A lock
whose process is gone (same host, pid not alive) is stale and taken over; a live holder is refused
with one line naming it. Taking a lock is serialised among processes by an advisory `flock` on the
lock's folder, so that two processes finding one stale lock never both take it (the second would
remove the first one's fresh lock as stale); where the file system has no `flock` (some network
mounts) the hard link alone decides. Trade-off: a dead holder on another host of a shared filesystem
cannot be detected, so the message says which file to delete by hand. `refuse_live_holder` asks the same
question before a command reads what a live holder may be rewriting (a resume beside a run still training).

`waiting_lock` is the other kind: a bare `flock` whose second taker waits instead of being refused (the
assets cache, where the second fetch of a file then finds it fetched), its file removed by a failed block.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from encoderlab import jsonlines
from encoderlab.atomic import json_text
from encoderlab.errors import UserError


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_lock(lock: Path) -> dict | None:
    """The holder recorded in `lock`, or None when there is none (or it cannot be read)."""
    try:
        holder = jsonlines.loads(lock.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return holder if isinstance(holder, dict) else None  # a list held there was an AttributeError


def holder_alive(holder: dict) -> bool | None:
    """Whether the process a lock names still runs: None when that cannot be checked (another host, or a
    pid that is no number: `int("abc")` was a ValueError traceback of `study run`)."""
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int) or isinstance(pid, bool):
        return None
    return _pid_alive(pid)


def _held_message(lock: Path, holder: dict | None, use: str, other_out: bool) -> str:
    who = (
        f"{holder.get('what')} (pid {holder.get('pid')} on {holder.get('host')} since {holder.get('since')})"
        if holder
        else "another process"
    )
    instead = "use another --out, " if other_out else ""
    return f"{use} is in use by {who}; wait for it, {instead}or delete {lock} if that process is gone"


def refuse_live_holder(lock: Path, use: Path) -> None:
    """Refuse `use` while a live process (or one on another host) holds its `lock`, before a command reads
    what that process may be rewriting; `folder_lock` takes the lock later and checks again. A `pretrain
    --resume` beside the run still training (orphaned ranks of a killed torchrun, docs/scaling.md) read the
    checkpoint that run then rotated away, and said its tokenizer "does not exist" instead of who holds it."""
    holder = read_lock(lock)
    if holder is not None and holder_alive(holder) is not False:
        raise UserError(_held_message(lock, holder, str(use), other_out=True))


def is_lock_file(name: str, lock_name: str) -> bool:
    """Whether the file `name` is the lock `lock_name` or the temporary file `folder_lock` writes to take
    it (`LOCK.PID.tmp`), which a process killed in that instant leaves beside it or alone."""
    return name == lock_name or (name.startswith(f"{lock_name}.") and name.endswith(".tmp"))


@contextlib.contextmanager
def one_at_a_time(folder: Path) -> Iterator[None]:
    """While inside, no other process (nor thread) is inside `one_at_a_time(folder)`: it waits (an
    exclusive `flock` on the folder, per open descriptor, released when that closes, also by a process
    that dies); a no-op where the folder cannot be flocked. `folder_lock` takes its locks inside it; a
    read-modify-write of a shared file in `folder` goes inside it (the hub snapshots' records)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        fd = None
    try:
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)


@contextlib.contextmanager
def waiting_lock(path: Path) -> Iterator[None]:
    """An exclusive `flock` on the file `path` (made if needed), held for the block; other processes wait
    (the assets cache: the second fetch of a file waits, then finds it downloaded).

    A lock file the block made is removed again when the block fails, while still held, so a failed
    command leaves no lock behind. A waiter may then hold the flock of a removed file while a newcomer
    locks a new one by that name, so a flock counts only while the name still leads to the file locked
    (same inode); otherwise it is taken again. Its folder gone (removed by a failed fetch) is made again."""
    while True:
        try:
            made, fd = _open_lock_file(path)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            continue
        fcntl.flock(fd, fcntl.LOCK_EX)
        with contextlib.suppress(FileNotFoundError):
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                break
        os.close(fd)
    try:
        yield
    except BaseException:
        if made:
            path.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)  # releases the flock


def _open_lock_file(path: Path) -> tuple[bool, int]:
    """(whether this call made it, a descriptor) of the lock file `path`."""
    try:
        return True, os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False, os.open(path, os.O_RDWR)


@contextlib.contextmanager
def folder_lock(lock: Path, what: str, use: Path | None = None, *, other_out: bool = True) -> Iterator[None]:
    """Hold the lock file `lock` for the duration as `what` (e.g. "study paper1-pfs").

    `use` is the folder the lock protects, as named in the refusal (default: the lock's folder);
    `other_out`: another --out is a way round it (not for `data merge`, whose --out names its parts).
    """
    use = use or lock.parent
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    me = {"pid": os.getpid(), "host": socket.gethostname(), "since": now, "what": what}
    for stale in lock.parent.glob(f"{lock.name}.*.tmp"):  # left by a process killed while taking it
        pid = stale.name[len(lock.name) + 1 : -len(".tmp")]
        if pid.isdigit() and not _pid_alive(int(pid)):
            stale.unlink(missing_ok=True)
    tmp = lock.with_name(f"{lock.name}.{os.getpid()}.tmp")
    tmp.write_text(json_text(me))
    try:
        with one_at_a_time(lock.parent):  # a stale holder read here is still the holder when it is removed
            for _ in range(3):
                try:
                    os.link(tmp, lock)  # atomic and never half-written: the content exists before the name
                    break
                except FileExistsError:
                    holder = read_lock(lock)
                    if holder and holder_alive(holder) is False:
                        lock.unlink(missing_ok=True)  # stale: its process is gone
                        continue
                    raise UserError(_held_message(lock, holder, str(use), other_out)) from None
            else:
                raise UserError(_held_message(lock, read_lock(lock), str(use), other_out))
    finally:
        tmp.unlink(missing_ok=True)
    try:
        yield
    finally:
        if (read_lock(lock) or {}).get("pid") == me["pid"]:
            lock.unlink(missing_ok=True)
