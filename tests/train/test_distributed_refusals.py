"""Refusals under data parallelism (gloo, 2 processes): one line, every rank stops, nothing written.

`encoderlab pretrain` under `torchrun` runs the same command in every process. A refused config used
to print its line once per rank, and a check that refused on one rank only (a file missing on one
node, a check of local state) stopped that rank alone: the others went on into the first collective
and died with a gloo "Connection closed by peer" traceback (on NCCL: waited for its timeout), after
rank 0 had created the run folder. Every check that can refuse now runs before any collective and is
agreed between the ranks (`distributed.agreed`): rank 0 prints one line, every rank exits with its code.

One start of two ranks (`start_ranks`) runs every job (start-up dominates on 2 cores); each job records, per
rank, its exit code and what it printed to stderr.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
from pathlib import Path

import pytest
import torch
from tests.train.helpers import free_ports, start_ranks, tiny_run
from tests.train.test_distributed import TWO

from encoderlab.config import save_yaml
from encoderlab.errors import UserError

pytestmark = pytest.mark.distributed


def _refuse_on_rank_one(sinks) -> None:
    if os.environ["RANK"] == "1":
        raise UserError("sinks: refused on rank 1 only")


def _jobs(root: Path, rank: int = 0) -> dict[str, list[str]]:
    two = str(root / "two.yaml")
    return {
        "one_rank": ["pretrain", "--config", two, "--out", str(root / "one_rank")],
        "every_rank": [
            "pretrain",
            "--config",
            two,
            "--set",
            "layout.world_size=1",
            "--out",
            str(root / "every"),
        ],
        "config": ["pretrain", "--config", two, "--set", "optim.lr=-1", "--out", str(root / "config")],
        "until_step": ["pretrain", "--config", two, "--until-step", "0", "--out", str(root / "until_step")],
        "out": ["pretrain", "--config", two, "--out", str(root / f"out{rank}")],  # a node's own folder
        "nan": ["pretrain", "--config", two, "--out", str(root / "nan")],  # rank 1's loss is NaN
        "disk_full": ["pretrain", "--config", two, "--out", str(root / "disk_full")],
    }


def _disk_full_on_rank_zero(run_dir, *args, **kwargs):
    if os.environ["RANK"] == "0":
        raise OSError(errno.ENOSPC, "No space left on device", str(run_dir / "checkpoints"))


def _worker(rank: int, root: str, ports: list[int]) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1")
    torch.set_num_threads(1)
    import encoderlab.train.step as step
    import encoderlab.train.trainer as trainer
    from encoderlab.cli import main

    checks, save, loss = trainer.check_sinks, trainer.ckpt.save_checkpoint, step.batch_loss

    def nan_on_rank_one(*args):  # a real non-finite loss on one rank; the all-reduce carries it to all
        total, n = loss(*args)
        return (total * float("nan") if rank == 1 else total), n

    for (name, argv), port in zip(_jobs(Path(root), rank).items(), ports):
        os.environ["MASTER_PORT"] = str(port)
        # a check that reads something only rank 1 sees as bad
        trainer.check_sinks = _refuse_on_rank_one if name == "one_rank" else checks
        trainer.ckpt.save_checkpoint = _disk_full_on_rank_zero if name == "disk_full" else save
        step.batch_loss = nan_on_rank_one if name == "nan" else loss
        err, code = io.StringIO(), 0
        with contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit as exc:
                code = exc.code
            except BaseException as exc:  # what the old code did on rank 0 (a gloo RuntimeError)
                code = f"{type(exc).__name__}: {exc}"
        (Path(root) / f"{name}.{rank}.json").write_text(json.dumps({"code": code, "stderr": err.getvalue()}))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    root = tmp_path_factory.mktemp("refusals")
    save_yaml(tiny_run(root / "unused", layout=TWO), root / "two.yaml")
    start_ranks(_worker, (str(root), free_ports(len(_jobs(root)))))

    def read(name: str) -> list[dict]:
        return [json.loads((root / f"{name}.{rank}.json").read_text()) for rank in (0, 1)]

    return root, read


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "error" in line or "Traceback" in line]


def test_a_refusal_on_one_rank_stops_every_rank_before_anything_is_written(outcomes):
    root, read = outcomes
    rank0, rank1 = read("one_rank")
    assert (rank0["code"], rank1["code"]) == (2, 2)
    assert _errors(rank0["stderr"]) == ["encoderlab: error: rank 1: sinks: refused on rank 1 only"]
    assert _errors(rank1["stderr"]) == []  # rank 0 printed it
    assert not (root / "one_rank").exists()  # rank 0 had created and marked the run folder


@pytest.mark.parametrize(
    ("job", "line"),
    [
        ("every_rank", "encoderlab: error: layout.world_size is 1 but 2 processes are running;"),
        ("config", "encoderlab: error: optim.lr must be a finite number > 0, got -1.0;"),
        ("until_step", "encoderlab: error: --until-step must be >= 1"),  # was checked before the join
    ],
)
def test_a_config_every_rank_refuses_prints_one_line(outcomes, job, line):
    root, read = outcomes
    rank0, rank1 = read(job)
    assert (rank0["code"], rank1["code"]) == (2, 2)
    assert [e[: len(line)] for e in _errors(rank0["stderr"])] == [line]
    assert _errors(rank1["stderr"]) == []  # was the same line again, once per rank


def test_ranks_started_with_another_out_are_refused_before_anything_is_written(outcomes):
    """Rank 0 alone writes, so a rank with its own --out (a node whose working folder or command
    differs) trained on; resumed, it started from its own folder's step, and the ranks' step counts
    parted until a collective hung."""
    root, read = outcomes
    rank0, rank1 = read("out")
    assert (rank0["code"], rank1["code"]) == (2, 2)
    assert _errors(rank0["stderr"]) == [
        f"encoderlab: error: rank 1: started otherwise than rank 0 (out: '{root / 'out0'}' -> '{root / 'out1'}': "
        "rank 0's -> this rank's); start every rank with the same command, with a run folder every node sees at "
        "the same path"
    ]
    assert _errors(rank1["stderr"]) == []
    assert not (root / "out0").exists() and not (root / "out1").exists()


def test_a_non_finite_loss_is_said_once(outcomes):
    """Every rank stops on it alike (the loss is all-reduced, here NaN from rank 1's batch); each printed
    the line."""
    _, read = outcomes
    rank0, rank1 = read("nan")
    assert (rank0["code"], rank1["code"]) == (4, 4)
    assert [e[:37] for e in _errors(rank0["stderr"])] == ["encoderlab: error: stopped: non-finit"]
    assert _errors(rank1["stderr"]) == []


def test_a_checkpoint_rank_zero_cannot_write_stops_every_rank_without_a_traceback(outcomes):
    """Rank 0 alone writes; when the write failed (a full disk) the other ranks waited in the barrier
    after it and died with gloo's "Connection closed by peer" traceback (NCCL: its timeout)."""
    root, read = outcomes
    rank0, rank1 = read("disk_full")
    assert rank0["code"] == 3 and rank1["code"] == 1
    assert _errors(rank0["stderr"]) == [
        f"encoderlab: error: disk full while writing {root / 'disk_full' / 'checkpoints'}; free space and rerun "
        "with --resume (completed work is kept)"
    ]
    assert _errors(rank1["stderr"]) == []
