"""SIGKILL at ten seeded moments of `encoderlab pretrain`, resume each time with --resume: the final
weights and every logged loss equal the uninterrupted run bit for bit, and no partial checkpoint is
ever loaded (issue 8, item 1). The same for an evaluation grid (`encoderlab eval`). The study runner's
kill test lives in tests/study/test_kill.py (a study resumes from its finished nodes).

Kills come from `killharness.py`: seven land on named events inside the child (mid-step, after a
metrics line, torn safetensors, model folder done / optimizer state done / state.json done but not
renamed, renamed but not pruned), one at a random delay, one the moment a checkpoint's `.tmp`
folder appears, one while final/model.safetensors is half written.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from tests.reliability.killharness import Zygote, read_jsonl

from encoderlab.train import checkpoint as ckpt

STEPS, EVERY = 16, 2
PRETRAIN = [
    "pretrain",
    "--recipe",
    "smoke-clm-mlm",
    "--param",
    f"steps={STEPS}",
    "--set",
    "layout.seq_len=32",
    f"checkpoint.every={EVERY}",
    "checkpoint.keep_last=2",
    "validation.rows=4",  # one micro-batch per held-out loss; the default 64 rows took a quarter of a run
    "data.synthetic_vocab=128",
    "device=cpu",
    "progress=false",
]
IN_CHILD = ("train_step", "logged", "ckpt_weights", "ckpt_model", "ckpt_optim", "ckpt_state", "ckpt_prune")
TIMING = {"tokens_per_s", "mfu"}  # wall-clock fields: the only ones allowed to differ


@pytest.fixture(scope="module")
def zygote():
    with Zygote() as z:
        yield z


def _losses(run: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in read_jsonl(run / "metrics.jsonl")]


def _assert_same_weights(a: Path, b: Path) -> None:
    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k


def _checkpoint_steps(n_after: int) -> list[int]:
    """Steps after `n_after` that write a checkpoint (every EVERY steps, the phase ends, the last)."""
    return [s for s in range(n_after + 1, STEPS + 1) if s % EVERY == 0 or s in (4, STEPS)]


def _plan(rng: random.Random, resumed_from: int) -> list[dict]:
    """The seven in-child kills at seeded steps after `resumed_from`, in reachable order."""
    kills = []
    for order, kind in enumerate(IN_CHILD):
        if kind in ("train_step", "logged"):
            step = rng.randint(resumed_from + 1, STEPS)
        else:
            step = rng.choice(_checkpoint_steps(resumed_from))
        kills.append((step, order, {"kind": kind, "arg": step}))
    # A kill at (step, stage) is reached by every resume of an earlier kill: sort by both.
    return [k for _, _, k in sorted(kills, key=lambda t: t[:2])]


@pytest.mark.slow
def test_ten_sigkills_then_resume_equal_the_uninterrupted_run(zygote, tmp_path):
    ref = zygote.run([*PRETRAIN, "--out", tmp_path / "ref"], tmp_path / "jobs" / "ref")
    assert ref["returncode"] == 0, ref["stderr"]

    run = tmp_path / "run"
    argv = [*PRETRAIN, "--out", run, "--resume"]
    rng = random.Random(8)
    jobs = iter(range(100))

    def attempt(kill: dict) -> dict:
        before = ckpt.complete_checkpoints(run)
        res = zygote.run(argv, tmp_path / "jobs" / f"{next(jobs):02d}-{kill['kind']}", kill=kill)
        assert res["signal"] == signal.SIGKILL, f"{kill} did not land: {res}"
        loads = [Path(x["path"]) for x in read_jsonl(res["dir"] / "loads.jsonl")]
        # Resume loads exactly the newest complete checkpoint there was, never a partial one.
        assert loads == ([ckpt.checkpoint_dir(run, before[-1])] if before else []), (kill, loads)
        return res

    # 1. A random moment in the first part of a fresh run, from outside. Load on a shared machine
    # can make this run faster than the reference: if it finishes first, start over sooner.
    delay = rng.uniform(0.1, 0.4) * ref["seconds"]
    for _ in range(3):
        res = zygote.run(
            argv, tmp_path / "jobs" / f"{next(jobs):02d}-delay", kill={"kind": "delay", "arg": delay}
        )
        if res["signal"] == signal.SIGKILL:
            break
        shutil.rmtree(run)
        delay /= 3
    assert res["signal"] == signal.SIGKILL, res
    # 2. The moment a checkpoint's temp folder appears, from outside.
    attempt({"kind": "tmpdir", "glob": str(run / "checkpoints" / "*.tmp")})
    # 3-9. Named events inside the child, at seeded steps after the current resume point.
    resumed_from = ckpt.complete_checkpoints(run)[-1] if ckpt.complete_checkpoints(run) else 0
    for kill in _plan(rng, resumed_from):
        attempt(kill)
        if kill["kind"].startswith("ckpt_") and kill["kind"] != "ckpt_prune":
            partial = ckpt.checkpoint_dir(run, kill["arg"]).with_name(f"step_{kill['arg']:07d}.tmp")
            assert partial.is_dir() and kill["arg"] not in ckpt.complete_checkpoints(run)
    # 10. Half of final/model.safetensors written.
    attempt({"kind": "final_weights"})
    assert (run / "final.tmp").is_dir() and not (run / "final").exists()

    done = zygote.run(argv, tmp_path / "jobs" / "last")
    assert done["returncode"] == 0, done["stderr"]
    assert _losses(run) == _losses(tmp_path / "ref")
    assert [r["step"] for r in _losses(run)] == list(range(1, STEPS + 1))
    _assert_same_weights(tmp_path / "ref" / "final", run / "final")
    assert not list((run / "checkpoints").glob("*.tmp"))


# ------------------------------------------------------------------------------ evaluation grid

EVAL_GRID = ["--tasks", "boolq", "--lrs", "1e-4", "2e-3", "--seeds", "0", "1"]


def _results(out: Path) -> list[dict]:
    rows = [{k: v for k, v in r.items() if k != "seconds"} for r in read_jsonl(out / "results.jsonl")]
    return sorted(rows, key=lambda r: (r["lr"], r["seed"]))


def _finished(out: Path) -> set[tuple]:
    """(lr, seed) of the complete result lines (a torn last line is not a finished node)."""
    path = out / "results.jsonl"
    lines = path.read_text().split("\n")[:-1] if path.exists() else []
    return {(r["lr"], r["seed"]) for r in map(json.loads, lines)}


def _nodes(res: dict) -> list[tuple]:
    return [(n["lr"], n["seed"]) for n in read_jsonl(res["dir"] / "nodes.jsonl")]


@pytest.mark.slow
def test_eval_grid_killed_mid_grid_resumes_without_recomputing(zygote, tmp_path):
    from tests.reliability.reliability_fixtures import eval_fixture

    model, env = eval_fixture(tmp_path)
    job = {"env": env, "prelude": ["tests.reliability.reliability_fixtures:quick_boolq"]}
    argv = ["eval", model, *EVAL_GRID, "--device", "cpu"]
    ref = zygote.run([*argv, "--out", tmp_path / "ref"], tmp_path / "jobs" / "ref", **job)
    assert ref["returncode"] == 0, ref["stderr"]
    assert len(_results(tmp_path / "ref")) == 4

    out = tmp_path / "eval"
    trained: list[tuple] = []
    kills = [
        {"kind": "eval_node", "arg": 2},  # node 2 trained, not stored: lost, recomputed
        {"kind": "eval_write", "arg": 1},  # a torn result line: cut off, that node recomputed
        {"kind": "eval_summary"},  # every node stored, summary half written
    ]
    for i, kill in enumerate(kills):
        finished = _finished(out)
        res = zygote.run([*argv, "--out", out], tmp_path / "jobs" / f"{i}", kill=kill, **job)
        assert res["signal"] == signal.SIGKILL, res
        assert not finished & set(_nodes(res)), "a finished node was trained again"
        trained += _nodes(res)
    assert list(out.glob(".summary.json.*.tmp"))  # the torn temp file; summary.json is never torn
    last = zygote.run([*argv, "--out", out], tmp_path / "jobs" / "last", **job)
    assert last["returncode"] == 0, last["stderr"]
    assert _nodes(last) == []  # everything was finished before; only the summary is rewritten
    assert _results(out) == _results(tmp_path / "ref")
    ref_summary = json.loads((tmp_path / "ref" / "summary.json").read_text())
    assert json.loads((out / "summary.json").read_text())["tasks"] == ref_summary["tasks"]
    # 4 nodes + the one killed after training + the one whose line was torn
    assert len(trained) == 6
