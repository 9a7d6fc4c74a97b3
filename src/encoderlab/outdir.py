"""Output folders: every command writes only into a folder it created, and checks before it writes.

A command that writes a folder (a run, an evaluation, an export, a transplant, a study) first calls
`check_output`, which touches nothing and refuses, with one line naming the folder and the fix:
  * a path that is a file, a broken or looping symlink, or whose parent cannot be created;
  * a folder that is, contains or lies inside one of the command's sources (`export RUN --out RUN`,
    `transplant --out B/final`), since writing there would destroy what is being read;
  * a non-empty folder that encoderlab did not create, or that another kind of command created.
Only once every other check of the command has passed does it call `create_output`, which makes the
folder and drops an ownership marker (`.encoderlab.json`: kind, version, time) into it. A refused
command therefore leaves the file system exactly as it found it. A marker write cut short by a kill leaves its
temporary file alone in the folder: counted as nothing once its writer is known gone (`locks.writer_gone`), and
removed by the next `create_output`; while that writer may live (here, or on another host), the folder is refused
as being created by another command now.

Commands that write one result file (`bench --out F.json`) call `check_output_file`: a folder, an
uncreatable parent or an existing file that is not a previous result of that command (told by the
keys its result always has, `json_result_with`) is refused before the (long) work starts. A command
that can still fail after it created its folder (a task's data turns out empty after the model
loaded) uses `output_folder`, which removes the folder again when it holds nothing but the marker,
with the parent folders it had to create (`missing_folders`). A command that makes its folder before its
checks (a study: to hold its lock while it checks and fetches) calls `undo_output` itself when it is refused
or interrupted (Ctrl-C during a fetch left an empty study folder), with the entries it wrote that are worth
nothing alone; a folder that was there before, or holds any work, is never removed.

A folder inside a study folder (a parent holding `study.json`, `runs/a/nodes/foo`) is that study's:
`study status runs/a` listed what another command wrote there as a leftover of an earlier version, to
delete. Every command is refused there, except the study runner writing a node's own folder, which it
names explicitly (`study_node`) around the node's work; a context variable rather than a parameter
threaded through `pretrain`, `prepare` and the trainer, because the runner reaches `check_output` through
the same public APIs a user calls, and the exemption must not be one a user's config could ask for.

Sources that do not exist as paths (asset names and hub ids, which the caller resolves to their
cache folders when it can) are skipped by the overlap check.

Folders written by versions without the marker are recognised by a per-kind `legacy` test (a run
folder holds a `config.yaml` that loads as a RunConfig, for example), so upgrading keeps resume and
caching working. Trade-off: a marker is a file in the user's output; it is small, hidden and the
only reliable way to tell "ours" from "a folder that happens to hold a metrics.jsonl".
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from encoderlab import jsonlines
from encoderlab.atomic import json_text, write_text_atomic
from encoderlab.errors import UserError

MARKER = ".encoderlab.json"
"""The ownership marker written into every output folder encoderlab creates."""

STUDY_RECORD = "study.json"
"""The file that makes a folder a study folder (`study.runner` writes it)."""

RUN_KIND = "pretrain"
"""The output kind of pretraining run folders (`model/runlayout.py` names the rest of their layout)."""

RUN_PARTS = ("final", "checkpoints")
"""The folders of a run that pretrain writes and replaces: a `--resume` replaces `final/` and deletes
whatever in `checkpoints/` is no complete checkpoint (`train/checkpoint.remove_partial`), and pruning
deletes old checkpoints whole."""

_NODE: contextvars.ContextVar[Path | None] = contextvars.ContextVar("study_node", default=None)


def _resolved(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path, strict=False))
    except (OSError, RuntimeError):  # a symlink loop on some Pythons
        raise UserError(f"{path} is a symlink that loops; remove it or choose another --out") from None


def _loops(path: Path) -> bool:
    try:
        os.path.realpath(path, strict=True)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def owner(path: Path) -> dict | None:
    """The marker of an output folder, or None when it has none (or it is unreadable)."""
    try:
        data = jsonlines.loads((Path(path) / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def check_output(
    path: Path | str,
    kind: str,
    *,
    sources: Sequence[Path | str] = (),
    legacy: Callable[[Path], bool] | None = None,
    flag: str = "--out",
    elsewhere: str | None = None,
) -> Path:
    """Refuse `path` as the output of a `kind` command unless writing there is safe; touch nothing.

    `sources` are folders or files the command reads; `legacy` recognises this kind's folders from
    before the marker existed. `elsewhere` is how this command writes somewhere else when that is not
    `choose another {flag}` (`data merge`, whose --out also names where its parts are); something in
    the way then reads "move it away, or {elsewhere}". Returns the path (unchanged) for chaining.
    """
    path = Path(path)
    check_named(path, flag)
    other = elsewhere or f"choose another {flag}"
    clear = other if elsewhere is None else f"move it away, or {elsewhere}"  # what is at `path`: in the way
    if path.is_symlink() and not path.exists():
        target = os.readlink(path)
        if _loops(path):
            raise UserError(f"{flag} {path} is a symlink that loops (to {target}); remove it or {other}")
        raise UserError(f"{flag} {path} is a symlink to {target}, which does not exist; remove it or {other}")
    real = _resolved(path)
    _check_not_in_a_study(path, real, flag)
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag} {path} is a file, not a folder; {clear}")
    for src in sources:
        if not (Path(src).exists() or Path(src).is_symlink()):
            continue  # an asset name or hub id: nothing on disk here to destroy
        s = _resolved(Path(src))
        if _inside(real, s) or _inside(s, real):
            raise UserError(
                f"{flag} {path} is, contains or lies inside the source {src}; writing there would destroy what is "
                f"being read: {other}"
            )
    check_outside_run_parts(path, flag)
    check_outside_artefacts(path, flag)
    entries = [p for p in path.iterdir() if _marker_write(p) is not True] if path.is_dir() else []
    if entries:
        mark = owner(path)
        _check_no_marker_write(path, mark, entries, flag)
        if mark is None and not (legacy and legacy(path)):
            raise UserError(
                f"{flag} {path} is a non-empty folder that encoderlab did not create; nothing in it was changed: "
                + (f"{other} or an empty folder" if elsewhere is None else clear)
            )
        if mark is not None and mark.get("kind") != kind:
            raise UserError(
                f"{flag} {path} holds the output of `{mark.get('kind')}`, not `{kind}`; nothing in it was changed: "
                f"{clear}"
            )
    elif not path.exists():
        _check_creatable(path, flag, other)
    return path


@contextlib.contextmanager
def study_node(folder: Path) -> Iterator[None]:
    """Within this block, outputs inside `folder` (a study node's folder, which the study runner is
    writing) are not refused as lying inside a study folder."""
    token = _NODE.set(_resolved(Path(folder)))
    try:
        yield
    finally:
        _NODE.reset(token)


def study_folder_above(path: Path) -> Path | None:
    """The nearest folder above `path` that is a study folder (holds `STUDY_RECORD`), else None. `path` as
    the caller wants it seen: resolved (an output's real place) or as given, made absolute."""
    return next((p for p in path.parents if (p / STUDY_RECORD).is_file()), None)


def _check_not_in_a_study(path: Path, real: Path, flag: str) -> None:
    """Refuse an output inside a study folder, unless it lies in the node folder being written (`study_node`)."""
    outer = study_folder_above(real)
    node = _NODE.get()
    if outer is not None and not (node is not None and _inside(real, node)):
        raise UserError(
            f"{flag} {path} lies inside the study folder {outer}, whose folders are that study's; choose "
            f"another {flag} outside it"
        )


def is_marked_run(path: Path) -> bool:
    """Whether `path` is a pretraining run by its marker (or, written before the marker, by its `config.yaml`
    and `env.json`). `model.runlayout.is_run_folder` also takes a `checkpoints/` folder as one."""
    if (owner(path) or {}).get("kind") == RUN_KIND:
        return True
    return (path / "config.yaml").is_file() and (path / "env.json").is_file()


def run_part(path: Path) -> Path | None:
    """The `RUN_PARTS` folder of a run that `path` is or lies inside, else None. A run is told by
    `is_marked_run`, not by a `checkpoints/` folder: a user's own `work/checkpoints/` must not make `work`
    a run."""
    real = Path(os.path.realpath(path))
    for run in real.parents:
        if is_marked_run(run):
            part = run / real.relative_to(run).parts[0]
            return part if part.name in RUN_PARTS else None
    return None


def check_outside_run_parts(out: Path, flag: str = "--out") -> None:
    """Refuse an output that is or lies inside a run's `final/` or `checkpoints/` (`run_part`): the run's
    next `--resume` replaces the one and deletes what it did not write in the other, and pruning deletes
    a checkpoint whole, without a word. Part of `check_output` and `check_output_file`, so that every
    command writing a folder or a result file refuses it, as it refuses a study folder's; checked after
    the sources, so that `--out` inside what the command reads is still said as that."""
    part = run_part(out)
    if part is not None:
        raise UserError(
            f"{flag} {out} is or lies inside {part}, a folder of the run {part.parent} that pretrain replaces "
            f"on --resume (deleting what it did not write there); choose another {flag} outside it"
        )


ARTEFACT_KINDS = {
    "data prepare": "prepared-data folder",
    "data tokenizer": "tokenizer folder",
    "export": "model folder",
}
"""Output kinds whose folder is a whole artefact other commands read (`data/target.KIND`,
`data/tokenizer_training.KIND`, `model/export.KIND`), by what the refusal calls it."""


def check_outside_artefacts(out: Path, flag: str = "--out") -> None:
    """Refuse an output lying inside a folder of `ARTEFACT_KINDS` (by its marker): a file written there
    changes what the folder's freshness check hashes (`data prepare` then prepared again, or refused) or
    what loading the model reads, and `data prepare --out` over it replaces the folder whole. Was accepted
    by every command (`advise`, `analyze`, `data prepare`, `pretrain`, `bench data --work`, ...). Part of
    `check_output` and `check_output_file`, as `check_outside_run_parts`; the folder itself (a rerun's
    --out) is `check_output`'s kind check."""
    real = Path(os.path.realpath(out))
    for folder in real.parents:
        kind = (owner(folder) or {}).get("kind")
        if kind in ARTEFACT_KINDS:
            raise UserError(
                f"{flag} {out} lies inside {folder}, a {ARTEFACT_KINDS[kind]} encoderlab wrote (`{kind}`), whose "
                f"files are read as a whole; choose another {flag} outside it"
            )


def check_named(path: Path, flag: str = "--out") -> None:
    """`.`, `..` or `/` has no name to write NAME.tmp (or NAME.shards) beside: refused in one line (export,
    transplant, prepare: a ValueError; `data merge --out ..` looked for `...shards`)."""
    if Path(path).name in ("", ".."):
        raise UserError(
            f"{flag} {path} names no folder of its own (the current folder, a parent or the root); give it a "
            f"name, e.g. {flag} {Path(path) / 'out'}"
        )


def _check_creatable(path: Path, flag: str, other: str) -> None:
    """The nearest existing ancestor must be a writable folder, so that mkdir will succeed."""
    ancestor = path.absolute().parent
    while not ancestor.exists():
        if ancestor.is_symlink():
            raise UserError(f"{flag} {path}: {ancestor} is a broken symlink; remove it or {other}")
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UserError(f"{flag} {path} cannot be created: {ancestor} is a file; {other}")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {path} cannot be created: {ancestor} is not writable; {other}")


def create_output(path: Path | str, kind: str) -> Path:
    """Make the output folder (after `check_output` and every other check passed) and mark it ours."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create {path} ({exc.strerror}); choose another --out") from None
    if owner(path) is None:
        from encoderlab import __version__

        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        write_text_atomic(
            path / MARKER, json_text({"kind": kind, "version": __version__, "created": stamp}) + "\n"
        )
    for entry in path.iterdir():
        if _marker_write(entry) is True:
            entry.unlink(missing_ok=True)
    return path


def _marker_write(entry: Path) -> bool | None:
    """For the temporary file of a marker (`atomic_file`'s `.MARKER.PID.HOST.tmp`): whether its writer is known gone
    (`locks.writer_gone`, the rule of a lock's temporary files: by pid on this host, by an hour's age on another,
    where a pid means nothing); None for any other entry. `create_output` makes the folder, then writes the marker
    through it, so a SIGKILL in that write (an fsync: long on a network disk) left a folder holding that file alone,
    and every rerun refused it as "a non-empty folder that encoderlab did not create": one whose writer is gone
    counts as nothing there, and the next `create_output` removes it. Judged by pid alone, the file of a live writer
    on another node of a shared file system was taken for a leftover and removed under it. The clock is this
    host's, as nothing may be created here to read the file system's: an hour absorbs any skew."""
    import time

    from encoderlab.locks import writer_gone

    return writer_gone(entry, f".{MARKER}", time.time())


def _check_no_marker_write(path: Path, mark: dict | None, entries: list[Path], flag: str) -> None:
    """Refuse `path` while a process that may live (here, or on another host) writes its marker: another command
    creating the same folder now, not someone else's folder."""
    writing = [p for p in entries if mark is None and _marker_write(p) is False]
    if writing:
        raise UserError(
            f"{flag} {path} is being created by another command now (its marker {writing[0].name} is being written "
            f"by a process here or on another host); nothing was changed: wait for it, or delete {writing[0]} if "
            "no command writes there"
        )


def check_output_file(
    path: Path | str,
    accept: Callable[[Path], bool],
    *,
    what: str,
    flag: str = "--out",
    example: str = "result.json",
) -> Path:
    """Refuse `path` as a result file unless writing it is safe; touch nothing.

    A folder, a path under a file or an unwritable folder are refused; an existing file is replaced
    only when `accept(path)` says it is a previous result of the same command (`what` names it;
    `example` is the file name suggested for a folder).
    """
    path = Path(path)
    _resolved(path)
    if path.is_dir():
        raise UserError(f"{flag} {path} is a folder; give a file name for {what}, e.g. {path}/{example}")
    check_outside_run_parts(path, flag)
    check_outside_artefacts(path, flag)
    if path.exists() and not accept(path):
        raise UserError(f"{flag} {path} exists and is not {what}; nothing was changed: choose another {flag}")
    if not path.exists():
        _check_creatable(path, flag, f"choose another {flag}")
    return path


def json_result_with(*keys: str) -> Callable[[Path], bool]:
    """An `accept` for `check_output_file`: true for a file holding one JSON object (what `print_json`
    writes) with every one of `keys` (dotted for a nested key, `config.size`), the keys that command's
    result always has. Any JSON object was accepted before, so `--out config.json` in a model folder
    replaced the model's config."""

    def accept(path: Path) -> bool:
        try:
            data = jsonlines.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        for key in keys:
            node = data
            for part in key.split("."):
                if not isinstance(node, dict) or part not in node:
                    return False
                node = node[part]
        return True

    return accept


def drop_stale(out: Path | str, *stems: str) -> None:
    """Remove from a reused output folder the files (PNG, CSV, JSON of each stem) a command writes only
    sometimes and did not write this time, so the folder holds one run's results: a reused --out kept
    the previous run's (`analyze cka`'s cka_ratio.png of another pair; `advise`'s advice.json of another
    target beside `--hold-out-largest`'s holdout.json). Call it once the new results are computed."""
    for stem in stems:
        for suffix in (".png", ".csv", ".json"):
            (Path(out) / f"{stem}{suffix}").unlink(missing_ok=True)


def missing_folders(path: Path | str) -> list[Path]:
    """`path` and those of its ancestors that do not exist yet, deepest first: what `mkdir(parents=True)`
    will create, and a refused command must remove again (`remove_folders`)."""
    made, folder = [], Path(path).absolute()
    while not (folder.exists() or folder.is_symlink()) and folder != folder.parent:
        made.append(folder)
        folder = folder.parent
    return made


def remove_folders(made: list[Path]) -> None:
    """Remove the folders of `missing_folders`, deepest first, as long as they are empty (a folder another
    process has written into since is kept, and with it its ancestors)."""
    for folder in made:
        try:
            folder.rmdir()
        except OSError:
            return


@contextlib.contextmanager
def output_folder(path: Path | str, kind: str, scratch: Sequence[str] = ()) -> Iterator[Path]:
    """`create_output`, undone if the block fails while the folder holds nothing but the marker.

    For commands whose last checks need work done first (an evaluation finds a task's split empty
    only after loading the model): a refused run then leaves no folder behind, while a folder that
    already holds results (a resumed evaluation) is never removed. `scratch` names entries the block
    writes on its way that are worth nothing alone (`analyze probe`'s feature cache: a refusal of its
    second model left the first one's): in a folder this call made, they go too.
    """
    path = Path(path)
    made = missing_folders(path)
    create_output(path, kind)
    try:
        yield path
    except BaseException:
        undo_output(path, made, scratch)
        raise


def undo_output(path: Path, made: list[Path], own: Sequence[str] = ()) -> None:
    """Remove the folder `path` again, with the parents it needed, when this command made it (`made`: its
    `missing_folders`, taken before) and it holds nothing but the marker and `own`, entries this command wrote
    that are worth nothing alone. A folder that was there before, or that holds anything else (results,
    another process's lock), is left as it is."""
    if not made:
        return
    try:
        names = {p.name for p in path.iterdir()}
    except OSError:
        names = set()  # not made after all (its mkdir failed): its parents may still be new
    if not names <= {MARKER, *own}:
        return
    for name in names:  # the folder is new, so they are this command's
        entry = path / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    remove_folders(made)
