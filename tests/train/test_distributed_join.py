"""A rank still waiting for its peers to join the process group stops on SIGTERM at once.

`init_process_group` waits in C++ until every rank has come (30 minutes by default), and Python runs
signal handlers only between the main thread's bytecodes: a rank whose peers never came (a failed
node, a scheduler stopping the job before all had started) ignored SIGTERM for the whole timeout.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.reliability.hostile_world import TINY_RUN
from tests.train.helpers import free_ports

pytestmark = pytest.mark.distributed

INTERRUPTED = "encoderlab: interrupted before anything was written; rerun the command"
"""Its run folder is not made yet (it said "completed work is kept (rerun with --resume to continue)")."""


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_a_rank_waiting_for_its_peers_stops_on_sigterm(tmp_path):
    (tmp_path / "run.yaml").write_text(TINY_RUN)
    port, root = free_ports(1)[0], Path(__file__).parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)]),
        "WORLD_SIZE": "2",  # rank 0 of two, whose rank 1 never comes
        "RANK": "0",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }
    argv = [
        "pretrain",
        "--config",
        str(tmp_path / "run.yaml"),
        "--set",
        "layout.world_size=2",
        "--out",
        str(tmp_path / "out"),
    ]
    rank = subprocess.Popen(
        [sys.executable, "-m", "encoderlab.cli", *argv], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120  # imports on a loaded machine; then rank 0 serves the store
        while rank.poll() is None and not _listening(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rank.poll() is None and _listening(port), "the rank did not start waiting for its peer"
        time.sleep(1)  # inside the join
        rank.send_signal(signal.SIGTERM)
        try:
            rank.wait(timeout=60)  # a bound for a loaded machine; it stops at once (was: 30 minutes)
        except subprocess.TimeoutExpired:
            pytest.fail("the rank ignored SIGTERM while it waited for its peer")
        err = rank.stderr.read()
        assert rank.returncode == 130, err
        assert err.strip().splitlines()[-1] == INTERRUPTED and "Traceback" not in err, err
        assert not (tmp_path / "out").exists()
    finally:
        if rank.poll() is None:
            rank.kill()
            rank.wait()
