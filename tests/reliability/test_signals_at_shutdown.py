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
import time

import pytest
from tests.reliability.killharness import Zygote

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


FINISHED_RUN_SCRIPT = """
import os, sys, time
from pathlib import Path
from encoderlab import cli
from encoderlab.train.cli import pretrain_command

SIGNUM, TIMES, CONFIG, OUT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]

def command():
    pretrain_command(config=Path(CONFIG), out=OUT)  # trains, writes final/, prints its summary
    for _ in range(TIMES):  # the signals land after the summary, before the command returns
        os.kill(os.getpid(), SIGNUM)
        time.sleep(0.2)
    print("returned", flush=True)

cli.COMMANDS["late"] = "__main__:command"
sys.argv = ["encoderlab", "late"]
cli.main()
"""


@pytest.fixture(scope="module")
def trainer_zygote():
    """A process that imported torch, transformers (a synthetic run's tokenizer) and the pretrain command once;
    each case below is a child forked from it that runs its script as `python -c` does and ends through the
    interpreter's shutdown (killharness's "script" jobs): a fresh interpreter per case spent most of its
    seconds importing them."""
    with Zygote(
        imports=("transformers", "encoderlab.train.cli"), env={"PYTHONPATH": os.pathsep.join(sys.path)}
    ) as z:
        yield z


def _run_script(zygote: Zygote, script: str, args: list[str], job_dir) -> subprocess.CompletedProcess:
    """`python -c script *args`, forked from `zygote`, as `subprocess.run` answers it."""
    done = zygote.run([], job_dir, script=script, args=args)
    stdout = (job_dir / "stdout").read_text()
    return subprocess.CompletedProcess(args, done["returncode"], stdout, done["stderr"])


@pytest.mark.parametrize(
    ("signum", "times"), [(signal.SIGINT, 1), (signal.SIGTERM, 1), (signal.SIGTERM, 2)]
)  # each signal's note; a second one is one handler for both signals (`interrupts._note_late`)
def test_a_signal_after_the_runs_summary_is_a_note_not_an_interruption(
    tmp_path, trainer_zygote, signum, times
):
    """A finished `pretrain` (final/ written, its summary printed) that got a Ctrl-C or SIGTERM before it
    returned said "interrupted" and exited 130, sending the user to resume a complete run. Its result is final
    once its run returned, final/ written (`interrupts.work_complete`): one signal is now the note and exit 0, the command
    running to its end; a second one still stops it as Ctrl-C does. Each case trains in its own process (forked
    from `trainer_zygote`): SIGINT twice would run SIGTERM twice's code again, so it is not run."""
    from tests.reliability.hostile_world import TINY_RUN

    (tmp_path / "tiny.yaml").write_text(TINY_RUN)
    args = [str(int(signum)), str(times), str(tmp_path / "tiny.yaml"), str(tmp_path / "run")]
    res = _run_script(trainer_zygote, FINISHED_RUN_SCRIPT, args, tmp_path / "job")
    finished = f"encoderlab: note: {signal.Signals(signum).name} arrived after the command had finished; its work is complete"
    assert "Traceback" not in res.stderr, res.stderr
    assert (res.returncode, res.stderr.strip().splitlines()[-1]) == (
        (0, finished) if times == 1 else (130, LINE)
    )
    assert f"final model: {tmp_path / 'run' / 'final'}" in res.stdout.splitlines()
    assert ("returned" in res.stdout.split()) == (times == 1)  # one signal: the command ran to its end
    assert (tmp_path / "run" / "final" / "config.json").is_file()


STUDY_LIKE_SCRIPT = """
import dataclasses, os, sys, time
from encoderlab import cli
from encoderlab.config import load_yaml
from encoderlab.train import pretrain
from encoderlab.train.config import RunConfig

CONFIG, OUT = sys.argv[1], sys.argv[2]

def command():
    pretrain(dataclasses.replace(load_yaml(RunConfig, CONFIG), out=OUT))  # one node of a longer command
    print("trained", flush=True)
    os.kill(os.getpid(), 15)  # the longer command's work goes on: this must stop it
    time.sleep(2)
    print("returned", flush=True)

cli.COMMANDS["late"] = "__main__:command"
sys.argv = ["encoderlab", "late"]
cli.main()
"""


def test_a_signal_after_a_run_inside_a_longer_command_still_interrupts_it(tmp_path, trainer_zygote):
    """A study (--jobs 1) runs its pretrain nodes through `train.pretrain` in its own process. When the trainer
    itself marked the work complete, a Ctrl-C or SIGTERM after the first node was only noted: the study ran on
    and ended with "its work is complete" and 0. Only `pretrain_command` marks it: the longer command stops."""
    from tests.reliability.hostile_world import TINY_RUN

    (tmp_path / "tiny.yaml").write_text(TINY_RUN)
    args = [str(tmp_path / "tiny.yaml"), str(tmp_path / "run")]
    res = _run_script(trainer_zygote, STUDY_LIKE_SCRIPT, args, tmp_path / "job")
    assert "trained" in res.stdout.split(), res.stderr
    assert (res.returncode, res.stderr.strip().splitlines()[-1]) == (130, LINE)
    assert "returned" not in res.stdout.split()


