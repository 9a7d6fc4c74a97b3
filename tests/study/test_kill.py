"""A study killed with SIGKILL at random moments resumes to the same final outputs (issue 8, item 1)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_study import backend, small_spec
from test_runner import outputs
from tests.reliability.killharness import Zygote

from encoderlab.study.runner import run_study

SCRIPT = Path(__file__).with_name("fake_study.py")


def _start(out: Path, jobs: int = 1, sleep: float = 0.05) -> subprocess.Popen:
    path = os.pathsep.join(p for p in (str(SCRIPT.parent), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "FAKE_STUDY_SLEEP": str(sleep), "PYTHONPATH": path}
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(out), str(jobs)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _children(pid: int) -> set[int]:
    """Processes whose parent is `pid`, from /proc."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended while we looked
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_workers_end_with_a_killed_study_and_write_no_marker_after_it(tmp_path):
    out = tmp_path / "study"
    proc = _start(out, jobs=2, sleep=2.0)  # nodes of >= 2 s: workers are mid-node when the study dies
    deadline = time.monotonic() + 60
    while not list(out.glob("nodes/pretrain/*")) and time.monotonic() < deadline:
        time.sleep(0.1)  # the prepare node is done and pretraining nodes have started in the workers
    workers = _children(proc.pid)
    assert proc.poll() is None and len(workers) >= 2, "the study did not start its workers"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    markers = set(out.rglob("node.json"))
    # Waited for, not slept: a worker still importing torch when the study died (a loaded machine takes
    # seconds) ends once it starts, and a worker that lives on must not write a marker meanwhile. Four
    # seconds were too few under load, though no marker was ever written.
    deadline = time.monotonic() + 60
    while [w for w in workers if _alive(w)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)], "a worker outlived the study"
    assert set(out.rglob("node.json")) == markers


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_gives_the_same_outputs(tmp_path):
    clean = tmp_path / "clean"  # the reference, in this process and without the sleeps
    run_study(small_spec(), clean, backend(), progress=False, jobs=1)  # what `run_small` runs
    rng = random.Random(1234)
    killed = tmp_path / "killed"
    study = {"call": "tests.study.fake_study:run_small", "args": [str(killed), 1, 0.05]}
    kills = mid_study = 0
    # Each run is a child forked by the kill harness's zygote, which imported torch and encoderlab
    # once, so the study starts at once. Fresh interpreters spent seconds importing them: on a loaded
    # machine every kill landed before the study had made its folder, and the test tested nothing.
    with Zygote() as z:
        for i in range(10):
            before = len(list(killed.rglob("node.json")))
            kill = {"kind": "delay", "arg": rng.uniform(0.1, 2.0)}  # the study ~8 s (152 nodes of >= 50 ms)
            if z.run([], tmp_path / f"job{i}", kill=kill, **study)["signal"] == signal.SIGKILL:
                kills += 1
                mid_study += len(list(killed.rglob("node.json"))) > before
        done = z.run([], tmp_path / "job_done", **study)
    assert kills >= 5, "the study finished before most kills landed; the test would not test resume"
    assert mid_study >= 3, "most kills landed before the study ran a node; the test would not test resume"
    assert done["returncode"] == 0, done["stderr"]
    assert outputs(killed) == outputs(clean)
