"""The seam where data parallelism plugs in; on one process every function is the identity.

The trainer asks this module for its rank and world size, wraps the model with `parallelize`,
sums counts and losses with `all_reduce_sum`, and skips gradient sync on non-final micro-batches
with `no_sync`. With a single process nothing is wrapped or communicated. DDP/FSDP2 under torchrun
(gloo on CPU, nccl on GPU) replace these bodies without touching the trainer, following
torchtitan's "parallelism from outside the model" rule. The raw model stays the trainer's handle
for `lm_logits`, saving and freezing; the wrapped one only runs `forward`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch import nn

from encoderlab.errors import UserError


@dataclass(frozen=True)
class World:
    """This process's place among the data-parallel ranks."""

    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_world(world_size: int) -> World:
    """The current world; refuses a layout that asks for more ranks than are running."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        world = World(torch.distributed.get_rank(), torch.distributed.get_world_size())
    else:
        world = World()
    if world.world_size != world_size:
        raise UserError(
            f"layout.world_size is {world_size} but {world.world_size} process(es) are running; set "
            f"layout.world_size={world.world_size} (and grad_accum to keep the global batch)"
        )
    return world


def parallelize(model: nn.Module, world: World) -> nn.Module:
    """The module that runs forward passes (identity on one process)."""
    return model


def all_reduce_sum(value: torch.Tensor, world: World) -> torch.Tensor:
    """Sum of `value` over ranks (identity on one process)."""
    if world.world_size > 1:
        torch.distributed.all_reduce(value)
    return value


def no_sync(module: nn.Module, sync: bool):
    """Context that defers gradient sync unless `sync` (a no-op without DDP)."""
    if not sync and hasattr(module, "no_sync"):
        return module.no_sync()
    return contextlib.nullcontext()
