"""Parallelism and fast paths applied to a model from outside, in torchtitan's fixed order.

`parallelize(model, world, scale, device)` is the only place that changes how a model executes:
  1. attention kernel: `flex` (a BlockMask, so packed documents skip fully masked blocks and keep a
     fused kernel on CUDA) or `sdpa` (a dense mask, exact everywhere, O(T^2) memory per row);
  2. activation checkpointing, per block (recompute in backward);
  3. `torch.compile`, per block (small graphs compile fast and are reused across the 12-28 blocks;
     on by default on CUDA);
  4. data parallelism: FSDP2 `fully_shard` per block, then the LM head, then the root; or DDP.
Steps 2 and 3 replace each block's bound `forward` instead of wrapping the block, so parameter names
(and with them checkpoints, freezing and optimizer state by name) are the same with and without them,
and FSDP's hooks stay outside the compiled graphs.

Precision: with DDP (and on one process) the trainer's bf16 autocast keeps fp32 master weights;
FSDP2 instead casts the gathered parameters to bf16 and reduces gradients in fp32
(`MixedPrecisionPolicy`), the torchtitan policy. The loss is computed in fp32 in both cases.

Gradients are summed over ranks, not averaged (see `distributed.py`): DDP gets a sum comm hook,
FSDP2 a divide factor of 1.

The hook's `then` callback is a Python function, which torch drops (taking the GIL) on the gloo worker
that completed the all-reduce, just after DDP's wait for it returned: at exit, a release that takes the
GIL while Python finalizes aborts the rank (see `distributed._SENT`). It cannot outlast `shutdown`: the
worker drops a work's callbacks before the work, whose thread-local state holds the backward's context
that `shutdown` waits for (tests/train/test_distributed_exit.py checks that order every step). Nor can
a Python hook do without the callback: DDP requires its future's value to be a Python object
("expected the hook result is a PyObject" for all-reduce's own future), and torch's own `allreduce_hook`
uses `.then(lambda fut: fut.value()[0])` as well; only its C++ hooks avoid Python, and those average.

DDP fixes its set of gradient buckets when built, and a phase that freezes layers changes which
parameters get gradients, so the DDP wrapper here is rebuilt whenever the set of trainable
parameters changes (checked at each forward: one pass over `requires_grad` flags). FSDP2 follows
`requires_grad` by itself.
"""

from __future__ import annotations

import functools

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.checkpoint import checkpoint

from encoderlab.errors import UserError
from encoderlab.model.compilecache import private_compile_cache
from encoderlab.model.config import resolve_attn_impl
from encoderlab.model.protocol import LanguageModel
from encoderlab.train.config import ScaleConfig
from encoderlab.train.distributed import World


def resolve_compile(requested: str | bool, device: torch.device) -> bool:
    """Whether blocks are compiled: `auto` is on for CUDA with Triton (inductor's GPU backend), off
    elsewhere (on CPU the first steps compile for seconds to minutes and later ones gain little)."""
    if requested == "auto":
        from torch.utils._triton import has_triton

        return device.type == "cuda" and has_triton()
    return bool(requested)


def _checkpointed(forward):
    """`forward` whose activations are recomputed in backward (non-reentrant: accepts BlockMask args)."""

    @functools.wraps(forward)
    def run(*args, **kwargs):
        return checkpoint(forward, *args, use_reentrant=False, **kwargs)

    return run


def _sum_allreduce_hook(group, bucket):  # unannotated: DDP checks annotations by object identity
    """DDP comm hook: sum gradients over ranks (DDP's default divides by the world size)."""
    work = dist.all_reduce(bucket.buffer(), group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


class ReplicatedForward:
    """Runs `forward` through DDP over the currently trainable parameters; rebuilt when they change."""

    def __init__(self, model: nn.Module, device: torch.device):
        self.model, self.device = model, device
        self._ddp: DistributedDataParallel | None = None
        self._trainable: tuple[bool, ...] = ()

    def _current(self) -> DistributedDataParallel:
        trainable = tuple(p.requires_grad for p in self.model.parameters())
        if self._ddp is None or trainable != self._trainable:
            self._ddp = None  # drop the old reducer (and its autograd hooks) before building a new one
            ids = [self.device.index or torch.cuda.current_device()] if self.device.type == "cuda" else None
            self._ddp = DistributedDataParallel(self.model, device_ids=ids)
            self._ddp.register_comm_hook(None, _sum_allreduce_hook)
            self._trainable = trainable
        return self._ddp

    def __call__(self, *args, **kwargs):
        return self._current()(*args, **kwargs)

    def no_sync(self):
        return self._current().no_sync()


def _shard(model: LanguageModel, precision: str) -> None:
    """FSDP2 per block, then the LM head (when untied), then the root."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # imported here: DDP never needs it

    mp = (
        MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        if precision == "bf16"
        else MixedPrecisionPolicy()
    )
    units = model.fsdp_units()
    for unit in units:
        fully_shard(unit, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    for unit in [*units, model]:
        unit.set_gradient_divide_factor(1.0)
        unit.set_force_sum_reduction_for_comms(True)  # gloo has no PREMUL_SUM; a factor of 1 is exact


def trainable_attn_impl(scale: ScaleConfig, device: torch.device) -> str:
    """The attention kernel `scale.attn_impl` resolves to on `device`, refused where it cannot train: a config's
    check, which `TrainStep` makes before building the model (after the build, the refusal cost it)."""
    impl = resolve_attn_impl(scale.attn_impl, device.type)
    if impl == "flex" and device.type == "cpu":
        raise UserError(
            "scale.attn_impl=flex cannot train on CPU (flex_attention has no CPU backward); "
            "use scale.attn_impl=auto or sdpa"
        )
    return impl


def parallelize(
    model: LanguageModel,
    world: World,
    scale: ScaleConfig,
    device: torch.device,
    precision: str = "fp32",
):
    """Apply the kernel choice, activation checkpointing, compile and data parallelism; return the
    callable that runs forward passes (the model itself unless DDP wraps it)."""
    impl = trainable_attn_impl(scale, device)
    model.set_attn_impl(impl)
    compiled = resolve_compile(scale.compile, device)
    if compiled:  # before the first compile reads inductor's cache: a folder others could write is refused
        private_compile_cache()
    for block in dict.fromkeys(model.layers):  # a block applied at several depths (ALBERT's) wrapped once
        forward = block.forward
        if scale.activation_checkpointing:
            forward = _checkpointed(forward)
        if compiled:
            forward = torch.compile(forward)
        block.forward = forward
    if world.world_size == 1:
        return model
    if scale.data_parallel == "fsdp":
        if not model.fsdp_units():
            raise UserError(
                f"scale.data_parallel=fsdp shards encoderlab Encoder models, not {type(model).__name__}; "
                "use scale.data_parallel=ddp"
            )
        _shard(model, precision)
        return model
    return ReplicatedForward(model, device)
