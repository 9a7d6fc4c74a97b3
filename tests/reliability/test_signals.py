"""Ctrl-C and SIGTERM end every command the same way (issue 20, item 4): cleanup runs, one line
"encoderlab: interrupted; completed work is kept (rerun to resume)", exit 130, and a rerun resumes.

Batch schedulers stop jobs with SIGTERM. Before, only `data tokenizer`, `data prepare` and `data merge`
turned it into Ctrl-C; every other command died on the spot without a word (its completed work was
kept, as after a SIGKILL, but nothing said so and no cleanup ran). `cli.main` now wraps every command
in `interrupts.sigterm_as_interrupt()`. The tokenizer's own signal tests are in
tests/data/test_tokenizer.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.reliability.hostile_world import TINY_RUN
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab import cli, interrupts
from encoderlab.train import checkpoint as ckpt

LINE = "encoderlab: interrupted; completed work is kept (rerun to resume)"
PRETRAIN_LINE = "encoderlab: interrupted; completed work is kept (rerun with --resume to continue)"
"""A rerun of `pretrain` without --resume is refused ("already holds a run"): its line says --resume."""
SCRIPT = Path(__file__).with_name("sigterm_study_script.py")


def handler_probe() -> None:
    """Record the SIGTERM handler a command runs under, then deliver SIGTERM if it is ours."""
    handler_probe.seen = signal.getsignal(signal.SIGTERM)
    if handler_probe.seen is interrupts._raise_interrupt:  # never kill the test process itself
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the signal ends the sleep


def test_every_command_runs_with_sigterm_as_ctrl_c(monkeypatch, capsys):
    monkeypatch.setitem(cli.COMMANDS, "probe", f"{__name__}:handler_probe")
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as done:
        cli.main(["probe"])
    assert handler_probe.seen is interrupts._raise_interrupt
    assert done.value.code == 130 and capsys.readouterr().err.strip() == LINE
    assert signal.getsignal(signal.SIGTERM) is before  # restored after the command


def wrapped_interrupt() -> None:
    """A Ctrl-C that lands in a class body's `__set_name__` as it is wrapped (Python 3.11 and before)."""

    class Field:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    try:
        type("Entry", (), {"size": Field()})
    except KeyboardInterrupt as exc:  # Python 3.12 and later pass it unwrapped: wrap it as 3.11 does
        raise RuntimeError("Error calling __set_name__ on 'Field' instance 'size' in 'Entry'") from exc


def test_a_ctrl_c_wrapped_by_an_import_is_still_the_interrupted_line(monkeypatch, capsys):
    """Ctrl-C in the first seconds of a command, while torch's dataclasses were being defined, was a
    "RuntimeError: Error calling __set_name__" traceback (exit 1)."""
    monkeypatch.setitem(cli.COMMANDS, "probe", f"{__name__}:wrapped_interrupt")
    with pytest.raises(SystemExit) as done:
        cli.main(["probe"])
    assert done.value.code == 130 and capsys.readouterr().err.strip() == LINE


def buggy_runtime_error() -> None:
    raise RuntimeError("a bug")


def test_another_runtime_error_keeps_its_traceback(monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "probe", f"{__name__}:buggy_runtime_error")
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["probe"])


@pytest.mark.parametrize(("local_rank", "said"), [("0", LINE), ("1", "")])
def test_under_torchrun_the_interrupted_line_is_said_once_per_node(monkeypatch, capsys, local_rank, said):
    """A SIGTERM to a torchrun group reaches every rank; each printed the line (two on two processes)."""
    monkeypatch.setitem(cli.COMMANDS, "probe", f"{__name__}:handler_probe")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", local_rank)
    with pytest.raises(SystemExit) as done:
        cli.main(["probe"])
    assert done.value.code == 130 and capsys.readouterr().err.strip() == said


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}


@pytest.fixture
def started():
    """Start commands as subprocesses; any still running when the test ends (it failed) is killed."""
    procs: list[subprocess.Popen] = []

    def start(argv: list, **kw) -> subprocess.Popen:
        # A Ctrl-C reaches a command whose SIGINT is the default; pytest started as a background job of a
        # non-interactive shell hands its children SIGINT ignored, and the command never saw the signal.
        kw.setdefault("preexec_fn", lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        procs.append(subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, **kw))
        return procs[-1]

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _wait_for(condition, proc: subprocess.Popen, what: str, limit: float = 600) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert proc.poll() is None, f"the command ended before {what}: {proc.communicate()[1]}"
        assert time.monotonic() < deadline, f"no {what} after {limit} s"
        time.sleep(0.1)


