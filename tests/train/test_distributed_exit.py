"""A rank whose run succeeded exits 0: its process group's workers have let go of every tensor our
collectives sent them before the interpreter finalizes.

gloo's worker drops a finished collective's tensors a moment after the caller goes on, and that release
takes the GIL. In a finalizing Python 3.11 a thread that takes the GIL is ended with `pthread_exit`,
which unwinding through the (noexcept) release turns into `std::terminate`: SIGABRT for a finished run
(seen in the suite under load). A main thread that never lets the GIL go (`sys.setswitchinterval`)
makes that moment last until the process finalizes.
"""

from __future__ import annotations

import os
import sys

import pytest
from tests.train.helpers import free_ports, spawn_ranks

pytestmark = pytest.mark.distributed


def _rank(rank: int, port: int) -> None:
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    from encoderlab.train import distributed

    world = distributed.init_world(2)
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
