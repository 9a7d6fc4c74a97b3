"""Folder locks: one writer per study, prepared-data, run or eval folder, with the holder named.

A lock is a small JSON file (pid, host, since, what) created by hard-linking a fully written
temporary file to the lock's name, so taking it is atomic and the file is never half-written. A lock
whose process is gone (same host, pid not alive) is stale and taken over; a live holder is refused
with one line naming it. Taking a lock is serialised among processes by an advisory `flock` on the
lock's folder, so that two processes finding one stale lock never both take it (the second would
remove the first one's fresh lock as stale); where the file system has no `flock` (some network
mounts) the hard link alone decides. `refuse_live_holder` asks the same question before a command reads
what a live holder may be rewriting (a resume beside a run still training).

A holder on another host of a shared file system cannot be asked whether it lives (no network: a pid means
nothing there), so a lock may be a lease (`Lease`, the run lock's): its holder refreshes the lock file's mtime
every `refresh_s` from a thread of its own (`os.utime`, one metadata write: atomic, never half-written, and no
step waits for it), and records `lease_s` in the lock. A lock of another host whose mtime is more than
`lease_s` old is the lock of a dead holder (a SIGKILLed rank 0 on another node), judged so from any node and
taken over. Clock skew between nodes: both times are the file system's, not the judge's clock against the
holder's: the lock's mtime as the refresh stamped it, against the mtime of a file the judge creates beside it
now (`_fs_now`); on NFS both are the server's clock (a write, or `utime` with no time, stamps the server's
time). Where clients stamp their own time (Lustre), the margin between `refresh_s` and `lease_s` (30 s and
5 minutes for the run lock) absorbs a skew or an attribute cache (NFS's acregmax, 60 s by default) of up to
about 4 minutes; a holder whose node's clock runs behind by more, or whose file system hangs for longer than
the lease, can be taken for gone. A lock without `lease_s` (older encoderlab, other commands' locks) of
another host is never taken over: the message says which file to delete by hand. A live holder of this host
is always judged by its pid, however old its heartbeat (a run stuck in a collective still holds its folder).

The temporary files beside a lock (the one linked into place, a lease judge's clock probe) carry a short id of
their writer's host (`host_id`: its name and its machine's id, which the lock records too, so nodes sharing a host
name are told apart), so the cleanup before a lock is taken judges by pid only the files of its own host
(and those of older encoderlab, named without one): another node's, whose pid means nothing here, are removed
only once an hour old (`writer_gone`, the one rule, which `atomic.atomic_file`'s temporary files, named so too,
are judged by: an output folder's marker cut short by a kill, `outdir`). A file removed before it was linked anyway
(by an older encoderlab on another node) is written again, and the command refused with one line after three such
losses, never a traceback.

`waiting_lock` is the other kind: a bare `flock` whose second taker waits instead of being refused (the
assets cache, where the second fetch of a file then finds it fetched), its file removed by a failed block.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
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
    # ValueError: bad JSON, or bytes that are no UTF-8 (a UnicodeDecodeError was a traceback of `--resume`, and
    # killed the lease's heartbeat thread mid-run, which then let another host take a live run's lock)
    except (FileNotFoundError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None  # a list held there was an AttributeError


def holder_alive(holder: dict) -> bool | None:
    """Whether the process a lock names still runs: None when that cannot be checked (another host, or a
    pid that is no number: `int("abc")` was a ValueError traceback of `study run`)."""
    pid = holder.get("pid")
    if not same_host(holder) or not isinstance(pid, int) or isinstance(pid, bool):
        return None
    return _pid_alive(pid)


def same_host(holder: dict) -> bool:
    """Whether the process a lock (or marker) names runs on this host: by the `host_id` it records
    (`host_id`: name and machine), or, for one without (written by older encoderlab), by host name."""
    recorded = holder.get("host_id")
    if isinstance(recorded, str):
        return recorded == host_id()
    return holder.get("host") == socket.gethostname()


@dataclass(frozen=True)
class Lease:
    """A lock whose holder proves it lives by refreshing the lock file's mtime every `refresh_s` seconds; from
    another host it is judged gone once that mtime is more than `lease_s` old (module docstring)."""

    refresh_s: float = 30.0
    lease_s: float = 300.0


RUN_LEASE = Lease()
"""The run lock's (`RUN/.lock`): a refresh each 30 s, gone after 5 minutes without one."""


