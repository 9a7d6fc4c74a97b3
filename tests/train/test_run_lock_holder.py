"""The run lock names its holder's world (the cluster review of 2026-12-07).

Under torchrun the run lock is rank 0's, and its refusal said `R is in use by pretrain (pid P on H since T)`: a
resume beside the orphaned ranks of a SIGKILLed torchrun (docs/scaling.md) was told of one process, while others, on
other nodes, still trained and had to be stopped too. The holder is now `pretrain rank 0 of N processes on M nodes`
(`runfolder.lock_holder`; the nodes from torchrun's LOCAL_WORLD_SIZE, left unsaid where it does not tell them).
Two ranks (`start_ranks`), each told it is alone on its node (LOCAL_WORLD_SIZE=1), as on two nodes of one process each.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.train.helpers import free_ports, start_ranks, tiny_run

import encoderlab.train.trainer as trainer_module
from encoderlab.config import save_yaml
from encoderlab.data.batch import BatchLayout
from encoderlab.train import pretrain
from encoderlab.train.runfolder import LOCK, lock_holder


@pytest.mark.parametrize(
    ("world", "local", "said"),
    [
        (1, "1", "pretrain"),
        (16, "8", "pretrain rank 0 of 16 processes on 2 nodes"),
        (8, "8", "pretrain rank 0 of 8 processes"),  # one node: nothing to add
        (6, "4", "pretrain rank 0 of 6 processes"),  # nodes of different sizes: no guess
        (6, "", "pretrain rank 0 of 6 processes"),  # not torchrun's variables
    ],
)
def test_the_holder_names_the_world_and_its_nodes_where_torchrun_tells_them(monkeypatch, world, local, said):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", local)
    assert lock_holder(world) == said


def _rank(rank: int, port: int, root: str) -> None:
    os.environ.update(
        RANK=str(rank), LOCAL_RANK="0", WORLD_SIZE="2", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1"
    )
    os.environ.update(MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    train = trainer_module.Trainer._train

    def reading(self, stop_at):
        if rank == 0:
            Path(root, "holder.json").write_text((self.run_dir / LOCK).read_text())
        return train(self, stop_at)

    trainer_module.Trainer._train = reading
    cfg = tiny_run(
        Path(root) / "run", layout=BatchLayout(seq_len=32, micro_batch_size=2, grad_accum=1, world_size=2)
    )
    pretrain(cfg, until_step=1)


@pytest.mark.distributed
def test_a_resume_beside_a_run_of_two_nodes_names_rank_zero_of_two_processes_on_two_nodes(tmp_path, capsys):
    start_ranks(_rank, (free_ports(1)[0], str(tmp_path)))
    holder = json.loads((tmp_path / "holder.json").read_text())
    assert holder["what"] == "pretrain rank 0 of 2 processes on 2 nodes"  # was: "pretrain"
    run = tmp_path / "run"
    (run / LOCK).write_text(json.dumps({**holder, "pid": os.getppid()}))  # that rank 0 still alive, orphaned
    save_yaml(tiny_run(run), tmp_path / "one.yaml")
    code, err = cli(["pretrain", "--config", tmp_path / "one.yaml", "--out", run, "--resume"], capsys)
    said = rf"{run} is in use by pretrain rank 0 of 2 processes on 2 nodes \(pid {os.getppid()} on "
    assert_one_line(code, err, said)
