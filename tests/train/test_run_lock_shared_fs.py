"""Locks on a file system shared by several nodes (NFS, Lustre: the reliability audit of 2026-12-06).

Before taking a lock, `folder_lock` removes the temporary files left beside it by processes killed while taking
it or judging its holder (`LOCK.PID.tmp`, the clock probe `LOCK.clock-PID-THREAD.tmp`) whose pid is not alive.
It judged every such file by a pid of this host, so two nodes starting at one instant on one run folder removed
each other's file before it was linked into place: the loser failed with a FileNotFoundError traceback instead of
the one-line refusal, and a live judge's clock probe on another node was removed too. The files now name their
writer's host (`locks.host_id`); another host's is removed only once `LEFTOVER_OF_ANOTHER_HOST_S` old.

"Another node" is simulated in this process: `locks` sees another host name and a pid that is not alive here (as
a pid of another node is, mostly), through stand-ins for its `os` and `socket` modules; the race is played at the
seam where the other node has written its temporary file and not yet linked it (`locks.one_at_a_time`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.train.helpers import tiny_run

from encoderlab import locks
from encoderlab.config import save_yaml
from encoderlab.train.runfolder import LOCK


class _Instead:
    """A module as `locks` sees it, with some of its functions replaced."""

    def __init__(self, module, **instead) -> None:
        self._module, self._instead = module, instead

    def __getattr__(self, name: str):
        return self._instead[name] if name in self._instead else getattr(self._module, name)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _as_another_node(mp: pytest.MonkeyPatch, pid: int) -> None:
    def kill(to: int, sig: int) -> None:  # on node B its own pid lives
        if to != pid:
            os.kill(to, sig)

    mp.setattr(locks, "os", _Instead(os, getpid=lambda: pid, kill=kill))
    mp.setattr(locks, "socket", _Instead(socket, gethostname=lambda: "node-b.cluster"))


def _left(lock: Path) -> list[str]:
    return sorted(
        p.name for p in lock.parent.iterdir() if locks.is_lock_file(p.name, lock.name) and p != lock
    )


def test_a_lock_taken_on_this_node_leaves_another_nodes_temporary_file_it_is_about_to_link(
    tmp_path, monkeypatch
):
    lock, dead, real = tmp_path / LOCK, _dead_pid(), locks.one_at_a_time
    seen: dict[str, object] = {}
    node_b = pytest.MonkeyPatch()

    @contextlib.contextmanager
    def meanwhile(folder: Path):
        if "left" not in seen:  # node B wrote its temporary file; this node takes and releases the lock now
            seen["left"] = _left(lock)
            node_b.undo()
            with locks.folder_lock(lock, "pretrain on node A"):
                pass
        with real(folder):
            yield

    monkeypatch.setattr(locks, "one_at_a_time", meanwhile)
    _as_another_node(node_b, dead)
    try:
        with locks.folder_lock(lock, "pretrain on node B"):  # was: FileNotFoundError, its file removed by A
            seen["holder"] = locks.read_lock(lock)
    finally:
        node_b.undo()
    assert len(seen["left"]) == 1 and f".{dead}." in seen["left"][0], seen["left"]
    assert seen["holder"]["pid"] == dead and seen["holder"]["host"] == "node-b.cluster"
    assert _left(lock) == [] and not lock.exists()


def test_another_nodes_live_clock_probe_is_left_and_leftovers_are_removed(tmp_path):
    lock, dead = tmp_path / LOCK, _dead_pid()
    with pytest.MonkeyPatch.context() as node_b:
        _as_another_node(node_b, dead)
        node_b.setattr(Path, "unlink", lambda *a, **k: None)  # node B is still judging: its probe is there
        locks._fs_now(lock)
    probe = _left(lock)
    assert len(probe) == 1 and f"-{dead}-" in probe[0], probe
    old_style = [lock.with_name(f"{LOCK}.{dead}.tmp"), lock.with_name(f"{LOCK}.clock-{dead}-7.tmp")]
    for leftover in old_style:  # named without a host, by an older encoderlab: judged by pid, as before
        leftover.write_bytes(b"")
    with locks.folder_lock(lock, "pretrain"):
        pass
    assert _left(lock) == probe  # was: node B's live probe removed (its pid is not alive here)
    hours_ago = time.time() - 2 * locks.LEFTOVER_OF_ANOTHER_HOST_S
    os.utime(tmp_path / probe[0], (hours_ago, hours_ago))  # node B was killed long ago, mid-probe
    with locks.folder_lock(lock, "pretrain"):
        pass
    assert _left(lock) == []


def test_a_temporary_file_removed_before_it_was_linked_is_written_again(tmp_path, monkeypatch):
    lock, removed = tmp_path / LOCK, []

    def racing(src, dst):
        if not removed:  # an older encoderlab on another node took our pid for a dead one of its own
            removed.append(Path(src).name)
            os.unlink(src)
        return os.link(src, dst)

    monkeypatch.setattr(locks, "os", _Instead(os, link=racing))
    with locks.folder_lock(lock, "pretrain"):  # was: FileNotFoundError traceback
        assert locks.read_lock(lock)["pid"] == os.getpid()
    assert removed and _left(lock) == []


def test_a_run_whose_temporary_file_is_removed_each_time_is_refused_with_one_line(
    tmp_path, capsys, monkeypatch
):
    run = tmp_path / "run"
    save_yaml(tiny_run(run), tmp_path / "run.yaml")

    def always_removed(src, dst):
        os.unlink(src)
        return os.link(src, dst)

    monkeypatch.setattr(locks, "os", _Instead(os, link=always_removed))
    code, err = cli(["pretrain", "--config", tmp_path / "run.yaml", "--out", run], capsys)
    assert_one_line(code, err, rf"{run} is in use by another process; wait for it, use another --out")
    assert not (run / LOCK).exists() and _left(run / LOCK) == []
