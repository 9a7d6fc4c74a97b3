"""A task's fine-tuning runs as a study plans them, before anything loads: the task capped at a
study's steps, and the refusal of LRs its weight decay does not allow.

The protocol (`protocol.py`) runs and checks with these; `study plan`, the study's graph (a node's key
holds the capped task's signature) and its checks read them too, without the fine-tuning loop, its
heads and metrics that the protocol imports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from encoderlab.config import decay_flips_weights
from encoderlab.errors import UserError
from encoderlab.eval.spec import Task
from encoderlab.eval.tasks import get_task


def capped_task(name: str, max_steps: int | None = None) -> Task:
    """The task `name`, with fine-tuning capped at `max_steps` (its signature then differs)."""
    spec = get_task(name)
    if max_steps is None:
        return spec
    return dataclasses.replace(spec, finetune=dataclasses.replace(spec.finetune, max_steps=max_steps))


def check_decay(runs: Iterable[tuple[Task, float]], fix: str) -> None:
    """Refuse fine-tuning runs (task, LR) whose weight decay flips the weights' sign each step
    (`config.decay_flips_weights`, pretraining's rule): the task's largest such LR, in one line naming
    `fix` (which LRs to lower) or the task's `finetune.weight_decay`. Was NaN losses, recorded."""
    worst: dict[str, tuple[Task, float]] = {}
    for task, lr in runs:
        if decay_flips_weights(lr, task.finetune.weight_decay) and lr > worst.get(task.name, (task, 0))[1]:
            worst[task.name] = (task, lr)
    if worst:
        raise UserError(
            "; ".join(
                f"learning rate {lr:g} x task {name}'s finetune.weight_decay {t.finetune.weight_decay:g} "
                "must be at most 1 (each step multiplies the weights by 1 - lr x weight_decay at the peak LR)"
                for name, (t, lr) in worst.items()
            )
            + f"; {fix}, or the task's finetune.weight_decay (e.g. 0.1)"
        )
