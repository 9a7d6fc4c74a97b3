"""A rank that dies mid-step under gloo (found by the launch review of 2026-12-06).

Rank 1 ends itself with `os._exit` (as SIGKILL or the OOM killer would end it: no cleanup, its sockets closed by
the kernel) in step 4, after the step-3 checkpoint, either as the step starts (rank 0 then waits in the targets'
all-reduce) or in its last micro-batch's forward (rank 0 waits in DDP's backward all-reduce, whose error gloo's
comm hook wraps). Rank 0 printed gloo's "Connection reset by peer" as a traceback; it now prints one line naming the rank
that stopped and the `--resume` that continues, and exits 1 (`train/peerloss.py`). Other failures keep their
traceback (`test_other_failures_are_not_taken_for_a_peers_death`).
The run is then resumable as the line says: no lock nor its temporary files left, the step-3 checkpoint the
last complete one, and the same two ranks with `--resume` train on to the end.

The ranks are started as `start_ranks` starts them (tests/train/ranks.py), but without its stop: that kills
every other rank as soon as one exits non-zero, which here is rank 1 by design.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import socket
from pathlib import Path

import pytest
import torch
from tests.train.helpers import RANKS_TIMEOUT_S, free_ports, metrics, tiny_run
from tests.train.ranks import run_ranks
from tests.train.test_distributed import TWO

from encoderlab.config import save_yaml
from encoderlab.locks import is_lock_file
from encoderlab.model.runlayout import complete_checkpoints
from encoderlab.train.config import ModelSpec
from encoderlab.train.distributed import World
from encoderlab.train.peerloss import lost_peer
from encoderlab.train.runfolder import LOCK

pytestmark = pytest.mark.distributed

DIES_AT = 3  # 0-based: rank 1 dies in step 4, after the checkpoint ending `tiny_run`'s CLM phase


def _rank(rank: int, root: str, port: int, where: str) -> None:
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    torch.set_num_threads(1)
    import encoderlab.train.step as step
    from encoderlab.cli import main

    run_step, batch_loss, calls = step.TrainStep.step, step.batch_loss, []

    def dying_as_a_step_starts(self, at):
        if rank == 1 and at == DIES_AT:
            os._exit(9)
        return run_step(self, at)

    def dying_in_the_last_forward(*args):  # 2 micro-batches a step on each rank (TWO)
        calls.append(None)
        if rank == 1 and len(calls) == 2 * DIES_AT + 2:
            os._exit(9)
        return batch_loss(*args)

    if where == "step":
        step.TrainStep.step = dying_as_a_step_starts
    elif where == "backward":
        step.batch_loss = dying_in_the_last_forward
    resume = ["--resume"] if where == "resume" else []
    err, code = io.StringIO(), 0
    with contextlib.redirect_stderr(err):
        try:
            main(
                [
                    "pretrain",
                    "--config",
                    str(Path(root) / "two.yaml"),
                    "--out",
                    str(Path(root) / "run"),
                    *resume,
                ]
            )
        except SystemExit as exc:
            code = exc.code
        except BaseException as exc:  # what the old code did (gloo's RuntimeError)
            code = f"{type(exc).__name__}: {exc}"
    (Path(root) / f"{rank}.json").write_text(json.dumps({"code": code, "stderr": err.getvalue()}))


def _two_ranks(tmp_path: Path, where: str) -> list[int]:
    """The exit codes of two ranks of `two.yaml` into `tmp_path/run`, rank 1 dying `where` (or none: "resume")."""
    codes = run_ranks(
        _rank, (str(tmp_path), free_ports(1)[0], where), 2, RANKS_TIMEOUT_S, stop_on_failure=False
    )
    assert codes is not None, f"ranks still running after {RANKS_TIMEOUT_S} s: a hang"
    return codes


@pytest.mark.parametrize("where", ["step", "backward"])
def test_a_rank_that_dies_mid_step_is_one_line_on_rank_zero_naming_it_and_the_resume(tmp_path, where):
    # the 2-layer `nano` size: what is trained does not matter here, only that a rank dies mid-step
    save_yaml(tiny_run(tmp_path / "unused", layout=TWO, model=ModelSpec(size="nano")), tmp_path / "two.yaml")
    assert _two_ranks(tmp_path, where) == [0, 9]  # rank 0 recorded its outcome; rank 1 died
    said = json.loads((tmp_path / "0.json").read_text())
    run = tmp_path / "run"
    assert said["code"] == 1, said["code"]  # was: "RuntimeError: [.../pair.cc:537] Read error ... by peer"
    # gloo's words depend on when the peer's socket closed: reset (mid-read) or closed (between reads)
    line = said["stderr"].splitlines()[-1]
    assert re.fullmatch(
        re.escape("encoderlab: error: rank 1 stopped mid-run (gloo: Connection ")
        + "(reset|closed)"
        + re.escape(
            f" by peer), so rank 0 on {socket.gethostname()} cannot go on; that rank's own log and torchrun's "
            "summary say why; rerun the same torchrun command with --resume to continue from its last complete "
            f"checkpoint, step 3 ({run / 'checkpoints' / 'step_0000003'})"
        ),
        line,
    ), line
    assert "Traceback" not in said["stderr"]
    # resumable from that checkpoint, as the line says: no lock nor its temporary files left, and the resume ends
    left = sorted(p.name for p in run.iterdir() if is_lock_file(p.name, LOCK))
    assert left == [] and complete_checkpoints(run)[-1] == DIES_AT, left
    assert _two_ranks(tmp_path, "resume") == [0, 0]
    assert [r["step"] for r in metrics(run)] == list(range(1, 7))


def test_other_failures_are_not_taken_for_a_peers_death(tmp_path):
    two = World(rank=0, world_size=2)
    gone = RuntimeError(
        "[../gloo/transport/tcp/pair.cc:537] Read error [10.0.0.2]:4321: Connection reset by peer"
    )
    assert lost_peer(RuntimeError("CUDA out of memory"), two, tmp_path) is None  # a real error: its traceback
    assert lost_peer(ValueError("Connection reset by peer"), two, tmp_path) is None  # not a collective's
    assert lost_peer(gone, World(), tmp_path) is None  # one process: no peer to lose
    # the same words from c10d's store (its DistNetworkError is a RuntimeError), not gloo's transport: under NCCL
    # the line said "gloo: Connection reset by peer" for it
    store = torch.distributed.DistNetworkError(
        "[/pytorch/torch/csrc/distributed/c10d/TCPStore.cpp:98] recvValue: Connection reset by peer"
    )
    assert lost_peer(store, two, tmp_path) is None
    wrapped = RuntimeError(f"Got the following error when running the callback: RuntimeError: {gone}")
    assert str(lost_peer(wrapped, two, tmp_path)).startswith("rank 1 stopped mid-run (gloo: Connection reset")
    many = lost_peer(gone, World(rank=3, world_size=8), None)
    assert str(many).startswith(
        "the rank at 10.0.0.2 stopped mid-run (gloo: Connection reset by peer), so rank 3"
    )
    assert str(many).endswith("(no checkpoint was written yet, so it starts again from step 0)")


def test_a_survivor_says_it_where_the_rank_that_died_was_its_nodes_first(tmp_path, monkeypatch):
    # The line is said once per node, by LOCAL_RANK 0; two ranks on one node whose rank 0 was killed left rank 1
    # (LOCAL_RANK 1) exiting 1 in silence (seen with `_two_ranks` and rank 0 dying as a step starts).
    gone = "[../gloo/transport/tcp/pair.cc:537] Read error [{}]:4321: Connection reset by peer"
    here = RuntimeError(gone.format("127.0.0.1"))
    elsewhere = RuntimeError(gone.format("192.0.2.1"))  # TEST-NET-1: no host's own address
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    said = lost_peer(here, World(rank=1, world_size=2, local_rank=1), tmp_path)
    assert str(said).startswith("rank 0 stopped mid-run") and not said.quiet  # the only rank left: it says it
    monkeypatch.setenv("WORLD_SIZE", "8")
    assert not lost_peer(
        here, World(rank=1, world_size=8, local_rank=1), None
    ).quiet  # maybe its LOCAL_RANK 0
    assert lost_peer(elsewhere, World(rank=1, world_size=8, local_rank=1), None).quiet  # LOCAL_RANK 0 says it
    monkeypatch.setenv("LOCAL_RANK", "2")
    assert lost_peer(here, World(rank=2, world_size=8, local_rank=2), None).quiet
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert not lost_peer(elsewhere, World(rank=0, world_size=8), None).quiet
