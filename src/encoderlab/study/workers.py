"""Where a study's nodes run: in the study's own process, or in a pool of `jobs` spawned workers.

`runner.run_graph` schedules and submits each ready node to `node_pool(jobs)`; this module decides
what the pool is and what each worker process gets. Design and trade-offs:
- **`jobs=1` runs each node right here** (`InProcess`): no process to start, and an error surfaces
  through the future exactly as a worker's would, so the scheduling loop has one shape.
- **`jobs=N` spawns N workers**, never forks (fork after torch has threads can deadlock). Each worker
  takes a slot number from a shared counter (`init_worker`) and gets its share of the CPU threads (at
  least one: more jobs than CPUs oversubscribe them, with a note, as one may want on purpose) and, on
  a GPU box, its own device by slot, round robin (`CUDA_VISIBLE_DEVICES`), so independent fine-tuning
  runs fill the machine. Small models use threads poorly: on 2 cores, two 1-thread fine-tuning runs
  finish in 0.7x the time of the same two run one after the other with 2 threads (measured). The slot
  is a counter, not a queue of slots: `--jobs 100000` filled such a queue's pipe before any worker read
  it, and the study hung without a word.
- **Workers end with the study.** A worker calls `interrupts.end_with_parent` with the study's pid (at
  once on Linux), so a killed study never leaves a worker writing beside its resumed self; on Ctrl-C or
  a SIGTERM sent to the study alone (a scheduler's) `node_pool` terminates them at once, where leaving
  the pool normally waits for every running node. A node cut short leaves no marker and runs again on
  resume, as after a SIGKILL.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
from collections.abc import Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor

from encoderlab.interrupts import end_with_parent


class InProcess(Executor):
    """`jobs=1`: run each node right here when submitted (errors surface through the future)."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 -- re-raised by future.result() in run_graph
            future.set_exception(exc)
        return future


@contextlib.contextmanager
def node_pool(jobs: int) -> Iterator[Executor]:
    """`executor(jobs)`, whose workers end at once on Ctrl-C or a SIGTERM sent to the study alone (a
    scheduler's): leaving the pool normally waits for every running node to finish. A node cut short
    leaves no marker and runs again on resume, as after a SIGKILL."""
    with executor(jobs) as pool:
        try:
            yield pool
        except KeyboardInterrupt:
            children = multiprocessing.active_children()
            for child in children:  # spawned: SIGTERM ends them on the spot
                child.terminate()
            for child in children:  # ... and the study ends after them, never before (a loaded machine)
                child.join(10)
                if child.is_alive():
                    child.kill()
                    child.join()
            raise


def executor(jobs: int) -> Executor:
    """The pool of `jobs` workers (`InProcess` for one), each set up by `init_worker`."""
    if jobs == 1:
        return InProcess()
    ctx = multiprocessing.get_context("spawn")  # fork after torch has threads can deadlock
    # a counter, not a queue of the slots: --jobs 100000 filled the queue's pipe before any worker
    # read it, and the study hung without a word
    slots = ctx.Value("q", 0)
    threads = thread_share(jobs)
    return ProcessPoolExecutor(
        jobs,
        mp_context=ctx,
        initializer=init_worker,
        initargs=(slots, threads, visible_gpus(), os.getpid()),
    )


def thread_share(jobs: int) -> int:
    """Each worker's CPU threads: an equal share of those this process may use, at least one. More jobs
    than CPUs is allowed (oversubscribing on purpose), with a note: the nodes then share the CPUs."""
    cpus = len(os.sched_getaffinity(0))
    if jobs > cpus:
        print(
            f"encoderlab: note: --jobs {jobs} is more than the {cpus} CPU(s) this process may use: each job "
            f"gets 1 thread and the {jobs} jobs share the {cpus} CPU(s)",
            file=sys.stderr,
        )
    return max(1, cpus // jobs)


def visible_gpus() -> list[str]:
    """The GPUs this process may use (CUDA_VISIBLE_DEVICES, or all of them), counted without CUDA init."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [d for d in listed.split(",") if d.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


_WORKER: dict[str, int] = {}
"""This process's worker slot (`{"slot": i}`), set by `init_worker`; empty in the study's own process."""


def init_worker(slots, threads: int, gpus: list[str], study_pid: int | None = None) -> None:
    """Take a worker slot; pin it to one GPU (round robin) and to its share of the CPU threads; and,
    given the study's pid, end with the study."""
    if study_pid is not None:
        end_with_parent(study_pid)  # never a worker writing beside the resumed study
    with slots.get_lock():
        slot = _WORKER["slot"] = slots.value
        slots.value += 1
    if gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[slot % len(gpus)]
    # torch takes its threads from these when a node first imports it; a spawned worker has not yet, and
    # importing it here only to set them cost each worker ~3 s of CPU (all of it for nodes without torch)
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def worker_slot() -> int | None:
    """The slot of the worker this runs in (a node's compute record names it); None in the study's process."""
    return _WORKER.get("slot")
