"""A refused `pretrain` beside a held run lock leaves nothing behind and changes nothing (the reliability audit of
2026-12-06, after the run lock became a lease).

The lock's mtime is its holder's heartbeat (`locks.Lease`): a refused command that touched it would keep a dead
holder's lease alive, so the whole observable state is compared, mtimes included (`treestate.world_state`: the run,
its parent, the working folder, $ENCODERLAB_HOME and the Hugging Face caches). Judging another host's lease creates
a clock probe beside the lock (`locks._fs_now`); a judge killed between creating and removing it left the probe for
good: `folder_lock` removed only its own kind of leftover (`LOCK.PID.tmp`), so `.lock.clock-PID-TID.tmp` stayed in
the run folder through every later run. The next command that takes the lock now removes a dead judge's probe too.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state
from tests.train.helpers import metrics, plant_lock, tiny_run

from encoderlab.config import save_yaml
from encoderlab.locks import is_lock_file
from encoderlab.train import pretrain
from encoderlab.train.runfolder import LOCK


def _run_and_config(tmp_path: Path) -> tuple[Path, Path]:
    cfg = tiny_run(tmp_path / "run")
    save_yaml(cfg, tmp_path / "run.yaml")
    return pretrain(cfg, until_step=2), tmp_path / "run.yaml"


@pytest.mark.parametrize(
    "host,pid",
    [("another-node", 4242), (socket.gethostname(), os.getppid())],
    ids=["another-node", "this-host"],
)
def test_a_refused_resume_or_second_launch_leaves_the_holders_lock_and_everything_else_as_it_was(
    tmp_path, capsys, monkeypatch, host, pid
):
    run, config = _run_and_config(tmp_path)
    plant_lock(
        run, host, pid, age_s=60
    )  # a live holder: its heartbeat within the lease, or its pid alive here
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    for resume in (["--resume"], []):  # a resume, and a second launch of the same command
        before = world_state(tmp_path)
        code, err = cli(["pretrain", "--config", config, "--out", run, *resume], capsys)
        assert_one_line(code, err, rf"{run} is in use by pretrain \(pid {pid} on {host} since ")
        assert_unchanged(before)  # the lock's bytes and mtime (its lease) included


def _judged_by_a_process_killed_mid_probe(lock: Path) -> int:
    """The pid of a process that judged `lock`'s lease and was killed between creating its clock probe and
    removing it (as SIGKILL would end it: no `finally` runs)."""
    killed = (
        "import os, pathlib, sys\n"
        "from encoderlab import locks\n"
        "pathlib.Path.unlink = lambda *a, **k: os._exit(9)\n"
        "locks._fs_now(pathlib.Path(sys.argv[1]))\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", killed, str(lock)], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    )
    assert child.wait() == 9
    return child.pid


def _left_beside(lock: Path) -> list[str]:
    return sorted(p.name for p in lock.parent.iterdir() if is_lock_file(p.name, lock.name) and p != lock)


def test_a_clock_probe_left_by_a_killed_judge_is_removed_by_the_next_run_that_takes_the_lock(tmp_path):
    cfg = tiny_run(tmp_path / "run")
    run = pretrain(cfg, until_step=2)
    lock = plant_lock(run, "another-node", 4242, age_s=60)
    dead = _judged_by_a_process_killed_mid_probe(lock)
    left = _left_beside(lock)
    assert len(left) == 1 and f"-{dead}-" in left[0], left  # its probe, named as the lock's temporary files
    os.utime(lock, (time.time() - 600, time.time() - 600))  # the holder has since died: its lease ran out
    live = lock.with_name(f"{LOCK}.clock-{os.getppid()}-1.tmp")  # a judge still probing: not for us to remove
    live.write_bytes(b"")
    pretrain(cfg, resume=True)  # takes the dead holder's lock over
    assert [r["step"] for r in metrics(run)][-1] == 6
    assert _left_beside(lock) == [live.name]  # was: the killed judge's probe as well, for good
