"""Run real `encoderlab` commands in child processes and SIGKILL them at chosen moments.

Design
  * A *zygote* process imports torch, transformers and encoderlab once (`PRELOAD`, or what the test's
    `Zygote(imports=...)` names: `DATA_PREPARE` for `data prepare`, which needs no torch), then forks one child per
    job; each child runs `encoderlab.cli.main(argv)` exactly as the console script does and is
    killed with SIGKILL (uncatchable: no `finally`, no flush, no atexit). Forking is the trade-off
    that keeps ten kill/resume cycles near a minute on two loaded cores, where a fresh interpreter
    spends 5-10 s importing torch per job. The zygote never runs a tensor op, so the children
    inherit no OpenMP pool, and everything runs single-threaded, so references and resumed runs
    reduce in the same order.
  * Where the kill lands is either
      - *inside* the child: a trigger wraps one seam (a step's backward, a metrics line, each stage
        of a checkpoint write, the final model write, an evaluation node or its result line) and
        sends SIGKILL to its own process at the chosen event. This makes "killed while the
        checkpoint's optimizer state is half written" reproducible instead of a lucky timing;
      - or *outside*: the zygote sleeps a (seeded) random delay, or polls for a checkpoint's
        `.tmp` folder (or a rewritten file) to appear, and kills the child then or a given delay later.
  * Recorders log what a child loaded (`Trainer._load`) and which evaluation nodes it trained
    (`protocol.run_one`) into the job folder, so tests can prove that a partial checkpoint is never
    loaded and a finished node is never recomputed.

Protocol: `python killharness.py [MODULE ...]` imports the MODULEs (default: `PRELOAD`), then reads one
JSON job per stdin line, answers one JSON line {"returncode", "signal", "seconds"} per job (`Zygote` in
Python wraps this). A job is {"argv": [...], "dir": job folder, "env": {...}, "kill": {"kind": ..., "arg":
...} | null}; with "call": "module:function" and "args": [...] the child calls that instead of the command
line. With "script": source, the child runs that source as `__main__` with `sys.argv` = ["-c", *args], as
`python -c` would, and ends through the interpreter's own shutdown (atexit hooks, module teardown), not
`os._exit`: for tests of what happens as a process ends, without a torch import per process.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

# ---------------------------------------------------------------------------------- child side


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _wrap(owner, name: str, make):
    """Replace `owner.name` with `make(original)` (children only: they exit after the job)."""
    setattr(owner, name, make(getattr(owner, name)))


def _torn_save_file(marker: str):
    """safetensors' save_file that writes half the file when the path contains `marker`, then dies."""

    def make(orig):
        def save_file(tensors, filename, *args, **kwargs):
            orig(tensors, filename, *args, **kwargs)
            if marker in str(filename):
                size = os.path.getsize(filename)
                os.truncate(filename, size // 2)
                _die()

        return save_file

    return make


def _step_dir(n: int) -> str:
    return f"step_{n:07d}.tmp"


def install_trigger(kind: str, arg: int) -> None:
    """Arrange for this process to SIGKILL itself at the event `kind` (see TRIGGERS)."""
    from encoderlab.eval import protocol, summarypage
    from encoderlab.model import io as model_io
    from encoderlab.train import checkpoint as ckpt
    from encoderlab.train.metrics import JsonlSink
    from encoderlab.train.step import TrainStep

    if kind == "train_step":  # gradients of step `arg` computed, update not applied

        def make(orig):
            def step(self, n):
                if n + 1 == arg:  # die inside this call, after forward_backward, before the update
                    fb = self.forward_backward
                    self.forward_backward = lambda *args: (fb(*args), _die())[0]
                return orig(self, n)

            return step

        _wrap(TrainStep, "step", make)
    elif kind == "logged":  # metrics line of step `arg` written, its checkpoint not yet

        def make(orig):
            def log(self, record):
                orig(self, record)
                if record["step"] == arg:
                    _die()

            return log

        _wrap(JsonlSink, "log", make)
    elif kind == "ckpt_weights":  # half of checkpoint `arg`'s model.safetensors on disk
        _wrap(model_io, "save_file", _torn_save_file(_step_dir(arg)))
    elif kind == "final_weights":  # half of final/model.safetensors on disk
        _wrap(model_io, "save_file", _torn_save_file("final.tmp"))
    elif kind == "ckpt_model":  # checkpoint `arg`'s model folder complete, optimizer state not written

        def make(orig):
            def save(model, path, tokenizer=None):
                out = orig(model, path, tokenizer)
                if _step_dir(arg) in str(path):
                    _die()
                return out

            return save

        _wrap(ckpt, "save_model_folder", make)
    elif kind == "ckpt_optim":  # optimizer state written, state.json not yet

        def make(orig):
            def save(tensors, filename, *args, **kwargs):
                orig(tensors, filename, *args, **kwargs)
                if _step_dir(arg) in str(filename) and str(filename).endswith(ckpt.TRAIN_STATE):
                    _die()

            return save

        _wrap(ckpt, "save_file", make)
    elif kind == "ckpt_state":  # everything written, the folder not yet renamed from .tmp

        def make(orig):
            def rename(self, target):
                if self.name == _step_dir(arg):
                    _die()
                return orig(self, target)

            return rename

        _wrap(Path, "rename", make)
    elif kind == "ckpt_prune":  # checkpoint `arg` renamed into place, old ones not yet pruned

        def make(orig):
            def prune(run_dir, *a, **k):
                if ckpt.complete_checkpoints(run_dir)[-1] == arg:
                    _die()
                return orig(run_dir, *a, **k)

            return prune

        _wrap(ckpt, "prune", make)
    elif kind == "eval_node":  # the arg-th node of this process trained, its result not yet stored
        calls = {"n": 0}

        def make(orig):
            def run_one(*a, **k):
                out = orig(*a, **k)
                calls["n"] += 1
                if calls["n"] == arg:
                    _die()
                return out

            return run_one

        _wrap(protocol, "run_one", make)
    elif kind == "eval_write":  # the arg-th result line of this process half written (torn)
        calls = {"n": 0}

        def make(orig):
            def add(self, rec):
                calls["n"] += 1
                if calls["n"] == arg:
                    from encoderlab.config import to_dict

                    line = json.dumps(to_dict(rec), sort_keys=True) + "\n"
                    with open(self.path, "a", encoding="utf-8") as f:
                        f.write(line[: len(line) // 2])
                    _die()
                return orig(self, rec)

            return add

        _wrap(protocol.ResultsStore, "add", make)
    elif kind == "eval_summary":  # summary.json's temp file written, not yet renamed

        def make(orig):
            def atomic_write(path, text):
                if path.name != summarypage.SUMMARY_JSON:
                    return orig(path, text)
                path.with_name(f".{path.name}.{os.getpid()}.tmp").write_text(text[: len(text) // 2])
                _die()

            return atomic_write

        # the module that writes the summary: a wrap elsewhere never lands and the kill test fails
        _wrap(summarypage, "write_text_atomic", make)
    else:
        raise ValueError(f"unknown trigger {kind}")


def install_recorders(job_dir: Path) -> None:
    """Log every checkpoint load and every evaluation node trained into `job_dir`."""
    from encoderlab.eval import protocol
    from encoderlab.train.trainer import Trainer

    def append(name: str, record: dict) -> None:
        with open(job_dir / name, "a") as f:
            f.write(json.dumps(record) + "\n")

    def make_load(orig):
        def _load(self, path, **kwargs):  # kwargs: Trainer._load's own (weights=...), passed on
            append("loads.jsonl", {"path": str(path)})
            return orig(self, path, **kwargs)

        return _load

    def make_run_one(orig):
        def run_one(task, model, tokenizer, prepared, lr, seed, device, **k):
            append("nodes.jsonl", {"task": task.name, "lr": lr, "seed": seed})
            return orig(task, model, tokenizer, prepared, lr, seed, device, **k)

        return run_one

    _wrap(Trainer, "_load", make_load)
    _wrap(protocol, "run_one", make_run_one)


def _streams_to(job_dir: Path) -> None:
    """This (child) process's stdout and stderr into `job_dir`'s files of those names."""
    job_dir.mkdir(parents=True, exist_ok=True)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        f = os.open(job_dir / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(f, fd)
        os.close(f)
    # The child's streams live until it exits: no context manager can own them.
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115


def _script_child(job: dict) -> None:
    """Run the job's "script" as `python -c SCRIPT ARGS...` runs it; its SystemExit (or the one after
    it) leaves through `serve` to the interpreter's shutdown, which runs the atexit hooks."""
    import types

    _streams_to(Path(job["dir"]))
    os.environ.update(job.get("env", {}))
    main = types.ModuleType("__main__")  # `cli.COMMANDS[...] = "__main__:fn"` resolves to the script's
    sys.modules["__main__"] = main
    sys.argv = ["-c", *job.get("args", [])]
    exec(compile(job["script"], "<string>", "exec"), main.__dict__)
    sys.exit(0)


def _child(job: dict) -> None:
    if job.get("script"):
        _script_child(job)
    job_dir = Path(job["dir"])
    _streams_to(job_dir)
    os.environ.update(job.get("env", {}))
    code = 70
    try:
        for target in job.get("prelude", []):
            module, _, fn = target.partition(":")
            getattr(__import__(module, fromlist=[fn]), fn)()
        if job.get("recorders", True):
            install_recorders(job_dir)
        kill = job.get("kill") or {}
        if kill.get("kind") in TRIGGERS:
            install_trigger(kill["kind"], kill.get("arg", 0))
        if job.get("call"):  # "module:function", called with the job's "args"
            module, _, fn = job["call"].partition(":")
            getattr(importlib.import_module(module), fn)(*job.get("args", []))
        else:
            from encoderlab.cli import main

            main(job["argv"])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


TRIGGERS = (
    "train_step",
    "logged",
    "ckpt_weights",
    "ckpt_model",
    "ckpt_optim",
    "ckpt_state",
    "ckpt_prune",
    "final_weights",
    "eval_node",
    "eval_write",
    "eval_summary",
)
"""Kill events installed inside the child; `delay` and `tmpdir` are applied by the zygote."""

# --------------------------------------------------------------------------------- zygote side


def _matches(pattern: str) -> set[tuple]:
    """Paths matching an absolute glob, with inode and mtime (a recreated folder is new)."""
    out = set()
    for p in Path("/").glob(pattern.lstrip("/")) if pattern else ():
        try:
            st = p.stat()
        except FileNotFoundError:  # removed between glob and stat
            continue
        out.add((str(p), st.st_ino, st.st_mtime_ns))
    return out


def _wait(pid: int, kill: dict) -> int:
    """Wait for the child, killing it from outside for `delay`/`tmpdir` kills; its wait status.
    A `tmpdir` kill lands `after` seconds (default 0) after a new path matches its glob."""
    kind = kill.get("kind")
    deadline = time.monotonic() + float(kill.get("arg", 0)) if kind == "delay" else None
    pattern = kill.get("glob", "")
    stale = _matches(pattern)  # leftovers of an earlier kill do not count
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if deadline is None and kind == "tmpdir" and _matches(pattern) - stale:
            deadline = time.monotonic() + float(kill.get("after", 0))
        if deadline is not None and time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            return os.waitpid(pid, 0)[1]
        time.sleep(0.001)


PRELOAD = (
    "torch",
    "transformers",
    "encoderlab.cli",
    "encoderlab.eval.commands",
    "encoderlab.study.runner",  # the study kill test's `call` jobs
    "encoderlab.train.cli",
)
"""What the zygote imports before its first fork, by default; a `Zygote(imports=...)` names fewer where
its jobs need fewer (a pretrain needs no evaluation code, `data prepare` no torch)."""

DATA_PREPARE = (
    "transformers",
    "encoderlab.data.commands",
    "encoderlab.data.prepare",
    "encoderlab.data.tokenizer",
)
"""A zygote's imports for `data prepare` jobs: no torch (the command imports none) and so no recorders,
which wrap the trainer's and the evaluation's code (`Zygote(imports=DATA_PREPARE, recorders=False)`)."""


def serve(modules: list[str]) -> None:
    """The zygote loop: import once, then fork one child per job line."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # preludes import tests.*
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    for module in ("encoderlab.cli", *modules):
        importlib.import_module(module)
    if "torch" in sys.modules:  # no tensor op yet: the children inherit no OpenMP pool
        sys.modules["torch"].set_num_threads(1)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        Path(job["dir"]).mkdir(parents=True, exist_ok=True)
        (Path(job["dir"]) / "stderr").touch()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(job)
        status = _wait(pid, job.get("kill") or {})
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -sig
        result = {"returncode": code, "signal": sig, "seconds": round(time.monotonic() - start, 3)}
        print(json.dumps(result), flush=True)


class Zygote:
    """The test-side handle: `with Zygote() as z: z.run(argv, job_dir, kill=...)`."""

    def __init__(
        self,
        threads: int = 1,
        imports: tuple[str, ...] = PRELOAD,
        env: dict | None = None,
        recorders: bool = True,
    ):
        # `install_recorders` in each child (which imports the trainer's and the evaluation's code)
        self.recorders = recorders
        env = {**os.environ, **(env or {}), "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, *imports],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert json.loads(self.proc.stdout.readline()) == {"ready": True}

    def run(self, argv: list[str], job_dir: Path, kill: dict | None = None, **extra) -> dict:
        job = {"argv": [str(a) for a in argv], "dir": str(job_dir), "kill": kill, "recorders": self.recorders}
        job.update(extra)
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        result = json.loads(self.proc.stdout.readline())
        result["stderr"] = (Path(job_dir) / "stderr").read_text()
        result["dir"] = Path(job_dir)
        return result

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=300)  # a loaded CI machine can take long to unload torch


def read_jsonl(path: Path) -> list[dict]:
    path = Path(path)
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


if __name__ == "__main__":
    serve(sys.argv[1:] or list(PRELOAD))
