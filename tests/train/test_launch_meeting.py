"""Ranks that cannot form one process group say so in one line each, in bounded time (the launch review of
2026-12-07; `train/rendezvous.py`).

  * Two processes started with different WORLD_SIZE (two hand-written commands that disagree) each waited for a
    rank that would never come: the join's timeout (30 minutes), then a traceback. Both now refuse at once,
    naming both sizes, before anything is written.
  * Where MASTER_PORT is held by another job, rank 0 says `master-port-taken`, and the other ranks, which
    connect to that job instead, waited for good (a plain socket never answers torch's store client) or for the
    join's timeout (another job's store never shows this run's rank 0). They now say so once `ANSWER_S` has
    passed (shortened here); the port is held as a listening socket or as another job's store would hold it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
import torch.distributed as dist
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.hostile_world import TINY_RUN
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.train.helpers import free_ports

from encoderlab.train import distributed, rendezvous

pytestmark = pytest.mark.distributed

ROOT = Path(__file__).parents[2]

HANG_S = 300
"""A bound for a hang alone (the old code waited for the join's timeout, 30 minutes, or for good): the ranks
refuse within seconds, most of them rank 0's imports."""


def test_ranks_started_with_different_world_sizes_each_refuse_in_one_line_before_anything_is_written(
    tmp_path, capsys, monkeypatch
):
    # rank 0 (WORLD_SIZE=2, it serves the store) runs as its own process, rank 1 (WORLD_SIZE=3) in this one
    (tmp_path / "run.yaml").write_text(TINY_RUN)
    launch = dict(LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_ports(1)[0]))
    argv = ["pretrain", "--config", str(tmp_path / "run.yaml"), "--set", "layout.world_size=2"]
    argv += ["--out", str(tmp_path / "out")]
    path = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    env = {**os.environ, **launch, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "RANK": "0", "WORLD_SIZE": "2"}
    zero = subprocess.Popen(
        [sys.executable, "-m", "encoderlab.cli", *argv], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        for name, value in {**launch, "RANK": "1", "WORLD_SIZE": "3"}.items():
            monkeypatch.setenv(name, value)
        with _failed_after(HANG_S, "ranks started with different WORLD_SIZE still wait for each other"):
            code, err = cli(argv, capsys)
            said_by_zero = zero.communicate()[1]
    finally:
        if zero.poll() is None:
            zero.kill()
            zero.wait()
    fix = "start every process of the run with the same WORLD_SIZE (torchrun sets it from --nnodes and --nproc-per-node)"
    for rank_code, said, (me, other) in (
        (zero.returncode, said_by_zero, ("0 was started with WORLD_SIZE=2", "1 with WORLD_SIZE=3")),
        (code, err, ("1 was started with WORLD_SIZE=3", "0 with WORLD_SIZE=2")),
    ):
        assert_one_line(rank_code, said, re.escape(f"encoderlab: error: rank {me} but rank {other}; {fix}"))
        assert_printed_as_documented("world-size-differs", said, tmp_path)
    assert not (tmp_path / "out").exists()
    assert not dist.is_initialized()


@pytest.mark.parametrize("holder", ["socket", "store"])
def test_a_rank_whose_master_port_is_another_jobs_says_so_in_one_line(holder, tmp_path, capsys, monkeypatch):
    port = free_ports(1)[0]
    env = dict(WORLD_SIZE="2", RANK="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(rendezvous, "ANSWER_S", 0.5)  # a minute in a run
    monkeypatch.setattr(rendezvous, "JOIN_TIMEOUT", timedelta(seconds=1))  # the abandoned join's end (below)
    if holder == "socket":
        held = socket.socket()
        held.bind(("127.0.0.1", port))
        held.listen()
    else:  # another job's store, which never holds this run's rank 0
        held = dist.TCPStore("127.0.0.1", port, 1, is_master=True, timeout=timedelta(seconds=30))
    try:
        with _failed_after(HANG_S, "a rank whose MASTER_PORT another job holds still waits"):
            code, err = cli(["pretrain", "--recipe", "smoke-mlm", "--out", tmp_path / "run"], capsys)
    finally:
        if holder == "socket":
            held.close()
        del held
        _join_abandoned_thread()
    said = (
        rf"rank 1 cannot join the process group: what listens on MASTER_PORT={port} on 127.0.0.1 gave no sign of "
        r"this run's rank 0 in 0.5 s \(another job holds that port, or rank 0 could not start there\)"
    )
    assert_one_line(code, err, said)  # was: no word until the join's timeout (30 minutes), or none at all
    assert_printed_as_documented("master-port-not-rank-zero", err, tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert not dist.is_initialized()


@contextlib.contextmanager
def _failed_after(seconds: float, why: str):
    """Fail the test from SIGALRM once `seconds` have passed (the join's polls run Python between waits)."""

    def fail(signum, frame):
        pytest.fail(why)

    previous = signal.signal(signal.SIGALRM, fail)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _join_abandoned_thread() -> None:
    """Wait for the joining thread the refusal left blocked in the store's client: a thread that returns to
    Python while this test process finalizes is ended by `pthread_exit`, which aborts it (`distributed._SENT`)."""
    for thread in threading.enumerate():
        if thread.name == "encoderlab-join-group":
            thread.join(60)  # its store's timeout (JOIN_TIMEOUT above), or the held socket's close, ends it
            assert not thread.is_alive()


def test_the_group_forms_under_the_env_starts_key_prefix_and_libuv_choice(monkeypatch):
    # init_process_group(store=...) adds no "default_pg" prefix of its own, unlike its env:// start
    port = free_ports(1)[0]
    env = dict(WORLD_SIZE="1", RANK="0", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    for name, value in {**env, "USE_LIBUV": "0"}.items():
        monkeypatch.setenv(name, value)
    formed = {}
    monkeypatch.setattr(distributed.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(distributed.dist, "init_process_group", lambda backend, **kw: formed.update(kw))
    distributed._join_group()
    formed["store"].set("a-key", "1")
    seen = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=30))
    assert seen.check(["default_pg/a-key"]) and not seen.check(["a-key"])
    assert formed["store"].underlying_store.libuvBackend is False  # USE_LIBUV=0, as env:// reads it


def test_under_torchruns_agent_store_a_rank_reads_no_key_of_another_round(monkeypatch):
    # the agent's store outlives torchrun's restarts, and TORCHELASTIC_RESTART_COUNT is each node's own count:
    # here an earlier round of 3 ranks left rank 0's WORLD_SIZE under the count this node's agent still has
    agent = dist.TCPStore("127.0.0.1", 0, 1, is_master=True, timeout=timedelta(seconds=30))
    agent.set("encoderlab/launch/0/world_size/0", "3")
    env = dict(WORLD_SIZE="2", RANK="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(agent.port))
    env.update(TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_RESTART_COUNT="0")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(rendezvous, "JOIN_TIMEOUT", timedelta(seconds=10))  # bounds the old code's wait
    launch = rendezvous.Launch.from_env()
    zero = rendezvous.Launch(0, 2, "127.0.0.1", agent.port, agent_store=True)  # this round's rank 0 (it meets
    # rank 1 under a token of this round: test_rendezvous_rounds.py)
    meeting = threading.Thread(target=rendezvous.meet, args=(zero, rendezvous.Joining(zero)), daemon=True)
    meeting.start()
    rendezvous.meet(launch, rendezvous.Joining(launch))  # was: "rank 1 ... but rank 0 with WORLD_SIZE=3"
    meeting.join(30)
    # no WORLD_SIZE exchanged under the agent's store
    assert not agent.check(["encoderlab/launch/world_size/1"])


def test_a_rank_that_reached_nothing_on_master_port_is_not_told_a_stranger_holds_it(monkeypatch):
    # an unreachable MASTER_ADDR (no route, an unknown name) is the store's connection error to give, as torch's
    # was: the answer's deadline armed anyway said "what listens on MASTER_PORT ... gave no sign of rank 0"
    def unreachable(*args, **kwargs):
        raise OSError(errno.EHOSTUNREACH, "No route to host")

    monkeypatch.setattr(rendezvous.socket, "create_connection", unreachable)
    monkeypatch.setattr(rendezvous, "TCPStore", lambda *args, **kwargs: object())  # as if it connected later
    monkeypatch.setattr(rendezvous, "ANSWER_S", 0.0)
    launch = rendezvous.Launch(rank=1, world_size=2, host="192.0.2.1", port=29500, agent_store=False)
    joining = rendezvous.Joining(launch)
    rendezvous._store(launch, joining)
    assert joining.overdue() is None