LONG_RUN = TINY_RUN.replace("steps: 2\n", "steps: 100000\n")  # stopped long before its end


def test_sigterm_stops_pretraining_keeps_its_checkpoints_and_it_resumes(tmp_path, started):
    (tmp_path / "long.yaml").write_text(LONG_RUN)
    run = tmp_path / "run"
    argv = ["pretrain", "--config", str(tmp_path / "long.yaml"), "--out", str(run)]
    proc = started([sys.executable, "-m", "encoderlab.cli", *argv], env=_env(), stdout=subprocess.DEVNULL)
    _wait_for(lambda: len(ckpt.complete_checkpoints(run)) >= 2, proc, "checkpoint")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err  # was -15: killed on the spot, without a word
    assert err.strip().splitlines()[-1] == PRETRAIN_LINE and "Traceback" not in err, err
    kept = ckpt.complete_checkpoints(run)
    assert kept and not (run / ".lock").exists()  # the lock was released by the cleanup
    # The signal is the subprocess's; the run folder it left resumes as any does, so the resume runs here
    # (`cli.main` as the console script runs it): a second interpreter and its imports cost more CPU than
    # the step it trains.
    cli.main([*argv, "--resume", "--until-step", str(kept[-1] + 1)])  # a refusal exits (SystemExit)
    assert ckpt.complete_checkpoints(run)[-1] == kept[-1] + 1


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_sigterm_stops_a_study_and_its_workers_at_once(tmp_path, started):
    """A study with two worker processes that have just started their pretraining nodes: SIGTERM to
    the study (as a scheduler sends it) ends it with the line and ends its workers, instead of waiting
    for their nodes (each sleeps 3 s per file it writes, so a finished node would show as a marker)."""
    out = tmp_path / "study"
    env = {**_env(), "FAKE_STUDY_SLEEP": "3.0"}
    proc = started(
        [sys.executable, str(SCRIPT), "fake-study", "--out", str(out), "--jobs", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    _wait_for(lambda: list(out.glob("nodes/pretrain/*")), proc, "pretraining node")
    # The second worker may still be starting on a loaded machine: wait for it rather than race it.
    _wait_for(lambda: len(_workers(proc.pid)) >= 2, proc, "two workers")
    workers = _workers(proc.pid)
    markers = set(out.rglob("node.json"))  # the prepare node's: the pretraining nodes have seconds to go
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == LINE and "Traceback" not in err, err
    assert set(out.rglob("node.json")) == markers, "the study waited for its running nodes to finish"
    assert not [w for w in workers if _alive(w)], "a worker outlived the study"


def test_ctrl_c_while_a_study_fetches_its_assets_leaves_nothing_behind(tmp_path, monkeypatch, started):
    """Ctrl-C 2 to 3.5 s into `study run paper1-pfs --scale demo --out st`, while its assets were fetched, exited
    130 and left an empty st/ that was not there before. The signal is sent once the fetch has begun, not after
    a delay; the fetch never ends by itself."""
    world, ready = tmp_path / "world", tmp_path / "ready"
    world.mkdir()
    monkeypatch.chdir(world)
    monkeypatch.setenv("ENCODERLAB_HOME", str(world / "home"))
    before = world_state(world)
    out = world / "new" / "st"  # its parent is made too, and must go as well
    proc = started(
        [sys.executable, str(SCRIPT), "fake-study-fetching", "--out", str(out), "--ready", str(ready)],
        env={**_env(), "ENCODERLAB_HOME": str(world / "home")},
        cwd=world,
        stdout=subprocess.DEVNULL,
    )
    _wait_for(ready.exists, proc, "fetch")
    assert out.is_dir()  # the folder holding the lock while the study fetches
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == LINE and "Traceback" not in err, err
    assert_unchanged(before)  # was: an empty st/ (and new/) left behind


def _children(pid: int) -> list[int]:
    """The process's child pids (Linux /proc)."""
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _workers(pid: int) -> list[int]:
    """The study's worker processes: its spawned children, not multiprocessing's resource tracker,
    which is a child too but no worker (it exits once the study has, and on a loaded machine may
    still be running when the study's exit is checked: the flaky failure this filter fixed)."""
    out = []
    for child in _children(pid):
        try:
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                out.append(child)
        except OSError:
            pass
    return out


def _alive(pid: int) -> bool:
    """Running, not a zombie (a reparented worker may wait to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_output_into_a_closed_pipe_ends_quietly():
    """`encoderlab data inspect DIR | head -3` (any command piped into a reader that stops early)
    ended with a BrokenPipeError traceback; now it stops as `yes | head` does: no output on stderr,
    exit 141 (128 + SIGPIPE), what a shell reports for a process a closed pipe ended."""
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before the command starts: before its first line, however fast
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "encoderlab.cli", "recipes"],
            stdout=writer,
            stderr=subprocess.PIPE,
            env=_env(),
        )
    finally:
        os.close(writer)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and err == "", err


def pipe_probe() -> None:
    raise BrokenPipeError(32, "Broken pipe")  # a pipe other than stdout (a worker's) broke


def test_a_broken_pipe_other_than_stdout_keeps_its_traceback(monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "probe", f"{__name__}:pipe_probe")
    with pytest.raises(BrokenPipeError):
        cli.main(["probe"])


@pytest.mark.parametrize("made", [False, True])
def test_a_pretrain_interrupted_before_its_run_folder_exists_says_nothing_was_written(
    tmp_path, monkeypatch, capsys, made
):
    """Ctrl-C while a run starts (its config resolved, the model loading) said "completed work is kept
    (rerun with --resume to continue)" with no run folder: nothing was kept, and --resume found no run.
    Once the folder exists the usual line is said."""
    import encoderlab.train.cli as train_cli

    def interrupted(cfg, **_):
        if made:
            Path(cfg.out).mkdir()
        raise KeyboardInterrupt

    monkeypatch.setattr(train_cli, "pretrain", interrupted)
    (tmp_path / "tiny.yaml").write_text(TINY_RUN)
    with pytest.raises(SystemExit) as done:
        cli.main(["pretrain", "--config", str(tmp_path / "tiny.yaml"), "--out", str(tmp_path / "run")])
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert done.value.code == 130
    assert said == (
        PRETRAIN_LINE if made else "encoderlab: interrupted before anything was written; rerun the command"
    )
    assert (tmp_path / "run").exists() == made


def _prepare_argv(src: Path, tok: Path, out: Path) -> list[str]:
    return ["data", "prepare", "--source", str(src), "--tokenizer", str(tok), "--out", str(out),
            "--decontaminate", "none", "--workers", "1", "--checkpoint-every", "1"]  # fmt: skip


def _reached(condition, proc: subprocess.Popen, limit: float = 300) -> bool:
    """Whether `condition` came true while `proc` ran (False: it ended first, its work done)."""
    deadline = time.monotonic() + limit
    while not condition():
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, f"not reached after {limit} s"
        time.sleep(0.005)
    return True


def _progress_file(tmp: Path) -> tuple | None:
    """OUT.tmp's checkpoint record as a file (inode, mtime): each checkpoint writes a new one; None if none."""
    try:
        st = (tmp / "progress.json").stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def _written_since(tmp: Path, before: tuple | None) -> bool:
    """Whether the prepare running now has begun its work: made OUT.tmp, or written a checkpoint since `before`."""
    return tmp.is_dir() and (before is None or _progress_file(tmp) not in (None, before))


def _stop_once(started, args: list[str], tmp: Path, target: int, delay: float, signum: int) -> int | None:
    """Run `encoderlab ARGS`, send `signum` `delay` s after its chunk checkpoint `target` and check the one line
    it says. Returns its exit status, or None if it finished before the signal came (its work done)."""
    from tests.data.prepare_kill_fixtures import chunks_done

    out = tmp.with_name(tmp.name.removesuffix(".tmp"))
    before = _progress_file(tmp)  # an earlier run's checkpoint is not this one's
    proc = started([sys.executable, "-m", "encoderlab.cli", *args], env=_env(), stdout=subprocess.DEVNULL)
    if not _reached(lambda: _written_since(tmp, before) and chunks_done(out) >= target, proc):
        return None
    time.sleep(delay)
    if proc.poll() is not None:
        return None
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=300)
    last = (err.replace("\r", "\n").strip().splitlines() or ["(nothing said)"])[-1]
    said = [
        line for line in err.splitlines() if line.startswith("encoderlab:")
    ]  # bars and notes may come first
    assert "Traceback" not in err and said == [last], (signum, proc.returncode, err)
    assert (proc.returncode, last) == (130, LINE) or (proc.returncode == 0 and "work is complete" in last), (
        err
    )
    return proc.returncode


def test_sigint_and_sigterm_at_random_moments_of_a_prepare_are_one_line_each_and_the_rerun_is_the_same(
    tmp_path, started, capsys
):
    """`data prepare` (the cheapest command that checkpoints and resumes) stopped three times by Ctrl-C or SIGTERM,
    each at a seeded random moment: a seeded chunk checkpoint reached, then a random delay of up to 0.3 s (inside
    the next chunk, a checkpoint's write or rename, the final rename, the summary, the shutdown). Each stop must be
    the one interrupted line and 130 (or, landing once the result was final, a note and 0), with no traceback; it
    leaves OUT absent or whole (never a torn OUT beside OUT.tmp, no stray temp file or lock), and a rerun resumes to
    the bytes and metrics of an uninterrupted prepare. The fixed-moment tests above cannot see a signal that lands
    in a checkpoint's write or the final rename; the SIGKILL loop of tests/data/test_prepare_kill.py sees no
    cleanup code run, nor the line said. The reference and the last rerun run in-process (no interpreter to start)."""
    import json
    import random

    from tests.data.corpus_fixtures import corpus_records, write_jsonl
    from tests.data.prepare_kill_fixtures import metrics_lines, token_file_bytes
    from tests.eval.conftest import make_tokenizer

    records = corpus_records(1500)  # 6 chunks of 256 documents, one checkpoint each
    src = write_jsonl(tmp_path / "corpus.jsonl", records)
    make_tokenizer([r["text"] for r in records[:200]]).save_pretrained(tmp_path / "tok")
    clean, out = tmp_path / "clean", tmp_path / "w" / "out"
    cli.main(_prepare_argv(src, tmp_path / "tok", clean))
    out.parent.mkdir()
    rng = random.Random(20)
    targets = sorted(rng.sample(range(5), 3))  # the chunk checkpoint each stop waits for (0: the .tmp folder)
    signums = [signal.SIGINT, signal.SIGTERM, rng.choice([signal.SIGINT, signal.SIGTERM])]
    stopped, tmp, argv = [], out.with_name("out.tmp"), _prepare_argv(src, tmp_path / "tok", out)
    for target, signum in zip(targets, signums):
        delay = rng.uniform(0, 0.3)
        # A machine fast enough to finish first gets the same stop again, earlier: the checkpoint before and half
        # the delay, down to the moment OUT.tmp appears (no machine prepares the corpus in that instant).
        while (code := _stop_once(started, argv, tmp, target, delay, signum)) is None:
            assert token_file_bytes(out) == token_file_bytes(clean)  # it finished: whole
            shutil.rmtree(out)
            target, delay = max(target - 1, 0), delay / 2
        stopped.append(code)
        assert set(os.listdir(out.parent)) <= {"out", "out.tmp"}, os.listdir(out.parent)
        if out.exists():  # renamed into place: whole
            assert token_file_bytes(out) == token_file_bytes(clean)
        if (tmp / "progress.json").exists():
            json.loads((tmp / "progress.json").read_text())  # a checkpoint is never torn
    assert 130 in stopped, stopped
    checkpointed, _ = (tmp / "progress.json").exists(), capsys.readouterr()
    cli.main(_prepare_argv(src, tmp_path / "tok", out))
    assert not checkpointed or json.loads(capsys.readouterr().out)["resumed_after_docs"] > 0
    assert token_file_bytes(out) == token_file_bytes(clean) and token_file_bytes(clean)
    assert metrics_lines(out) == metrics_lines(clean)
