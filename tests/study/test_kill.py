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
from test_runner import outputs

SCRIPT = Path(__file__).with_name("fake_study.py")


def _start(out: Path) -> subprocess.Popen:
    env = {**os.environ, "FAKE_STUDY_SLEEP": "0.05", "PYTHONPATH": str(SCRIPT.parent)}
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_gives_the_same_outputs(tmp_path):
    clean = tmp_path / "clean"
    proc = _start(clean)
    assert proc.wait() == 0, proc.stderr.read().decode()
    rng = random.Random(1234)
    killed = tmp_path / "killed"
    kills = 0
    for _ in range(10):
        proc = _start(killed)
        time.sleep(rng.uniform(0.6, 2.5))  # start-up ~0.5 s; the study ~9 s (152 nodes of >= 50 ms)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 5, "the study finished before most kills landed; the test would not test resume"
    proc = _start(killed)
    assert proc.wait() == 0, proc.stderr.read().decode()
    assert outputs(killed) == outputs(clean)
