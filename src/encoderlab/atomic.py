"""Atomic writes of files and folders: a reader sees the old one or the new one, never half of either.

Files: the bytes go to a temporary name in the same folder (with the writer's pid and host id, so two processes
never share one), are flushed to disk, then renamed over the target (`atomic_file`,
`write_text_atomic`, `write_json_atomic`, `write_csv_atomic`, `savefig_atomic`; `cached_arrays`
for .npz caches). Markers, summaries, progress records, configs, reports, caches, compute logs and the figures with the tables behind them all go through here.

Folders: `atomic_folder(path)` yields a fresh temporary sibling (`NAME.tmp` unless told otherwise)
to fill, and renames it to `path` when the block completes (files left private, as safetensors leaves its own,
first get the mode the umask gives: `_shareable`); on failure the sibling is removed. A
SIGKILL (or an interrupt during that cleanup) can still leave one, so every owner treats a leftover
`.tmp` as partial: the next write starts it afresh and readers never take it. Only a sibling that is
provably ours is deleted: `atomic_folder` drops a marker file (`PARTIAL`, naming its pid and host)
into the sibling before anything else and takes it out of the finished folder after the rename, so a
leftover holds the marker. A sibling whose marker names a live process is another command writing
the same folder now, refused with one line (taking the sibling is serialised by `flock`, as
`locks.folder_lock` is, and the marker is created exclusively); a writer on another host of a shared
file system cannot be checked, so its sibling counts as a leftover, as it did before the marker named
one. A user's own `NAME.tmp` (no marker, not empty) is refused with one line and left alone
(`check_sibling`, which commands also call before their long work); a writer whose sibling lies in a
folder only encoderlab writes (the asset cache) says so and discards any leftover (`tmp_is_ours`). A
kill between the rename and the marker's removal leaves a small hidden file in the finished folder,
never a refusal. A writer whose leftovers are handled elsewhere can keep the sibling on an
interruption (`keep_on_interrupt`: the trainer's checkpoints, whose one cleanup path, at the next
start, then serves a kill and a Ctrl-C alike). A folder that already exists at `path` is replaced
only with `replace=True`; an empty one is always replaced (POSIX `rename` does that), and a
non-empty one without `replace` makes the rename fail, so nothing is overwritten by accident.
`replace_folder` is the last step alone, for writers that manage a resumable temporary folder
themselves (`prepare`). A mount point as `path` is refused before the work (`check_renamable`, which
`atomic_folder` and the writers with long work call first): nothing can be renamed onto one. A rename the file
system refuses all the same (`UNRENAMABLE`: a bind mount `os.path.ismount` cannot tell is EBUSY; EXDEV; EPERM)
is one line naming `path` and the fix, `path` left as it was and the finished sibling removed by its owner.

A full disk (or a spent quota, or a file past the size limit: `errors.NO_ROOM`) is always an `OSError` with
its errno, naming the folder, when it leaves `atomic_folder`, even when a library reported it as its own
exception (`errors.no_room`), so the CLI gives its one line and exit code 3.

A replaced folder is marked `PARTIAL` and swapped out through a third name (`.NAME.PID.replaced.tmp`) before the
new one is renamed into place, and removed after: after an interruption `path` holds the old folder or the new
one, whole. Removing it first left neither when a Ctrl-C landed in that removal (seconds for a model): half the
old folder, and the complete new one removed by the cleanup. The trade-offs: a SIGKILL after the marking leaves
that hidden folder beside `path`, a leftover the next replace of `path` removes whether or not `path` exists
(none of the owners reads a hidden name; the trainer's checkpoint cleanup removes any `.tmp`); one between the two
renames leaves no `path`, the new folder whole in its temporary sibling (a leftover to its owner, written again).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import glob
import json
import math
import os
import shutil
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from encoderlab.errors import UserError, no_room

PARTIAL = ".encoderlab-partial"
"""Empty marker file inside a temporary sibling that `atomic_folder` made (so a leftover is ours)."""


@contextlib.contextmanager
def atomic_file(path: Path, suffix: str = "") -> Iterator[Path]:
    """A temporary path next to `path` to write; renamed over `path` when the block completes.

    `suffix` ends the temporary name (`.npz` for `numpy.savez`, which would append it otherwise).
    The temporary file is removed when the block raises or is interrupted (a small file is cheap to
    write again; nothing resumes from it).
    """
    from encoderlab.locks import host_id

    path = Path(path)
    # pid and host, as a lock's temporary files are named: a leftover is judged by `locks.writer_gone`
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{host_id()}.tmp{suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Replace `path` with `text` (UTF-8) in one rename, after the bytes are on disk. `durable=False` skips the
    flush to disk (the rename is still whole): for a file rewritten often and rebuilt from flushed ones, which a
    crash of the machine may leave lost or empty."""
    with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())


