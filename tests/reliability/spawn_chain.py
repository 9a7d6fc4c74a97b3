"""Targets for a process that `multiprocessing` spawns and that spawns one of its own (a study's worker
running `data prepare`'s pool), for tests/reliability/test_no_code_from_files.py. A module of their own:
the child imports its target's module, and this one imports nothing of the test's."""

from __future__ import annotations

import multiprocessing


def grandchild() -> None:
    """Nothing: what matters is what the process imported on its way here."""


def child() -> None:
    """Spawn `grandchild` and wait for it; a failed start is this process's failure."""
    process = multiprocessing.get_context("spawn").Process(target=grandchild)
    process.start()
    process.join()
    if process.exitcode != 0:
        raise SystemExit(process.exitcode)
