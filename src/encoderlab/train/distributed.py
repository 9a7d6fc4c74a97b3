"""The process group and the collectives the trainer needs; on one process every function is the identity.

Design
  * `init_world` joins the process group that `torchrun` describes in its environment (RANK,
    WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT): nccl for CUDA tensors (one device per local rank) and
    gloo for CPU tensors, so `device=cpu` also runs on a GPU machine.
    A group that the caller already initialised (tests, notebooks) is used as is and left alone;
    one that `init_world` created is torn down by `shutdown`, after a barrier (without it
    a gloo rank can abort while rank 0 is still writing).
  * The join (`_join_group`) waits in C++ until every rank has come, up to its timeout (30 minutes),
    and Python runs signal handlers only between the main thread's bytecodes: a rank whose peers never
    came ignored SIGTERM (a scheduler's stop) and Ctrl-C for the whole timeout. So the join runs on a
    daemon thread that the main thread waits on in short polls, and a signal stops the rank at once
    with the usual "interrupted" line (`interrupts.sigterm_as_interrupt`); the abandoned join ends with
    the process. Before the group forms the ranks meet through its store (`rendezvous.meet`): a WORLD_SIZE
    that differs between them, or another job on MASTER_PORT, is one line, not the join's timeout.
  * Gradients are *sums* over the global batch. The trainer already divides every micro-batch's loss
    by the number of targets in the whole global batch, so DDP and FSDP must add the ranks'
    gradients, not average them (their default); `parallelize` configures both that way. One
    process accumulating over W x A micro-batches and W processes over A each then compute the same
    gradient up to the order of the float additions.
  * Accumulation communicates once per step: `no_sync` wraps each micro-batch but the last, its
    forward *and* backward (DDP reads the flag in forward, FSDP2 when a backward ends). Under FSDP2
    the deferred gradients stay unsharded (fp32) until the last micro-batch reduce-scatters them: one
    full gradient per rank (4 bytes per parameter) in exchange for 1 reduce-scatter per step instead
    of `grad_accum`.
  * Checkpoints hold full tensors, written by rank 0 and read by every rank, so they load at any
    world size. Under FSDP2 the sharded parameters and AdamW moments are gathered
    (`full_tensor`, collective) before saving and re-sliced (`shard_like`, local, no communication)
    after loading. The cost is one full copy on rank 0 while saving, which is what an exported model
    folder needs anyway; a per-rank sharded DCP write would avoid it for models far beyond 1B.
The raw model stays the trainer's handle for `lm_logits`, saving and freezing; the module that
`parallelize` returns only runs `forward`.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist
from torch import nn

from encoderlab.data.batch import BatchLayout
from encoderlab.errors import UserError
from encoderlab.launchenv import (
    check_launcher_env,
    check_not_srun_tasks,
    check_one_process_env,
    env_world_size,
)
from encoderlab.model.encoder import Encoder
from encoderlab.model.protocol import LanguageModel
from encoderlab.train import rendezvous
from encoderlab.words import count, noun

if TYPE_CHECKING:
    from torch.distributed.fsdp import FSDPModule

# FSDP2, DTensor and the DCP state-dict API are imported where they are used, and only asked about once
# imported (`_loaded`): their import (sympy among it) costs as much CPU as a third of torch's own, which a
# process that trains unsharded never needs (nor, since model/eageroptim.py skips dynamo, imports for its optimizer).
# A model is an FSDPModule, or a tensor a DTensor, only once that module was imported.


def _loaded(module: str, name: str) -> type | None:
    """The class `module.name` if `module` was imported, else None: nothing is an instance of it yet. A
    module another thread is still importing is in `sys.modules` before it defines the class (an
    AttributeError here): nothing is an instance of that either."""
    return getattr(sys.modules.get(module), name, None)


_OWNED_GROUP = False  # True when init_world created the process group (so shutdown may destroy it)


@dataclass(frozen=True)
class World:
    """This process's place among the data-parallel ranks."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    """Index of this process on its node (the CUDA device it uses)."""

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def join_world() -> World:
    """Join the launcher's process group if there is one (or use one the caller initialised)."""
    global _OWNED_GROUP
    if not dist.is_initialized() and env_world_size() > 1:
        check_launcher_env()
        _join_group()
        _OWNED_GROUP = True
    elif not dist.is_initialized():
        check_one_process_env()
        check_not_srun_tasks()  # several srun tasks, each alone: the same run trained once per task
    if dist.is_initialized():
        local = int(os.environ.get("LOCAL_RANK", dist.get_rank()))
        return World(dist.get_rank(), dist.get_world_size(), local)
    return World()


