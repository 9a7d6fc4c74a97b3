"""A resume under torchrun whose run folder holds the lock of a rank 0 that died (a SIGKILL, the OOM killer)
on the node where rank 0 runs again (found by the launch review of 2026-12-06).

Rank 0 takes the run's lock (`Trainer._claim`) and judges a lock left by a dead process of its own host as
stale. `locks.refuse_live_holder`, which names a live holder before a checkpoint is read, ran on every rank,
and a rank on another node cannot tell whether a process of rank 0's host is alive (`holder_alive` None): it
refused, and `distributed.agreed` stopped every rank, with "rank 1: RUN is in use by pretrain (pid P on
HOST ...)" for a lock that rank 0 would have taken over. The live holder is now judged by rank 0 alone, as
the lock is taken. The second node is played by rank 1 reading another host name.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tests.train.helpers import free_ports, metrics, start_ranks
from tests.train.test_distributed import ONE, TWO, run_cfg

from encoderlab.train import pretrain
from encoderlab.train.runfolder import LOCK

pytestmark = pytest.mark.distributed


def _rank(rank: int, run: str, port: int) -> None:
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    torch.set_num_threads(1)
    if rank == 1:  # a rank on another node than the lock's host
        import encoderlab.locks

        encoderlab.locks.socket.gethostname = lambda: "another-node"
    pretrain(run_cfg(Path(run), TWO), resume=True)


def test_a_stale_lock_of_rank_zeros_host_does_not_stop_a_resume_on_two_nodes(tmp_path):
    run = tmp_path / "run"
    torch.set_num_threads(1)
    pretrain(run_cfg(run, ONE), until_step=2)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # its pid names no process now: rank 0 of the killed run
    stale = {
        "pid": gone.pid,
        "host": socket.gethostname(),
        "since": "2026-12-06T20:00:00Z",
        "what": "pretrain",
    }
    (run / LOCK).write_text(json.dumps(stale))
    start_ranks(
        _rank, (str(run), free_ports(1)[0])
    )  # was: both ranks refused ("rank 1: ... is in use by ...")
    assert [r["step"] for r in metrics(run)] == list(range(1, 7))
    assert (run / "final" / "config.json").is_file() and not (run / LOCK).exists()
