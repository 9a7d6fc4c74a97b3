"""Where a pretraining run folder keeps its models, for every reader of them.

`RUN/final/` holds the model at the end of the run; `RUN/checkpoints/step_NNNNNNN/` one checkpoint
each, complete once its `state.json` is written (written last), with the model under `model/`; and the
folder carries outdir's ownership marker of kind `pretrain`. Training writes this layout
(`train/checkpoint.py`, `train/runfolder.py`) and loading a model reads it (`model/hub.py` names a
run's latest checkpoint, or the `--resume` that continues it). The model layer may not import
training, so the layout both share lives here, one layer below training, and nothing else of a
checkpoint (optimizer state, counters) does. The record of the hub start model a run read (env.json's
`start_model`: `start_model_record`) lives here too: an evaluation of a hub id records the same, and
evaluation may not import training either.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from encoderlab.outdir import is_marked_run  # outdir refuses outputs inside a run's final/ and checkpoints/
from encoderlab.paths import typed

ENV_FILE = "env.json"
"""A run's environment: versions, hardware, and the hub start model it read (`start_model`)."""
STEP_DIR = re.compile(r"^step_(\d{7})$")
"""A checkpoint folder's name; `.tmp` beside it is one being written."""


def checkpoint_dir(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / "checkpoints" / f"step_{step:07d}"


def complete_checkpoints(run_dir: Path) -> list[int]:
    """Steps of the complete checkpoints in a run folder, ascending."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    steps = []
    for d in root.iterdir():
        m = STEP_DIR.match(d.name)
        if m and (d / "state.json").is_file():
            steps.append(int(m.group(1)))
    return sorted(steps)


def is_run_folder(path: Path) -> bool:
    """Whether `path` is a pretraining run folder, finished or not: pretrain's ownership marker, a
    `checkpoints/` folder, or (written before the marker) the `config.yaml` and `env.json` of a run."""
    return is_marked_run(path) or (path / "checkpoints").is_dir()


def checkpoint_of(path: Path) -> Path | None:
    """The checkpoint folder (`RUN/checkpoints/step_NNNNNNN`) that `path` is or lies inside, else None.
    Told by the path's names alone: the folder may be gone already."""
    path = Path(os.path.abspath(path))
    return next(
        (p for p in (path, *path.parents) if STEP_DIR.match(p.name) and p.parent.name == "checkpoints"), None
    )


@contextlib.contextmanager
def pruned_while_read(source: str | Path) -> Iterator[None]:
    """Reads of the checkpoint `source` (or its `model/`), where a failure of a checkpoint that is no longer
    complete is said as what happened: the running pretrain deleted it (`prune`: all but its last
    `keep_last`) while it was read. Each file read then failed its own way (FileNotFoundError with a
    traceback, or "corrupt, truncated or missing: restore it"), none naming the race or its fix. A
    failure of a checkpoint that was never complete (a crash while it was written) or still is is left as
    it is; so is one caught midway through the deletion, before its `state.json` went (a narrow window:
    the original line still comes out). `source` is as the user gave it (`~` is expanded here, for every caller)."""
    from encoderlab.errors import UserError

    ckpt = checkpoint_of(Path(source).expanduser())
    complete = ckpt is not None and (ckpt / "state.json").is_file()
    try:
        yield
    except (OSError, UserError):
        if not complete or (ckpt / "state.json").is_file():
            raise
        steps = complete_checkpoints(ckpt.parent.parent)
        newest = (
            f"its newest checkpoint, {checkpoint_dir(ckpt.parent.parent, steps[-1])}"
            if steps
            else "a later one"
        )
        raise UserError(
            f"checkpoint {ckpt} was deleted while it was read (its run keeps only its last "
            f"checkpoint.keep_last); rerun with {newest}, or the run's final model once it has one "
            "(checkpoint.keep_steps keeps a step's checkpoint for good)"
        ) from None


def unfinished_run(path: Path) -> Exception:
    """The refusal for a run folder read as a model before it has its final one (still running, stopped
    with `--until-step`, or crashed), naming what to pass instead: a checkpoint of it, or the command that
    finishes it. Loading (`model/hub.py`) and a run's start model (`train/start.py`) both refuse it."""
    from encoderlab.errors import UserError

    steps = complete_checkpoints(path)
    if steps:
        return UserError(
            f"run {path} has no final model yet; pass one of its checkpoints, e.g. the latest, "
            f"{checkpoint_dir(path, steps[-1])}"
        )
    # "neither a model folder nor a Hugging Face folder" sent users looking for a config.json
    return UserError(
        f"run {path} has no final model yet, nor a complete checkpoint (it stopped before its first); "
        f"continue it with `encoderlab pretrain --config {typed(path / 'config.yaml')} --out {typed(path)} --resume`, "
        "or pass another model"
    )


def start_model_record(init: str) -> dict[str, Any]:
    """What env.json records of a start model named by a hub id (no folder, no asset): the id and the
    commit read (`hubmodels.resolved_commit`: the pin, the hub cache snapshot's or the mirror's; null when
    nothing tells it), so a run from an unpinned id names the weights it started from after the repo
    moves on, and pinning that commit (`OWNER/NAME@SHA`) starts from them again. Empty for any other start.
    An evaluation of a hub id records the same (`EvalRecord.start_model`), for the same reason."""
    from encoderlab.data.hubmodels import hub_read

    read = hub_read(init)
    return {"start_model": read} if read else {}


def recorded_start(run_dir: Path) -> tuple[str, str] | None:
    """(hub id, commit) a run's env.json records of the hub start model it read (`start_model`, written
    by `start_model_record`); None for a run that records none, or no commit."""
    return start_of(recorded_start_model(run_dir))


def recorded_start_model(run_dir: Path) -> Any:
    """The `start_model` record of a run's env.json as written (None when there is none), which a resume
    keeps: it reads no start model, so the commit a hub id resolves to now is not the one the run read."""
    try:
        return json.loads((Path(run_dir) / ENV_FILE).read_text(encoding="utf-8")).get("start_model")
    except (OSError, ValueError, AttributeError):  # no env.json, or not ours: nothing recorded
        return None


def start_of(start: Any) -> tuple[str, str] | None:
    """(hub id, commit) of a `start_model` record (env.json's, or an evaluation's); None for anything
    else, or a record of no commit."""
    hub_id, commit = (start.get("hub_id"), start.get("commit")) if isinstance(start, dict) else (None, None)
    return (hub_id, commit) if isinstance(hub_id, str) and isinstance(commit, str) else None
