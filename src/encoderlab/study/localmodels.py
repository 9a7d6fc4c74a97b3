"""A local model folder as a study reads it: its identity, remembered for the process, and each node's recheck.

An eval or CKA node of a model folder evaluated as is, and a pretraining node continuing one, are keyed by the
identity of the files the load reads (`readfiles.files_identity`), hashed when the graph is built: an eval's
load of a finished run folder reads its `final/`, a training start its last checkpoint's `model/`
(`train.start.start_model_folder`, the files the trainer records), so a folder read both ways is two reads
(`read_model`'s `start`); one save writes both, and a hand edit of one of them moves the key of the node that
reads it and of no other (a continued run was keyed by `final/`, and an edit of either was refused as a
change by the check after the trainer's load, which compares the checkpoint's files with the key). A study runs
for hours; a folder replaced in between (the user retrains into it) was loaded by the node all the same and
scored under the old key, its record's fingerprint the only trace. So the node reads the identity again just
before it loads the folder (`check_model`) and refuses a mismatch in one line naming the folder, the files that
changed and the fix (run the study again, which rebuilds the graph keyed by the files as they are now; or restore
them). The refusal is a node's error like any other: the study stops as it does for a failing node (the nodes
still running finish, finished ones keep their markers), and the refused node writes nothing, so no score of the
new files lies under the old key. An eval node checks again after loading, so the model it keeps loaded between
nodes (`nodes._LOADED`) is only ever one read from the files its key names.

Trade-off, what the recheck costs: hashing every byte again per node would read a large model once per eval
node. A read is remembered for the process (`_READS`, one entry per folder) with the stat identity of every file
under the folder at the time (`txtscans.scan_key`: device, inode, size, mtime and ctime), taken before the bytes
are hashed; when none of them moved, the read stands and the recheck is a walk of the folder's stats (a file added,
such as a new shard or tokenizer file, moves the walk too). A write moves mtime and ctime, and nothing sets a
ctime back, so a copy that keeps times (`cp -p`, `rsync -a`), which `files_identity` alone would not trust by
time, has another ctime or inode and is read again. What it cannot see: on a filesystem whose ctime is not a
change time (FAT), a same-size rewrite with its mtime put back; a same-size save within the tick of coarse
file times is seen, as a read is reused only when every file last changed 2 s before it (`txtscans.settled`,
`ModelRead.trusted`). The memory lives in
one process only: a node run by a `--jobs` worker, which starts afresh, hashes the folder once per worker (then
remembers it), and a new `study run` reads every folder again, as the graph's key must be of the bytes. The
files' digests the graph read are handed to each node beside its key (`Node.aside`, `model_files`), so the
refusal names the files that changed in a worker too.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from encoderlab.data.txtscans import settled, tree_stats
from encoderlab.errors import UserError
from encoderlab.paths import typed

if TYPE_CHECKING:
    from encoderlab.study.runner import NodeContext
    from encoderlab.train.trainer import Trainer


@dataclass(frozen=True)
class ModelRead:
    """One read of a local model folder: the identity a node's key holds, its parts and the stats it was of."""

    folder: Path
    """The folder the load reads (`read_model`: an evaluation's or a training start's of the one named)."""
    identity: str
    """`readfiles.files_identity` of the files the load reads."""
    files: dict[str, str]
    """{file relative to `folder`: its sha256}, in the order the identity digests them (`file_digests`)."""
    stats: tuple
    """The stat identity of every file under `folder`, taken before the bytes were read (`tree_stats`)."""
    trusted: bool = True
    """Whether the read may be reused while `stats` stay (`txtscans.settled`): not for a folder saved within
    the file times' tick of the read. Kept either way, so its nodes get its digests (`model_files`)."""


_READS: dict[tuple[str, bool], ModelRead] = {}
"""The last read of each model folder by the real path of the folder named (a run's, or the model's own) and
whether a start reads it (`read_model`): the graph's, then each node's recheck, which reuses it while
`tree_stats` is unchanged. One entry a folder and way, never pruned (a study names a few)."""


def read_model(source: str, start: bool = False) -> ModelRead | None:
    """The read of `source` when it is a folder on this machine (None: an asset name or a hub id, or nothing
    there), as an evaluation loads it (`hub.own_model_folder`: a run folder's `final/`) or, `start`, as a
    training start from it does (`train.start.start_model_folder`: its last checkpoint's `model/`): remembered
    while no file under the folder read moved, else read again (`needs.model_identity` says which files)."""
    folder = Path(source).expanduser()
    if not folder.is_dir():
        return None
    from encoderlab.model.hub import own_model_folder
    from encoderlab.model.readfiles import file_digests, folder_tokenizer, identity_of, read_files
    from encoderlab.train.start import start_model_folder

    real = (os.path.realpath(folder), start)
    folder = start_model_folder(str(folder)) if start else own_model_folder(folder) or folder
    taken = time.time_ns()
    stats = tree_stats(folder)
    known = _READS.get(real)
    if known is not None and known.trusted and known.stats == stats and known.folder == folder:
        return known
    what = f"start model {source}, which the study reads"
    files = file_digests(folder, read_files(folder, folder_tokenizer(folder)), what)
    _READS[real] = ModelRead(folder, identity_of(files), files, stats, settled(stats, taken))
    return _READS[real]


