"""Atomic training checkpoints: model folder + optimizer state + counters, all or nothing.

Layout of `RUN/checkpoints/step_0001000/`:
  * `model/`: an encoderlab model folder (what evaluation and analysis read);
  * `train_state.safetensors`: AdamW moments keyed `optim/<param name>/<exp_avg|exp_avg_sq|step>`
    and the RNG states, as full tensors: rank 0 writes and every rank reads on its own, so a
    checkpoint loads at any world size, DDP or FSDP2 (`distributed.py` gathers and re-slices FSDP2
    shards);
  * `state.json`: step, phase, tokens seen, skipped steps, the run config, the freeze mechanism and
    the prepared data's identity (`data`, `data.packed.identity`; null on synthetic data).
A checkpoint is written under `step_N.tmp` and renamed when complete; `state.json` is written
last, so a folder without it, or with the `.tmp` suffix, is a partial write that is never loaded
(and is removed at the next start); that much of the layout, which loading a model reads too, is
`model/runlayout.py`. The LR needs no state: schedules are closed-form in the step.
Data need no state either: a batch is a pure function of the step.

Why safetensors and not `torch.distributed.checkpoint` (DCP), which earlier versions used: DCP's
reader unpickles its `.metadata` file, so a crafted checkpoint ran code on `--resume` or on
`init=... load=full`. A restricted unpickler would have to track DCP's private dataclasses across
torch releases; a safetensors file has no code path at all (a JSON header and raw bytes). What DCP
offers beyond it, sharded writes from every rank, was not used: rank 0 already wrote full tensors.
A checkpoint in the old layout (`train_state/` folder) is refused with one line, never read.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from encoderlab import jsonlines
from encoderlab.atomic import atomic_folder, json_text
from encoderlab.errors import UserError
from encoderlab.model.config import SHAPE_FIELDS
from encoderlab.model.io import save_model_folder
from encoderlab.model.runlayout import STEP_DIR, checkpoint_dir, complete_checkpoints
from encoderlab.train.optim import StateByName

TRAIN_STATE = "train_state.safetensors"


@dataclass
class Progress:
    """The counters a resume needs besides tensors."""

    step: int = 0
    """Completed optimizer steps (skipped ones included)."""
    tokens: int = 0
    """Tokens consumed."""
    skipped: list[int] = field(default_factory=list)
    """Steps whose batch was skipped (non-finite loss); replays skip them too."""
    bad_steps: int = 0
    """Non-finite steps met so far."""


def remove_partial(run_dir: Path) -> list[Path]:
    """Delete leftovers of interrupted checkpoint writes; the step folders among them, which a resume
    reports: a `.tmp` sibling is only ever encoderlab's, but a step folder without `state.json` may be one
    a user emptied by hand, and it went without a word."""
    root = Path(run_dir) / "checkpoints"
    steps = []
    if root.is_dir():
        for d in sorted(root.iterdir()):
            if d.name.endswith(".tmp") or (STEP_DIR.match(d.name) and not (d / "state.json").is_file()):
                shutil.rmtree(d)
                steps += [d] if STEP_DIR.match(d.name) else []
    return steps


def save_checkpoint(
    run_dir: Path,
    model: torch.nn.Module,
    optim_state: StateByName,
    progress: Progress,
    meta: dict[str, Any],
    tokenizer=None,
) -> Path:
    """Write the checkpoint of `progress.step` atomically and return its folder."""
    final = checkpoint_dir(run_dir, progress.step)
    # replaced: rewritten after a rollback; kept when interrupted, as a kill leaves it (remove_partial)
    with atomic_folder(final, replace=True, keep_on_interrupt=True) as tmp:
        save_model_folder(model, tmp / "model", tokenizer)
        flat = {f"optim/{name}/{k}": v for name, st in optim_state.items() for k, v in st.items()}
        flat["rng/cpu"] = torch.get_rng_state()
        if torch.cuda.is_available():
            flat["rng/cuda"] = torch.cuda.get_rng_state()
        save_file({k: v.detach().cpu().contiguous() for k, v in flat.items()}, str(tmp / TRAIN_STATE))
        state = {"progress": progress.__dict__, **meta}
        (tmp / "state.json").write_text(json_text(state, indent=2))
    return final


def read_state(ckpt: Path) -> dict[str, Any]:
    """The checkpoint's `state.json`."""
    path = Path(ckpt) / "state.json"
    if not path.is_file():
        raise UserError(f"{ckpt} is not a complete encoderlab checkpoint (no state.json); pick another one")
    try:
        state = jsonlines.loads(path.read_text(encoding="utf-8"))
        _check_counters(Progress(**state["progress"]))  # the counters a resume needs, named and typed right
    except (ValueError, TypeError, KeyError) as exc:  # JSONDecodeError and UnicodeDecodeError included
        raise UserError(
            f"{path} is corrupt ({type(exc).__name__}: {str(exc)[:80]}); delete {ckpt} to resume from the one "
            "before it, or start a new run"
        ) from None
    return state


