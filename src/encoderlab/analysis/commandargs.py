"""What every `encoderlab analyze` command shares before it loads a model: its argument types, the
ownership kinds of its outputs, the cheap checks of its arguments, and how a model is loaded.

`cka`, `probe` and `curves` (`analysis/commands.py`) and `transplant` (`analysis/transplant_command.py`)
check their flags here, before any model loads, so a device that is not there or a count below 1 costs
one line and no minutes of loading; and they load models one way (`load_model_on`: the model and its
tokenizer, moved to the device and precision asked for). Kept apart from both command modules so
neither imports the other; it holds no command of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import torch
import tyro

from encoderlab.errors import UserError
from encoderlab.eval.protocol import resolve_device

ModelA = Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="MODEL_A")]
ModelB = Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="MODEL_B")]
Models = Annotated[
    tuple[str, ...], tyro.conf.Positional, tyro.conf.arg(metavar="MODEL ...", help_behavior_hint="(required)")
]

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
Dtype = Literal["float32", "bfloat16", "float16"]

ANALYZE, TRANSPLANT = "analyze", "transplant"
"""Ownership-marker kinds of analysis folders and transplanted models."""


def input_paths(*sources: str | None) -> list[Path]:
    """The folders and files behind model and text sources that exist on this machine."""
    from encoderlab.model.sources import guarded_folder

    return [f for f in (guarded_folder(s) for s in sources if s) if f is not None]


def check_arguments(device: str, seeds: dict[str, tuple[int, ...]], **counts: int) -> None:
    """Refuse, before anything loads, a device that is not there (`resolve_device`), a count below 1
    (`batch_size=0` looped with a zero step) or a negative seed (numpy's generators take none): all
    were tracebacks, a probe's after its cache was written; so was an empty list of seeds. `seeds` maps
    a flag to its values; `counts` are flags by their argument name."""
    resolve_device(device)
    for name, value in counts.items():
        if value < 1:
            raise UserError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    for flag, values in seeds.items():
        if not values:  # `--seeds` with nothing after it: numpy's concatenate failed after the models loaded
            raise UserError(f"{flag} needs at least one seed, got none; e.g. {flag} 42 43 44")
        if any(v < 0 for v in values):
            raise UserError(
                f"{flag} must be >= 0 (numpy's generators take no negative seed), got {list(values)}"
            )


def load_model_on(source: str, device: str, dtype: Dtype = "float32"):
    """The model of `source` on `device` in `dtype`, and its tokenizer."""
    from encoderlab.analysis.inputs import load_model

    model, tokenizer = load_model(source)  # refuses a model without a tokenizer, or pruned while read
    return model.to(device=device, dtype=DTYPES[dtype]), tokenizer