def init_world(layout: BatchLayout) -> World:
    """Join the launcher's process group if there is one; refuses a layout for another number of ranks, naming
    the layout.grad_accum that keeps its global batch on the ranks running (it said "and grad_accum to keep
    the global batch", leaving the sum to the user, and a resume then refused the wrong one)."""
    world = join_world()
    if world.world_size != layout.world_size:
        split = Resplit(layout.world_size * layout.grad_accum, world.world_size)
        running = f"layout.world_size is {layout.world_size} but {split.processes} {noun(split.world, 'is', 'are')} running"
        if split.grad_accum is None:
            raise UserError(
                f"{running}, over which {split.kept} does not split; run on a number of processes that divides "
                f"{split.batch}, or set layout.world_size={split.world} and a layout.grad_accum for another batch"
            )
        raise UserError(
            f"{running}; set layout.world_size={split.world} and layout.grad_accum={split.grad_accum} to keep {split.kept}"
        )
    return world


@dataclass(frozen=True)
class Resplit:
    """A global batch of `batch` micro-batches (layout.world_size x layout.grad_accum) to be trained on `world`
    processes: the layout.grad_accum that keeps it, if a whole one does. Said by `init_world` and by a refused
    resume's fix (`runfolder._resplit_fix`), so both name the same figure."""

    batch: int
    world: int

    @property
    def grad_accum(self) -> int | None:
        """batch / world, or None where it is no whole number."""
        return None if self.batch % self.world else self.batch // self.world

    @property
    def kept(self) -> str:
        micro = count(self.batch, "micro-batch", "micro-batches")
        return f"the run's global batch of {micro} (layout.world_size x layout.grad_accum)"

    @property
    def processes(self) -> str:
        return count(self.world, "process", "processes")


def _join_group(poll_s: float = 0.2) -> None:
    """`dist.init_process_group` as torchrun's environment describes it, on a daemon thread waited on in
    polls of `poll_s`, so that SIGTERM and Ctrl-C stop a rank still waiting for its peers (module docstring).
    The ranks meet first (`rendezvous.meet`): a WORLD_SIZE that differs between them, or something other than
    rank 0 on MASTER_PORT (`Joining.overdue`, enforced in the polls), is one line, not the join's timeout."""
    cuda = torch.cuda.is_available()
    device = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:  # the current device is per thread: this one's for the run, the joining thread's for the join
        torch.cuda.set_device(device)
    launch = rendezvous.Launch.from_env()
    joining, failed = rendezvous.Joining(launch), []

    def join() -> None:
        try:
            if cuda:
                torch.cuda.set_device(device)
            store = rendezvous.meet(launch, joining)
            backend = "cuda:nccl,cpu:gloo" if cuda else "gloo"
            group = rendezvous.group_store(store)
            dist.init_process_group(backend, store=group, rank=launch.rank, world_size=launch.world_size)
        except BaseException as exc:  # raised in the main thread below
            failed.append(exc)

    joining_thread = threading.Thread(target=join, name="encoderlab-join-group", daemon=True)
    joining_thread.start()
    while joining_thread.is_alive():
        joining_thread.join(poll_s)  # a signal's handler runs between the polls
        stranger = joining.overdue()
        if (
            stranger is not None
        ):  # its thread stays blocked in the store's C++ call, abandoned with the process
            raise stranger
    if failed:
        raise rendezvous.port_taken(failed[0]) or failed[0]


@contextlib.contextmanager
def agreed(world: World):
    """Run checks that may refuse on some ranks only, and end them together: every rank leaves the
    block, then the ranks exchange their outcomes (one collective), and if any rank failed every rank
    raises. Without it a rank refused alone (a file missing on one node, a check that reads local
    state) while the others went on into a collective and died with a gloo traceback or waited for
    the NCCL timeout.

    Rank 0 raises the line to show (its own refusal, or `rank R: ...` for the first rank that failed);
    the other ranks raise `quiet` errors, so `encoderlab` prints one line, not one per rank. A rank's
    own bug (not a UserError) keeps its traceback there. Interrupts pass through without a collective.
    """
    try:
        yield
    except Exception as exc:
        _raise_agreed(world, exc)
        raise  # one process: _raise_agreed re-raised it already
    if world.world_size > 1:
        _raise_agreed(world, None)


