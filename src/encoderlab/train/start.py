"""What a run starts from and runs on, read without building anything: a scratch model's positions,
the checkpoint and position limit of an `init` model, and the device.

`build.py` builds a run from these; `study plan` and the checks `study run` makes before training
read them too, so they live here, apart from the model, optimizer and checkpoint code `build.py`
imports (`torch.distributed.checkpoint` among it), which a plan never needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from encoderlab.errors import UserError
from encoderlab.model.hub import max_positions
from encoderlab.model.runlayout import checkpoint_dir, complete_checkpoints

if TYPE_CHECKING:
    import torch

    from encoderlab.train.config import RunConfig


def scratch_positions(seq_len: int) -> int:
    """The positions of a model built from scratch for rows of `seq_len` tokens (at least 2,048)."""
    return max(2048, seq_len)


def find_checkpoint(path: Path) -> Path | None:
    """A checkpoint folder itself, or the latest complete checkpoint of a run folder."""
    if (path / "state.json").is_file():
        return path
    steps = complete_checkpoints(path)
    return checkpoint_dir(path, steps[-1]) if steps else None


def start_checkpoint(init: str) -> Path | None:
    """The checkpoint folder `model.init` names (a checkpoint, or a run folder's latest), else None
    (a model folder, an asset, a hub id)."""
    source = Path(init)
    return find_checkpoint(source) if source.is_dir() else None


def start_positions(init: str, fetch: bool = False) -> int | None:
    """The start model's position limit from its config alone (`model.hub.max_positions`; `fetch`: a
    hub id's configs downloaded if not on this machine), None when the config is not on this machine."""
    found = start_checkpoint(init)
    return max_positions(found / "model" if found is not None else init, fetch)


def resolve_device(cfg: RunConfig) -> torch.device:
    """The device `cfg.device` names: `auto` is CUDA when visible; `cuda` without one is refused."""
    import torch

    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise UserError("device=cuda but no CUDA device is visible; use device=cpu or auto")
    return torch.device("cuda" if cfg.device != "cpu" and torch.cuda.is_available() else "cpu")
