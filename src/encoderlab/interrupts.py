"""SIGTERM handled as Ctrl-C: `sigterm_as_interrupt()`.

Batch schedulers stop a job with SIGTERM (SLURM sends it at the time limit, `kill` by default), and
Python's default for SIGTERM is to die on the spot: no cleanup, no message. Inside this context
manager SIGTERM raises KeyboardInterrupt in the main thread instead, so a command stops the way it
does on Ctrl-C: its `finally` blocks run (child processes terminated, temporary files removed) and
the CLI prints "interrupted; completed work is kept (rerun to resume)" (`pretrain`: "rerun with
--resume to continue") with exit code 130. Outside
the main thread (where handlers cannot be installed) it does nothing. `cli.main` runs every command
inside it, so no command needs its own; child processes are spawned (fresh interpreters), so they
keep the default SIGTERM and their parent ends them.

A signal that arrives once the command is over, while the interpreter shuts down (joining threads,
running `atexit` hooks: multiprocessing ending children, torch's and wandb's teardown), met Python's
defaults again: SIGTERM killed the process (exit -15, no line) and Ctrl-C printed a KeyboardInterrupt
traceback from the hook it cut short, and the command's own code came out. The console script therefore
runs its command inside `interrupts_in_shutdown(say)`: leaving it, SIGINT and SIGTERM are only noted,
so the shutdown's cleanup runs to its end. After a command that completed (it returned: a `pretrain` with
its final model, checkpoint and metrics written) the process then says in one note line that the signal
came after the command had finished and exits 0: its work is complete, and the usual "interrupted ...
rerun with --resume to continue" sent the user to a resume with nothing to do. After any other end (a
refusal, an interruption) it says the usual line (`say`) and exits 130, as an interrupted command does.
The same holds from the moment the command's result is final, before it returns: a command calls
`work_complete()` once its result is written atomically (`pretrain`: as its run returns, final model or stop
checkpoint written; `cli` as any command returns), and a signal from there on is noted, not raised, so the rest
of the command (its summary printed) runs and the process ends with the note and 0. Only a command's own last
step calls it, never a library function that a longer command runs too (the trainer: a study runs its pretrain
nodes in its own process, and a call there left Ctrl-C and SIGTERM only noted for the rest of the study). Before, a signal between a
finished run's summary and its return said "interrupted ... rerun with --resume" and exited 130. A second signal
there stops the command as Ctrl-C does (KeyboardInterrupt, its cleanup run), with the interrupted line and 130.
A second signal ends a shutdown that hangs at once, with the interrupted line and 130 (its cleanup was
cut short). In-process callers (tests, notebooks) never enter it: their handlers stay theirs. Its
block disarms `work_complete` as it ends, so a command run after it in the same process keeps its handlers too;
a later block (a process that runs several commands through the entry point) puts back the handlers the first
one found, so Ctrl-C interrupts its command as it did the first. After every
`atexit` hook CPython restores the default handlers (`_PySignal_Fini`) and tears the modules down, which
takes about a second once torch is loaded: a SIGTERM there (2026-12-06, a tiny `pretrain` on CPU, 0.1 to 0.8 s
after its summary) ended a finished run with -15 and no line, its work complete. So the hook, when it is the
last (no hook was registered before it: `atexit._ncallbacks`), ends the process there with the command's own
status (`os._exit`, stdout and stderr flushed): no teardown is left for a signal to land in. What it skips is
the modules' finalizers; every output is closed by then (atomic writes, sinks closed, lock released), and
hooks registered before it (a coverage tool's, from a `.pth` file) keep the teardown as it was. A command
that raised anything but `SystemExit` (a bug's traceback) keeps it too. Nor can a handler choose where it
lands: in a finalizer the command's end runs (the weakref callback of a collected thread pool), its
KeyboardInterrupt is printed by Python as "Exception ignored in ..." and lost, and the command exits 0,
complete. Blocking or ignoring the signals instead would close that window too, but a teardown that hangs
(a collective's destructor) could then be stopped by SIGKILL alone.

A parent killed outright (SIGKILL, the OOM killer, a crash) runs no cleanup, so a child that must not
outlive it calls `end_with_parent()`: on Linux the kernel kills the child the moment its parent dies
(`PR_SET_PDEATHSIG`, no delay and no thread to schedule); elsewhere a daemon thread polls the parent's
pid, ending the child within `every_s` of it. PR_SET_PDEATHSIG fires when the parent *thread* that
started the child ends, so the parent must start such children from a thread that lives as long as it
needs them (the study's scheduling loop does).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises KeyboardInterrupt (see the module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        # a handler put in ours' place inside (`work_complete`'s) stays: the default restored in the
        # console script would let a SIGTERM kill the finished command (exit -15, no line)
        if signal.getsignal(signal.SIGTERM) is _raise_interrupt:
            signal.signal(signal.SIGTERM, previous)


INTERRUPTED = 130
"""The exit code of an interrupted command, Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports it)."""

_late: list[int] = []
"""Signals received during the interpreter's shutdown (`interrupts_in_shutdown`)."""
_ended: list[int] = []
"""The exit status the command ended with (a return: 0; `sys.exit(N)`: N); empty when it raised otherwise."""
_found: list = []
"""SIGINT's and SIGTERM's handlers as the process's first `interrupts_in_shutdown` found them."""
_armed: list[Callable[[], None]] = []
"""The `say` of the entry point's `interrupts_in_shutdown` while its command runs (`work_complete` reads it);
removed as the block ends."""


