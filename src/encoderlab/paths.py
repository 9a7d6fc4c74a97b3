"""Where encoderlab keeps fetched assets ($ENCODERLAB_HOME, default ~/.cache/encoderlab), and what a
user's folder holds (`visible_entries`: hidden names left out, as the shell's `*` leaves them)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from encoderlab.errors import NO_ROOM, UserError


def typed(path: str | os.PathLike) -> str:
    """`path` as a command that a message gives types it: quoted where a shell would split or expand it (a
    space, `$`, `*`: `shlex.quote`), as is otherwise. `rerun `encoderlab study run /tmp/my study/out`` ran
    `study run` on two arguments, `/tmp/my` and `study/out`, when copied from `study status`."""
    return shlex.quote(str(path))


def encoderlab_home(create: bool = True) -> Path:
    """The cache root; created on first write (`create`). A read leaves a missing one missing: `assets
    list`, `study plan` and an `eval` refused for an unfetched asset made $ENCODERLAB_HOME/assets."""
    if (
        os.environ.get("ENCODERLAB_HOME") == ""
    ):  # Path("") is ".": assets were fetched into the working folder
        raise UserError(
            "ENCODERLAB_HOME is set but empty; point it at a folder, or unset it for ~/.cache/encoderlab"
        )
    root = Path(os.environ.get("ENCODERLAB_HOME", Path.home() / ".cache" / "encoderlab")).expanduser()
    if root.exists() and not root.is_dir():  # mkdir would fail with FileExistsError, a traceback
        raise UserError(
            f"ENCODERLAB_HOME={root} is a file, not a folder; point ENCODERLAB_HOME at a folder (or unset it for "
            "~/.cache/encoderlab)"
        )
    _make(
        root,
        f"ENCODERLAB_HOME={root}",
        "point ENCODERLAB_HOME at a folder (or unset it for ~/.cache/encoderlab)",
        create,
    )
    return root


def _make(folder: Path, what: str, fix: str, create: bool = True) -> None:
    """mkdir, with a folder that cannot be made as one line (a dangling or looping symlink was a
    FileExistsError traceback); without `create`, only that check, so a read and a write of a folder
    that could never be made say the same."""
    dangling = "a symlink to nothing or a symlink loop"
    if not create:
        if folder.is_symlink() and not folder.exists():
            raise UserError(f"{what} cannot be made a folder ({dangling}); {fix}")
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in NO_ROOM:  # disk full, quota spent: exit 3, as everywhere
            raise
        why = dangling if folder.is_symlink() else exc.strerror
        raise UserError(f"{what} cannot be made a folder ({why}); {fix}") from None


def home_folder(*parts: str, create: bool = True) -> Path:
    """A folder under $ENCODERLAB_HOME (`assets`, `downloads`, `cache/decontam`), created on first write
    (`create`; a reader looks without making it); a file in its place is one line (`assets fetch`,
    `assets list` and every asset read were a FileExistsError traceback)."""
    path = encoderlab_home(create).joinpath(*parts)
    for folder in (path, *path.parents):
        if folder.exists() and not folder.is_dir():
            raise UserError(
                f"{folder} is a file, not a folder, in ENCODERLAB_HOME where encoderlab keeps its "
                f"{'/'.join(parts)}; move the file away (or point ENCODERLAB_HOME elsewhere)"
            )
    _make(path, str(path), "fix or remove it (or point ENCODERLAB_HOME elsewhere)", create)
    return path


def found_in_cwd_instead(value: str, folder: Path, what: str, options: str = "") -> str | None:
    """For a relative path `value` that a file in `folder` names (a study file, a task file) and that is
    missing beside it: when the working directory holds it, the words saying so and how to write it
    (`folder` is where such paths are read, never the working directory); else None. `options`: a corpus
    entry's `#text_field=...` after the path, kept in both paths to write (it was dropped, so the entry
    written as told read the wrong field; "or an absolute path" left it off the absolute one too, so
    with options that path is written out in full)."""
    here = Path(value)
    if here.is_absolute() or not here.exists() or here.resolve() == (folder / value).resolve():
        return None
    tail = f"#{options}" if options else ""
    fix = os.path.relpath(here.resolve(), folder.resolve()) + tail
    absolute = f"{here.resolve()}{tail}" if options else "an absolute path"
    return (
        f"{value} is not beside the {what} (in {folder}) but in the working directory, "
        f"which a {what}'s paths are not read from; write {fix} or {absolute}"
    )


def found_beside_instead(value: str, places: Sequence[tuple[str, Path]], what: str) -> str | None:
    """The mirror of `found_in_cwd_instead`: for a relative path `value` that is read from the working
    directory (a run config's `data.path`) and missing there, when a folder of `places` ((its name, the
    folder): the config file's, the run's) holds it, the words saying so and how to write it; else None."""
    if Path(value).is_absolute() or Path(value).exists():
        return None
    for name, folder in places:
        if (Path(folder) / value).exists():
            fix = os.path.relpath((Path(folder) / value).absolute())
            return (
                f"{what} {value} is not in the working directory, which it is read from, but in {name} "
                f"({folder}); write {fix} or an absolute path"
            )
    return None


def visible_entries(folder: Path, *, recursive: bool = False) -> list[Path]:
    """The entries under `folder` (sorted; with `recursive`, at any depth, through symlinked folders)
    but hidden ones: a name starting with `.`, or anything inside a folder so named, counted from
    `folder` down (so `~/.data/` itself is read). That is what the shell's `*`, `glob.glob` and
    `datasets`' data-file patterns list; `Path.glob` and `rglob` list hidden names too, so a folder of
    task files or a corpus folder read macOS's `._a.yaml` / `._a.txt` (AppleDouble forks, written beside
    every file copied to a non-Mac disk), editors' `.#a.yaml` locks, `.git/` and `.ipynb_checkpoints/`
    (copies of the files beside them: each document trained on twice, and maybe held out once) as the
    user's files. And `rglob` (before Python 3.13) does not enter a symlinked folder, so a corpus folder
    linking its data from shared storage lost those files without a word, where `glob.glob('**')`
    reads them. Each real folder is walked once (a link back up, `sub/up -> ..`, ends there). A folder
    that cannot be listed (permission denied) is one line naming it (`_listed`): `rglob` leaves it out,
    and so did this, so a corpus lost that folder's files without a word. Trade-off: a corpus folder
    at a disk's root refuses its root-only `lost+found`, and is given as a glob of its files instead."""
    if not recursive:
        return sorted(p for p, _ in _listed(folder, folder) if not p.name.startswith("."))
    out: list[Path] = []
    seen: set[Path] = set()
    stack = [folder]
    while stack:
        current = stack.pop()
        if current.resolve() in seen:
            continue
        seen.add(current.resolve())
        entries = [(p, is_dir) for p, is_dir in _listed(current, folder) if not p.name.startswith(".")]
        out += [p for p, _ in entries]
        stack += [p for p, is_dir in entries if is_dir]
    return sorted(out)


