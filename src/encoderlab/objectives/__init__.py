"""Pretraining objectives: each turns a packed batch into model inputs, attention mode and targets.

`Objective` is the union the run config holds (`type: mlm` or `type: clm` in YAML). The training step
uses only `prepare`, `check`, `tag`, `attention_mode` (asked of the model per phase before a run writes
anything) and the shared `batch_loss` (the forward and `lm_loss`), never an objective's name. Around the
loop, two checks ask whether a phase is MLM: the held-out `val/mlm` loss scores the run's last MLM phase
(`train/validation.py`), and a start model without a mask token is refused before an MLM phase
(`train/vocab.py`).

An objective is also a run config's declared fields (its type, mask ratio, attention mode), which
`study list` and `study plan` read for every run of every study. So the modules here import torch only
inside the methods that build tensors (`prepare`, the masks, the seeded generator), and their tensor and
model types only for type checkers: reading an objective costs no torch import (~1 s). The trade-off is
one `import torch` line per such method, rather than a declarative half of each class in a module of its
own, which would split one objective over two files.
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
