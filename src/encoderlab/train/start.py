"""What a run starts from and runs on, read without building anything: a scratch model's positions,
the checkpoint and position limit of an `init` model, and the device.

`build.py` builds a run from these; `study plan` and the checks `study run` makes before training
read them too, so they live here, apart from the model, optimizer and checkpoint code `build.py`
imports (torch among it), which a plan never needs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from encoderlab.errors import UserError
from encoderlab.model.runlayout import checkpoint_dir, complete_checkpoints, is_run_folder, unfinished_run
from encoderlab.model.sources import max_positions

if TYPE_CHECKING:
    import torch

    from encoderlab.train.config import RunConfig

GPU_DRIVERS = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/kfd", "/dev/dxg")
"""What a GPU driver installs on Linux: NVIDIA's, AMD ROCm's (torch's `cuda` on HIP builds), WSL2's."""


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
    """The checkpoint folder `model.init` names (a checkpoint, or a finished run folder's latest: its last
    step), else None (a model folder, an asset, a hub id). A run folder without its final model is
    refused, as loading it is (`runlayout.unfinished_run`): its latest checkpoint was taken silently,
    so a run started from a base that had crashed or was still training began from a part-trained one."""
    source = Path(init)
    if not source.is_dir():
        return None
    if (source / "state.json").is_file():
        return source
    if is_run_folder(source) and not (source / "final" / "config.json").is_file():
        raise unfinished_run(source)
    return find_checkpoint(source)


def start_source(init: str) -> Path:
    """The model an `init` start loads: a checkpoint's (`start_checkpoint`) `model/` folder, else `init`."""
    found = start_checkpoint(init)
    return found / "model" if found is not None else Path(init)


def start_model_folder(init: str) -> Path:
    """The folder whose files a start from the folder `init` reads (`start_source`: a finished run folder's last
    checkpoint's `model/`, not its `final/`; else `hub.own_model_folder` of it, or `init` itself, a Hugging
    Face folder). One resolution for the identity a run records of its start model (`build.init_identity`) and
    the key of a study's pretraining node continuing it (`study.localmodels.read_model`): the key named the
    run's `final/` while the trainer loaded the checkpoint, so an edit of one alone was refused as a change."""
    from encoderlab.model.hub import own_model_folder  # torch: imported by a start, not by a plan

    source = start_source(init)
    return own_model_folder(source) or source


def start_positions(init: str, fetch: bool = False) -> int | None:
    """The start model's position limit from its config alone (`model.sources.max_positions`; `fetch`: a
    hub id's configs downloaded if not on this machine), None when the config is not on this machine."""
    found = start_checkpoint(init)
    return max_positions(found / "model" if found is not None else init, fetch)


def cuda_visible() -> bool:
    """`torch.cuda.is_available()` for the checks a study makes before it runs, asked of torch only where a
    GPU driver is installed: on Linux without one (none of `GPU_DRIVERS`) no torch build sees a device,
    and `study plan` on a CPU machine, which asks this of every run it checks for memory, skips importing
    torch (~1 s). A run itself asks torch (`resolve_device`)."""
    if sys.platform == "linux" and not any(os.path.exists(p) for p in GPU_DRIVERS):
        return False
    import torch

    return torch.cuda.is_available()


def run_device(cfg: RunConfig, visible: bool, names: Mapping[str, str] | None = None) -> str:
    """The kind of device (`cuda`, `cpu`) `cfg.device` names, given whether a CUDA device is `visible`:
    `auto` is CUDA when one is; `cuda` without one is refused, under the flag `names` gives `device`
    (`bench train`'s `--device`, which has no `device=` setting) or as the config's `device=`."""
    if cfg.device == "cuda" and not visible:
        flag = (names or {}).get("device")
        say = f"{flag} " if flag else "device="
        raise UserError(f"{say}cuda but no CUDA device is visible; use {say}cpu or auto")
    return "cuda" if cfg.device != "cpu" and visible else "cpu"


def resolve_device(cfg: RunConfig, names: Mapping[str, str] | None = None) -> torch.device:
    """The device `cfg.device` names (`run_device`)."""
    import torch

    return torch.device(run_device(cfg, torch.cuda.is_available(), names))
