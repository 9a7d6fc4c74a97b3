"""A Ctrl-C or SIGTERM during the interpreter's shutdown, after the command, is the interrupted line and 130.

Before, the console script's handlers were gone by then: SIGTERM killed the process (exit -15, no word)
and Ctrl-C printed a KeyboardInterrupt traceback from the `atexit` hook it cut short, exiting with the
command's own code. Here the command registers a hook as torch's or multiprocessing's teardown would,
and the hook receives the signal(s); the process runs `main()` as the console script does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

LINE = "encoderlab: interrupted; completed work is kept (rerun to resume)"
SCRIPT = """
import atexit, os, signal, sys, time
from encoderlab import cli

def late(signum, times):
    for _ in range(times):
        os.kill(os.getpid(), signum)
        time.sleep(0.2)
    print("teardown finished", flush=True)  # the shutdown's cleanup ran to its end

SIGNUM, TIMES = int(sys.argv[1]), int(sys.argv[2])

def command():
    print("done", flush=True)
    atexit.register(late, SIGNUM, TIMES)

cli.COMMANDS["late"] = "__main__:command"
sys.argv = ["encoderlab", "late"]
cli.main()
"""


@pytest.mark.parametrize("times", [1, 2])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_shutdown_gives_the_interrupted_line_and_130(signum, times):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    res = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(int(signum)), str(times)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 130, (res.returncode, res.stderr)
    assert res.stderr.strip() == LINE  # no traceback
    # One signal lets the cleanup finish; a second one stops a shutdown that hangs at once.
    assert res.stdout.split() == (["done", "teardown", "finished"] if times == 1 else ["done"])