def _is_folder(entry: os.DirEntry) -> bool:
    # a link to itself (`a -> a`) raises ELOOP where a broken one answers False: neither is a folder,
    # and the error must not read as the folder holding it being unlistable
    try:
        return entry.is_dir()
    except OSError:
        return False


def _listed(current: Path, top: Path) -> list[tuple[Path, bool]]:
    """The entries of `current`, a folder at or under `top`, each with whether it is a folder (through a
    symlink: `os.scandir` stats only those, so a folder without its `x` bit lists, where `Path.is_dir`
    raised PermissionError, a traceback); one that cannot be listed is a refusal naming the folder to
    open up (it, or the first above it without `r` and `x`) and the fix, never an empty folder."""
    try:
        with os.scandir(current) as found:
            return [(current / e.name, _is_folder(e)) for e in found]
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        # the folder to open up: the first on the way down without r and x (`sub/` for `sub/inner/`)
        parts = current.relative_to(top).parts
        way = [top.joinpath(*parts[:k]) for k in range(len(parts) + 1)]
        current = next((p for p in way if not os.access(p, os.R_OK | os.X_OK)), current)
        if current == top:
            raise UserError(
                f"{top} cannot be listed ({why}); make it readable (chmod u+rx '{top}')"
            ) from None
        raise UserError(
            f"{current}, a folder in {top}, cannot be listed ({why}), so its files would be left out; make "
            f"it readable (chmod u+rx '{current}') or remove it"
        ) from None
