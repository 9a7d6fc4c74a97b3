"""Rank 0 whose MASTER_PORT is taken (the cluster review of 2026-12-07).

A job script that exports torchrun's variables from SLURM's (docs/scaling.md) chooses MASTER_PORT itself; another
job on the node holding that port, or two processes of one node given RANK=0 (RANK=$SLURM_LOCALID where
$SLURM_PROCID was meant), ended rank 0 with torch's DistNetworkError traceback (EADDRINUSE). It is one line now,
before anything is written. The port is held here by a listening socket, as another job's process group holds it.
"""

from __future__ import annotations

import socket

from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.train.helpers import free_ports


def test_rank_zero_whose_master_port_is_taken_is_one_line_before_anything_is_written(
    tmp_path, capsys, monkeypatch
):
    port = free_ports(1)[0]
    env = dict(WORLD_SIZE="2", RANK="0", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with socket.socket() as held:
        held.bind(("127.0.0.1", port))
        held.listen()
        code, err = cli(["pretrain", "--recipe", "smoke-mlm", "--out", tmp_path / "run"], capsys)
    said = (
        rf"rank 0 cannot start the process group: MASTER_PORT={port} on 127.0.0.1 is in use \(another job, or "
        r"another process started with RANK=0\); give each job a free MASTER_PORT"
    )
    assert_one_line(code, err, said)  # was: torch.distributed.DistNetworkError ... EADDRINUSE, a traceback
    assert_printed_as_documented("master-port-taken", err, tmp_path)  # the row's words, the fix included
    assert list(tmp_path.iterdir()) == []