def _lease_s(holder: dict) -> float | None:
    """The lease a holder recorded (seconds), or None (no lease: an older lock, or another command's)."""
    lease = holder.get("lease_s")
    ok = isinstance(lease, (int, float)) and not isinstance(lease, bool) and lease > 0
    return float(lease) if ok else None


def _fs_now(lock: Path) -> float:
    """The file system's time now, as it stamps a file created beside `lock` (the judge's side of a lease, in the
    clock the holder's refreshes were stamped with); this host's clock where nothing can be created there. The
    probe is named as the lock's temporary files are (`is_lock_file`, with this host's `host_id`), so one left by
    a kill is not taken for someone's file in the folder, and only this host judges whether its writer lives."""
    probe = lock.with_name(f"{lock.name}.clock-{os.getpid()}-{threading.get_ident()}.{host_id()}.tmp")
    try:
        probe.write_bytes(b"")
        return probe.stat().st_mtime
    except OSError:
        return time.time()
    finally:
        probe.unlink(missing_ok=True)


def heartbeat_age(lock: Path, holder: dict, now: float | None = None) -> float | None:
    """Seconds since `holder` (read from `lock`) last refreshed it, by the file system's clock (`now`: its time,
    from `_fs_now`); None for a holder without a lease, or a lock gone."""
    if _lease_s(holder) is None:
        return None
    try:
        stamped = lock.stat().st_mtime
    except OSError:
        return None
    return max(0.0, (_fs_now(lock) if now is None else now) - stamped)


def holder_gone(lock: Path, holder: dict, now: float | None = None) -> bool:
    """Whether the holder of `lock` is known to be gone: its pid is not alive on this host, or, on another
    host, its lease ran out (its heartbeat more than `lease_s` old)."""
    alive = holder_alive(holder)
    if alive is not None:
        return not alive
    age, lease = heartbeat_age(lock, holder, now), _lease_s(holder)
    return age is not None and lease is not None and age > lease


def _held_message(lock: Path, holder: dict | None, use: str, other_out: bool) -> str:
    instead = "use another --out, " if other_out else ""
    if not holder:
        return f"{use} is in use by another process; wait for it, {instead}or delete {lock} if that process is gone"
    said = f"pid {holder.get('pid')} on {holder.get('host')} since {holder.get('since')}"
    age = heartbeat_age(lock, holder) if holder_alive(holder) is None else None
    if age is None:
        return (
            f"{use} is in use by {holder.get('what')} ({said}); wait for it, {instead}or delete {lock} if that "
            "process is gone"
        )
    # another host's holder with a lease: no one need delete it, it is taken over once the lease runs out
    return (
        f"{use} is in use by {holder.get('what')} ({said}; its lock refreshed {age:.0f} s ago); wait for it, "
        f"{instead}or, if that process is gone, rerun once its lock is {_lease_s(holder):.0f} s old (it is then "
        "taken over)"
    )


def refuse_live_holder(lock: Path, use: Path) -> None:
    """Refuse `use` while a live process (or one on another host) holds its `lock`, before a command reads
    what that process may be rewriting; `folder_lock` takes the lock later and checks again. A `pretrain
    --resume` beside the run still training (orphaned ranks of a killed torchrun, docs/scaling.md) read the
    checkpoint that run then rotated away, and said its tokenizer "does not exist" instead of who holds it."""
    holder = read_lock(lock)
    if holder is not None and not holder_gone(lock, holder):
        raise UserError(_held_message(lock, holder, str(use), other_out=True))


def is_lock_file(name: str, lock_name: str) -> bool:
    """Whether the file `name` is the lock `lock_name` or a temporary file beside it (`folder_lock`'s
    `LOCK.PID.HOST.tmp`, `_fs_now`'s clock probe), which a process killed in that instant leaves beside it or alone
    (the next `folder_lock` removes it once its writer is gone, `_remove_leftovers`)."""
    return name == lock_name or (name.startswith(f"{lock_name}.") and name.endswith(".tmp"))


LEFTOVER_OF_ANOTHER_HOST_S = 3600.0
"""Age (file system clock) past which another host's temporary file of a lock is removed: one lives for the instant
its writer takes the lock or judges a lease, so an hour is far beyond any such instant or clock skew."""


