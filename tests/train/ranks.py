"""Ranks forked from a process that has already imported torch and encoderlab (a "zygote"), each a whole
interpreter that finalizes when its work is done, as a spawned rank does.

Why: a spawned rank (`torch.multiprocessing.spawn`) imports torch, encoderlab and its test module afresh,
3-4 CPU-seconds on the CI's cores, and the training tests start some forty ranks; a fork of a process that
imported them costs a few hundredths. multiprocessing's own forkserver forks as cheaply but ends each child
with `os._exit`, which skips interpreter finalization: test_distributed_exit.py is about finalization (a gloo
worker that takes the GIL while the interpreter finalizes aborts the process). Here a rank's child raises
SystemExit out of the zygote's loop to its top level instead, so the interpreter finalizes as a spawned rank's
does: atexit hooks run, and threads still running meet a finalizing interpreter
(`test_distributed_exit.test_a_forked_rank_finalizes_its_interpreter`).

Trade-offs: one zygote per test process (pytest-xdist worker), started at its first use and kept until that
process ends (the memory of one imported torch). A rank's function is sent by reference, so the zygote imports
its test module (once: later forks have it). The zygote forks with no thread of its own (a forked thread's
locks stay held) and does no work besides: each rank's environment (`os.environ`) and working folder are
the caller's at the call, as a spawned rank's are, and whatever a rank changes (a monkeypatched module) dies
with its fork. A rank's output goes to the stderr the zygote started with (pytest's capture); one that raises
prints its traceback there and exits 1.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
import traceback

PRELOAD = (
    "torch",
    "torch.distributed",
    "torch._dynamo",
    "torch.distributed.checkpoint",
    "encoderlab.train.distributed",
    "encoderlab.cli",
    "encoderlab.train.cli",
    "tests.train.helpers",
    "transformers:PreTrainedTokenizerFast",
)
"""What the zygote imports before its first fork: what every rank of the training tests imports. DDP's
constructor imports torch._dynamo (and with it FSDP), 2-3 CPU-seconds that each DDP or FSDP rank paid; a
rank that trains makes the synthetic data's tokenizer, whose transformers import (`module:attribute`: the
attribute of transformers' lazy module imports the module that defines it) cost each such rank 1.3, and the
`pretrain` command's parser and DCP's checkpoint modules 0.4 more."""

_ZYGOTE: subprocess.Popen | None = None


def run_ranks(fn, args: tuple, nprocs: int, timeout_s: float, stop_on_failure: bool) -> list[int] | None:
    """Exit codes of `fn(rank, *args)` run in `nprocs` forked ranks at once (minus a signal's number for a
    rank a signal ended, as multiprocessing's `exitcode`); with `stop_on_failure`, the first rank to exit
    non-zero has the others killed (as `torch.multiprocessing.spawn`'s join does). None, every rank killed,
    when they still run after `timeout_s` seconds."""
    zygote = _zygote()
    request = pickle.dumps((fn, args, nprocs, stop_on_failure, dict(os.environ), os.getcwd()))
    zygote.stdin.write(struct.pack("<Q", len(request)) + request)
    zygote.stdin.flush()
    deadline = time.monotonic() + timeout_s
    pids = _reply(zygote, deadline)  # its first answer waits for its imports, and those of `fn`'s module
    if pids is None:
        zygote.kill()  # stuck before forking: the next call starts a new one
        return None
    if isinstance(pids, str):  # the zygote could not start them: its traceback
        raise RuntimeError(f"the rank zygote could not fork {fn.__qualname__}:\n{pids}")
    codes = _reply(zygote, deadline)
    if codes is None:
        for pid in pids:
            _kill(pid)
        _reply(zygote, time.monotonic() + 60)  # the zygote reaps them, and answers
    return codes


def _zygote() -> subprocess.Popen:
    global _ZYGOTE
    if _ZYGOTE is None or _ZYGOTE.poll() is not None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
        if _ZYGOTE is None:
            atexit.register(_stop)
        _ZYGOTE = subprocess.Popen(
            [sys.executable, "-c", "from tests.train.ranks import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
    return _ZYGOTE


def _stop() -> None:
    """End the zygote with the test process (its pipe closed, it returns) and reap it."""
    if _ZYGOTE is not None and _ZYGOTE.poll() is None:
        _ZYGOTE.stdin.close()
        try:
            _ZYGOTE.wait(30)
        except subprocess.TimeoutExpired:
            _ZYGOTE.kill()


def _reply(zygote: subprocess.Popen, deadline: float):
    """The zygote's next answer, or None when it has none by `deadline`."""
    fd = zygote.stdout.fileno()
    if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
        return None
    return pickle.loads(_read(fd))


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.kill(pid, signal.SIGKILL)


def _read(fd: int) -> bytes:
    """One length-prefixed message from `fd` (b"" at its end)."""
    head = _read_exactly(fd, 8)
    return _read_exactly(fd, struct.unpack("<Q", head)[0]) if head else b""


def _read_exactly(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            if left == n:
                return b""
            raise EOFError("the rank zygote's pipe closed mid-message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _send(fd: int, value) -> None:
    data = pickle.dumps(value)
    os.write(fd, struct.pack("<Q", len(data)) + data)


def serve() -> None:
    """The zygote's loop: import `PRELOAD`, then for each request fork its ranks, answer their pids, wait
    for them and answer their exit codes; end when the caller closes the pipe (its process ended)."""
    requests, replies = os.dup(0), os.dup(1)  # the protocol's; stdout is stderr from here on, stdin empty
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    for entry in PRELOAD:
        name, _, attribute = entry.partition(":")
        module = importlib.import_module(name)
        if attribute:
            getattr(module, attribute)
    while request := _read(requests):
        try:
            fn, args, nprocs, stop_on_failure, env, cwd = pickle.loads(request)
            if len(os.listdir("/proc/self/task")) > 1:
                raise RuntimeError(
                    "the zygote has a thread (an import started it): a fork would copy its locks"
                )
        except Exception:
            _send(replies, traceback.format_exc())
            continue
        pids = []
        for rank in range(nprocs):
            pid = os.fork()
            if pid == 0:
                os.close(requests), os.close(replies)
                _rank(fn, rank, args, env, cwd)  # never returns: SystemExit to the top level
            pids.append(pid)
        _send(replies, pids)
        _send(replies, _wait(pids, stop_on_failure))


def _rank(fn, rank: int, args: tuple, env: dict, cwd: str) -> None:
    """A forked rank: the caller's environment and folder, `fn(rank, *args)`, then SystemExit (0, or 1 after
    its traceback) up through `serve` to the interpreter's top level, which finalizes."""
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        fn(rank, *args)
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        raise SystemExit(1) from None
    raise SystemExit(0)


def _wait(pids: list[int], stop_on_failure: bool) -> list[int]:
    codes: dict[int, int] = {}
    while len(codes) < len(pids):
        pid, status = os.wait()
        codes[pid] = os.waitstatus_to_exitcode(status)
        if codes[pid] != 0 and stop_on_failure:
            for other in set(pids) - set(codes):
                _kill(other)
    return [codes[pid] for pid in pids]
