"""SIGTERM handled as Ctrl-C: `sigterm_as_interrupt()`.

Batch schedulers stop a job with SIGTERM (SLURM sends it at the time limit, `kill` by default), and
Python's default for SIGTERM is to die on the spot: no cleanup, no message. Inside this context
manager SIGTERM raises KeyboardInterrupt in the main thread instead, so a command stops the way it
does on Ctrl-C: its `finally` blocks run (child processes terminated, temporary files removed) and
the CLI prints "interrupted; completed work is kept (rerun to resume)" with exit code 130. Outside
the main thread (where handlers cannot be installed) it does nothing. `cli.main` runs every command
inside it, so no command needs its own; child processes are spawned (fresh interpreters), so they
keep the default SIGTERM and their parent ends them.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


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
