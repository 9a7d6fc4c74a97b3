"""The run lock as a lease (found by the launch review of 2026-12-06).

A rank 0 killed outright (SIGKILL, the OOM killer) leaves `RUN/.lock`. Restarted on the same node, it takes the
lock over (the pid is gone); restarted on another node (a requeued job placed elsewhere) it could not tell a dead
holder from a live one and refused, until someone deleted the lock by hand. The live run now refreshes the lock's
mtime every `RUN_LEASE.refresh_s` from a thread (`locks._heartbeat`) and records `lease_s` in it; a lock of
another host older than that is taken over from any node, and a younger one is refused naming its host, pid and
when it was last refreshed. "Another node" is a lock naming another host; its age is set with `os.utime`, as
the holder's refreshes and the file system's clock would have stamped it.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time

import pytest
from tests.reliability.treestate import assert_unchanged, world_state
from tests.train.helpers import metrics, plant_lock, tiny_run

import encoderlab.train.trainer as trainer_module
from encoderlab.errors import UserError
from encoderlab.locks import RUN_LEASE, Lease, folder_lock, read_lock, refresh
from encoderlab.train import pretrain
from encoderlab.train.runfolder import LOCK


def test_another_nodes_lock_whose_lease_ran_out_is_taken_over_by_a_resume(tmp_path):
    cfg = tiny_run(tmp_path / "run")
    run = pretrain(cfg, until_step=2)
    plant_lock(run, "another-node", 4242, age_s=RUN_LEASE.lease_s + 60)
    pretrain(cfg, resume=True)  # was: refused, "delete RUN/.lock if that process is gone"
    assert [r["step"] for r in metrics(run)] == list(range(1, 7))
    assert not (run / LOCK).exists()


def test_another_nodes_lock_within_its_lease_is_refused_naming_host_pid_and_the_lease(tmp_path, monkeypatch):
    cfg = tiny_run(tmp_path / "run")
    run = pretrain(cfg, until_step=2)
    lock = plant_lock(run, "another-node", 4242, age_s=60)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    before = world_state(tmp_path)
    with pytest.raises(UserError) as refused:
        pretrain(cfg, resume=True)
    assert_unchanged(before)  # the lock's mtime (the lease) and its clock probe included
    said = (
        re.escape(
            f"{run} is in use by pretrain (pid 4242 on another-node since 2026-12-06T20:00:00Z; its lock refreshed "
        )
        + r"\d+"
        + re.escape(
            " s ago); wait for it, use another --out, or, if that process is gone, rerun once its lock is 300 s old "
            "(it is then taken over)"
        )
    )
    assert re.fullmatch(said, str(refused.value)), str(refused.value)
    assert read_lock(lock)["pid"] == 4242  # left as it was


def test_a_live_holder_of_this_host_is_judged_by_its_pid_however_old_its_heartbeat(tmp_path):
    cfg = tiny_run(tmp_path / "run")
    run = pretrain(cfg, until_step=2)
    plant_lock(run, socket.gethostname(), os.getppid(), age_s=RUN_LEASE.lease_s * 10)  # alive, stuck
    with pytest.raises(UserError, match="is in use by pretrain"):
        pretrain(cfg, resume=True)


def test_the_run_lock_records_its_lease_while_the_run_trains(tmp_path, monkeypatch):
    seen: list[dict | None] = []
    train = trainer_module.Trainer._train

    def reading(self, stop_at):
        seen.append(read_lock(self.run_dir / LOCK))
        return train(self, stop_at)

    monkeypatch.setattr(trainer_module.Trainer, "_train", reading)
    pretrain(tiny_run(tmp_path / "run"), until_step=1)
    assert seen[0]["lease_s"] == RUN_LEASE.lease_s  # was: no lease, nothing another node could judge
    assert seen[0]["host"] == socket.gethostname() and seen[0]["pid"] == os.getpid()


def test_the_heartbeat_refreshes_the_lock_while_it_is_held(tmp_path):
    lock = tmp_path / ".lock"
    with folder_lock(lock, "pretrain", lease=Lease(refresh_s=0.01, lease_s=1.0)):
        os.utime(lock, (0, 0))  # as if its last refresh were long ago
        deadline = time.monotonic() + 120  # generous: the beat is due in 0.01 s; a loaded machine may wait
        while lock.stat().st_mtime == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lock.stat().st_mtime > 0
    assert not lock.exists()


def test_a_refresh_leaves_alone_a_lock_another_process_took_over(tmp_path):
    lock = tmp_path / ".lock"
    lock.write_text(json.dumps({"pid": 4242, "host": "another-node", "what": "pretrain", "lease_s": 300.0}))
    os.utime(lock, (5, 5))
    me = {"pid": os.getpid(), "host": socket.gethostname(), "what": "pretrain"}
    assert refresh(lock, me) is False
    assert lock.stat().st_mtime == 5
    lock.write_text(json.dumps({**me, "lease_s": 300.0}))
    os.utime(lock, (5, 5))
    assert refresh(lock, me) is True and lock.stat().st_mtime > 5


def test_a_lock_of_bytes_that_are_no_text_is_a_holder_unknown_not_a_traceback(tmp_path):
    lock = tmp_path / ".lock"
    lock.write_bytes(
        b"\xff\xfe{"
    )  # no UTF-8: read_lock raised UnicodeDecodeError, which killed the heartbeat
    assert read_lock(lock) is None
    me = {"pid": os.getpid(), "host": socket.gethostname(), "what": "pretrain"}
    assert refresh(lock, me) is False  # not this process's: the beat stops, touching nothing
    held = r"is in use by another process; .* or delete .*\.lock if that process"
    with pytest.raises(UserError, match=held), folder_lock(lock, "pretrain"):
        pass
    assert lock.read_bytes() == b"\xff\xfe{"


def test_the_heartbeat_thread_ends_with_the_lock_when_the_block_fails(tmp_path):
    lock = tmp_path / ".lock"
    with (
        pytest.raises(KeyboardInterrupt),
        folder_lock(lock, "pretrain", lease=Lease(refresh_s=0.01, lease_s=1.0)),
    ):
        assert [t for t in threading.enumerate() if t.name == "encoderlab-lock-heartbeat"][0].daemon
        raise KeyboardInterrupt  # as Ctrl-C mid-step: the thread is stopped and joined, the lock removed
    assert not [t for t in threading.enumerate() if t.name == "encoderlab-lock-heartbeat"]
    assert not lock.exists()