_outputs: list[Path | None] = []
"""The folders the running command writes into (`writes_into`); None for one not resolved yet."""


def writes_into(folder: Path | str | None) -> None:
    """Name the folder the running command writes its work into (`pretrain`: its run folder; None while
    its config is not resolved), so that an interrupt before it exists says nothing was written
    (`nothing_written`): it said "completed work is kept (rerun with --resume to continue)", and a
    rerun with --resume found no run. A command that names none keeps the usual line."""
    _outputs.append(None if folder in (None, "") else Path(folder))


def nothing_written() -> bool:
    """Whether the running command named its folders (`writes_into`) and none of them exists yet."""
    return bool(_outputs) and not any(p is not None and p.exists() for p in _outputs)


def forget_outputs() -> None:
    """Start a command with no folders named (`cli` runs several in one process: tests, notebooks)."""
    _outputs.clear()


def work_complete() -> None:
    """The command's result is final (written atomically): from here on a SIGINT or SIGTERM is only noted, and
    once the command returns the process says so in a note and exits 0 (see the module docstring). It does
    nothing outside the console script's `interrupts_in_shutdown`: an in-process caller's handlers stay its own."""
    if _armed and threading.current_thread() is threading.main_thread():
        _note_signals(_armed[0], in_command=True)


@contextlib.contextmanager
def interrupts_in_shutdown(say: Callable[[], None]) -> Iterator[None]:
    """For the process's entry point: a SIGINT or SIGTERM after the block (during the interpreter's
    shutdown) ends the process once the shutdown's cleanup ran: exit 0 with a note after a command that
    completed, else `say()` and exit 130 (see the module docstring). Outside the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # registered first, so run after the command's own hooks; the last of all when none was registered
    # before it, and only then may it end the process without the teardown that follows (`_ended`)
    atexit.register(_exit_if_interrupted, say, getattr(atexit, "_ncallbacks", lambda: 1)() == 0)
    _ended.clear()  # an earlier command's status in this process is not this one's (the process ends with ours)
    _restore_found()
    _armed.append(say)
    try:
        yield
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):  # `sys.exit("message")`: not a status to keep
            _ended.append(exc.code or 0)
        raise
    else:
        _ended.append(0)
    finally:
        # the command is over: a `work_complete` after it (another command run in this process: tests,
        # a notebook) is an in-process caller's, whose handlers stay its own; left armed, it took them
        _armed.remove(say)
        _note_signals(say)


def _restore_found() -> None:
    """SIGINT and SIGTERM as the first block found them, and no signal noted: an earlier command's block left
    its noting handlers (`_note_signals`), under which a Ctrl-C while this command ran was only noted (the
    command ran on, and the process then said the signal came after it had finished) and a second one ended
    the process at once, its cleanup skipped. A signal noted between the two commands ended neither."""
    signals = (signal.SIGINT, signal.SIGTERM)
    if not _found:
        _found.extend(signal.getsignal(signum) for signum in signals)
    for signum, handler in zip(signals, _found):
        signal.signal(signum, handler)
    _late.clear()


def _note_signals(say: Callable[[], None], *, in_command: bool = False) -> None:
    """SIGINT and SIGTERM noted from now on (`_note_late`), no longer raised or deadly."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda signum, frame: _note_late(signum, say, in_command))


def _note_late(signum: int, say: Callable[[], None], in_command: bool = False) -> None:
    if _late and in_command:  # a second signal while the command still runs: stop it as Ctrl-C does
        raise KeyboardInterrupt  # (its `finally` blocks run: the lock released, sinks closed)
    if _late:  # a second signal: the shutdown hangs (a thread that never ends); stop it now
        _exit_interrupted(say)
    _late.append(signum)


def _exit_if_interrupted(say: Callable[[], None], last: bool) -> None:
    if _late and _ended == [0]:  # one signal, after a command that completed: the cleanup ran to its end too
        name = signal.Signals(_late[0]).name
        with contextlib.suppress(Exception):
            print(f"encoderlab: note: {name} arrived after the command had finished; its work is complete",
                  file=sys.stderr)  # fmt: skip
        _flushed()
        os._exit(0)
    if _late:
        _exit_interrupted(say)
    if last and _ended:  # the command's own exit status, once every hook ran: no teardown left to cut
        _flushed()
        os._exit(_ended[0])


def _exit_interrupted(say: Callable[[], None]) -> None:
    """`say()`, then exit 130 at once: an `atexit` hook cannot change the exit code any other way."""
    with contextlib.suppress(Exception):  # a signal that cut a write to stderr short: the exit still comes
        say()
    _flushed()
    os._exit(INTERRUPTED)


def _flushed() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # closed, or a reader gone: nothing left to say there
            stream.flush()


def end_with_parent(parent_pid: int, every_s: float = 0.5) -> None:
    """End this process as soon as `parent_pid`, its parent, is gone (see the module docstring)."""
    if sys.platform.startswith("linux") and _kernel_kills_on_parent_death():
        if os.getppid() != parent_pid:  # the parent died before the kernel was told
            os._exit(1)
        return
    threading.Thread(target=_poll_parent, args=(parent_pid, every_s), daemon=True).start()


def _kernel_kills_on_parent_death() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):  # no libc, or no prctl in it
        return False


def _poll_parent(parent_pid: int, every_s: float) -> None:
    while os.getppid() == parent_pid:
        time.sleep(every_s)
    os._exit(1)
