"""Pretraining: run configs, phases, schedules, freezing, checkpoints and the training loop.

Python API: `pretrain(cfg) -> Path` trains a `RunConfig` (build one with `build_recipe(name)`)
and returns the run folder, which holds `config.yaml`, `env.json`, `metrics.jsonl`,
`checkpoints/step_NNNNNNN/` and `final/` (an encoderlab model folder).
"""

from encoderlab.train.config import CheckpointConfig, DataConfig, ModelSpec, OptimConfig, Phase, RunConfig
from encoderlab.train.recipes import RECIPES, build_recipe
from encoderlab.train.schedule import Schedule
from encoderlab.train.trainer import NonFiniteLoss, Trainer, pretrain

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
