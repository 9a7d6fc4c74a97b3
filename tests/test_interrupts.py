"""`interrupts.end_with_parent`: a child ends when its parent is killed outright, whatever it is doing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

CHILD = """
import re, sys
from pathlib import Path
from encoderlab.interrupts import end_with_parent
end_with_parent(int(sys.argv[1]))
Path(sys.argv[2]).write_text("ready")
re.match(r"(a+)+$", "a" * 64 + "b")  # backtracks for ages inside one C call that holds the GIL
"""

PARENT = """
import subprocess, sys, os, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(os.getpid()), sys.argv[2]])
print(child.pid, flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"  # ended; whoever adopted it has not reaped it yet


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_child_ends_with_its_killed_parent_even_while_it_holds_the_gil(tmp_path):
    # was: a thread polled the parent's pid every 0.5 s, and a worker busy in a C call holding the GIL
    # (or starved on a loaded machine) outlived a killed study, free to finish its node and write into
    # the folder the resumed study was running it in again
    ready = tmp_path / "ready"
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PARENT), textwrap.dedent(CHILD), str(ready)],
        stdout=subprocess.PIPE,
        text=True,
    )
    child = int(parent.stdout.readline())
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), "the child did not start"
        time.sleep(0.5)  # inside its regular expression
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 30  # a bound for a loaded machine; it ends at once
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(child), "the child outlived its killed parent"
    finally:
        if not _gone(child):
            os.kill(child, signal.SIGKILL)
