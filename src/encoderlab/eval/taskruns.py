"""A task's fine-tuning runs as a study plans them, before anything loads: the LR x seed grid's checks,
the task capped at a study's steps, the refusal of LRs its weight decay does not allow, and of a
`max_length` beyond the model's positions.

The protocol (`protocol.py`) runs and checks with these; `study plan`, the study's graph (a node's key
holds the capped task's signature) and its checks read them too, without the fine-tuning loop, its
heads and metrics that the protocol imports.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from encoderlab.config import MAX_LR, SEED_BOUND, decay_flips_weights
from encoderlab.errors import UserError
from encoderlab.eval.spec import Task
from encoderlab.eval.tasks import get_task
from encoderlab.eval.tasks.custom import FILE_DATA


class GridFix(NamedTuple):
    """How to give a good LR grid and seed list where they were given: the fix that ends the refusal of an
    empty or non-positive one (the line said what was wrong, not what to pass)."""

    lrs: str
    seeds: str


FLAGS = GridFix(
    lrs="pass positive numbers as separate arguments, e.g. --lrs 1e-4 3e-4",
    seeds="pass non-negative integers as separate arguments, e.g. --seeds 0 1",
)
"""`eval --lrs/--seeds`."""
STUDY_FILE = GridFix(
    lrs="list positive numbers, e.g. lrs: [1.0e-4, 3.0e-4]",
    seeds="list non-negative integers, e.g. seeds: [0, 1]",
)
"""A study file's `eval:` section."""


def check_grid(lrs: Sequence[float], seeds: Sequence[int], fix: GridFix = FLAGS) -> None:
    """Refuse the problems of `grid_problems` in one line: `eval --lrs/--seeds`."""
    if problems := grid_problems(lrs, seeds, fix=fix):
        raise UserError("; ".join(problems))


def grid_problems(
    lrs: Sequence[float], seeds: Sequence[int], what: str = "learning rates", fix: GridFix = FLAGS
) -> list[str]:
    """Every problem of an LR grid (`what`) and fine-tuning seeds, one line each: LRs that are not finite
    and positive or past `MAX_LR`, seeds that are negative (numpy's generators take none) or past torch's,
    a value given twice (it trained nothing more, but the summary's header listed "seeds [0, 0]" over n=1).
    An empty or non-positive list's line ends in `fix`, how to give one where it was given."""
    out = []
    if not lrs or any(not math.isfinite(lr) or lr <= 0 for lr in lrs):
        out.append(f"{what} must be a non-empty list of finite positive numbers, got {list(lrs)}; {fix.lrs}")
    elif max(lrs) > MAX_LR:  # 1e38 was NaN losses, or a traceback
        # the line named no fix; fine-tuning grids are 1e-5 to 5e-4 (paper 1's)
        out.append(
            f"{what} must be at most {MAX_LR:g} (AdamW's step is about the LR), got {list(lrs)}; fine-tuning LRs are "
            f"small (paper 1's grid: 1e-5 to 5e-4): {fix.lrs}"
        )
    if not seeds or any(s < 0 for s in seeds):
        out.append(f"seeds must be a non-empty list of non-negative integers, got {list(seeds)}; {fix.seeds}")
    for name, values in ((what, lrs), ("seeds", seeds)):
        if repeated := sorted({v for v in values if list(values).count(v) > 1}):
            out.append(f"{name} repeat {', '.join(f'{v:g}' for v in repeated)}; give each once")
    if any(s >= SEED_BOUND for s in seeds):
        out.append(f"seeds must be below 2**64 (torch's generators take no larger one), got {list(seeds)}")
    return out


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


def check_positions(task: Task, positions: int | None, leave_out: str = "--tasks") -> None:
    """Refuse a `max_length` beyond a model of `positions` positions (None: not known yet, so checked on
    the loaded model), before anything trains: an input that long failed mid-run, after minutes of
    fine-tuning (our Encoder's "exceeds max_seq_len", an index error or a CUDA device-side assert past a
    learned position table). Truncating to the model's positions instead would run another task than
    the one named, whose signature holds its `max_length`. A task of none takes 0.99 x the positions.
    `leave_out`: what names the tasks to run (a study's `eval.tasks`)."""
    if positions is None or task.max_length is None or task.max_length <= positions:
        return
    if task.data_version.startswith(FILE_DATA):
        fix = f"set `max_length:` to at most {positions} in its task file, or null for 0.99 x the model's"
    else:  # a built-in task's length is its protocol's
        fix = f"evaluate a model of at least {task.max_length} positions, or leave the task out ({leave_out})"
    raise UserError(
        f"task {task.name}: max_length {task.max_length} is more than the model's {positions} positions; {fix}"
    )
