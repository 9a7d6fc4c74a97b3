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

import json
import re
from pathlib import Path

RUN_KIND = "pretrain"
"""The output kind of run folders (`outdir` marker)."""
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
    from encoderlab.outdir import owner

    if (owner(path) or {}).get("kind") == RUN_KIND or (path / "checkpoints").is_dir():
        return True
    return (path / "config.yaml").is_file() and (path / "env.json").is_file()


def recorded_start(run_dir: Path) -> tuple[str, str] | None:
    """(hub id, commit) a run's env.json records of the hub start model it read (`start_model`, written
    by `train.runfolder.start_model_record`); None for a run that records none, or no commit."""
    try:
        start = json.loads((Path(run_dir) / ENV_FILE).read_text(encoding="utf-8")).get("start_model")
    except (OSError, ValueError, AttributeError):  # no env.json, or not ours: nothing recorded
        return None
    hub_id, commit = (start.get("hub_id"), start.get("commit")) if isinstance(start, dict) else (None, None)
    return (hub_id, commit) if isinstance(hub_id, str) and isinstance(commit, str) else None