MACHINE_FILES = (Path("/etc/machine-id"), Path("/proc/sys/kernel/random/boot_id"))
"""Where this machine's own id is read (the first readable, non-empty one): two containers on two nodes may share
a host name, never a kernel. machine-id first, as it outlives a reboot (a lock of this machine left by a process
the reboot ended is still judged by its pid, and taken over); boot_id where there is none (most containers). A
machine-id baked into a container image and shared by its nodes tells them apart no better than their name."""


def machine_id() -> str:
    """This machine's id (`MACHINE_FILES`), or "" where none can be read (then host names alone tell hosts apart)."""
    for marks in MACHINE_FILES:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if mark := marks.read_text().strip():
                return mark
    return ""


def host_id(host: str | None = None, machine: str | None = None) -> str:
    """A short id of `host` (this host's name by default) on `machine` (this machine's id by default, `machine_id`)
    for the names of a lock's temporary files and the `host_id` a lock records: 8 hex digits of their sha256, as a
    host name may hold dots and is long. The host name alone (older encoderlab, or a machine with no id) left two
    nodes of one host name (containers given the same `--hostname`) judging each other's pids. Two hosts sharing an
    id (odds 1 in 4 billion a pair) would judge each other's files by pid, as every host did before."""
    name, machine = host or socket.gethostname(), machine_id() if machine is None else machine
    return hashlib.sha256((f"{name}\n{machine}" if machine else name).encode()).hexdigest()[:8]


def host_ids_here() -> set[str]:
    """The host ids of temporary files judged as this host's (by pid): its own, and its name's alone
    (`host_id(machine="")`), which older encoderlab wrote, so their files stay readable here."""
    return {host_id(), host_id(machine="")}


def _writer(name: str, lock_name: str) -> tuple[int, str | None] | None:
    """(pid, host id) of the writer of a temporary file of the lock `lock_name`: `LOCK.PID.HOST.tmp`
    (`folder_lock`'s) or a clock probe, `LOCK.clock-PID-THREAD.HOST.tmp` (`_fs_now`'s); host None for the
    older names without it (`LOCK.PID.tmp`, `LOCK.clock-PID-THREAD.tmp`); None for any other name."""
    middle = name[len(lock_name) + 1 : -len(".tmp")]
    writer, dot, host = middle.rpartition(".")
    if not dot:
        writer, host = middle, None
    elif not (len(host) == 8 and all(c in "0123456789abcdef" for c in host)):
        return None
    pid = writer.removeprefix("clock-").split("-")[0]
    return (int(pid), host) if pid.isascii() and pid.isdigit() else None


def _remove_leftovers(lock: Path, now: float) -> None:
    """Remove the temporary files beside `lock` left by processes killed while taking it or judging its holder
    (`now`: the file system's time). One of this host (or of an older encoderlab, named without a host) is left
    when its pid is gone; one of another host, whose pid means nothing here, only once it is more than
    `LEFTOVER_OF_ANOTHER_HOST_S` old. Judged by pid alone, a live process's file on another node of a shared file
    system was removed before it was linked into place (that process failed with a FileNotFoundError
    traceback), and so was its clock probe."""
    for stale in lock.parent.glob(f"{lock.name}.*.tmp"):
        if writer_gone(stale, lock.name, now):
            stale.unlink(missing_ok=True)