def _check_counters(progress: Progress) -> None:
    """TypeError naming the first counter that is not a whole number >= 0 (a text step was a TypeError
    traceback when the resume compared it with the run's length)."""

    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    if not isinstance(progress.skipped, list):
        raise TypeError(f"progress.skipped is {progress.skipped!r}, not a list of steps")
    counters = [(f.name, getattr(progress, f.name)) for f in fields(Progress) if f.name != "skipped"]
    for name, value in counters + [("skipped", step) for step in progress.skipped]:
        if not count(value):
            raise TypeError(f"progress.{name} is {value!r}, not a whole number >= 0")


def load_train_state(ckpt: Path) -> tuple[StateByName, Progress, dict[str, torch.Tensor]]:
    """Optimizer state by parameter name, the progress counters and the RNG states."""
    state = read_state(ckpt)
    path = Path(ckpt) / TRAIN_STATE
    if not path.is_file():
        legacy = (Path(ckpt) / "train_state").is_dir()
        raise UserError(
            f"{ckpt} has no {TRAIN_STATE}"
            + (
                " (it was written by an older encoderlab as a torch.distributed.checkpoint folder, which is "
                "never read because its metadata is a pickle)"
                if legacy
                else ""
            )
            + "; start from its weights with load=weights, or resume from a checkpoint written by this version"
        )
    try:
        template = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise UserError(
            f"{path} is damaged ({str(exc).splitlines()[0][:120]}); resume from an earlier checkpoint "
            "or start from the weights with load=weights"
        ) from None
    optim: StateByName = {}
    for key, value in template.items():
        kind, _, rest = key.partition("/")
        if kind == "optim":
            name, _, slot = rest.rpartition("/")
            optim.setdefault(name, {})[slot] = value
    rng = {k.partition("/")[2]: v for k, v in template.items() if k.startswith("rng/")}
    return optim, Progress(**state["progress"]), rng


def restore_rng(rng: dict[str, torch.Tensor]) -> None:
    """Put back the RNG states saved with a checkpoint."""
    torch.set_rng_state(rng["cpu"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state(rng["cuda"])


def check_model_matches(ckpt: Path, model: torch.nn.Module, saved: torch.nn.Module) -> None:
    """Refuse a checkpoint whose model (`saved`, loaded from it) has another architecture or vocabulary size
    (a vocabulary size alone is the data's tokenizer, which the run's model is built for, and is named so).

    The two configs are compared field by field rather than read back as a `ModelConfig`, so
    adapter models (BERT, ModernBERT: their config has no head counts) resume like our own.
    """
    theirs, ours = saved.config, model.config
    keys = ("family", *SHAPE_FIELDS)
    diffs = [
        f"{k}: {getattr(theirs, k, None)} vs {getattr(ours, k, None)}"
        for k in keys
        if getattr(theirs, k, None) != getattr(ours, k, None)
    ]
    if len(diffs) == 1 and diffs[0].startswith("vocab_size:"):  # the model's settings did not change
        raise UserError(
            f"{ckpt} was trained on a vocabulary of {theirs.vocab_size} ids, this run's has {ours.vocab_size} "
            "(the data's tokenizer changed: data.path prepared again with another tokenizer?); resume on the "
            "data the run started with, or start a new run folder"
        )
    if diffs:
        raise UserError(
            f"checkpoint {ckpt} holds another model ({'; '.join(diffs)}, checkpoint vs this run); "
            "resume with the run's original model settings or start a new run folder"
        )


def prune(run_dir: Path, keep_last: int, keep_steps: tuple[int, ...]) -> None:
    """Delete complete checkpoints beyond the last `keep_last`, sparing `keep_steps`."""
    steps = complete_checkpoints(run_dir)
    for step in steps[:-keep_last]:
        if step not in keep_steps:
            shutil.rmtree(checkpoint_dir(run_dir, step))