def _raise_agreed(world: World, error: Exception | None) -> None:
    if world.world_size == 1:
        if error is not None:
            raise error
        return
    outcomes = all_gather(
        None if error is None else (_described(error), getattr(error, "exit_code", 1)), world
    )
    failed = [(rank, outcome) for rank, outcome in enumerate(outcomes) if outcome is not None]
    if not failed:
        return
    stopping_together(world)
    if error is not None and not isinstance(error, UserError):
        raise error  # a bug: its traceback, on the rank that hit it
    first, (line, code) = failed[0]
    if world.is_main and error is not None:
        raise error
    shown = UserError(line if first == 0 else f"rank {first}: {line}")
    shown.exit_code, shown.quiet = code, not world.is_main
    raise shown from error


def _described(error: Exception) -> str:
    """The line a refused rank reports: a UserError's message, or what a bug was (its type and first line)."""
    if isinstance(error, UserError):
        return str(error)
    return f"stopped by an internal error ({type(error).__name__}: {str(error).strip().partition(chr(10))[0]}); see that rank's traceback"


def barrier(world: World) -> None:
    """Wait for every rank (no-op on one process)."""
    if world.world_size > 1:
        dist.barrier()


def stopping_together(world: World) -> None:
    """A barrier for ranks that all stop now (an agreed refusal, a non-finite loss every rank saw).

    Every rank leaves the collective phase at the same point, so none tears the group down while
    another still waits in a collective. The barrier alone did not make the teardown safe (a gloo
    worker's release of the last collective's tensors can still need the GIL then); keeping the
    destroyed group alive does (`_RETIRED`)."""
    barrier(world)


def shutdown(clean: bool = True) -> None:
    """Destroy the process group `init_world` created, after a barrier when `clean` (a gloo rank
    can otherwise abort while rank 0 is still writing).

    After an error (`clean=False`) the other ranks may never reach a barrier, so there is none.
    Either way it returns once the group's workers have let go of our collectives' tensors (`_SENT`).
    """
    global _OWNED_GROUP
    if _OWNED_GROUP and dist.is_initialized():
        if clean:
            dist.barrier()
        _drain()
        _RETIRED.append(dist.group.WORLD)
        dist.destroy_process_group()
    _OWNED_GROUP = False


_RETIRED: list = []
"""Every process group `shutdown` destroyed, kept alive until the process ends.

gloo's worker threads release a finished collective's tensors a moment after the caller goes on, and
(torch 2.13) that release takes the GIL to drop the tensor's Python object. The group's C++ destructor
joins those threads while holding the GIL, so a destructor that runs in that moment waits for good, and
so does the other rank: seen in CI under load, py-spy showing a worker in `~AsyncBarrierWork` ->
`~AsyncAllgatherWork` -> `decref_pyobject` waiting for the GIL and the main thread in
`~ProcessGroupGloo`, run by a DDP reducer's release right after the run's last barrier. Holding the
group moves its destructor to the end of the process, long after any release; the cost is two idle
threads per group a process made (one per `pretrain` call)."""


_SENT: list[weakref.ref] = []
"""The Python objects that the process group's work may hold, held weakly, until its workers let them go.

A worker thread drops a finished collective's work a moment after the caller goes on, and letting go of
a Python object in it takes the GIL (torch 2.13: a C++ reference to a tensor with a Python object holds
that object, so its release is a Python decref). If the interpreter is finalizing by then, Python 3.11
ends the worker with `pthread_exit`, whose unwinding through the release (noexcept) is `std::terminate`:
a rank whose run succeeded aborted at exit ("terminate called without an active exception", SIGABRT;
seen in the suite under load, and made certain by a main thread that keeps the GIL). So `shutdown`
waits, with the GIL free, until every object tracked is gone (`_drain`). Two kinds are tracked:
  * the tensors our collectives send: Python drops each when its collective returns
    (`all_reduce_sum` sends a copy), so a live one is still the workers';
  * the context of each backward that ran collectives (`backward`): DDP's comm hook and FSDP2 issue
    theirs inside the backward, and each such work keeps the thread's state of when it was issued,
    which holds the Python context the autograd engine stashes for the backward (`_engine_run_backward`)
    until the work is destroyed; nothing else holds it once the backward returned. A gloo worker that
    dropped the last such work at exit aborted (gdb: `~AsyncAllreduceWork` ->
    `~ThreadLocalState` -> `SafePyObject` decref -> `take_gil` -> `pthread_exit`), after a DDP or an
    FSDP2 backward alike. Their tensors are not tracked: DDP's gradient buckets live as long as its
    reducer, and FSDP2's are its own."""


