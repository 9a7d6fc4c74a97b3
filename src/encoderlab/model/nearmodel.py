"""Where the model is, when a path given as one holds none: the folder the refusal names instead.

A path that holds no model was refused with "pass a folder that holds a model", which left the user to
find it. Three near misses are common enough to name the folder to pass: a file of a model folder
(`model.safetensors`, `config.json`), a sentence-transformers folder of the old layout whose transformer
lies in `0_Transformer/`, Hugging Face Trainer's `output_dir` holding `checkpoint-N/` folders, and an
encoderlab run's `checkpoints/` holding `step_N/` ones.
Only one level down is looked at, and only folders that hold a model by the loaders' own marks
(an encoderlab model or run folder, or a config.json beside weights, so `1_Pooling/config.json` is
none): a deeper walk would cost a tree's listing and guess. The line is the refusal's only; nothing is
loaded from the folder it names. Subfolders are listed in natural order (`checkpoint-500` before
`checkpoint-1000`, which a plain sort puts first), and a folder of step-numbered checkpoints (a
Trainer's `output_dir`, a run's `checkpoints/`) names its latest checkpoint too, since the shown three
may be the earliest of many and the latest is the one usually meant.
"""

from __future__ import annotations

import re
from pathlib import Path

from encoderlab.model.sources import model_folder_in

WEIGHTS = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
"""The weight files next to a config.json that make a Hugging Face folder (pickles too: their own refusal
is the load's, in the folder named)."""
SHOWN = 3
"""Subfolders named in the line; the rest are counted."""
STEP_CHECKPOINT = re.compile(r"^(checkpoint-|step_)(\d+)$")
"""A checkpoint folder named by its step: Hugging Face Trainer's `checkpoint-{global_step}` subfolder of
its `output_dir`, and an encoderlab run's `checkpoints/step_{step:07d}` (whose model is in its `model/`)."""


def _natural(folder: Path) -> tuple[str | int, ...]:
    """Sort key of a folder's name with its runs of digits as numbers: `checkpoint-500` < `checkpoint-1000`.
    re.split with a group alternates text and digits from a text part, so equal positions compare alike."""
    parts = re.split(r"(\d+)", folder.name)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts))


def _latest(found: list[Path]) -> str:
    """' (the latest: …)' where every subfolder is a step-numbered checkpoint (`STEP_CHECKPOINT`); ''
    otherwise."""
    if not all(STEP_CHECKPOINT.match(p.name) for p in found):
        return ""
    return f" (the latest: {max(found, key=_natural)})"


def _holds_model(folder: Path, *, checkpoint: bool = True) -> bool:
    """Whether `folder` holds a model as the loads read it: itself, a run's final/, or (`checkpoint`) a
    checkpoint's model/. A file's folder is judged without the last: a folder beside a `model/` subfolder is as
    often a user's project as a checkpoint, and `PROJECT/texts.txt` was called "a file of the model folder"."""
    own = model_folder_in(folder)
    if own is not None and (checkpoint or own != folder / "model"):
        return True
    return (folder / "config.json").is_file() and any((folder / w).is_file() for w in WEIGHTS)


def near_model(path: Path) -> str | None:
    """The refusal's line for `path`, which holds no model, where the model it stands near is found;
    None otherwise (the caller's general line)."""
    if path.is_file():
        if _holds_model(path.parent, checkpoint=False):
            return f"{path} is a file of the model folder {path.parent}; pass the folder: {path.parent}"
        return None
    try:
        found = sorted(
            (p for p in path.iterdir() if not p.name.startswith(".") and p.is_dir() and _holds_model(p)),
            key=_natural,
        )
    except OSError:  # not a folder, or one that cannot be listed: the general line
        return None
    if not found:
        return None
    names = ", ".join(str(p) for p in found[:SHOWN]) + (
        f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    )
    if len(found) == 1:
        return (
            f"{path} holds no model itself (no config.json) but its subfolder {names} does; pass that folder"
        )
    return f"{path} holds no model itself (no config.json) but its subfolders {names} do; pass one of them{_latest(found)}"
