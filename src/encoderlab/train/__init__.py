"""Pretraining: run configs, phases, schedules, freezing, checkpoints and the training loop.

Python API: `pretrain(cfg) -> Path` trains a `RunConfig` (build one with `build_recipe(name)`)
and returns the run folder, which holds `config.yaml`, `env.json`, `metrics.jsonl`,
`checkpoints/step_NNNNNNN/` and `final/` (an encoderlab model folder).

The names below are imported when first read (PEP 562): importing `encoderlab.train.config`, as
`study list` and `study plan` do, runs this file, and the trainer behind `pretrain` brings the
optimizer, distributed and checkpoint code (torch among it) that a plan never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from encoderlab.lazy import lazy_names

if TYPE_CHECKING:
    from encoderlab.train.config import CheckpointConfig, DataConfig, ModelSpec, OptimConfig, Phase, RunConfig
    from encoderlab.train.entry import pretrain
    from encoderlab.train.recipes import RECIPES, build_recipe
    from encoderlab.train.schedule import Schedule
    from encoderlab.train.trainer import NonFiniteLoss, Trainer

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
    "pretrain": "entry",
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


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals(), __all__)