def json_safe(value):
    """JSON-safe value: non-finite floats become null, inside lists and dicts too (a CKA ratio's
    per-seed list held `Infinity`, a diverged run's held-out loss `NaN`, which are not JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def json_text(data: Any, **kwargs: Any) -> str:
    """`data` as strict JSON (`json.dumps` with `kwargs`): non-finite numbers as null (`json_safe`), and
    `allow_nan=False`, so one `json_safe` does not reach fails loudly instead of writing a bare `NaN` or
    `Infinity`, which jq, JavaScript and strict readers refuse. Every JSON and JSON-lines file encoderlab
    writes goes through here (a line: one `json_text` of a record plus "\n"); hashes do not."""
    return json.dumps(json_safe(data), allow_nan=False, **kwargs)


def write_json_atomic(path: Path, data: Any) -> None:
    """`write_text_atomic` of `data` as strict indented JSON (`json_text`) with sorted keys."""
    write_text_atomic(path, json_text(data, indent=1, sort_keys=True))


def write_csv_atomic(
    path: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None
) -> None:
    """Replace `path` with `rows` as CSV (the csv module's dialect), in one rename. `columns` defaults
    to every key of the rows in first-seen order; a row lacking a column leaves its cell empty."""
    names = list(columns) if columns is not None else list(dict.fromkeys(k for row in rows for k in row))
    with atomic_file(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=names)
        writer.writeheader()
        writer.writerows(rows)
        fh.flush()
        os.fsync(fh.fileno())


def savefig_atomic(fig: Any, path: Path, **kwargs: Any) -> None:
    """`fig.savefig(path, **kwargs)` (a matplotlib figure) through a temporary name with `path`'s
    suffix, from which matplotlib takes the format, renamed over `path` once written."""
    path = Path(path)
    with atomic_file(path, suffix=path.suffix) as tmp:
        fig.savefig(tmp, **kwargs)


def replace_folder(tmp: Path, path: Path, *, replace: bool = False) -> Path:
    """Rename the finished folder `tmp` to `path`, replacing an existing `path` when `replace`. A file system
    that will not rename a folder there (`UNRENAMABLE`: `path` a mount point, ...) is one line (`UserError`),
    with `path` as it was; the caller removes `tmp`, as after any failure."""
    tmp, path = Path(tmp), Path(path)
    try:
        return _renamed(tmp, path, replace)
    except OSError as exc:
        if exc.errno not in UNRENAMABLE:
            raise
        # `_swap` has put the old folder back by now
        raise UserError(_unrenamable(path, exc)) from None


UNRENAMABLE = {
    errno.EBUSY: (
        "a mount point",
        "choose an output folder inside the mount, not the mount point itself, e.g. {in}",
    ),
    errno.EXDEV: (
        "on another file system than its parent (or in a container image's layer)",
        "choose an output folder inside it, e.g. {in}, or one on a single file system with its parent",
    ),
    errno.EPERM: ("a folder this user may not rename here", "choose an output folder of your own"),
}
"""The errnos of a rename the file system refuses where the output goes, not a mistake of ours: (what `path`
then is, the fix, `{in}` standing for a folder inside `path`). Each was an OSError traceback after the work
that filled the folder (EPERM a line naming the temporary folder, removed by then); a mount point as --out is
the common one (a rename onto it, or of it to replace it, is EBUSY)."""


def _unrenamable(path: Path, exc: OSError) -> str:
    """The line for a finished folder that could not be renamed to `path` (`UNRENAMABLE`)."""
    return (
        f"cannot rename the finished output to {path} ({exc.strerror}: {path} is {UNRENAMABLE[exc.errno][0]}); "
        f"{path} is as it was and the new output was removed: {_fix(exc.errno, path)}, and rerun"
    )


def _fix(code: int, path: Path) -> str:
    """The fix `UNRENAMABLE` gives for `code`, its folder inside `path` named."""
    return UNRENAMABLE[code][1].replace("{in}", str(Path(path) / "out"))


def check_renamable(path: Path) -> None:
    """Refuse a `path` that is a mount point before the work, not at its end: a finished folder cannot be
    renamed onto it (EBUSY). Touches nothing. A bind mount of a folder of the same file system is not told
    from a folder (`os.path.ismount`), so `replace_folder` still says so at the rename."""
    if os.path.ismount(path):
        raise UserError(
            f"{path} is a mount point, and encoderlab writes its output beside it, then renames it into place, "
            f"which a mount point refuses; nothing was changed: {_fix(errno.EBUSY, path)}"
        )


def _renamed(tmp: Path, path: Path, replace: bool) -> Path:
    """`replace_folder`'s renames, its errors as the file system gives them."""
    if replace:
        _remove_replaced(path)
    if replace and path.exists():
        return _swap(tmp, path)
    try:
        return tmp.rename(path)  # POSIX: replaces an empty folder, fails on a non-empty one
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST) or replace:
            raise
        # checked empty when the command started: another one (on the same --out at once) finished
        # first; was an OSError traceback "Directory not empty"
        raise UserError(
            f"{path} was filled by another command while this one ran (two at once on one folder?); "
            "nothing of this one was kept: use that result, or rerun with another --out"
        ) from None


