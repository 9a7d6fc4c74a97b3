"""Locks between two nodes that share a host name (containers given one `--hostname`; the cluster review of
2026-12-07).

A lock, and the temporary files beside it, named their writer's host by its name alone, so a node judged another
node of the same name by a pid of its own: a resume on node B took over the lock of a run still training on node A
(A's rank 0 pid is not alive on B) and both trained into one run folder; and B removed A's temporary file before
A linked it. The lock now records `host_id`, a hash of the host name and the machine's id (`locks.machine_id`:
/etc/machine-id, or the kernel's boot_id), and the files carry it; a lock or file without it (older encoderlab)
is judged by host name as before. The machine's id is injected here (`locks.MACHINE_FILES`), the other node's
rank 0 is a pid not alive here, as a pid of another node mostly is.
"""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.train.helpers import metrics, plant_lock, tiny_run

from encoderlab import locks
from encoderlab.errors import UserError
from encoderlab.train import pretrain
from encoderlab.train.runfolder import LOCK


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """Set this process's machine id (`on("machine-a")`), as read from an injected /etc/machine-id."""
    mark = tmp_path / "machine-id"
    # raising=False: the test must run (and fail) on a `locks` that reads no machine id
    monkeypatch.setattr(locks, "MACHINE_FILES", (mark,), raising=False)

    def on(name: str) -> str:
        mark.write_text(f"{name}\n")
        return locks.host_id()

    return on


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_live_run_on_another_node_of_the_same_name_is_refused_not_taken_over(tmp_path, machine):
    cfg = tiny_run(tmp_path / "run")
    run = pretrain(cfg, until_step=2)
    node_a, pid = (
        machine("machine-a"),
        _dead_pid(),
    )  # node A's rank 0: its lease fresh, its pid not alive on B
    lock = plant_lock(run, socket.gethostname(), pid, age_s=60, host_id=node_a)
    machine("machine-b")
    with pytest.raises(
        UserError, match=rf"\(pid {pid} on {socket.gethostname()} since .*; its lock refreshed "
    ):
        pretrain(cfg, resume=True)  # was: taken over (pid gone "here"), two runs training into one folder
    assert locks.read_lock(lock)["pid"] == pid and len(metrics(run)) == 2


@pytest.mark.parametrize("recorded", [{"host_id": "this"}, {}], ids=["this-machine", "older-lock"])
def test_a_dead_holder_of_this_node_is_still_taken_over_at_once(tmp_path, machine, recorded):
    cfg = tiny_run(tmp_path / "run")
    run = pretrain(cfg, until_step=2)
    here = machine("machine-a")
    plant_lock(run, socket.gethostname(), _dead_pid(), age_s=60, **{k: here for k in recorded})
    pretrain(cfg, resume=True)  # by pid: a lock without host_id, by host name as before
    assert [r["step"] for r in metrics(run)] == list(range(1, 7))


def _left(lock: Path) -> list[str]:
    return sorted(
        p.name for p in lock.parent.iterdir() if locks.is_lock_file(p.name, lock.name) and p != lock
    )


def test_a_temporary_file_of_another_node_of_the_same_name_is_left(tmp_path, machine):
    lock, pid = tmp_path / LOCK, _dead_pid()
    node_b = lock.with_name(f"{LOCK}.{pid}.{machine('machine-b')}.tmp")  # B wrote it, about to link it
    machine("machine-a")
    named_by_host_alone = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]  # older encoderlab's
    older = lock.with_name(f"{LOCK}.{pid}.{named_by_host_alone}.tmp")
    for leftover in (node_b, older):
        leftover.write_bytes(b"")
    with locks.folder_lock(lock, "pretrain on node A"):
        assert locks.read_lock(lock)["host_id"] == locks.host_id()
    assert _left(lock) == [node_b.name]  # was: removed (B's pid not alive here); the older name judged by pid


def test_the_machine_id_is_the_first_readable_mark_and_none_leaves_the_host_name_alone(tmp_path, monkeypatch):
    machine_id, boot_id = tmp_path / "machine-id", tmp_path / "boot_id"
    monkeypatch.setattr(locks, "MACHINE_FILES", (machine_id, boot_id))
    assert locks.machine_id() == "" and locks.host_id() == locks.host_id(machine="")  # older encoderlab's id
    boot_id.write_text("b1\n")
    machine_id.write_text("")  # empty, as some container images ship it
    assert locks.machine_id() == "b1"
    machine_id.write_text("m1\n")
    assert locks.machine_id() == "m1" and locks.host_id() != locks.host_id(machine="")