def writer_gone(temp: Path, stem: str, now: float) -> bool | None:
    """Whether the writer of the temporary file `temp` (`STEM.PID.HOST.tmp`, or `STEM.PID.tmp` of an older
    encoderlab) is known to be gone, the one rule for every such file (a lock's, `atomic.atomic_file`'s): one of this
    host (or named without a host) when its pid is not alive; one of another host, whose pid means nothing here, once
    its mtime is more than `LEFTOVER_OF_ANOTHER_HOST_S` older than `now`. None for a name not of that form. A pid
    reused since by a live process keeps the file its writer's (judged live, never removed), as a lock's."""
    writer = (
        _writer(temp.name, stem) if temp.name.startswith(f"{stem}.") and temp.name.endswith(".tmp") else None
    )
    if writer is None:
        return None
    pid, host = writer
    if host is None or host in host_ids_here():
        return not _pid_alive(pid)
    try:
        return now - temp.stat().st_mtime > LEFTOVER_OF_ANOTHER_HOST_S
    except OSError:
        return False  # removed meanwhile: nothing to remove


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
def folder_lock(
    lock: Path, what: str, use: Path | None = None, *, other_out: bool = True, lease: Lease | None = None
) -> Iterator[None]:
    """Hold the lock file `lock` for the duration as `what` (e.g. "study paper1-pfs").

    `use` is the folder the lock protects, as named in the refusal (default: the lock's folder);
    `other_out`: another --out is a way round it (not for `data merge`, whose --out names its parts);
    `lease`: refresh it while held, so that another host can judge this holder gone (module docstring).
    """
    use = use or lock.parent
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    me = {"pid": os.getpid(), "host": socket.gethostname(), "host_id": host_id(), "since": now, "what": what}
    if lease is not None:
        me["lease_s"] = lease.lease_s
    tmp = lock.with_name(f"{lock.name}.{os.getpid()}.{host_id()}.tmp")
    mine = json_text(me)
    tmp.write_text(mine)
    try:
        _remove_leftovers(lock, now=_stamp(tmp, lock))
        _take(lock, tmp, mine, str(use), other_out)
    finally:
        tmp.unlink(missing_ok=True)
    try:
        with _heartbeat(lock, me, lease):
            yield
    finally:
        if _is_mine(lock, me):
            lock.unlink(missing_ok=True)


def _stamp(tmp: Path, lock: Path) -> float:
    """The file system's time now: `tmp`'s mtime, written a moment ago (`_fs_now` where it is gone)."""
    try:
        return tmp.stat().st_mtime
    except OSError:
        return _fs_now(lock)


def _take(lock: Path, tmp: Path, mine: str, use: str, other_out: bool) -> None:
    """Link `tmp` (holding `mine`) to `lock`, taking over a holder known gone; refused while another holds it."""
    with one_at_a_time(lock.parent):  # a stale holder read here is still the holder when it is removed
        for _ in range(3):
            try:
                os.link(tmp, lock)  # atomic and never half-written: the content exists before the name
                return
            except FileExistsError:
                holder = read_lock(lock)
                if holder and holder_gone(lock, holder, now=_stamp(tmp, lock)):
                    lock.unlink(missing_ok=True)  # stale: its process is gone, or its lease ran out
                    continue
                raise UserError(_held_message(lock, holder, use, other_out)) from None
            except FileNotFoundError:
                # `tmp` removed before it was linked, by another process cleaning up (an older encoderlab on
                # another node judged it by a pid of ours): written again, and refused after three such tries
                with contextlib.suppress(FileNotFoundError):
                    tmp.write_text(mine)
        raise UserError(_held_message(lock, read_lock(lock), use, other_out))


def _is_mine(lock: Path, me: dict) -> bool:
    holder = read_lock(lock) or {}
    return (
        holder.get("pid") == me["pid"]
        and holder.get("host") == me["host"]
        and holder.get("host_id") == me.get("host_id")
    )


def refresh(lock: Path, me: dict) -> bool:
    """One heartbeat: `lock`'s mtime set to now (the file system's time, `utime` without one) while it is still
    `me`'s; False, touching nothing, once another process holds it (it judged this holder gone). Under
    `one_at_a_time`, as a takeover is, so where the folder can be flocked none happens between the check and
    the touch. Where it cannot (`one_at_a_time` is then a no-op), a takeover landing in that gap has its new
    lock's mtime set once: harmless, since its holder has just written it (the touch only restamps a fresh
    lease), and the next beat finds the lock another's and stops."""
    with one_at_a_time(lock.parent):
        if not _is_mine(lock, me):
            return False
        os.utime(lock)
        return True


@contextlib.contextmanager
def _heartbeat(lock: Path, me: dict, lease: Lease | None) -> Iterator[None]:
    """`refresh` every `lease.refresh_s` on a thread of its own for the block (nothing without a lease): a
    training step never waits for it. A refresh that fails (a file system's hiccup) is tried again at the next
    beat rather than stopping the run; the lease's margin covers missed beats."""
    if lease is None:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(lease.refresh_s):
            with contextlib.suppress(OSError):
                if not refresh(lock, me):
                    return  # taken over: this process no longer holds it

    beating = threading.Thread(target=beat, name="encoderlab-lock-heartbeat", daemon=True)
    beating.start()
    try:
        yield
    finally:
        stop.set()
        beating.join()