def _remove_replaced(path: Path) -> None:
    """Remove what a replace of `path` killed mid-swap left beside it: a hidden `.NAME.PID.replaced.tmp` holding
    `PARTIAL` (the old folder, whole or half removed). Run before every replace, whether or not `path` exists: a
    kill between the two renames leaves no `path`, and the next write of it then renamed without a swap, so a
    leftover looked for only inside the swap stayed for good."""
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.*.replaced.tmp"):
        if (leftover / PARTIAL).is_file():  # ours: a user's folder of that name has no marker
            shutil.rmtree(leftover, ignore_errors=True)


def _swap(tmp: Path, path: Path) -> Path:
    """Put the finished folder `tmp` in the place of the folder `path`: `path` marked (`PARTIAL`) and renamed out of
    the way (a hidden `.NAME.PID.replaced.tmp` beside it), `tmp` renamed into its place, then the old one removed.
    Removing the old folder first took seconds for a model, and a Ctrl-C then left half of it at `path` and removed
    the complete new one: neither was left. An interruption now lands before the swap (the old folder put back,
    unmarked), or after it (the new one in place; the old one's removal finishes in the handler). The marker goes in
    before the first rename, so a SIGKILL anywhere after it leaves a hidden folder the next replace of `path`
    removes (`_remove_replaced`); one between the renames leaves no `path` (the new folder whole in `tmp`, which its
    owner takes for a leftover): the one instant two renames cannot close."""
    old = path.with_name(f".{path.name}.{os.getpid()}.replaced.tmp")
    (path / PARTIAL).touch()  # a kill before the rename leaves it in a finished folder: never a refusal
    try:
        path.rename(old)
        tmp.rename(path)
    except BaseException:
        if not tmp.exists():  # interrupted after the swap: the new folder is in place
            _finish_removal(old)
            raise
        if old.exists() and not path.exists():
            old.rename(path)
        (path / PARTIAL).unlink(missing_ok=True)
        raise
    _finish_removal(old)
    return path


