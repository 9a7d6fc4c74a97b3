"""Atomic training checkpoints: model folder + optimizer state + counters, all or nothing.

Layout of `RUN/checkpoints/step_0001000/`:
  * `model/`: an encoderlab model folder (what evaluation and analysis read);
  * `train_state/`: AdamW moments keyed `optim/<param name>/<exp_avg|exp_avg_sq|step>` and the RNG
    states, written with `torch.distributed.checkpoint` (DCP) as full tensors: rank 0 writes and
    every rank reads on its own (`no_dist`), so a checkpoint loads at any world size, DDP or FSDP2
    (`distributed.py` gathers and re-slices FSDP2 shards);
  * `state.json`: step, phase, tokens seen, skipped steps, the run config and the freeze mechanism.
A checkpoint is written under `step_N.tmp` and renamed when complete; `state.json` is written
last, so a folder without it, or with the `.tmp` suffix, is a partial write that is never loaded
(and is removed at the next start). The LR needs no state: schedules are closed-form in the step.
Data need no state either: a batch is a pure function of the step.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.metadata import TensorStorageMetadata

from encoderlab.errors import UserError
from encoderlab.model.io import save_model_folder
from encoderlab.train.optim import StateByName

STEP_DIR = re.compile(r"^step_(\d{7})$")


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


def remove_partial(run_dir: Path) -> None:
    """Delete leftovers of interrupted checkpoint writes."""
    root = Path(run_dir) / "checkpoints"
    if root.is_dir():
        for d in root.iterdir():
            if d.name.endswith(".tmp") or (STEP_DIR.match(d.name) and not (d / "state.json").is_file()):
                shutil.rmtree(d)


@contextlib.contextmanager
def _quiet_single_process():
    """DCP warns on every single-process call that it assumes one process, which is the intent."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield


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
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_model_folder(model, tmp / "model", tokenizer)
    flat = {f"optim/{name}/{k}": v for name, st in optim_state.items() for k, v in st.items()}
    flat["rng/cpu"] = torch.get_rng_state()
    if torch.cuda.is_available():
        flat["rng/cuda"] = torch.cuda.get_rng_state()
    with _quiet_single_process():
        dcp.save(flat, checkpoint_id=str(tmp / "train_state"), no_dist=True)
    state = {"progress": progress.__dict__, **meta}
    (tmp / "state.json").write_text(json.dumps(state, indent=2))
    if final.exists():  # rewritten after a rollback
        shutil.rmtree(final)
    tmp.rename(final)
    return final


def read_state(ckpt: Path) -> dict[str, Any]:
    """The checkpoint's `state.json`."""
    path = Path(ckpt) / "state.json"
    if not path.is_file():
        raise UserError(f"{ckpt} is not a complete encoderlab checkpoint (no state.json); pick another one")
    return json.loads(path.read_text())


def load_train_state(ckpt: Path) -> tuple[StateByName, Progress, dict[str, torch.Tensor]]:
    """Optimizer state by parameter name, the progress counters and the RNG states."""
    state = read_state(ckpt)
    path = str(Path(ckpt) / "train_state")
    metadata = dcp.FileSystemReader(path).read_metadata()
    template = {
        key: torch.empty(md.size, dtype=md.properties.dtype)
        for key, md in metadata.state_dict_metadata.items()
        if isinstance(md, TensorStorageMetadata)
    }
    with _quiet_single_process():
        dcp.load(template, checkpoint_id=path, no_dist=True)
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
    """Refuse a checkpoint whose model (`saved`, loaded from it) has another architecture or vocabulary size.

    The two configs are compared field by field rather than read back as a `ModelConfig`, so
    adapter models (BERT, ModernBERT: their config has no head counts) resume like our own.
    """
    theirs, ours = saved.config, model.config
    keys = (
        "family",
        "vocab_size",
        "hidden_size",
        "n_layers",
        "n_heads",
        "n_kv_heads",
        "head_dim",
        "intermediate_size",
    )
    diffs = [
        f"{k}: {getattr(theirs, k, None)} vs {getattr(ours, k, None)}"
        for k in keys
        if getattr(theirs, k, None) != getattr(ours, k, None)
    ]
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
