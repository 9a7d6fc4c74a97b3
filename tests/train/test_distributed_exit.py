"""A rank whose run succeeded exits 0: its process group's workers have let go of every tensor our
collectives sent them before the interpreter finalizes.

gloo's worker drops a finished collective's tensors a moment after the caller goes on, and that release
takes the GIL. In a finalizing Python 3.11 a thread that takes the GIL is ended with `pthread_exit`,
which unwinding through the (noexcept) release turns into `std::terminate`: SIGABRT for a finished run
(seen in the suite under load). A main thread that never lets the GIL go (`sys.setswitchinterval`)
makes that moment last until the process finalizes.

The collectives that DDP's comm hook and FSDP2 issue inside a backward keep the Python context the
autograd engine stashes for it, and the worker that drops the last of them takes the GIL as well: a
backward through `distributed.backward` tracks that context. Measured on the old code (`loss.backward()`,
the rest as in `_data_parallel_rank`): 3 SIGABRTs in 20 spawns with DDP, 1 in 8 with FSDP2.

The ranks of the tests of an abort at exit are spawned (`spawn_ranks`: fresh interpreters), not forked from
a process that imported torch (`start_ranks`, tests/train/ranks.py) as the other training tests' are: a
forked rank finalizes as a spawned one does (`test_a_forked_rank_finalizes_its_interpreter`), but its timing
differs: the old code above aborted in 1 of 20 forked DDP pairs, 0 of 20 once the forks had torch._dynamo
imported (as `start_ranks` has them), and 0 of 20 FSDP2 ones (2026-12-07, 2 loaded cores).
The test of the hook's release order checks an order each rank records, not an abort: its ranks are forked.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from tests.train.helpers import free_ports, spawn_ranks, start_ranks

from encoderlab.data.batch import BatchLayout

TWO_RANKS = BatchLayout(seq_len=8, micro_batch_size=1, world_size=2)

pytestmark = pytest.mark.distributed


def _rank(rank: int, port: int) -> None:
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    from encoderlab.train import distributed

    world = distributed.init_world(TWO_RANKS)
    sys.setswitchinterval(1000.0)  # the worker's release waits for the GIL until this thread blocks
    for step in range(3):
        distributed.all_gather({"rank": rank, "step": step}, world)
    assert distributed.all_reduce_sum(distributed.torch.ones(1), world).item() == 2.0
    distributed.shutdown()
    assert distributed._SENT == []  # returns, and the process finalizes at once


def test_a_finished_run_exits_after_the_workers_let_go_of_its_tensors():
    # was: SIGABRT ("terminate called without an active exception") in about half of the spawns
    for port in free_ports(3):
        spawn_ranks(_rank, (port,))


def _finalizing_rank(rank: int, out: Path) -> None:
    import atexit

    atexit.register((out / f"{rank}.finalized").write_text, "atexit ran")


def test_a_forked_rank_finalizes_its_interpreter(tmp_path):
    # a fork ended with `os._exit` (as multiprocessing's forkserver ends its children) skips finalization, what
    # this file is about, and with it the atexit hooks, which finalization runs
    start_ranks(_finalizing_rank, (tmp_path,))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.finalized", "1.finalized"]


def _data_parallel_rank(rank: int, port: int, parallel: str) -> None:
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    import torch

    from encoderlab.train import distributed
    from encoderlab.train.parallelize import ReplicatedForward

    world = distributed.init_world(TWO_RANKS)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
    if parallel == "fsdp":
        from torch.distributed.fsdp import fully_shard  # here alone: a DDP rank needs none of its imports

        fully_shard(model[0])
        forward = fully_shard(model)
    else:
        forward = ReplicatedForward(model, torch.device("cpu"))
    sys.setswitchinterval(1000.0)  # as above: the worker waits for the GIL until this thread blocks
    for _ in range(3):
        last = distributed._SENT[-1] if distributed._SENT else None
        distributed.backward(forward(torch.ones(4, 8)).sum(), world)
        assert distributed._SENT[-1] is not last  # the backward's context, tracked
    distributed.shutdown()
    assert distributed._SENT == []


@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_a_data_parallel_run_exits_after_the_workers_let_go_of_its_backward(parallel):
    for port in free_ports(4):
        spawn_ranks(_data_parallel_rank, (port, parallel))


def _hook_release_rank(rank: int, port: int, out: Path) -> None:
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    import gc
    import types
    import weakref

    import torch

    from encoderlab.train import distributed, parallelize

    world = distributed.init_world(TWO_RANKS)
    hook, released, watched, left_to_torch = parallelize._sum_allreduce_hook, [], [], []
    callback_name, seen = f"{hook.__qualname__}.<locals>.<lambda>", weakref.WeakSet()

    def watching(group, bucket):  # unannotated, as the hook it wraps
        future, step = hook(group, bucket), len(left_to_torch)
        found = [  # this step's callback; a step before's can still be the worker's
            o
            for o in gc.get_objects()
            if type(o) is types.FunctionType and o.__qualname__ == callback_name and o not in seen
        ]
        seen.update(found)
        refs = [weakref.ref(f, lambda _, s=step: released.append(["callback", s])) for f in found]
        if not found:  # the all-reduce finished before `then`: the callback ran, and went, in the hook
            released.append(["callback", step])
        context = distributed._SENT[-1]()  # this backward's, tracked by `distributed.backward`
        watched.extend([*refs, weakref.ref(context, lambda _, s=step: released.append(["context", s]))])
        del found, context
        left_to_torch.append(sum(ref() is not None for ref in refs))  # the gloo worker drops these
        return future

    parallelize._sum_allreduce_hook = watching  # `ReplicatedForward` registers the hook by this name
    forward = parallelize.ReplicatedForward(torch.nn.Linear(8, 2), torch.device("cpu"))
    # the worker runs (and drops) a callback once the hook has returned, not during its scan
    sys.setswitchinterval(1000.0)
    for _ in range(_HOOK_STEPS):
        distributed.backward(forward(torch.ones(4, 8)).sum(), world)
    distributed.shutdown()
    assert all(ref() is None for ref in watched)  # all let go of once `shutdown` returns
    (out / f"{rank}.json").write_text(json.dumps({"left_to_torch": left_to_torch, "released": released}))


_HOOK_STEPS = 6


def test_the_comm_hooks_callback_is_let_go_of_before_the_context_that_shutdown_waits_for(tmp_path):
    # The hook's `then` callback is a Python function that torch lets go of with the GIL, on the gloo
    # worker that completed the all-reduce, after DDP's wait for it returned (parallelize.py's module
    # docstring). `shutdown` waits for each backward's context alone: the worker lets go of that (the
    # work's thread-local state) only after the callback, in every step.
    start_ranks(_hook_release_rank, (free_ports(1)[0], tmp_path))
    ranks = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in (0, 1)]
    for rank in ranks:
        expected = [[kind, step] for step in range(_HOOK_STEPS) for kind in ("callback", "context")]
        assert rank["released"] == expected, rank
    assert sum(sum(rank["left_to_torch"]) for rank in ranks) > 0  # the worker let go of some callbacks


def test_a_torch_without_the_private_context_api_trains_untracked(monkeypatch):
    # `_track_backward` reads the autograd context through torch's private TLS API; a torch release
    # that drops it must still train (untracked), not fail inside every multi-rank backward
    import torch

    from encoderlab.train import distributed

    monkeypatch.delattr(torch._C, "_is_key_in_tls", raising=False)
    monkeypatch.setattr(distributed, "_SENT", [])
    weight = torch.ones(2, requires_grad=True)
    loss = (weight * 3).sum()
    loss.register_hook(distributed._track_backward)
    loss.backward()
    assert weight.grad.tolist() == [3.0, 3.0] and distributed._SENT == []
