"""The folder `torch.compile` reads its caches from, checked to be this user's alone before anything compiles.

Inductor keeps compiled graphs, kernels and autotuning results in `TORCHINDUCTOR_CACHE_DIR`, by default
`<tempdir>/torchinductor_<user>` (`/tmp/torchinductor_alice`), and loads what it finds there: pickled
graphs (`pickle.loads` in `torch/_inductor/codecache.py`) and generated Python and shared libraries it
imports. `/tmp` is writable by every user of a machine, and torch makes the folder with
`os.makedirs(exist_ok=True)`, which takes one that is already there whoever made it. So on a shared
machine another user who made `/tmp/torchinductor_alice` first (world-writable, or theirs) could plant
a cache entry that runs their code in alice's next compiled run: a file read that executes code.

`private_compile_cache` closes that before the first `torch.compile`: with `TORCHINDUCTOR_CACHE_DIR`
unset, the default folder is made here with mode 0700 if it is absent, and an existing one is taken only
if it is a real folder (not a link) owned by this user and writable by no one else (group write only
through the user's private group: a umask of 002 leaves torch's own folder 775). A folder of this
user's that others could write to but that holds nothing is tightened to 0700 and taken: no one else
can make a folder owned by this user, so it is one of the user's own processes' (torch's import under a
umask of 002 with a shared group makes it so), and once it is 0700 and empty nothing can be in it.
Otherwise the command refuses in one line naming the folder and both ways out. Inside a folder only its owner can
write to, nothing can be planted, and the sticky bit of `/tmp` keeps others from swapping the folder.

Trade-offs: a `TORCHINDUCTOR_CACHE_DIR` the user sets to another folder is theirs to vouch for and is
not checked (the user asked for it, as with `trust_remote_code`; torch itself sets the variable to the
default folder as its inductor modules are imported, so one naming the default is checked all the
same); a default folder of the user's that was open and holds anything is refused rather than tightened,
since it may already hold planted entries (it is left as it was). Triton's own cache (`~/.triton`, or `TRITON_CACHE_DIR`) lives in
the user's home and is not checked.
"""

from __future__ import annotations

import getpass
import os
import re
import stat
import tempfile
from pathlib import Path

from encoderlab.errors import UserError

CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"


def default_compile_cache() -> Path:
    """The folder inductor uses when `TORCHINDUCTOR_CACHE_DIR` is unset, by torch's rule
    (`torch/_inductor/runtime/cache_dir_utils.py:default_cache_dir`) written out: importing that module
    makes the folder and sets the variable, before any check could look."""
    try:
        user = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    return Path(tempfile.gettempdir()) / ("torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


def private_compile_cache() -> None:
    """Refuse, in one line, a default inductor cache folder that someone else could have written to; make
    it (0700) when absent. A `TORCHINDUCTOR_CACHE_DIR` the user set to another folder is used as set."""
    folder = default_compile_cache()
    named = os.environ.get(CACHE_ENV)
    # torch sets the variable to the default itself once any of its inductor modules is imported, so a
    # variable naming the default folder is checked as the default; another folder is the user's choice
    if named and Path(named).absolute() != folder.absolute():
        return
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        why = _not_private(folder)
        if why and not _tightened_if_empty(folder):
            raise UserError(
                f"torch.compile's cache folder {folder} {why}, so a file planted there could run code in this "
                f"process (inductor unpickles its cache); remove {folder} if you did not make it, or set "
                f"{CACHE_ENV} to a folder of your own"
            ) from None
    except OSError as exc:  # cannot be made (the temp folder read-only): torch would fail there as well
        raise UserError(
            f"cannot create torch.compile's cache folder {folder} ({exc.strerror}); set {CACHE_ENV} to a "
            "folder of your own, or turn compiling off (scale.compile=false)"
        ) from None
    os.environ[CACHE_ENV] = str(folder)  # torch reads it from here on: the folder checked is the one used


def _not_private(folder: Path) -> str | None:
    """Why `folder` is not this user's alone (a link, not a folder, another owner, writable by others),
    or None."""
    info = folder.lstat()
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"belongs to another user (uid {info.st_uid})"
    mode = stat.S_IMODE(info.st_mode)
    if mode & stat.S_IWOTH:
        return f"is writable by other users (mode {mode:o})"
    if mode & stat.S_IWGRP and not _private_group(info.st_gid):
        return f"is writable by its group (gid {info.st_gid}), which other users may be in (mode {mode:o})"
    return None


def _tightened_if_empty(folder: Path) -> bool:
    """Make a real folder of this user's 0700 and say whether it is empty; one that is not is given its mode
    back (a refused command changes nothing). Checked after the chmod: from then on no one else can add."""
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
        return False
    folder.chmod(0o700)
    with os.scandir(folder) as entries:
        if next(entries, None) is None:
            return True
    folder.chmod(stat.S_IMODE(info.st_mode))
    return False


def _private_group(gid: int) -> bool:
    """Whether `gid` is this user's private group: its primary group, named as the user, listing no one
    else and no other user's primary group (a member the group's list never names), as Debian, Ubuntu and
    Fedora make one per user. Their umask 002 leaves torch's own folder group-writable (775), which lets no
    one else in; any other group might. Trade-off: a directory that lists no users (`getpwall` without
    enumeration, as sssd's default) hides another user's primary group, as it hides nothing else here."""
    try:
        import grp
        import pwd
    except ImportError:  # not POSIX: no groups to judge
        return False
    try:
        user, group = pwd.getpwuid(os.getuid()), grp.getgrgid(gid)
    except KeyError:  # a uid or gid without a name
        return False
    others = any(p.pw_gid == gid and p.pw_uid != user.pw_uid for p in pwd.getpwall())
    return (
        gid == user.pw_gid
        and group.gr_name == user.pw_name
        and set(group.gr_mem) <= {user.pw_name}
        and not others
    )
