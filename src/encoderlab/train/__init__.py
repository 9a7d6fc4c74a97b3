"""Pretraining: run configs, phases, schedules, freezing, checkpoints and the training loop.

Python API: `pretrain(cfg) -> Path` trains a `RunConfig` (build one with `build_recipe(name)`)
and returns the run folder, which holds `config.yaml`, `env.json`, `metrics.jsonl`,
`checkpoints/step_NNNNNNN/` and `final/` (an encoderlab model folder).

The names below are imported when first read (PEP 562): importing `encoderlab.train.config`, as
`study list` and `study plan` do, runs this file, and the trainer behind `pretrain` brings the
optimizer, distributed and checkpoint code (`torch.distributed.checkpoint` among it) that a plan
never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from encoderlab.train.config import CheckpointConfig, DataConfig, ModelSpec, OptimConfig, Phase, RunConfig
    from encoderlab.train.recipes import RECIPES, build_recipe
    from encoderlab.train.schedule import Schedule
    from encoderlab.train.trainer import NonFiniteLoss, Trainer, pretrain

_HOMES = {
    "CheckpointConfig": "config",
    "DataConfig": "config",
    "ModelSpec": "config",
    "OptimConfig": "config",
    "Phase": "config",
    "RunConfig": "config",
    "RECIPES": "recipes",
    "build_recipe": "recipes",
    "Schedule": "schedule",
    "NonFiniteLoss": "trainer",
    "Trainer": "trainer",
    "pretrain": "trainer",
}
"""Each public name and the module of this package that defines it."""

__all__ = [
    "RECIPES",
    "CheckpointConfig",
    "DataConfig",
    "ModelSpec",
    "NonFiniteLoss",
    "OptimConfig",
    "Phase",
    "RunConfig",
    "Schedule",
    "Trainer",
    "build_recipe",
    "pretrain",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:  # a submodule (`from encoderlab.train import checkpoint`) is imported by Python then
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
