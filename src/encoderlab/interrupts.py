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

A parent killed outright (SIGKILL, the OOM killer, a crash) runs no cleanup, so a child that must not
outlive it calls `end_with_parent()`: on Linux the kernel kills the child the moment its parent dies
(`PR_SET_PDEATHSIG`, no delay and no thread to schedule); elsewhere a daemon thread polls the parent's
pid, ending the child within `every_s` of it. PR_SET_PDEATHSIG fires when the parent *thread* that
started the child ends, so the parent must start such children from a thread that lives as long as it
needs them (the study's scheduling loop does).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

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