def _sent(*objects: object) -> None:
    _SENT[:] = [ref for ref in _SENT if ref() is not None]
    _SENT.extend(weakref.ref(t) for t in objects)


def backward(loss: torch.Tensor, world: World) -> None:
    """`loss.backward()`, with the context that the collectives inside it keep tracked for `_drain` (`_SENT`)."""
    if world.world_size > 1:
        loss.register_hook(_track_backward)
    loss.backward()


def _track_backward(grad: torch.Tensor) -> None:
    """A hook on the loss: runs first in its backward, while the engine's context is in thread-local state."""
    # private torch API (2.13); a torch without it trains as before, untracked, rather than failing
    has, get = getattr(torch._C, "_is_key_in_tls", None), getattr(torch._C, "_get_obj_in_tls", None)
    if has is not None and get is not None and has("context"):
        _sent(get("context"))


def _drain(limit_s: float = 10.0, poll_s: float = 0.005) -> None:
    """Wait (the GIL free) until the process group's workers have let go of every tensor in `_SENT`, for
    at most `limit_s`: after a failed collective (a rank gone) they may hold them until gloo's timeout."""
    deadline = time.monotonic() + limit_s
    while any(ref() is not None for ref in _SENT) and time.monotonic() < deadline:
        time.sleep(poll_s)
    _SENT.clear()


def all_reduce_sum(value: torch.Tensor, world: World) -> torch.Tensor:
    """Sum of `value` over ranks, in place (identity on one process)."""
    if world.world_size > 1:
        sent = value.clone()  # the caller keeps `value`; `_drain` waits for this copy alone
        dist.all_reduce(sent)
        _sent(sent)
        value.copy_(sent)
    return value


def all_gather(value, world: World) -> list:
    """Every rank's `value` (JSON data: it comes back as `json.loads` gives it, on one process too), in
    rank order.

    JSON rather than `all_gather_object`: nothing read from another process is unpickled."""
    encoded = json.dumps(value).encode()
    if world.world_size == 1:
        return [json.loads(encoded)]
    mine = torch.tensor(list(encoded), dtype=torch.uint8)
    size = torch.tensor([mine.numel()], dtype=torch.long)
    sizes = [torch.zeros(1, dtype=torch.long) for _ in range(world.world_size)]
    dist.all_gather(sizes, size)
    longest = max(int(s) for s in sizes)
    padded = torch.cat([mine, torch.zeros(longest - mine.numel(), dtype=torch.uint8)])
    gathered = [torch.empty(longest, dtype=torch.uint8) for _ in range(world.world_size)]
    dist.all_gather(gathered, padded)
    _sent(size, *sizes, padded, *gathered)
    return [json.loads(bytes(g[: int(n)].tolist())) for g, n in zip(gathered, sizes)]


@contextlib.contextmanager
def _fsdp_no_sync(module: FSDPModule):
    module.set_requires_gradient_sync(False)
    try:
        yield
    finally:
        module.set_requires_gradient_sync(True)


def no_sync(module: nn.Module, sync: bool):
    """Context that defers gradient sync unless `sync` (micro-batches before the last of a step)."""
    if sync:
        return contextlib.nullcontext()
    if is_sharded(module):
        return _fsdp_no_sync(module)
    if hasattr(module, "no_sync"):
        return module.no_sync()
    return contextlib.nullcontext()


def is_sharded(model: nn.Module) -> bool:
    """True when FSDP2 holds the model's parameters as shards."""
    sharded = _loaded("torch.distributed.fsdp", "FSDPModule")
    return sharded is not None and isinstance(model, sharded)


def reshard(model: nn.Module) -> None:
    """Put an FSDP2 model's parameters back into their shards after forwards without a backward
    (evaluation): the root stays unsharded after its forward until backward would reshard it, and
    the optimizer holds the sharded parameters. No-op without FSDP2."""
    for module in model.modules():
        if is_sharded(module):
            module.reshard()


