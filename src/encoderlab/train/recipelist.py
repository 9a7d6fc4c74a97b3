"""`encoderlab recipes`: the pretraining recipes listed with their parameters.

Apart from `train/cli.py` (the `pretrain` command), which imports torch and the trainer at module level:
listing the recipes reads only their functions (`train/recipes.py`, no torch), so the command answers in a
fraction of a second instead of after a torch import of seconds.
"""

from __future__ import annotations

import inspect

from encoderlab.train.recipes import RECIPES, recipe_params


def recipes_command() -> None:
    """List the pretraining recipes with their parameters."""
    width = max(map(len, RECIPES))
    for name, fn in RECIPES.items():
        doc = " ".join(inspect.getdoc(fn).split("\n\n")[0].split())  # the first paragraph, whole
        params = ", ".join(f"{k}: {_type_name(t)}" for k, t in recipe_params(name).items())
        print(f"{name:<{width}} {doc}\n{'':<{width}} params: {params}")


def _type_name(tp) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
