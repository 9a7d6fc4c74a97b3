"""A Ctrl-C or SIGTERM during the interpreter's shutdown, after a command that completed, is a note that it had
finished and exit 0 (a second one, stopping a shutdown that hangs, the interrupted line and 130).

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
def test_a_signal_during_shutdown_says_the_command_had_finished_or_was_interrupted(signum, times):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    res = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(int(signum)), str(times)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    # One signal lets the cleanup finish, after which the command's work is complete: exit 0 and a note (it
    # was 130 and the interrupted line, "rerun to resume" a run that had finished); a second one stops a
    # shutdown that hangs at once, its cleanup cut short: interrupted.
    finished = f"encoderlab: note: {signal.Signals(signum).name} arrived after the command had finished; its work is complete"
    assert (res.returncode, res.stderr.strip()) == (
        (0, finished) if times == 1 else (130, LINE)
    )  # no traceback
    assert res.stdout.split() == (["done", "teardown", "finished"] if times == 1 else ["done"])


TEARDOWN_SCRIPT = """
import os, signal, sys
from encoderlab import cli
from encoderlab.errors import UserError

class KilledInTeardown:
    def __del__(self):  # runs as the interpreter tears __main__ down, after every atexit hook
        print("torn down", flush=True)
        os.kill(os.getpid(), signal.SIGTERM)

held, HOW = KilledInTeardown(), sys.argv[1]

def command():
    print("done", flush=True)
    if HOW == "refused":
        raise UserError("refused here")

cli.COMMANDS["late"] = "__main__:command"
sys.argv = ["encoderlab", "late"]
cli.main()
"""


@pytest.mark.parametrize(("how", "code"), [("finished", 0), ("refused", 2)])
def test_a_finished_command_ends_without_a_teardown_a_signal_could_kill(how, code):
    """After the last `atexit` hook CPython restored the default handlers and tore the modules down (about a
    second once torch is loaded), and a SIGTERM then ended a finished run with -15 and no line. The command's
    own status now ends the process at its last hook: here the teardown that sends the signal never runs."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    res = subprocess.run(
        [sys.executable, "-c", TEARDOWN_SCRIPT, how], capture_output=True, text=True, env=env, timeout=120
    )
    assert (res.returncode, res.stdout.split()) == (code, ["done"]), res.stderr
    assert res.stderr.strip() == ("encoderlab: error: refused here" if how == "refused" else "")