def complete_then_signalled() -> None:
    from encoderlab.interrupts import work_complete

    work_complete()
    os.kill(os.getpid(), signal.SIGTERM)  # ours (`sigterm_as_interrupt`): raised in this process, not deadly
    time.sleep(5)  # the signal ends the sleep


def test_an_in_process_caller_keeps_its_handlers_after_work_complete(monkeypatch, capsys):
    """`work_complete` takes the signals only for the console script (`interrupts_in_shutdown`): called
    through `cli.main(argv)` (a test, a notebook), SIGTERM still interrupts and the caller's handler is back."""
    from encoderlab import cli

    monkeypatch.setitem(cli.COMMANDS, "probe", f"{__name__}:complete_then_signalled")
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    with pytest.raises(SystemExit) as done:
        cli.main(["probe"])
    assert done.value.code == 130 and capsys.readouterr().err.strip() == LINE
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_work_complete_after_the_entry_points_block_leaves_a_later_callers_handlers(monkeypatch):
    """`interrupts_in_shutdown` armed `work_complete` for its command and never disarmed it: any command run
    after it in the same process (tests running several commands, a notebook's `cli.main(argv)`) had its
    SIGINT and SIGTERM taken by its own `work_complete`, only noted from then on, as an in-process caller's
    handlers must never be."""
    from encoderlab import interrupts

    monkeypatch.setattr(interrupts.atexit, "register", lambda *args: None)  # no hook in pytest's process
    monkeypatch.setattr(interrupts, "_ended", [])
    signals = (signal.SIGINT, signal.SIGTERM)
    before = [signal.getsignal(s) for s in signals]
    try:
        with interrupts.interrupts_in_shutdown(lambda: None):
            pass  # the console script's command
        for signum, handler in zip(signals, before):  # a later in-process caller's handlers
            signal.signal(signum, handler)
        interrupts.work_complete()  # that caller's command completes
        assert [signal.getsignal(s) for s in signals] == before
    finally:
        for signum, handler in zip(signals, before):
            signal.signal(signum, handler)


def test_the_process_ends_with_the_status_of_its_last_command(monkeypatch):
    """Each command run through the entry point's block appended its status to one list that the exit hook reads
    whole: after a refused command (2) and one that completed, a process ended with 2, and a signal in its
    shutdown said "interrupted" and 130 of the completed one (its check is for exactly one status, 0)."""
    from encoderlab import interrupts

    class Exited(Exception):
        pass

    def exit_with(code):
        raise Exited(code)

    monkeypatch.setattr(interrupts.atexit, "register", lambda *args: None)  # no hook in pytest's process
    monkeypatch.setattr(interrupts, "_ended", [])
    monkeypatch.setattr(interrupts.os, "_exit", exit_with)
    signals = (signal.SIGINT, signal.SIGTERM)
    before = [signal.getsignal(s) for s in signals]
    try:
        with pytest.raises(SystemExit), interrupts.interrupts_in_shutdown(lambda: None):
            sys.exit(2)  # a refused command
        with interrupts.interrupts_in_shutdown(lambda: None):
            pass  # then one that completed
        with pytest.raises(Exited) as ended:
            interrupts._exit_if_interrupted(lambda: None, True)  # the hook, the last of all
        assert ended.value.args == (0,)
    finally:
        for signum, handler in zip(signals, before):
            signal.signal(signum, handler)


def test_a_later_command_through_the_entry_point_is_interrupted_by_ctrl_c(monkeypatch):
    """The first command's block ended by leaving SIGINT and SIGTERM only noted (for the shutdown); a second
    command run through the entry point in the same process kept those handlers, so a Ctrl-C while it ran was
    only noted: the command ran on, and the process then said the signal came after it had finished."""
    from encoderlab import interrupts

    monkeypatch.setattr(interrupts.atexit, "register", lambda *args: None)  # no hook in pytest's process
    for name in ("_ended", "_late", "_found"):  # this process's record, kept apart from the test's
        monkeypatch.setattr(interrupts, name, [], raising=False)
    signals = (signal.SIGINT, signal.SIGTERM)
    before = [signal.getsignal(s) for s in signals]
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the console script's
        with interrupts.interrupts_in_shutdown(lambda: None):
            pass  # the first command
        with pytest.raises(KeyboardInterrupt), interrupts.interrupts_in_shutdown(lambda: None):
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C during the second command
            time.sleep(5)  # the signal ends the sleep
        assert interrupts._late == []
    finally:
        for signum, handler in zip(signals, before):
            signal.signal(signum, handler)