def _finish_removal(old: Path) -> None:
    """Remove the replaced folder `old`; an interruption in that removal finishes it before going on."""
    try:
        shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(old, ignore_errors=True)  # the new folder is in place: finish removing the old one
        raise


def folder_named(path: Path | str) -> Path:
    """`path`, or the folder it links to: a link to a folder (`export --out LINK --overwrite`, `data prepare
    --out LINK` onto scratch storage) stands for that folder, which is written beside and replaced, the link
    kept. rmtree refuses a link (a traceback, after the whole export), and a rename over it replaces the link
    and leaves the folder it named, or fails (a folder cannot replace a link: ENOTDIR, after a whole prepare)."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() and path.is_dir() else path


@contextlib.contextmanager
def atomic_folder(
    path: Path,
    *,
    replace: bool = False,
    tmp: Path | None = None,
    keep_on_interrupt: bool = False,
    tmp_is_ours: bool = False,
) -> Iterator[Path]:
    """A fresh temporary sibling of `path` to fill; renamed to `path` when the block completes.

    `tmp` names the sibling (default `NAME.tmp`); a leftover of an earlier write (it holds the
    `PARTIAL` marker) is removed first, anything else there is refused (`check_sibling`), unless
    `tmp_is_ours`: the sibling lies in a folder only encoderlab writes (the asset cache), so whatever
    is there is a leftover (one from a version before the marker too). The block sees the marker in the
    sibling; the finished folder does not have it. On failure the sibling is removed, except after an
    interruption (KeyboardInterrupt, SystemExit) with `keep_on_interrupt`. A `path` that is a symlink
    to a folder writes that folder.
    """
    path = Path(path)
    if tmp is None:
        path = folder_named(path)
    check_renamable(path)  # before the block writes: the rename at its end would be refused
    tmp = _claim_sibling(path, tmp, tmp_is_ours)
    try:
        yield tmp
        _shareable(tmp)
        replace_folder(tmp, path, replace=replace)
        (path / PARTIAL).unlink(missing_ok=True)
    except BaseException as exc:
        if not (keep_on_interrupt and not isinstance(exc, Exception)):
            shutil.rmtree(tmp, ignore_errors=True)
        room = no_room(exc)
        if room is not None and not isinstance(exc, OSError):  # a library's own exception for it
            raise OSError(room.errno, room.strerror, str(tmp)) from exc
        raise


def _shareable(folder: Path) -> None:
    """Give the files under `folder` that were made private (0600) the mode the umask gives a new file.
    safetensors writes through a private temporary file and renames it, so every model.safetensors of a
    model folder, checkpoint or export was readable by its owner alone (a colleague loading an export on
    a shared machine got PermissionError), while the config and tokenizer beside it were not private."""
    # PARTIAL was made with mode 0o666, so its mode is what the umask gives a new file; reading it spares
    # os.umask's set-and-restore, which would change the mask for every other thread meanwhile.
    marker = folder / PARTIAL
    if not marker.is_file():
        return
    mode = marker.stat().st_mode & 0o777
    for file in folder.rglob("*"):
        if file.is_file() and not file.is_symlink() and file.stat().st_mode & 0o777 == 0o600 != mode:
            file.chmod(mode)


def _claim_sibling(path: Path, tmp: Path | None, tmp_is_ours: bool) -> Path:
    """Make the temporary sibling of `path` this process's: a leftover is removed, and the `PARTIAL`
    marker, created exclusively, records this process. Serialised on the sibling's folder (`flock`),
    so that two commands writing `path` at once never both take one leftover: the second one removed
    the first one's fresh sibling while it was being filled."""
    from encoderlab.locks import host_id, one_at_a_time

    if tmp_is_ours:
        tmp = Path(tmp) if tmp is not None else path.with_name(path.name + ".tmp")
    with one_at_a_time(tmp.parent if tmp is not None else path.parent):
        if tmp_is_ours:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp = check_sibling(path, tmp)
        if (tmp / PARTIAL).is_file():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True, exist_ok=True)  # an empty folder there is reused: nothing in it to lose
        me = {"pid": os.getpid(), "host": socket.gethostname(), "host_id": host_id()}
        try:
            # mode 0o666 as touch() gives: `_shareable` reads the umask's mode off this marker
            fd = os.open(tmp / PARTIAL, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:  # another process claimed it since (no flock on this file system)
            raise UserError(_busy_message(path, tmp)) from None
        with os.fdopen(fd, "w") as fh:
            fh.write(json_text(me))
    return tmp


def _busy_message(path: Path, tmp: Path) -> str:
    return (
        f"{tmp} is being written by another process (pid {_writer(tmp).get('pid', '?')}): another command "
        f"writes {path} now; nothing was changed: wait for it to finish, or write elsewhere"
    )


def _writer(tmp: Path) -> dict:
    """The process recorded in the `PARTIAL` marker of `tmp` ({} for a marker of an older version,
    which was empty, or one cut short by a kill)."""
    from encoderlab.locks import read_lock

    return read_lock(tmp / PARTIAL) or {}


def check_sibling(path: Path, tmp: Path | None = None) -> Path:
    """The temporary sibling `atomic_folder(path, tmp=tmp)` would use; refuse it unless it is absent,
    an empty folder or a leftover of ours (it holds `PARTIAL`). Touches nothing."""
    path = Path(path)
    tmp = Path(tmp) if tmp is not None else path.with_name(path.name + ".tmp")
    if tmp.is_symlink() or (tmp.exists() and not tmp.is_dir()):
        raise UserError(
            f"{tmp} exists and is not a folder encoderlab left behind; nothing was changed: move it away "
            f"(encoderlab writes {path} there first)"
        )
    if tmp.is_dir() and not (tmp / PARTIAL).is_file() and any(tmp.iterdir()):
        raise UserError(
            f"{tmp} exists and is not a leftover of encoderlab (no {PARTIAL} marker in it); nothing in it was "
            f"changed: move it away (encoderlab writes {path} there first)"
        )
    if (tmp / PARTIAL).is_file():
        from encoderlab.locks import holder_alive

        writer = _writer(tmp)
        if writer.get("pid") != os.getpid() and holder_alive(writer):
            raise UserError(_busy_message(path, tmp))  # a live writer's, not a leftover
    return tmp


def cached_arrays(path: Path | None, compute: Any, what: str = "cache", check: Any = None) -> dict:
    """The arrays saved at `path` (an .npz), or `compute()` (a dict of arrays) saved there atomically. A
    file there that cannot be read (damaged, not an .npz, an object array: pickles are never loaded) is
    computed again and replaced, with a note; it was a traceback on every later run (a probe's feature
    cache, the decontamination cache). `check(arrays)`, when given, refuses bad arrays (raising) whether
    read or computed, before computed ones are saved: a cache an older version wrote escaped a check made
    only where they were computed."""
    import zipfile
    import zlib

    import numpy as np

    arrays = None
    if path is not None and path.is_file():
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = dict(data)
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
            note = f"encoderlab: note: the {what} {path} is unreadable ({exc}); computing it again"
            print(note, file=sys.stderr)
    computed = arrays is None
    if arrays is None:
        arrays = compute()
    if check is not None:
        check(arrays)
    if computed and path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(path, suffix=".npz") as tmp:
            np.savez(tmp, **arrays)
    return arrays


def print_json(result: Any, out: Path | None = None) -> None:
    """Print `result` as strict indented JSON (`json_text`) and, with `out`, also write it there (its
    folder created)."""
    text = json_text(result, indent=2)
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(Path(out), text + "\n")
    print(text)
