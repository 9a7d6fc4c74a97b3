"""The run folder: whether a run may write it, and the one process that does.

Rules (issue 20), in the order a start applies them:
  1. `outdir.check_output` before anything is read or built: a file, a looping symlink, a folder
     under a parent that cannot be created, a folder that is or overlaps the run's data or `init`
     model, and a non-empty folder that is not a run are refused, and nothing is touched. Run folders
     from before the ownership marker are recognised by a config that loads (`is_run_folder`).
  2. The saved config (`config.yaml`, or when it was deleted the latest checkpoint's `state.json`)
     decides the rest: a new run refuses a folder that holds one, `--resume` refuses a changed
     config (unless forced); `--resume` of a folder with nothing to resume starts a new run and says
     so in one line (crash-looping jobs rerun the same `--resume` command from the start).
  3. Every other check of the run (config, data, model, tokenizer, memory) runs next, still without
     writing (`TrainStep`).
  4. Only then does rank 0 create the folder, take its lock (`RUN/.lock`, `locks.folder_lock`: one
     writer per folder, a live holder named, a dead one's lock taken over) and check rule 2 again
     under the lock, so of two runs started at the same instant on one folder exactly one trains.
A refused run therefore leaves nothing behind, and its retry is not refused.

Trade-off: the lock file lives inside the run folder, so it can only be taken after the folder is
created; a refused second run may thus have created the (empty, marked) folder the first one is
about to fill, which is harmless. A sibling lock would need the parent to be writable before any
check, and would leave files next to the user's folders.
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

import encoderlab.train.checkpoint as ckpt
from encoderlab.config import from_dict, load_yaml, to_dict
from encoderlab.errors import UserError
from encoderlab.launchenv import RESTARTS, elastic_restart, env_nodes, env_rank
from encoderlab.outdir import RUN_KIND, check_output
from encoderlab.train.config import RunConfig
from encoderlab.train.distributed import UNTRAINED, Resplit, resume_blockers

if TYPE_CHECKING:
    from encoderlab.train.build import InitIdentity

KIND = RUN_KIND
"""The output kind of run folders (`outdir` marker)."""
LOCK = ".lock"
"""The lock file inside a run folder while a process trains in it."""


def lock_holder(world_size: int) -> str:
    """What the run lock names as its holder (`locks.folder_lock`'s `what`): `pretrain` for one process, and under
    torchrun `pretrain rank 0 of N processes on M nodes`. Its refusal named rank 0's pid alone, so a resume beside
    the orphaned ranks of a SIGKILLed torchrun (docs/scaling.md) did not say that other ranks, on other nodes,
    still ran and had to be stopped too. The nodes are left unsaid where torchrun's variables do not tell them."""
    if world_size <= 1:
        return KIND
    nodes = env_nodes(world_size)
    return f"{KIND} rank 0 of {world_size} processes" + (f" on {nodes} nodes" if nodes and nodes > 1 else "")


def config_diff(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths whose values differ between two plain-data configs, with both values.

    A list of sections (the phases) that changed length is named by its lengths, then the differences
    of the entries both have, rather than by both whole lists (a phase list's repr is a kilobyte)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            d
            for k in sorted(set(old) | set(new))
            for d in config_diff(old.get(k), new.get(k), f"{prefix}{k}.")
        ]
    if isinstance(old, list) and isinstance(new, list):
        common = [d for i, (a, b) in enumerate(zip(old, new)) for d in config_diff(a, b, f"{prefix}{i}.")]
        if len(old) == len(new):
            return common
        if any(isinstance(x, (dict, list)) for x in old + new):
            return [f"{prefix.rstrip('.')}: {len(old)} -> {len(new)} entries", *common]
    return [] if old == new else [f"{prefix.rstrip('.')}: {old!r} -> {new!r}"]


def saved_config(run_dir: Path) -> dict[str, Any] | None:
    """The config a run folder holds: `config.yaml`, else its latest checkpoint's; None if neither."""
    path = Path(run_dir) / "config.yaml"
    if path.is_file():
        return to_dict(load_yaml(RunConfig, path))
    steps = ckpt.complete_checkpoints(run_dir)
    if not steps:
        return None
    where = ckpt.checkpoint_dir(run_dir, steps[-1]) / "state.json"
    raw = ckpt.read_state(where.parent).get("config")
    if not isinstance(raw, dict):
        raise UserError(
            f"{where} holds no run config; delete {where.parent} to resume from the one before it"
        )
    return to_dict(from_dict(RunConfig, raw, where=str(where)))


def is_run_folder(path: Path) -> bool:
    """A run folder written before the ownership marker existed: its config loads."""
    try:
        return saved_config(path) is not None
    except UserError:
        return False


def _sources(cfg: RunConfig) -> list[Path]:
    """The folders the run reads, which its run folder must not be, contain or lie inside: the data
    and the `init` model, an asset name or hub id resolved to the folder it loads from, a hub id's
    local cache folder included (`sources.guarded_folder`, as `eval`, `analyze` and `export` do)."""
    from encoderlab.model.sources import guarded_folder

    found = [Path(cfg.data.path)] if cfg.data.path not in ("", "synthetic") else []
    init = guarded_folder(cfg.model.init) if cfg.model.init else None
    return found + ([init] if init is not None else [])


def check_run_folder(
    cfg: RunConfig, *, resume: bool, force: bool, say: bool = False, init: InitIdentity | None = None
) -> bool:
    """Refuse a run folder this run must not write (rules 1 and 2 above); touches nothing.

    Returns whether the folder holds a run (to resume). `say`: name, on rank 0, the changes a resume takes
    that change no training result (`distributed.UNTRAINED`; they needed --force before), and those a
    `--force` takes (they went unsaid: config.yaml was overwritten and no line named what changed). `init`:
    the start model's identity, which the caller's checks share so that it is hashed once (None: hashed here
    where needed). A changed `model.init` is judged on rank 0 alone, the only rank that hashes the start model:
    every rank hashed it; the others leave it to rank 0, whose refusal `distributed.agreed` (every caller's
    frame on several ranks) gives every rank."""
    if not cfg.out:
        raise UserError("no run folder given; pass --out DIR (or set `out` in the config)")
    run_dir = check_output(cfg.out, KIND, sources=_sources(cfg), legacy=is_run_folder)
    old = saved_config(run_dir) if run_dir.is_dir() else None
    if old is None:  # nothing to resume: a new run (the trainer says so when asked to resume)
        return False
    if not resume:
        raise UserError(
            f"{run_dir} already holds a run; pass --resume to continue it or choose another --out{_restarted()}"
        )
    # The folder is the run wherever it lies: a moved or copied run resumes (its saved `out` is where
    # it was written); "rerun with the original settings" could not undo a move.
    new = {**to_dict(cfg), "out": old.get("out")}
    changes = config_diff(old, new)
    taken = [d for d in changes if d.startswith(UNTRAINED)]
    if say and taken and env_rank() == 0:
        print(f"encoderlab: note: --resume: taking changes that change no training result: {'; '.join(taken)}",
              file=sys.stderr)  # fmt: skip
    diff = resume_blockers(changes, old["layout"], new["layout"])
    if any(d.startswith("data.path:") for d in diff) and _same_data(run_dir, cfg):
        diff = [d for d in diff if not d.startswith("data.path:")]
    if env_rank() != 0:  # rank 0 judges a moved start model (see above)
        diff = [d for d in diff if not d.startswith("model.init:")]
    if any(d.startswith("model.init:") for d in diff) and _same_init(run_dir, cfg, init, force):
        if say and env_rank() == 0:
            print(f"encoderlab: note: --resume: model.init {cfg.model.init} holds the start model {old['model']['init']} "
                  "held (the same files), so the run goes on from it", file=sys.stderr)  # fmt: skip
        diff = [d for d in diff if not d.startswith("model.init:")]
    if diff and not force:
        raise UserError(
            f"refusing to resume {run_dir} with a changed config ({'; '.join(diff[:6])}); "
            + _resplit_fix(diff, old["layout"], new["layout"])
        )
    # forced: config.yaml is overwritten, so say what the rest of the run trains with
    if diff and say and env_rank() == 0:
        print(f"encoderlab: note: --resume --force: training on with a changed config ({'; '.join(diff)}); the "
              "steps already trained used the old values (each checkpoint's state.json keeps its config)",
              file=sys.stderr)  # fmt: skip
    return True


def _restarted() -> str:
    """What a refused start adds under a torchrun restart (`--max-restarts`): the restart reruns the same
    arguments, so "pass --resume" cannot reach it; the torchrun command needs it. It said only "pass --resume to
    continue it", after each restart, until torchrun gave up (checked by hand: rank 1 killed after the first
    checkpoint)."""
    count = elastic_restart()
    if not count:
        return ""
    return (
        f" (torchrun restarted this command, {RESTARTS}={count}, with the arguments it started with: a torchrun "
        "that may restart it, --max-restarts, needs --resume in its command to continue from the last checkpoint; "
        "on a new --out that starts the run)"
    )


def _resplit_fix(diff: list[str], old_layout: dict, new_layout: dict) -> str:
    """The fix a refused resume names; for a changed world size, the `layout.grad_accum` that keeps the
    run's global batch (what `distributed.resume_blockers` accepts), or that no whole one does.

    A run moved to fewer or more processes must change `layout.world_size` (a layout for another number of
    processes is refused, and that line says to set it), yet was told only "rerun with the original
    settings", which the new allocation cannot, "or pass --force", which trains on with another batch.
    Where the config changed in more than that, the fix names the rest as to be undone."""
    fix = "rerun with the original settings or pass --force"
    resplit = any(d.startswith(("layout.world_size:", "layout.grad_accum:")) for d in diff)
    # a micro-batch's rows changed too: no grad_accum alone keeps the batch
    if not resplit or old_layout.get("micro_batch_size") != new_layout.get("micro_batch_size"):
        return fix
    split = Resplit(
        old_layout.get("world_size", 1) * old_layout.get("grad_accum", 1), new_layout.get("world_size", 1)
    )
    if split.grad_accum is None:
        return (
            f"{split.kept} does not split over {split.processes}; resume on a number of processes that divides "
            f"{split.batch}, or {fix}"
        )
    # another change beside the layout: the grad_accum alone is refused again for it (was: named alone)
    others = any(not d.startswith(("layout.world_size:", "layout.grad_accum:")) for d in diff)
    then = " and the other settings as they were, or pass --force" if others else f", or {fix}"
    return f"set layout.grad_accum={split.grad_accum} to keep {split.kept} on {split.processes}{then}"


def _latest_state(run_dir: Path) -> dict[str, Any]:
    """The state.json of the run's latest complete checkpoint (what `_same_data` and `_same_init` compare
    with); {} when it has none."""
    steps = ckpt.complete_checkpoints(run_dir)
    return ckpt.read_state(ckpt.checkpoint_dir(run_dir, steps[-1])) if steps else {}


def _same_data(run_dir: Path, cfg: RunConfig) -> bool:
    """Whether `data.path` holds the prepared data the run's latest checkpoint trained on (the identity it
    records, `build.data_identity`): then a new path is no change of the run. A data folder moved to
    another disk, or a relative `data.path` read from another folder and written there another way, was
    refused as a changed config until `--force`, which also lets any other change by."""
    from encoderlab.train.build import data_identity

    if cfg.data.path in ("", "synthetic"):
        return False
    recorded = _latest_state(run_dir).get("data")
    try:
        return recorded is not None and data_identity(cfg.data) == recorded
    except (UserError, OSError):  # not prepared data: the run's own checks say what is wrong with it
        return False


def _same_init(run_dir: Path, cfg: RunConfig, init: InitIdentity | None, force: bool) -> bool:
    """Whether `model.init` holds the start model the run's latest checkpoint records (`build.init_identity`):
    then a new path is no change of the run. A start model moved (or copied) after the run began, named at its
    new place in the config, was refused as a changed config until `--force`, which lets any other change by.
    A checkpoint without the record (written before it, or a start from an asset or hub id) cannot tell; one
    without `init_version` recorded the hash of every file of the folder (`build.INIT_VERSION`). One of an
    `init_version` this encoderlab does not know cannot tell either: refused naming the version (it read as a
    changed config, whose fix, the original settings, cannot help), unless `force` takes the change as any."""
    from encoderlab.model.readfiles import UnreadableModelFile
    from encoderlab.train.build import InitIdentity, UnknownInitVersion

    state = _latest_state(run_dir)
    recorded = state.get("init")
    try:
        return (
            recorded is not None
            and (init or InitIdentity(cfg.model)).of(state.get("init_version", 1)) == recorded
        )
    except UnknownInitVersion as exc:
        if force:
            return False
        new = cfg.model.init
        raise UserError(
            f"cannot resume {run_dir} with model.init {new}: its latest checkpoint records the start model's "
            f"identity under {exc.unknown}, so whether {new} holds that model cannot be told; upgrade encoderlab "
            f"to the version that wrote the run, or pass --force to resume from {new} unchecked"
        ) from None
    except UnreadableModelFile:  # maybe the same model: the line that says what to fix, not a changed config
        raise
    except (UserError, OSError):  # not a model folder: the run's own checks say what is wrong with it
        return False


def environment() -> dict[str, Any]:
    """Versions and hardware, written to env.json."""
    import transformers

    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cpu_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
    return env


def finished(run_dir: Path, step: int, total: int, *, say: bool) -> bool:
    """Whether a resumed run has nothing left to do: every step trained and `final/` written (it is renamed
    into place whole). Such a resume rewrote final/ with the same weights and env.json with a new time; it
    now changes nothing and says so (`say`: the main rank)."""
    done = step >= total and (Path(run_dir) / "final" / "config.json").is_file()
    if done and say:
        print(
            f"encoderlab: note: --resume: {run_dir} is finished (step {step} of {total}); nothing was changed",
            file=sys.stderr,
        )
    return done