def full_tensor(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor behind a DTensor shard (collective), or `t` itself."""
    dtensor = _loaded("torch.distributed.tensor", "DTensor")
    return t.full_tensor() if dtensor is not None and isinstance(t, dtensor) else t


def shard_like(value: torch.Tensor, param: torch.Tensor) -> torch.Tensor:
    """A full tensor cut like `param` when `param` is a DTensor and `value` has its shape.

    Every rank holds the same full value (read from the same checkpoint), so each slices its own
    part locally (`src_data_rank=None`): no communication.
    """
    dtensor = _loaded("torch.distributed.tensor", "DTensor")
    if (
        dtensor is None
        or not isinstance(param, dtensor)
        or isinstance(value, dtensor)
        or value.shape != param.shape
    ):
        return value
    from torch.distributed.tensor import distribute_tensor

    return distribute_tensor(value.to(param.device), param.device_mesh, param.placements, src_data_rank=None)


def shard_optim_state(
    state: dict[str, dict[str, torch.Tensor]], model: nn.Module
) -> dict[str, dict[str, torch.Tensor]]:
    """Full per-name optimizer state (moments) cut like the model's sharded parameters."""
    if not is_sharded(model):
        return state
    params = dict(model.named_parameters())
    return {
        name: {k: shard_like(v, params[name]) if name in params else v for k, v in st.items()}
        for name, st in state.items()
    }


def load_model_state(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Load a full state dict into a plain or FSDP2-sharded model (strict)."""
    if is_sharded(model):
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True, strict=True))
    else:
        model.load_state_dict(state)


def _portable(model: LanguageModel) -> LanguageModel:
    """`model` as it should be saved: an Encoder's attention kernel reset to sdpa.

    The kernel is a runtime choice of `parallelize` (flex on CUDA), and flex_attention has no CPU
    backward, so a folder that recorded `flex` could not be fine-tuned on CPU. The copy is shallow:
    it shares every parameter and differs only in its config.
    """
    if model.attn_impl == "sdpa":
        return model
    view = copy.copy(model)  # shares parameters and submodules; its own attribute dict
    view.set_attn_impl("sdpa")
    return view


def gathered_model(model: nn.Module, world: World) -> nn.Module | None:
    """A model that `save_model_folder` can write: the model itself, or under FSDP2 a full CPU copy,
    with a portable attention kernel (see `_portable`).

    Collective under FSDP2 (every rank must call it); the copy exists on rank 0 only (None elsewhere).
    """
    if not is_sharded(model):
        return _portable(model)
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if not world.is_main:
        return None
    full = Encoder(model.config)  # parallelize shards Encoder models only
    full.load_state_dict(state)
    return _portable(full)


DISPLAY_ONLY = ("progress:", "sinks:", "peak_tflops:")
"""Config differences (as `config_diff` words them) that change what a run shows and logs, not what it
computes."""


UNTRAINED = ("checkpoint.every:", "checkpoint.keep_last:", "validation.")
"""Config differences that change which checkpoints are written and kept and what held-out loss is logged,
not what is trained: checkpoints save state without changing it (a rollback replays the same steps from
whichever it loads), and validation draws from its own generators in eval mode (`train/validation.py`).
A resume takes them and says so (`runfolder.check_run_folder`)."""


def resume_blockers(diff: list[str], old_layout: dict, new_layout: dict) -> list[str]:
    """The config differences (from `trainer.config_diff`) that should stop a resume.

    Resuming at another world size changes `layout.world_size` and `layout.grad_accum`; as long as
    their product (with the same micro-batch size) is unchanged, every global batch keeps the same
    rows in the same slots and the same masks, so the run continues the same computation. `scale.*`
    (DDP vs FSDP2, compile, checkpointing, kernel) changes how a step executes, not what it computes,
    and `progress`, `sinks` and `peak_tflops` only what is shown and logged (a run started with its bar
    and resumed by a scheduler with `progress=false` was refused until --force, which lets any change by);
    `UNTRAINED` changes (checkpoint frequency and retention, validation) change no training result.
    """
    resplit = old_layout.get("world_size", 1) * old_layout.get("grad_accum", 1) == new_layout.get(
        "world_size", 1
    ) * new_layout.get("grad_accum", 1)
    benign = ("scale.", *DISPLAY_ONLY, *UNTRAINED) + (
        ("layout.world_size:", "layout.grad_accum:") if resplit else ()
    )
    return [d for d in diff if not d.startswith(benign)]
