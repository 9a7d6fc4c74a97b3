"""Pretraining objectives: each turns a packed batch into model inputs, attention mode and targets.

`Objective` is the union the run config holds (`type: mlm` or `type: clm` in YAML). The trainer
uses only `prepare`, `check`, `tag` and the shared `batch_loss` (the forward and `lm_loss`), never an
objective's name.
"""

from encoderlab.objectives.base import IGNORE, ObjectiveInputs, batch_loss, lm_loss, objective_generator
from encoderlab.objectives.clm import CLM
from encoderlab.objectives.mlm import MLM

Objective = MLM | CLM

__all__ = [
    "CLM",
    "IGNORE",
    "MLM",
    "Objective",
    "ObjectiveInputs",
    "batch_loss",
    "lm_loss",
    "objective_generator",
]