def model_files(source: str, identity: str, start: bool = False) -> dict[str, str]:
    """The file digests of the last read of `source` (`start`: as `read_model`'s) when they make `identity` (the
    graph's read, just made), else {} (not read in this process, or read since as other files): handed to its
    nodes beside their key."""
    read = _READS.get((os.path.realpath(Path(source).expanduser()), start))
    return dict(read.files) if read is not None and read.identity == identity else {}


def check_model(
    source: str,
    keyed: str,
    files: Mapping[str, str],
    study_dir: Path,
    loaded: str | None = None,
    start: bool = False,
) -> None:
    """Refuse to load `source` unless it still holds the files whose identity `keyed` the node's key holds;
    `files`: their digests as the graph read them (`model_files`; {} when not known), to name those that
    changed; `loaded`: the identity of what a load read already (`check_loaded`; None: not known), another
    than `keyed` refused even where the folder holds the keyed files again; `start`: a training start loads
    it (`read_model`). One line, naming the folder, the files and the fix; nothing is written."""
    now = read_model(source, start)
    if now is not None and now.identity == keyed and loaded in (None, keyed):
        return
    again = run_again(study_dir)
    if now is None:
        raise UserError(
            f"model folder {source} is gone since the study's graph was built, which keyed this node by its files; "
            f"put it back and {again}"
        )
    changed = sorted(n for n in files.keys() | now.files.keys() if files.get(n) != now.files.get(n))
    named = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    raise UserError(
        f"{named + ' of' if changed else 'the files the load reads of'} model folder {now.folder} changed since "
        "the study's graph was built, which keyed this node by the files as they were then; "
        f"{again} (its graph is rebuilt, keyed by the files as they are now; finished nodes are kept), or "
        "restore the files"
    )


def recheck(
    ctx: NodeContext,
    source: str,
    keyed: str | None,
    model: str | None = None,
    loaded: str | None = None,
    start: bool = False,
) -> None:
    """`check_model` for the node of `ctx` about to load `source` (`model`: a CKA node's id of it; `loaded`:
    the identity of what it loaded, `check_loaded`; `start`: a pretraining node's start), whose key holds
    `keyed` (None: a name, not a local folder: nothing to check); refused, the node's folder goes again when
    the node wrote nothing into it, so a rerun lists no folder of an earlier version."""
    if keyed is None:
        return
    parts = ctx.node.aside.get("source_files", {})
    files = parts.get(model, {}) if model is not None else parts
    with leaving_nothing(ctx):
        check_model(source, keyed, files, ctx.study_dir, loaded, start)


def run_again(study_dir: Path) -> str:
    """The fix of a node refused for an input changed since the graph was built (a model folder here, a CKA
    texts file: `localtexts.read_keyed_texts`): the study run again, its graph keyed by the input as it is."""
    return f"run `encoderlab study run {typed(study_dir)}` again"


@contextlib.contextmanager
def leaving_nothing(ctx: NodeContext) -> Iterator[None]:
    """Run a node's recheck of an input: refused, the node's folder goes again when the node wrote nothing into
    it, so a rerun lists no folder of an earlier version and nothing lies under the old key."""
    try:
        yield
    except UserError:
        with contextlib.suppress(OSError):  # not empty: a pretraining node's partial run, kept
            ctx.out_dir.rmdir()
        raise


def recheck_sources(ctx: NodeContext, sources: Mapping[str, str], keyed: Mapping[str, str]) -> None:
    """`recheck` of each model a CKA node compares as is from a local folder (`CkaNode.source_files`)."""
    for model, files in keyed.items():
        recheck(ctx, sources[model], files, model)


def check_loaded(ctx: NodeContext, source: str, keyed: str | None) -> Callable[[Trainer, int], None]:
    """The `before_start` hook of a pretraining node continuing `source`, whose key holds `keyed` (None:
    nothing to check): the folder was rechecked before the run was built (`recheck`), but could be replaced
    between that check and the trainer's load. Once the trainer has loaded it, and before it writes anything,
    the identity it will record of its start model (`Trainer.start_model_identity`: hashed once, from the files
    it loaded, and the one its checkpoints hold) must be `keyed`; else the node is refused as `check_model`
    refuses it, and leaves no folder, so no run of other files lies under the old key. Only a refusal reads
    the folder again, to name the files that changed: the identity and the key are both
    `readfiles.files_identity` of the files the load reads, so no second hash of the weights is needed."""

    def check(trainer: Trainer, stop: int) -> None:
        loaded = trainer.start_model_identity() if keyed is not None else None
        if loaded is not None and loaded != keyed:
            recheck(ctx, source, keyed, loaded=loaded, start=True)

    return check
