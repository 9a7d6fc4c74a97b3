"""Where a pretraining run folder keeps its models, for every reader of them.

`RUN/final/` holds the model at the end of the run; `RUN/checkpoints/step_NNNNNNN/` one checkpoint
each, complete once its `state.json` is written (written last), with the model under `model/`; and the
folder carries outdir's ownership marker of kind `pretrain`. Training writes this layout
(`train/checkpoint.py`, `train/runfolder.py`) and loading a model reads it (`model/hub.py` names a
run's latest checkpoint, or the `--resume` that continues it). The model layer may not import
training, so the layout both share lives here, one layer below training, and nothing else of a
checkpoint (optimizer state, counters) does.
"""

from __future__ import annotations

import re
from pathlib import Path

RUN_KIND = "pretrain"
"""The output kind of run folders (`outdir` marker)."""
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
    from encoderlab.outdir import owner

    if (owner(path) or {}).get("kind") == RUN_KIND or (path / "checkpoints").is_dir():
        return True
    return (path / "config.yaml").is_file() and (path / "env.json").is_file()
