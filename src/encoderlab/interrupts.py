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
so the shutdown's cleanup runs to its end, and the process then says the usual line (`say`) and exits
130, as an interrupted command does. A second signal ends a shutdown that hangs at once, with the same
line and code. In-process callers (tests, notebooks) never enter it: their handlers stay theirs. A signal
after every `atexit` hook still meets Python's defaults: CPython restores them (`_PySignal_Fini`) before it
tears the modules down, which takes about a second once torch is loaded (2026-12-06, a tiny `pretrain` on
CPU: SIGTERM 0.1 to 0.8 s after its summary ended it with -15 and no line, its work complete). Nor can a
handler choose where it lands: in a finalizer the command's end runs (the weakref callback of a collected
thread pool), its KeyboardInterrupt is printed by Python as "Exception ignored in ..." and lost, and the
command exits 0, complete. Blocking or ignoring the signals there would close both windows, but a teardown
that hangs (a collective's destructor) could then be stopped by SIGKILL alone.

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
        signal.signal(signal.SIGTERM, previous)


INTERRUPTED = 130
"""The exit code of an interrupted command, Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports it)."""

_late: list[int] = []
"""Signals received during the interpreter's shutdown (`interrupts_in_shutdown`)."""


@contextlib.contextmanager
def interrupts_in_shutdown(say: Callable[[], None]) -> Iterator[None]:
    """For the process's entry point: a SIGINT or SIGTERM after the block (during the interpreter's
    shutdown) ends the process with `say()` and exit 130 once the shutdown's cleanup ran (see the module
    docstring). Outside the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    atexit.register(_exit_if_interrupted, say)  # registered first, so run after the command's own hooks
    try:
        yield
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda signum, frame: _note_late(signum, say))


def _note_late(signum: int, say: Callable[[], None]) -> None:
    if _late:  # a second signal: the shutdown hangs (a thread that never ends); stop it now
        _exit_interrupted(say)
    _late.append(signum)


def _exit_if_interrupted(say: Callable[[], None]) -> None:
    if _late:
        _exit_interrupted(say)


def _exit_interrupted(say: Callable[[], None]) -> None:
    """`say()`, then exit 130 at once: an `atexit` hook cannot change the exit code any other way."""
    with contextlib.suppress(Exception):  # a signal that cut a write to stderr short: the exit still comes
        say()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # closed, or a reader gone: nothing left to say there
            stream.flush()
    os._exit(INTERRUPTED)


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
